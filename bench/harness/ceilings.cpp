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

#include <unistd.h>

namespace flopscope::bench {

using nlohmann::json;

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

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::filesystem::path target(path);
  const std::filesystem::path temporary =
      target.parent_path() / ("." + target.filename().string() + "." + std::to_string(getpid()) + ".tmp");
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << text;
    out.flush();
    if (!out) throw std::runtime_error("cannot write " + temporary.string());
  }
  std::error_code error;
  std::filesystem::rename(temporary, target, error);
  if (error) throw std::runtime_error("cannot rename " + temporary.string() + " to " + path + ": " + error.message());
}

CeilingsCollector::CeilingsCollector(std::map<std::string, Label> labels, std::string dir, bool keep_existing,
                                     const std::vector<DeviceContext>& devices, std::string source)
    : labels_(std::move(labels)), dir_(std::move(dir)), source_(final_name(source)), devices_(devices) {
  for (const DeviceContext& ctx : devices_)
    if (keep_existing && std::filesystem::exists(std::filesystem::path(dir_) / (ctx.key + ".json")))
      kept_.insert(ctx.key);
}

void CeilingsCollector::prepare() const {
  std::error_code error;
  std::filesystem::create_directories(dir_, error);
  if (error) throw std::runtime_error("cannot create " + dir_ + ": " + error.message());
}

void CeilingsCollector::add(const benchmark::BenchmarkReporter::Run& run) {
  auto label = labels_.find(run.run_name.function_name);
  if (label == labels_.end() || run.error_occurred) return;
  const bool memory = label->second.ceiling.kind == Bound::memory;
  auto counter = run.counters.find(memory ? "bytes_per_second" : "flops_per_second");
  if (counter == run.counters.end()) return;
  Values& values = values_[label->first];
  if (run.run_type == benchmark::BenchmarkReporter::Run::RT_Aggregate) {
    if (run.aggregate_name != "median") return;
    values.median = counter->second.value;
  } else {
    values.repetitions.push_back(counter->second.value);
  }
  for (const DeviceContext& ctx : devices_)
    if (ctx.device.str() == label->second.device) write(ctx);
}

void CeilingsCollector::write(const DeviceContext& ctx) {
  if (kept_.count(ctx.key)) return;
  // {"memory": {kind: best}, "compute": {mode: best}}
  std::map<std::string, std::map<std::string, double>> best;
  for (const auto& [name, values] : values_) {
    const Label& label = labels_.at(name);
    if (label.device != ctx.device.str() || (!values.median && values.repetitions.empty())) continue;
    const double value = values.median ? *values.median : median_of(values.repetitions);
    auto& slot = best[label.ceiling.kind == Bound::memory ? "memory" : "compute"][label.ceiling.name];
    slot = std::max(slot, value);
  }
  json memory = {{"copy", nullptr}, {"triad", nullptr}}, compute = json::object();
  for (const auto& [kind, value] : best["memory"]) memory[kind] = value;
  for (const auto& [mode, value] : best["compute"]) compute[mode] = value;
  const json document = {{"schema", 1},           {"device_key", ctx.key}, {"device_name", ctx.name},
                         {"measured_at", utc_now()}, {"source", source_},     {"memory_bytes_per_second", memory},
                         {"compute", compute}};
  const std::filesystem::path path = std::filesystem::path(dir_) / (ctx.key + ".json");
  write_file_atomically(path.string(), document.dump(2) + "\n");
  written_.insert(ctx.key);
}

std::vector<std::string> CeilingsCollector::lines() const {
  std::vector<std::string> lines;
  for (const DeviceContext& ctx : devices_) {
    const std::string path = (std::filesystem::path(dir_) / (ctx.key + ".json")).string();
    if (kept_.count(ctx.key))
      lines.push_back("kept the ceilings in " + path);
    else if (written_.count(ctx.key))
      lines.push_back("ceilings written to " + path);
  }
  return lines;
}

}  // namespace flopscope::bench
