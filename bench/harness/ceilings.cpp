#include "ceilings.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <system_error>

namespace flopscope::bench {

using nlohmann::json;

void CeilingsCollector::add(const benchmark::BenchmarkReporter::Run& run) {
  auto label = labels_.find(run.run_name.function_name);
  if (label == labels_.end() || run.error_occurred) return;
  const bool memory = label->second.ceiling.kind == Bound::memory;
  auto counter = run.counters.find(memory ? "bytes_per_second" : "flops_per_second");
  if (counter == run.counters.end()) return;
  Values& values = values_[label->first];
  if (run.run_type == benchmark::BenchmarkReporter::Run::RT_Aggregate) {
    if (run.aggregate_name == "median") values.median = counter->second.value;
  } else {
    values.repetitions.push_back(counter->second.value);
  }
}

namespace {

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm parts{};
  gmtime_r(&now, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S+00:00", &parts);
  return text;
}

void write_atomically(const std::filesystem::path& path, const std::string& text) {
  const std::filesystem::path partial = path.string() + ".partial";
  {
    std::ofstream out(partial, std::ios::trunc);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + partial.string());
  }
  std::filesystem::rename(partial, path);
}

// The file the run's JSON ends up in: scripts/run_suite.py has each binary write
// ".<name>.partial" and renames it to <name> when the binary finishes.
std::string final_name(const std::string& out) {
  std::filesystem::path path(out);
  const std::string name = path.filename().string();
  if (name.size() > 9 && name.front() == '.' && name.ends_with(".partial"))
    return (path.parent_path() / name.substr(1, name.size() - 9)).string();
  return out;
}

}  // namespace

std::vector<std::string> CeilingsCollector::write(const std::string& dir, bool keep_existing,
                                                  const std::vector<DeviceContext>& devices,
                                                  const std::string& source) const {
  // device -> {"memory": {kind: best}, "compute": {mode: best}}
  std::map<std::string, std::map<std::string, std::map<std::string, double>>> best;
  for (const auto& [name, values] : values_) {
    if (!values.median && values.repetitions.empty()) continue;
    const double value = values.median ? *values.median : median_of(values.repetitions);
    const Label& label = labels_.at(name);
    auto& slot = best[label.device][label.ceiling.kind == Bound::memory ? "memory" : "compute"][label.ceiling.name];
    slot = std::max(slot, value);
  }
  std::vector<std::string> lines;
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) throw std::runtime_error("cannot create " + dir + ": " + error.message());
  for (const DeviceContext& ctx : devices) {
    auto found = best.find(ctx.device.str());
    if (found == best.end()) continue;
    const std::filesystem::path path = std::filesystem::path(dir) / (ctx.key + ".json");
    if (keep_existing && std::filesystem::exists(path)) {
      lines.push_back("kept the ceilings in " + path.string());
      continue;
    }
    json memory = {{"copy", nullptr}, {"triad", nullptr}}, compute = json::object();
    for (const auto& [kind, value] : found->second["memory"]) memory[kind] = value;
    for (const auto& [mode, value] : found->second["compute"]) compute[mode] = value;
    const json document = {{"schema", 1},           {"device_key", ctx.key}, {"device_name", ctx.name},
                           {"measured_at", utc_now()}, {"source", final_name(source)},     {"memory_bytes_per_second", memory},
                           {"compute", compute}};
    write_atomically(path, document.dump(2) + "\n");
    lines.push_back("ceilings written to " + path.string());
  }
  return lines;
}

}  // namespace flopscope::bench
