// The renderers of table.hpp's tables.
#include "table.hpp"

#include <algorithm>
#include <cstdio>

#include "account.hpp"
#include "flopscope/sizes.hpp"

namespace flopscope::cli {

namespace {

std::string cell_text(const Cell& cell, const TextFormat& format) {
  const bool use_printf = format.kind == TextFormat::Kind::formatted;
  switch (cell.kind) {
    case Cell::Kind::empty:
    case Cell::Kind::json:
      return "";
    case Cell::Kind::text:
      return cell.text;
    case Cell::Kind::integer:
      if (!use_printf) {
        if (format.kind == TextFormat::Kind::thousands) return format_thousands128(cell.integer);
        if (format.kind == TextFormat::Kind::exact_and_short) return exact_and_short(cell.integer);
        return count_str(cell.integer);
      }
      break;
    case Cell::Kind::number:
      break;
  }
  const double value = cell.kind == Cell::Kind::integer ? static_cast<double>(cell.integer) : cell.number;
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format.spec ? format.spec : "%g",
                value * format.times / format.over);
  return buffer;
}

std::vector<std::size_t> text_columns(const Table& table) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < table.columns.size(); ++i)
    if (!table.columns[i].header.empty()) out.push_back(i);
  return out;
}

// A row's cells in the text columns `shown`, each as its column's format writes it.
std::vector<std::string> row_texts(const Table& table, const std::vector<std::size_t>& shown, const Row& row) {
  std::vector<std::string> cells;
  for (std::size_t i : shown) cells.push_back(i < row.size() ? cell_text(row[i], table.columns[i].format) : "");
  return cells;
}

// A column's heading lines joined into one ("forward FLOPs pytorch").
std::string heading_text(const Column& column) {
  std::string text;
  for (const auto& line : column.header) text += (text.empty() ? "" : " ") + line;
  return text;
}

// Rows of cells: the first column left-aligned, the others right-aligned, widths from the
// contents (in bytes); trailing blanks trimmed.
void print_aligned(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows)
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (widths.size() <= i) widths.push_back(0);
      widths[i] = std::max(widths[i], row[i].size());
    }
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      const std::string pad(widths[i] - row[i].size(), ' ');
      line += i == 0 ? row[i] + pad : "  " + pad + row[i];
    }
    while (line.ends_with(' ')) line.pop_back();
    std::printf("%s\n", line.c_str());
  }
}

}  // namespace

void print_text(const Table& table) {
  const std::vector<std::size_t> shown = text_columns(table);
  std::size_t heading_lines = 0;
  for (std::size_t i : shown) heading_lines = std::max(heading_lines, table.columns[i].header.size());
  std::vector<std::vector<std::string>> lines(heading_lines);
  for (std::size_t i : shown) {
    const auto& header = table.columns[i].header;
    for (std::size_t line = 0; line < heading_lines; ++line) {
      const std::size_t blank = heading_lines - header.size();  // bottom-aligned
      lines[line].push_back(line < blank ? "" : header[line - blank]);
    }
  }
  for (const Row& row : table.rows) lines.push_back(row_texts(table, shown, row));
  print_aligned(lines);
}

void print_markdown(const Table& table) {
  const std::vector<std::size_t> shown = text_columns(table);
  std::string heading = "|", rule = "|";
  for (std::size_t i : shown) {
    heading += " " + heading_text(table.columns[i]) + " |";
    rule += "---|";
  }
  std::printf("%s\n%s\n", heading.c_str(), rule.c_str());
  for (const Row& row : table.rows) {
    std::string line = "|";
    for (const std::string& cell : row_texts(table, shown, row)) line += " " + cell + " |";
    std::printf("%s\n", line.c_str());
  }
}

void print_fixed(const Table& table, std::string_view layout) {
  const std::vector<std::size_t> shown = text_columns(table);
  // One line of `cells` laid out: each %[-]Ns takes the next cell.
  auto print_line = [&](const std::vector<std::string>& cells) {
    std::string line;
    std::size_t next = 0;
    for (std::size_t at = 0; at < layout.size(); ++at) {
      if (layout[at] != '%') {
        line += layout[at];
        continue;
      }
      const bool left = layout[++at] == '-';
      if (left) ++at;
      std::size_t width = 0;
      for (; layout[at] >= '0' && layout[at] <= '9'; ++at) width = 10 * width + std::size_t(layout[at] - '0');
      // layout[at] is the 's'
      const std::string& text = next < cells.size() ? cells[next] : std::string();
      ++next;
      const std::string pad(width > text.size() ? width - text.size() : 0, ' ');
      line += left ? text + pad : pad + text;
    }
    std::fputs(line.c_str(), stdout);
  };
  std::vector<std::string> heading;
  for (std::size_t i : shown) heading.push_back(heading_text(table.columns[i]));
  print_line(heading);
  for (const Row& row : table.rows) print_line(row_texts(table, shown, row));
}

nlohmann::json table_json(const Table& table) {
  nlohmann::json out = nlohmann::json::array();
  for (const Row& row : table.rows) {
    nlohmann::json object = nlohmann::json::object();
    for (std::size_t i = 0; i < table.columns.size() && i < row.size(); ++i) {
      const Column& column = table.columns[i];
      const Cell& cell = row[i];
      if (cell.kind == Cell::Kind::empty) continue;
      if (column.merge) {
        for (auto member = cell.value.begin(); member != cell.value.end(); ++member)
          object[member.key()] = member.value();
        continue;
      }
      if (column.key.empty()) continue;
      nlohmann::json value;
      switch (cell.kind) {
        case Cell::Kind::integer: value = json_count(cell.integer); break;
        case Cell::Kind::number: value = cell.number; break;
        case Cell::Kind::text: value = cell.text; break;
        default: value = cell.value; break;
      }
      object[nlohmann::json::json_pointer("/" + [&] {
        std::string path = column.key;
        std::replace(path.begin(), path.end(), '.', '/');
        return path;
      }())] = std::move(value);
    }
    out.push_back(std::move(object));
  }
  return out;
}

}  // namespace flopscope::cli
