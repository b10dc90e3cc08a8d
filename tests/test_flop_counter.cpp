// The FLOP counter and the rules it records with: PyTorch's flop-counter rules against the counts
// torch.utils.flop_counter.FlopCounterMode gave for the same shapes (PyTorch 2.15, written down
// here), the full count's table against hand counts, and the library's ops reporting into scopes.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "flopscope/accounting.hpp"
#include "flopscope/broadcast.hpp"
#include "flopscope/einops.hpp"
#include "flopscope/flop_counter.hpp"
#include "flopscope/sizes.hpp"

namespace flopscope {
namespace {

using V = std::vector<std::int64_t>;

// ---- PyTorch's rules ----

TEST(PytorchRules, MatchFlopCounterModeOnTheSameShapes) {
  // FlopCounterMode, torch 2.15: torch.matmul of (3,4)@(4) counts nothing (mv), (3)@(3,4) 24 (mm),
  // (2,1,3,4)@(5,4,2) 480 (bmm), (2,3,4)@(4,5) 240 (mm on the folded batch).
  EXPECT_EQ(pytorch_matmul_flops(V{3, 4}, V{4}), 0);
  EXPECT_EQ(pytorch_matmul_flops(V{4}, V{4}), 0);
  EXPECT_EQ(pytorch_matmul_flops(V{3}, V{3, 4}), 24);
  EXPECT_EQ(pytorch_matmul_flops(V{2, 1, 3, 4}, V{5, 4, 2}), 480);
  EXPECT_EQ(pytorch_matmul_flops(V{2, 3, 4}, V{4, 5}), 240);
  // scaled_dot_product_attention on q, k, v of (2, 4, 8, 16), causal: 32768 forward, 81920 backward.
  EXPECT_EQ(sdpa_forward_flops(2, 4, 8, 8, 16, 16), 32768);
  EXPECT_EQ(sdpa_backward_flops(2, 4, 8, 8, 16, 16), 81920);
  // By hand: forward two bmm of 2·(b·h)·s·s·d; backward five.
  EXPECT_EQ(sdpa_forward_flops(2, 4, 8, 8, 16, 16), 2 * (2 * 8 * 8 * 8 * 16));
  EXPECT_EQ(sdpa_backward_flops(2, 4, 8, 8, 16, 16), 5 * (2 * 8 * 8 * 8 * 16));
  EXPECT_EQ(bmm_flops(3, 4, 5, 6), 2 * 3 * 4 * 5 * 6);
}

TEST(PytorchRules, AttentionBytesReadQkvAndWriteTheOutput) {
  // q, k, v, out of 2·4·8·16 = 1024 elements each; logsumexp 2·4·8 f32 rows.
  EXPECT_EQ(sdpa_forward_cost(2, 4, 8, 8, 16, 16, DType::bf16).bytes, 4 * 1024 * 2 + 64 * 4);
  // Backward reads q, k, v, out, dout, writes dq, dk, dv.
  EXPECT_EQ(sdpa_backward_cost(2, 4, 8, 8, 16, 16, DType::bf16).bytes, 8 * 1024 * 2 + 64 * 4);
}

// ---- the full count's table ----

TEST(FullCountTable, OneRowPerKindInKindOrder) {
  std::set<std::string_view> names;
  for (std::size_t i = 0; i < elementwise_rules().size(); ++i) {
    const ElementwiseRule& rule = elementwise_rules()[i];
    EXPECT_EQ(static_cast<std::size_t>(rule.kind), i) << rule.name;
    EXPECT_TRUE(names.insert(rule.name).second) << rule.name;
    EXPECT_FALSE(rule.forward_formula.empty());
    EXPECT_FALSE(rule.backward_formula.empty());
  }
  EXPECT_EQ(elementwise_rules().size(), static_cast<std::size_t>(ElementwiseKind::embedding) + 1);
}

TEST(FullCountTable, CostsAgainstHandCounts) {
  // softmax over 6 rows of 10: max, subtract, exp, sum, divide per element; read x, write y.
  EXPECT_EQ(elementwise_op_cost(ElementwiseKind::softmax, Pass::forward, 6, 10, DType::f32), (Cost{300, 480}));
  // its backward: g·y, sum, subtract, ·y; read g and y, write dx.
  EXPECT_EQ(elementwise_op_cost(ElementwiseKind::softmax, Pass::backward, 6, 10, DType::f32), (Cost{240, 720}));
  // LayerNorm over GPT-2 small's 8192 x 768: 7 per element, 4 per row.
  EXPECT_EQ(elementwise_op_cost(ElementwiseKind::layer_norm, Pass::forward, 8192, 768, DType::bf16).flops,
            7 * 8192 * 768 + 4 * 8192);
  // nll: one addition per row, reads one element per row, writes nothing but the loss.
  EXPECT_EQ(elementwise_op_cost(ElementwiseKind::nll_loss, Pass::forward, 4, 50257, DType::f32), (Cost{4, 16}));
  // its backward writes the whole gradient of the logits.
  EXPECT_EQ(elementwise_op_cost(ElementwiseKind::nll_loss, Pass::backward, 4, 50257, DType::f32),
            (Cost{4, 4 * 50257 * 4}));
  // A residual add's backward costs nothing; the sum of two gradients one add per element.
  EXPECT_EQ(elementwise_op_cost(ElementwiseKind::add, Pass::backward, 5, 5, DType::f32), Cost{});
  EXPECT_EQ(elementwise_op_cost(ElementwiseKind::grad_accumulate, Pass::backward, 5, 5, DType::f32), (Cost{25, 300}));
  EXPECT_THROW(elementwise_op_cost(ElementwiseKind::gelu_tanh, Pass::forward, std::int64_t{1} << 40,
                                   std::int64_t{1} << 40, DType::f32),
               SizeOverflow);
}

// ---- the counter ----

TEST(FlopCounter, LibraryOpsReportIntoAnOpenScope) {
  const Tensor x = ones({2, 3, 4}), w = ones({4, 5}), v = ones({4});
  FlopCounter counter;
  {
    CountingScope counting(counter);
    matmul(x, w);  // 2·6·4·5 = 240, as PyTorch
    matmul(x, v);  // mv: PyTorch counts nothing; 2·6·4 multiply-adds in the full count
    add(x, ones({4}));
    einsum(x, w, "b i j, j k -> b i k");
    reduce(x, "b i j -> b", "mean");  // 24 - 2 additions, 2 divisions
  }
  matmul(x, w);  // no scope open: not counted
  const auto& records = counter.records();
  ASSERT_EQ(records.size(), 5u);
  EXPECT_EQ(records[0].op, "matmul");
  EXPECT_EQ(records[0].pytorch_flops, 240);
  EXPECT_EQ(records[0].flops, 240);
  EXPECT_EQ(records[0].bytes, (24 + 20 + 30) * 4);
  EXPECT_EQ(records[0].matmuls, (std::vector<MatmulShape>{{"matmul", MatmulRole::forward, MatmulLayout::NN, 2, 3, 5, 4}}));
  EXPECT_EQ(records[1].pytorch_flops, 0);
  EXPECT_EQ(records[1].flops, 2 * 6 * 4);
  EXPECT_EQ(records[2].op, "add");
  EXPECT_EQ(records[2].pytorch_flops, 0);
  EXPECT_EQ(records[2].flops, 24);
  EXPECT_EQ(records[2].bytes, (24 + 4 + 24) * 4);
  EXPECT_EQ(records[3].op, "einsum");
  EXPECT_EQ(records[3].pytorch_flops, 240);
  EXPECT_EQ(records[4].op, "reduce");
  EXPECT_EQ(records[4].flops, 24);
  EXPECT_EQ(records[4].bytes, (24 + 2) * 4);
  EXPECT_EQ(counter.totals().pytorch_flops, 480);
  EXPECT_EQ(counter.totals().flops, 240 + 48 + 24 + 240 + 24);
}

TEST(FlopCounter, ScopesNestModulesJoinAndPassesTag) {
  FlopCounter outer, inner;
  {
    CountingScope a(outer);
    ModuleScope model("model");
    report_elementwise(ElementwiseKind::softmax, Pass::forward, 2, 3, DType::f32);
    {
      CountingScope b(inner);
      CountingScope again(outer);  // the same counter twice records once
      ModuleScope block("h.0");
      PassScope backward(Pass::backward);
      EXPECT_EQ(current_pass(), Pass::backward);
      EXPECT_EQ(current_module(), "model.h.0");
      matmul(ones({2, 2}), ones({2, 2}));
    }
    EXPECT_EQ(current_pass(), Pass::forward);
    ModuleScope other("h.01");
    report_elementwise(ElementwiseKind::gelu_tanh, Pass::forward, 1, 1, DType::f32);
  }
  EXPECT_FALSE(counting());
  ASSERT_EQ(outer.records().size(), 3u);
  ASSERT_EQ(inner.records().size(), 1u);
  EXPECT_EQ(outer.records()[0].module, "model");
  EXPECT_EQ(outer.records()[1].module, "model.h.0");
  EXPECT_EQ(outer.records()[1].pass, Pass::backward);
  EXPECT_EQ(outer.records()[2].module, "model.h.01");
  // totals by module: "model.h.0" covers itself, not "model.h.01".
  EXPECT_EQ(outer.totals("model.h.0", Pass::backward).pytorch_flops, 16);
  EXPECT_EQ(outer.totals("model.h.0", Pass::forward).flops, 0);
  EXPECT_EQ(outer.totals("model", Pass::forward).flops, 30 + 9);
  EXPECT_EQ(outer.totals(Pass::backward), inner.totals());
}

TEST(FlopCounter, TotalsAreCheckedNotWrapped) {
  const Count128 big = Count128{1} << 126;
  FlopTotals totals{big, big, 0};
  EXPECT_THROW(totals += totals, SizeOverflow);
  EXPECT_THROW(FlopTotals({big, 0, 0}).times(4), SizeOverflow);
  EXPECT_EQ(FlopTotals({3, 4, 5}).times(2), (FlopTotals{6, 8, 10}));
  EXPECT_EQ(format_thousands128(Count128{315} * 1'000'000'000'000 * 1'000'000'000), "315,000,000,000,000,000,000,000");
  EXPECT_EQ(format_thousands128(-1234), "-1,234");
}

}  // namespace
}  // namespace flopscope
