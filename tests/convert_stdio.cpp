// Test helper: runs one bulk conversion kernel on raw data from standard input, so that
// tests/python/test_convert_kernels.py can check every kernel against ml_dtypes (an independent
// implementation) on millions of inputs without going through text.
//
//   convert_stdio --list
//       one line per kernel: "<variant> <dtype,dtype,...> ok" or "<variant> <dtypes> unavailable: <why>"
//   convert_stdio --variant V --to DTYPE [--saturate] [--stream]     f32 in, codes out
//   convert_stdio --variant V --from DTYPE [--stream]                codes in, f32 out
//
// V is a CPU variant of kernels/cpu/convert.cpp or "cuda" (kernels/cuda/convert.cu on cuda:0).
// Codes are little-endian uint16 (f16, bf16) or uint8 (fp8). --stream forces the non-temporal
// store path of the vector kernels, which they otherwise take only past the last-level cache.
// Exit status: 0, 2 for bad arguments or input, 3 when the kernel cannot run here.
#include <cstdio>
#include <cstring>
#include <iostream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "flopscope/kernels/convert.hpp"
#include "flopscope/kernels/cuda_runtime.hpp"

using namespace flopscope;

namespace {

int fail(int code, const std::string& message) {
  std::fprintf(stderr, "convert_stdio: %s\n", message.c_str());
  return code;
}

std::string dtype_list(std::span<const DType> dtypes) {
  std::string out;
  for (DType d : dtypes) out += (out.empty() ? "" : ",") + std::string(dtype_name(d));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string variant_name, dtype_text;
  bool encode = true, saturate = false, stream = false, list = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--list") list = true;
    else if (arg == "--saturate") saturate = true;
    else if (arg == "--stream") stream = true;
    else if (arg == "--variant" && has_value) variant_name = argv[++i];
    else if (arg == "--to" && has_value) dtype_text = argv[++i], encode = true;
    else if (arg == "--from" && has_value) dtype_text = argv[++i], encode = false;
    else return fail(2, "unknown or incomplete argument '" + std::string(arg) + "'");
  }
  if (list) {
    for (const auto& v : kernels::cpu_convert_variants()) {
      const auto reason = v.unavailable();
      std::printf("%.*s %s %s\n", int(v.name.size()), v.name.data(), dtype_list(v.dtypes).c_str(),
                  reason ? ("unavailable: " + *reason).c_str() : "ok");
    }
    const auto reason = kernels::cuda::unavailable_reason();
    std::printf("cuda %s %s\n", dtype_list(kernels::kNarrowDTypes).c_str(),
                reason ? ("unavailable: " + *reason).c_str() : "ok");
    return 0;
  }
  const auto dtype = parse_dtype(dtype_text);
  if (!dtype || dtype_size(*dtype) > 2) return fail(2, "--to/--from takes f16, bf16, f8e4m3 or f8e5m2, not '" + dtype_text + "'");
  const bool cuda = variant_name == "cuda";
  const kernels::ConvertVariant* variant = cuda ? nullptr : kernels::find_cpu_convert_variant(variant_name);
  if (!cuda && !variant) return fail(2, "no variant '" + variant_name + "' (--list shows them)");
  if (variant && !variant->supports(*dtype)) return fail(2, variant_name + " does not convert " + dtype_text);
  if (auto reason = cuda ? kernels::cuda::unavailable_reason() : variant->unavailable())
    return fail(3, variant_name + " unavailable: " + *reason);

  const std::vector<char> input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  const std::size_t in_size = encode ? sizeof(float) : dtype_size(*dtype);
  const std::size_t out_size = encode ? dtype_size(*dtype) : sizeof(float);
  if (input.size() % in_size != 0) return fail(2, "input is not a whole number of elements");
  const std::size_t count = input.size() / in_size;
  std::vector<char> output(count * out_size);
  if (stream) kernels::set_convert_streaming_threshold_bytes(1);
  if (encode) {
    std::vector<float> in(count);
    std::memcpy(in.data(), input.data(), input.size());
    if (cuda) {
#ifdef FLOPSCOPE_HAVE_CUDA
      kernels::cuda::encode_host(in.data(), output.data(), count, *dtype, saturate);
#endif
    } else {
      variant->encode(in.data(), output.data(), count, *dtype, saturate);
    }
  } else {
    std::vector<float> out(count);
    if (cuda) {
#ifdef FLOPSCOPE_HAVE_CUDA
      kernels::cuda::decode_host(input.data(), out.data(), count, *dtype);
#endif
    } else {
      variant->decode(input.data(), out.data(), count, *dtype);
    }
    std::memcpy(output.data(), out.data(), output.size());
  }
  if (std::fwrite(output.data(), 1, output.size(), stdout) != output.size()) return fail(2, "cannot write the output");
  return 0;
}
