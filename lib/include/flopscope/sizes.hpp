// Parsing of element counts and byte sizes as people write them on a command line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "flopscope/checked.hpp"  // Count128

namespace flopscope {

// "4096", "2^28", "256Mi" (binary: Ki, Mi, Gi, Ti), "64K" / "1M" / "2G" (decimal), "1e6".
// nullopt for anything else, for negative values and for values that overflow int64.
std::optional<std::int64_t> parse_count(std::string_view text);

// The shortest exact form of a count: 268435456 -> "256Mi", 1000 -> "1000", 4096 -> "4Ki".
std::string format_count(std::int64_t count);

// A byte count for people: "1.00 GiB", "512 B", "3.50 MiB".
std::string format_bytes_binary(double bytes);
// Decimal units: "2.42 GB" (1 GB = 1e9 bytes); "512 B".
std::string format_bytes_decimal(double bytes);
// 2415919104 -> "2,415,919,104"
std::string format_thousands(std::int64_t value);
// The same for 128-bit counts (a training run's FLOPs): 6300000000000000000000000 ->
// "6,300,000,000,000,000,000,000,000".
std::string format_thousands128(Count128 value);

}  // namespace flopscope
