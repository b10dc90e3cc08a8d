// The FLOP counter: a scoped recorder that every op of the library reports into (what
// torch.utils.flop_counter.FlopCounterMode is for PyTorch). Each report is one OpRecord: the op,
// the module it ran in, the pass, its operand shapes, dtype, FLOPs in two conventions, bytes, and
// the matmuls it runs.
//
//   FlopCounter counter;
//   {
//     CountingScope counting(counter);
//     ModuleScope attn("h.0.attn");
//     Tensor y = matmul(x, w);          // reports "matmul" under module "h.0.attn"
//   }
//   counter.totals().pytorch_flops;     // what FlopCounterMode would count
//   counter.totals().flops;             // the full count
//
// Two conventions, always both (Note [PyTorch's flop counter] and Note [full count] in
// accounting.hpp): `pytorch_flops` is what torch.utils.flop_counter counts for the op (matmul-class
// ops only: mm, bmm, addmm, baddbmm, scaled dot-product attention, convolution; 0 for everything
// else); `flops` is the full count, the same plus elementwise ops, bias, softmax, norms and
// activations at their per-element costs. Every figure comes from accounting.hpp's rules.
//
// Scopes are per thread and nest. A report goes to every counter whose CountingScope is open on
// the reporting thread (once each, however often it is nested), tagged with the open ModuleScopes
// joined by "." and with the innermost PassScope's pass (forward when none is open). Without an
// open CountingScope, reporting does nothing, so ops pay for counting only when someone counts.
// Totals are 128-bit (checked.hpp): a run's totals overflow int64 long before one op does.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "flopscope/accounting.hpp"
#include "flopscope/checked.hpp"
#include "flopscope/dtype.hpp"
#include "flopscope/shape.hpp"

namespace flopscope {

// What a matmul computes in a training step: the forward product, the gradient of its input
// (activation), the gradient of its weight, or a forward product recomputed in the backward pass
// (fused attention's scores).
enum class MatmulRole { forward, backward_input, backward_weight, recompute };
// "forward", "backward-input", "backward-weight", "recompute"
std::string_view matmul_role_name(MatmulRole role);

// C (m x n) = op(A) · op(B) with A and B stored row-major: NN is A·B, NT is A·Bᵀ (B stored n x k,
// as nn.Linear's weight), TN is Aᵀ·B (A stored k x m). The bench names' layout=NN|NT|TN.
enum class MatmulLayout { NN, NT, TN };
std::string_view matmul_layout_name(MatmulLayout layout);  // "NN", "NT", "TN"

// One matmul (or `batch` independent ones of one shape: a bmm).
struct MatmulShape {
  std::string name;  // what it computes: "qkv", "scores", ...
  MatmulRole role = MatmulRole::forward;
  MatmulLayout layout = MatmulLayout::NN;
  std::int64_t batch = 1, m = 0, n = 0, k = 0;
  std::int64_t flops() const { return bmm_flops(batch, m, n, k); }  // 2·batch·m·n·k
  friend bool operator==(const MatmulShape&, const MatmulShape&) = default;
};

struct OpRecord {
  std::string op;      // "linear", "bmm", "sdpa", "softmax", "matmul", "add", "einsum", ...
  std::string module;  // the open ModuleScopes joined by "." ("" at top level)
  Pass pass = Pass::forward;
  std::vector<Shape> shapes;  // operand shapes, as the op saw them
  DType dtype = DType::f32;
  std::int64_t pytorch_flops = 0;  // torch.utils.flop_counter's count
  std::int64_t flops = 0;          // the full count (>= pytorch_flops)
  std::int64_t bytes = 0;          // fewest bytes (DESIGN.md)
  std::vector<MatmulShape> matmuls;  // the matmuls the op runs (none for elementwise ops)
};

struct FlopTotals {
  Count128 pytorch_flops = 0, flops = 0, bytes = 0;
  FlopTotals& operator+=(const FlopTotals& other);  // checked: SizeOverflow rather than a wrap
  FlopTotals& operator+=(const OpRecord& record);
  FlopTotals times(std::int64_t count) const;       // checked
  friend bool operator==(const FlopTotals&, const FlopTotals&) = default;
};
FlopTotals operator+(FlopTotals a, const FlopTotals& b);

class FlopCounter {
 public:
  FlopCounter() = default;
  FlopCounter(const FlopCounter&) = delete;
  FlopCounter& operator=(const FlopCounter&) = delete;

  void add(OpRecord record) { records_.push_back(std::move(record)); }
  const std::vector<OpRecord>& records() const { return records_; }
  void clear() { records_.clear(); }

  FlopTotals totals() const;
  FlopTotals totals(Pass pass) const;
  // The ops recorded in `module` or below it ("h.0" covers "h.0.attn", not "h.01").
  FlopTotals totals(std::string_view module, Pass pass) const;

 private:
  std::vector<OpRecord> records_;
};

// While alive, ops reported on this thread are recorded into `counter` (as well as into the
// counters of enclosing scopes). Scopes must close in the reverse order of opening.
class CountingScope {
 public:
  explicit CountingScope(FlopCounter& counter);
  ~CountingScope();
  CountingScope(const CountingScope&) = delete;
  CountingScope& operator=(const CountingScope&) = delete;
};

// While alive, reports on this thread are tagged with `name` appended to the module path.
class ModuleScope {
 public:
  explicit ModuleScope(std::string_view name);
  ~ModuleScope();
  ModuleScope(const ModuleScope&) = delete;
  ModuleScope& operator=(const ModuleScope&) = delete;
};

// While alive, reports on this thread that do not say their pass are in `pass`.
class PassScope {
 public:
  explicit PassScope(Pass pass);
  ~PassScope();
  PassScope(const PassScope&) = delete;
  PassScope& operator=(const PassScope&) = delete;

 private:
  Pass previous_;
};

// True while a CountingScope is open on this thread.
bool counting();
Pass current_pass();
std::string current_module();

// Records `record` into every counter open on this thread, its module set to the current module
// path (with record.module, if any, appended). Does nothing when none is open.
void report(OpRecord record);

// A report of one elementwise op (accounting.hpp's table) over rows x row_length elements:
// pytorch_flops 0, the full count and bytes from elementwise_op_cost.
void report_elementwise(ElementwiseKind kind, Pass pass, std::int64_t rows, std::int64_t row_length, DType dtype);

}  // namespace flopscope
