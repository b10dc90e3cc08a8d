#include "json_file.hpp"

#include <sstream>

#include "ceilings.hpp"  // write_file_atomically
#include "rounds.hpp"    // add_ci

namespace flopscope::bench {

WholeJsonFile::WholeJsonFile(std::string path) : path_(std::move(path)) {}

bool WholeJsonFile::ReportContext(const Context& context) {
  context_.emplace(context);
  save();
  return true;
}

std::vector<WholeJsonFile::Run>& WholeJsonFile::entries_of(const Run& run) {
  const std::string name = run.run_name.str();
  for (auto& [case_name, entries] : cases_)
    if (case_name == name) return entries;
  return cases_.emplace_back(name, std::vector<Run>{}).second;
}

void WholeJsonFile::ReportRuns(const std::vector<Run>& runs) {
  if (runs.empty()) return;
  std::vector<Run>& entries = entries_of(runs.front());
  std::vector<Run> aggregates;
  for (const Run& run : runs) (run.run_type == Run::RT_Aggregate ? aggregates : entries).push_back(run);
  add_ci(aggregates, entries);
  entries.insert(entries.end(), aggregates.begin(), aggregates.end());
  save();
}

void WholeJsonFile::set_case(std::vector<Run> entries) {
  if (entries.empty()) return;
  entries_of(entries.front()) = std::move(entries);
  save();
}

void WholeJsonFile::Finalize() { save(); }

void WholeJsonFile::save() {
  if (!context_) return;
  std::ostringstream text;
  benchmark::JSONReporter json;
  json.SetOutputStream(&text);
  json.SetErrorStream(&text);
  json.ReportContext(*context_);
  for (const auto& [name, entries] : cases_)
    if (!entries.empty()) json.ReportRuns(entries);
  json.Finalize();
  try {
    write_file_atomically(path_, text.str());
  } catch (const std::exception& error) {
    if (!error_) error_ = error.what();
  }
}

}  // namespace flopscope::bench
