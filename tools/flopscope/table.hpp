// A table built once as data and printed by either renderer: as text (aligned columns, or
// Markdown) or as JSON (an array of one object per row). `flopscope account` builds each of its
// tables here, so that what the text shows and what the JSON holds cannot drift apart.
//
// A column has a JSON key (a '.' nests: "forward.flops" is {"forward": {"flops": ...}}), text
// heading lines and the format its numbers take in text. A column without a key is text only (a
// label, a unit spelled out); one without heading lines is JSON only (a field that the text leaves
// out, or a nested list). JSON always holds the value itself: an integer exactly (json_count), a
// number as the double, a text as the string.
#pragma once

#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "flopscope/checked.hpp"

namespace flopscope::cli {

// How a column writes a number in text.
struct TextFormat {
  enum class Kind {
    plain,            // an integer's digits; a text as it is
    thousands,        // "124,439,808"
    exact_and_short,  // "6,300,000,000,000,000,000,000,000 (6.30e24)"
    formatted,        // printf of the value times `times` over `over`: ms from seconds, % from a fraction
  };
  Kind kind = Kind::plain;
  const char* spec = nullptr;  // formatted: the printf conversion, e.g. "%.3f"
  double times = 1, over = 1;
};

inline constexpr TextFormat kPlain{};
inline constexpr TextFormat kThousands{TextFormat::Kind::thousands};
inline constexpr TextFormat kExactAndShort{TextFormat::Kind::exact_and_short};
constexpr TextFormat printf_format(const char* format, double times = 1, double over = 1) {
  return {TextFormat::Kind::formatted, format, times, over};
}

struct Column {
  std::string key;                  // JSON: where the cell goes; "" : text only
  std::vector<std::string> header;  // text: heading lines, top first (bottom-aligned); none: JSON only
  TextFormat format = kPlain;
  bool merge = false;               // JSON: the cell is an object whose members join the row's
};

// One cell: nothing, an integer (exact at any size), a number, a text, or a JSON value (JSON only:
// a nested list, or the members a `merge` column adds).
struct Cell {
  enum class Kind { empty, integer, number, text, json };
  Kind kind = Kind::empty;
  Count128 integer = 0;
  double number = 0;
  std::string text;
  nlohmann::json value;

  Cell() = default;
  template <typename T>
    requires(std::integral<T> && !std::same_as<T, bool>)
  Cell(T v) : kind(Kind::integer), integer(v) {}
  Cell(Count128 v) : kind(Kind::integer), integer(v) {}
  Cell(double v) : kind(Kind::number), number(v) {}
  Cell(std::string v) : kind(Kind::text), text(std::move(v)) {}
  Cell(const char* v) : kind(Kind::text), text(v) {}
  static Cell json(nlohmann::json v) {
    Cell cell;
    cell.kind = Kind::json;
    cell.value = std::move(v);
    return cell;
  }
};

using Row = std::vector<Cell>;  // one cell per column, in the columns' order

struct Table {
  std::vector<Column> columns;
  std::vector<Row> rows;
};

// Text: the heading lines, then one line per row; the first column left-aligned, the others
// right-aligned, widths from the contents, trailing blanks trimmed.
void print_text(const Table& table);
// Markdown: "| heading | ... |", "|---|...", one "| cell | ... |" line per row.
void print_markdown(const Table& table);
// Fixed widths: the heading and each row by `layout`, one "%s", "%8s" or "%-8s" (printf's field
// width, '-' left-aligned) per text column in order, with the text between them: "  %-8s %6s\n".
// A cell wider than its field pushes the rest of its line right, as printf does.
void print_fixed(const Table& table, std::string_view layout);
// JSON: an array of one object per row, the keyed columns' non-empty cells.
nlohmann::json table_json(const Table& table);

}  // namespace flopscope::cli
