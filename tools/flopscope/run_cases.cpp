// The cases of a run directory (./bench.sh writes one per run; tools/flopscope/run_cases.hpp).
#include "run_cases.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string_view>

#include "commands.hpp"

namespace flopscope::cli {

using nlohmann::json;

namespace {

// Google Benchmark's own suffixes, removed from the end of a run_name (FORMAT.md).
std::string strip_gbench_suffixes(std::string name) {
  static const std::regex suffix(
      "/(manual_time|real_time|process_time|iterations:[0-9]+|repeats:[0-9]+|threads:[0-9]+|min_time:[^/]+|"
      "min_warmup_time:[^/]+)$");
  for (std::string stripped; (stripped = std::regex_replace(name, suffix, "")) != name;) name = stripped;
  return name;
}

// Note [non-finite JSON numbers]: Google Benchmark writes the cv of a constant counter (0/0) and
// other non-finite statistics as bare nan / -nan / inf, which JSON has no word for. They are read
// as null (no figure): outside strings, a bare word that is not true, false or null is one of them.
std::string non_finite_as_null(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) out += text[++i];
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    if (std::isdigit(static_cast<unsigned char>(c))) {  // a number, its exponent's 'e' included
      for (; i < text.size() && std::string_view("0123456789eE.+-").find(text[i]) != std::string_view::npos; ++i)
        out += text[i];
      --i;
      continue;
    }
    const bool sign = (c == '-' || c == '+') && i + 1 < text.size() && std::isalpha(static_cast<unsigned char>(text[i + 1]));
    if (sign || std::isalpha(static_cast<unsigned char>(c))) {
      std::size_t end = i + (sign ? 1 : 0);
      while (end < text.size() && std::isalpha(static_cast<unsigned char>(text[end]))) ++end;
      const std::string word = text.substr(i, end - i);
      if (word == "true" || word == "false" || word == "null") out += word;
      else out += "null";
      i = end - 1;
      continue;
    }
    out += c;
  }
  return out;
}

// FORMAT.md's "which entry stands for a case"; nullptr for a failed or skipped case.
const json* representative(const std::vector<const json*>& entries) {
  std::vector<const json*> iterations;
  for (const json* entry : entries) {
    if (entry->value("error_occurred", false)) return nullptr;
    if (entry->value("run_type", "iteration") == "aggregate") {
      if (entry->value("aggregate_name", "") == "median") return entry;
    } else {
      iterations.push_back(entry);
    }
  }
  if (iterations.empty()) return nullptr;
  std::sort(iterations.begin(), iterations.end(),
            [](const json* a, const json* b) { return a->value("real_time", 0.0) < b->value("real_time", 0.0); });
  return iterations[(iterations.size() - 1) / 2];
}

}  // namespace

std::string label_value(const std::string& label, const std::string& key) {
  const std::regex pattern("(^| )" + key + "=([^ ]+)");
  std::smatch match;
  return std::regex_search(label, match, pattern) ? match[2].str() : "";
}

RunCases read_run_cases(const std::string& option, const std::string& run_dir) {
  std::error_code error;
  if (!std::filesystem::is_directory(run_dir, error)) throw UsageError{option + ": '" + run_dir + "' is not a directory"};
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(run_dir))
    if (entry.is_regular_file() && entry.path().extension() == ".json") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  RunCases run;
  for (const auto& file_path : files) {
    const std::string path = file_path.string();
    std::ifstream stream(file_path);
    const std::string text((std::istreambuf_iterator<char>(stream)), std::istreambuf_iterator<char>());
    const json file = json::parse(non_finite_as_null(text), nullptr, false);
    if (file.is_discarded()) throw UsageError{option + ": " + path + " is not valid JSON"};
    if (file.is_object() && !file.contains("benchmarks")) {  // status.json and other JSON of the run
      ++run.other_files;
      continue;
    }
    if (!file.is_object() || !file["benchmarks"].is_array() || !file.contains("context") || !file["context"].is_object())
      throw UsageError{option + ": " + path + " is not a Google Benchmark JSON file (benchmarks and context)"};
    const std::size_t index = run.paths.size();
    run.paths.push_back(path);
    run.contexts.push_back(file["context"]);
    std::vector<std::pair<std::string, std::vector<const json*>>> cases;  // by run_name, in order
    for (const json& entry : file["benchmarks"]) {
      const std::string run_name = entry.value("run_name", entry.value("name", ""));
      auto found = std::find_if(cases.begin(), cases.end(), [&](const auto& c) { return c.first == run_name; });
      if (found == cases.end()) cases.push_back({run_name, {&entry}});
      else found->second.push_back(&entry);
    }
    for (const auto& [run_name, entries] : cases) {
      std::string problem;
      auto name = bench::parse_case_name(strip_gbench_suffixes(run_name), &problem);
      if (!name) throw UsageError{option + ": " + path + ": case name '" + run_name + "': " + problem};
      const json* entry = representative(entries);
      run.cases.push_back({std::move(*name), entry ? std::optional<json>(*entry) : std::nullopt, index});
    }
  }
  return run;
}

}  // namespace flopscope::cli
