#include "flopscope/dtype.hpp"

#include <algorithm>
#include <cctype>
#include <utility>

namespace flopscope {

static_assert([] {
  for (DType dtype : kAllDTypes)
    if (dtype_row(dtype).dtype != dtype) return false;
  return kAllDTypes.size() == kDTypeRows.size();
}(), "every DType has one row");

std::span<const DTypeRow> dtype_rows() { return kDTypeRows; }

std::string_view dtype_name(DType dtype) { return dtype_row(dtype).name; }

std::size_t dtype_size(DType dtype) { return dtype_row(dtype).size; }

namespace {

std::string lowercase(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower;
}

}  // namespace

bool is_ambiguous_fp8(std::string_view text) {
  const std::string lower = lowercase(text);
  return lower == "fp8" || lower == "f8" || lower == "float8" || lower == "torch.float8";
}

std::optional<DType> parse_dtype(std::string_view text) {
  std::string lower = lowercase(text);
  if (lower.starts_with("torch.")) lower.erase(0, 6);
  for (const auto& r : kDTypeRows) {
    if (r.name == lower) return r.dtype;
    for (std::string_view rest = r.aliases; !rest.empty();) {
      const std::size_t space = std::min(rest.find(' '), rest.size());
      if (rest.substr(0, space) == lower) return r.dtype;
      rest.remove_prefix(std::min(space + 1, rest.size()));
    }
  }
  return std::nullopt;
}

std::string dtype_list() {
  std::string out;
  for (const auto& r : kDTypeRows) {
    if (!out.empty()) out += ", ";
    out += r.name;
  }
  return out;
}

}  // namespace flopscope
