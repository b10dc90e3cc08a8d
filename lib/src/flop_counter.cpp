#include "flopscope/flop_counter.hpp"

#include <algorithm>
#include <utility>

namespace flopscope {

std::string_view matmul_role_name(MatmulRole role) {
  switch (role) {
    case MatmulRole::forward: return "forward";
    case MatmulRole::backward_input: return "backward-input";
    case MatmulRole::backward_weight: return "backward-weight";
    case MatmulRole::recompute: return "recompute";
  }
  return "?";
}

std::string_view matmul_layout_name(MatmulLayout layout) {
  switch (layout) {
    case MatmulLayout::NN: return "NN";
    case MatmulLayout::NT: return "NT";
    case MatmulLayout::TN: return "TN";
  }
  return "?";
}

// ---- totals ----

FlopTotals& FlopTotals::operator+=(const FlopTotals& other) {
  pytorch_flops = checked_add(pytorch_flops, other.pytorch_flops, "PyTorch-convention FLOP total");
  flops = checked_add(flops, other.flops, "FLOP total");
  bytes = checked_add(bytes, other.bytes, "byte total");
  return *this;
}

FlopTotals& FlopTotals::operator+=(const OpRecord& record) {
  return *this += FlopTotals{record.pytorch_flops, record.flops, record.bytes};
}

FlopTotals FlopTotals::times(std::int64_t count) const {
  return {checked_mul<Count128>(pytorch_flops, count, "PyTorch-convention FLOP total"),
          checked_mul<Count128>(flops, count, "FLOP total"), checked_mul<Count128>(bytes, count, "byte total")};
}

FlopTotals operator+(FlopTotals a, const FlopTotals& b) { return a += b; }

namespace {

// `module` is `prefix` or lies below it.
bool in_module(std::string_view module, std::string_view prefix) {
  if (prefix.empty()) return true;
  return module.starts_with(prefix) && (module.size() == prefix.size() || module[prefix.size()] == '.');
}

}  // namespace

FlopTotals FlopCounter::totals() const {
  FlopTotals sum;
  for (const auto& record : records_) sum += record;
  return sum;
}

FlopTotals FlopCounter::totals(Pass pass) const { return totals("", pass); }

FlopTotals FlopCounter::totals(std::string_view module, Pass pass) const {
  FlopTotals sum;
  for (const auto& record : records_)
    if (record.pass == pass && in_module(record.module, module)) sum += record;
  return sum;
}

// ---- scopes ----
// Note [counting state]: one stack of open counters, one of module names and the current pass per
// thread; scopes push in their constructor and pop in their destructor, so they must nest.

namespace {

struct CountingState {
  std::vector<FlopCounter*> counters;
  std::vector<std::string> modules;
  Pass pass = Pass::forward;
};

thread_local CountingState state;

}  // namespace

CountingScope::CountingScope(FlopCounter& counter) { state.counters.push_back(&counter); }
CountingScope::~CountingScope() { state.counters.pop_back(); }

ModuleScope::ModuleScope(std::string_view name) { state.modules.emplace_back(name); }
ModuleScope::~ModuleScope() { state.modules.pop_back(); }

PassScope::PassScope(Pass pass) : previous_(state.pass) { state.pass = pass; }
PassScope::~PassScope() { state.pass = previous_; }

bool counting() { return !state.counters.empty(); }
Pass current_pass() { return state.pass; }

std::string current_module() {
  std::string path;
  for (const auto& name : state.modules) {
    if (name.empty()) continue;
    path += (path.empty() ? "" : ".") + name;
  }
  return path;
}

void report(OpRecord record) {
  if (!counting()) return;
  std::string path = current_module();
  if (!record.module.empty()) path += (path.empty() ? "" : ".") + record.module;
  record.module = std::move(path);
  std::vector<FlopCounter*> seen;
  for (FlopCounter* counter : state.counters) {
    if (std::find(seen.begin(), seen.end(), counter) != seen.end()) continue;  // nested twice: once
    seen.push_back(counter);
    counter->add(record);
  }
}

void report_elementwise(ElementwiseKind kind, Pass pass, std::int64_t rows, std::int64_t row_length, DType dtype) {
  if (!counting()) return;
  const Cost cost = elementwise_op_cost(kind, pass, rows, row_length, dtype);
  report({.op = std::string(elementwise_rule(kind).name),
          .module = {},
          .pass = pass,
          .shapes = {{rows, row_length}},
          .dtype = dtype,
          .pytorch_flops = 0,
          .flops = cost.flops,
          .bytes = cost.bytes,
          .matmuls = {}});
}

}  // namespace flopscope
