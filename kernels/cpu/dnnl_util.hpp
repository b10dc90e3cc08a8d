// oneDNN's CPU engine and stream, and what every vendor variant of kernels/cpu/ does with a
// primitive (private to kernels/cpu/; include only where FLOPSCOPE_HAVE_ONEDNN is defined).
#pragma once

#include <dnnl.hpp>

#include <optional>
#include <string>
#include <unordered_map>

#include "flopscope/kernels/variant.hpp"

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

// nullopt where make_descriptor() succeeds; else oneDNN's refusal, "oneDNN: <its message>".
template <class Fn>
std::optional<std::string> dnnl_refusal(Fn&& make_descriptor) {
  try {
    make_descriptor();
  } catch (const dnnl::error& error) {
    return std::string("oneDNN: ") + error.what();
  }
  return std::nullopt;
}

// The timed call of a primitive on its arguments: execute, then wait (CPU work is synchronous).
inline Runner dnnl_runner(dnnl::primitive primitive, std::unordered_map<int, dnnl::memory> args) {
  return [primitive, args](Stream) {
    dnnl::stream& stream = dnnl_cpu_stream();
    primitive.execute(stream, args);
    stream.wait();
  };
}

}  // namespace flopscope::kernels
