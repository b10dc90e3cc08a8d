// Test helper: runs one bulk conversion kernel on raw data from standard input, so that
// tests/python/test_convert_kernels.py can check every kernel against ml_dtypes (an independent
// implementation) on millions of inputs without going through text.
//
//   convert_stdio --list
//       one line per kernel: "<variant> <dtype,dtype,...> ok" or "<variant> <dtypes> unavailable: <why>"
//   convert_stdio --variant V --to DTYPE [--saturate] [--stream]     f32 in, codes out
//   convert_stdio --variant V --from DTYPE [--stream]                codes in, f32 out
//
// V is a variant of kernels/cpu/convert.cpp or kernels/cuda/convert.cu (on cuda:0).
// Codes are little-endian uint16 (f16, bf16) or uint8 (fp8). --stream forces the non-temporal
// store path of the vector kernels, which they otherwise take only past the last-level cache.
// Exit status: 0, 2 for bad arguments or input, 3 when the kernel cannot run here.
#include <cstdio>
#include <cstring>
#include <iostream>
#include <iterator>
#include <optional>
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

// A one-element problem of `narrow`, for asking a variant whether it takes and can run a dtype.
kernels::ConvertProblem probe(DType narrow, Device device) {
  static float in = 0;
  static std::uint16_t out = 0;
  static const std::int64_t one[] = {1};
  return {TensorRef::contiguous(&out, narrow, one, device), TensorRef::contiguous(&in, DType::f32, one, device)};
}

// Every CPU and CUDA variant.
std::vector<const kernels::ConvertVariant*> all_variants() {
  std::vector<const kernels::ConvertVariant*> out;
  for (const auto& v : kernels::cpu_convert_variants()) out.push_back(&v);
  for (const auto& v : kernels::cuda_convert_variants()) out.push_back(&v);
  return out;
}

// Why `variant` cannot convert `narrow` here (its own reason, or the CUDA runtime's), or nullopt.
std::optional<std::string> unavailable(const kernels::ConvertVariant& variant, DType narrow) {
  const bool cuda = variant.device == Device::Kind::cuda;
  if (cuda)
    if (auto reason = kernels::cuda::unavailable_reason()) return reason;
  return variant.unavailable(probe(narrow, cuda ? Device::cuda(0) : Device::cpu()));
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
    for (const auto* v : all_variants()) {
      std::string dtypes;
      std::optional<std::string> reason;
      for (DType d : kernels::kNarrowDTypes) {
        if (!v->takes(probe(d, Device::cpu()))) continue;
        dtypes += (dtypes.empty() ? "" : ",") + std::string(dtype_name(d));
        if (!reason) reason = unavailable(*v, d);
      }
      std::printf("%.*s %s %s\n", int(v->name.size()), v->name.data(), dtypes.c_str(),
                  reason ? ("unavailable: " + *reason).c_str() : "ok");
    }
    return 0;
  }
  const auto dtype = parse_dtype(dtype_text);
  if (!dtype || dtype_size(*dtype) > 2) return fail(2, "--to/--from takes f16, bf16, f8e4m3 or f8e5m2, not '" + dtype_text + "'");
  const kernels::ConvertVariant* variant = nullptr;
  for (const auto* v : all_variants())
    if (v->name == variant_name) variant = v;
  if (!variant) return fail(2, "no variant '" + variant_name + "' (--list shows them)");
  if (!variant->takes(probe(*dtype, Device::cpu()))) return fail(2, variant_name + " does not convert " + dtype_text);
  if (auto reason = unavailable(*variant, *dtype)) return fail(3, variant_name + " unavailable: " + *reason);

  const std::vector<char> input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  const std::size_t in_size = encode ? sizeof(float) : dtype_size(*dtype);
  const std::size_t out_size = encode ? dtype_size(*dtype) : sizeof(float);
  if (input.size() % in_size != 0) return fail(2, "input is not a whole number of elements");
  const std::size_t count = input.size() / in_size;
  std::vector<char> output(count * out_size);
  if (stream) kernels::set_convert_streaming_threshold_bytes(1);
  // Copied into float-aligned storage: the kernels' vector loads assume element alignment.
  std::vector<float> aligned((input.size() + sizeof(float) - 1) / sizeof(float));
  std::memcpy(aligned.data(), input.data(), input.size());
  std::vector<float> out_aligned((output.size() + sizeof(float) - 1) / sizeof(float));
  kernels::convert_host(*variant, aligned.data(), encode ? DType::f32 : *dtype, out_aligned.data(),
                        encode ? *dtype : DType::f32, count, saturate);
  std::memcpy(output.data(), out_aligned.data(), output.size());
  if (std::fwrite(output.data(), 1, output.size(), stdout) != output.size()) return fail(2, "cannot write the output");
  return 0;
}
