// Test helper: builds views with lib's Tensor and makes them contiguous through every CPU strided
// variant, so that tests/python/test_views_reference.py can check the views' semantics (shape,
// strides, storage offset) and every variant's output against numpy and PyTorch, two independent
// implementations, on random chains of views that the C++ tests do not contain.
//
// One case per line of standard input: a dtype, a source shape and view operations, separated by
// spaces:
//   f32 4x5x6 permute:2,0,1 slice:1,-3,,2 expand:7,-1,-1,-1 transpose:0,2 unsqueeze:-1 select:0,1 t
// (slice:DIM,START,STOP,STEP with START and STOP optional, as Python writes them; expand's -1
// keeps a size; a shape of "scalar" is a 0-d tensor). The source holds i mod M in element i, M
// the dtype's largest run of exact integers (2^24 for f32 and f64, 2048 for f16, 256 for bf16,
// 16 for f8e4m3, 8 for f8e5m2). Per case, on standard output:
//   view SHAPE STRIDES OFFSET      comma-separated ("-" for none), the offset in elements
//   reference V V ...              Tensor::contiguous(), the values in row-major order
//   <variant> V V ...              each CPU strided variant's output ("<variant> unavailable: why")
//   (an empty line)
// A view lib refuses prints "error: <message>" and an empty line. Exit status: 0, 2 for a line
// that cannot be read.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "flopscope/dtype.hpp"
#include "flopscope/kernels/strided.hpp"
#include "flopscope/tensor.hpp"

using namespace flopscope;

namespace {

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream stream(text);
  while (std::getline(stream, part, separator)) parts.push_back(part);
  if (!text.empty() && text.back() == separator) parts.emplace_back();
  return parts;
}

std::vector<std::int64_t> integers(const std::string& text, char separator) {
  std::vector<std::int64_t> out;
  if (text.empty() || text == "scalar") return out;
  for (const auto& part : split(text, separator)) out.push_back(std::stoll(part));
  return out;
}

std::int64_t exact_run(DType dtype) {
  switch (dtype) {
    case DType::f16: return 2048;
    case DType::bf16: return 256;
    case DType::f8e4m3: return 16;
    case DType::f8e5m2: return 8;
    default: return std::int64_t{1} << 24;
  }
}

std::string joined(const std::vector<std::int64_t>& values) {
  if (values.empty()) return "-";
  std::string out;
  for (auto v : values) out += (out.empty() ? "" : ",") + std::to_string(v);
  return out;
}

void print_values(const std::string& label, const std::vector<double>& values) {
  std::string line = label;
  char number[32];
  for (double v : values) {
    std::snprintf(number, sizeof number, " %.17g", v);
    line += number;
  }
  std::puts(line.c_str());
}

Tensor apply_view(const Tensor& x, const std::string& op) {
  const auto colon = op.find(':');
  const std::string name = op.substr(0, colon), args = colon == std::string::npos ? "" : op.substr(colon + 1);
  if (name == "permute") return x.permute(integers(args, ','));
  if (name == "transpose") {
    const auto dims = integers(args, ',');
    return x.transpose(dims.at(0), dims.at(1));
  }
  if (name == "t") return x.t();
  if (name == "expand") return x.expand(integers(args, ','));
  if (name == "unsqueeze") return x.unsqueeze(std::stoll(args));
  if (name == "select") {
    const auto dims = integers(args, ',');
    return x.select(dims.at(0), dims.at(1));
  }
  if (name == "slice") {
    const auto parts = split(args, ',');
    if (parts.size() != 4) throw std::invalid_argument("slice takes DIM,START,STOP,STEP");
    auto optional = [](const std::string& s) { return s.empty() ? std::nullopt : std::optional(std::stoll(s)); };
    return x.slice(std::stoll(parts[0]), optional(parts[1]), optional(parts[2]), std::stoll(parts[3]));
  }
  throw std::invalid_argument("unknown view operation '" + name + "'");
}

}  // namespace

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    std::istringstream words(line);
    std::string dtype_name, shape_text, op;
    words >> dtype_name >> shape_text;
    const auto dtype = parse_dtype(dtype_name);
    if (!dtype || shape_text.empty()) {
      std::fprintf(stderr, "views_stdio: cannot read '%s' (DTYPE SHAPE OPS...)\n", line.c_str());
      return 2;
    }
    try {
      const Shape shape = integers(shape_text, 'x');
      const Tensor base = empty({shape_numel(shape)}, {*dtype});
      for (std::int64_t i = 0; i < base.numel(); ++i) base.set({i}, double(i % exact_run(*dtype)));
      Tensor view = base.view(shape);
      while (words >> op) view = apply_view(view, op);
      std::printf("view %s %s %lld\n", joined(view.shape()).c_str(), joined(view.strides()).c_str(),
                  static_cast<long long>(view.storage_offset()));
      print_values("reference", view.contiguous().to_vector());
      for (const auto& variant : kernels::cpu_strided_variants()) {
        const Tensor out = empty(view.shape(), {*dtype});
        const kernels::CopyProblem problem{out.ref(), view.ref()};
        if (!variant.takes(problem)) continue;
        if (auto why = variant.unavailable(problem)) {
          std::printf("%s unavailable: %s\n", std::string(variant.name).c_str(), why->c_str());
          continue;
        }
        out.fill_(-1);
        variant.prepare(problem)(nullptr);
        print_values(std::string(variant.name), out.to_vector());
      }
    } catch (const std::exception& error) {
      std::printf("error: %s\n", error.what());
    }
    std::puts("");
    std::fflush(stdout);
  }
  return 0;
}
