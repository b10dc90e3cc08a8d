// oneDNN's CPU engine and stream, shared by the vendor variants of kernels/cpu/ (private to it;
// include only where FLOPSCOPE_HAVE_ONEDNN is defined).
#pragma once

#include <dnnl.hpp>

namespace flopscope::kernels {

// One CPU engine and one in-order stream for the process (oneDNN's objects are reference
// counted handles: copies share them).
inline dnnl::engine& dnnl_cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

inline dnnl::stream& dnnl_cpu_stream() {
  static dnnl::stream stream(dnnl_cpu_engine());
  return stream;
}

}  // namespace flopscope::kernels
