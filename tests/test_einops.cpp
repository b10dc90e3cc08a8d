// einops: the lecture's examples, rearrange/reduce semantics, einsum against nested loops, the
// einsum FLOP plan against torch.utils.flop_counter's rules, and pattern errors.
#include <gtest/gtest.h>

#include "test_util.hpp"

#include <cmath>
#include <string>

#include "flopscope/broadcast.hpp"
#include "flopscope/checked.hpp"
#include "flopscope/einops.hpp"

namespace flopscope {
namespace {

using test_util::Values;

using test_util::error_of;

void expect_close(const Tensor& actual, const Tensor& expected, double tolerance = 1e-12) {
  ASSERT_EQ(actual.shape(), expected.shape());
  const auto a = actual.to_vector(), e = expected.to_vector();
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], e[i], tolerance * (1 + std::abs(e[i]))) << "element " << i;
}

// ---- the lecture -----------------------------------------------------------------------------

TEST(EinopsLecture, EinsumEqualsMatmulWithTranspose) {
  Tensor x = randn({2, 3, 4}, 1, {DType::f64});  // batch seq1 hidden
  Tensor y = randn({2, 5, 4}, 2, {DType::f64});  // batch seq2 hidden
  Tensor reference = matmul(x, y.transpose(-2, -1));
  Tensor named = einsum(x, y, "batch seq1 hidden, batch seq2 hidden -> batch seq1 seq2");
  Tensor classic = einsum(x, y, "bij,bkj->bik");
  Tensor ellipsis = einsum(x, y, "... seq1 hidden, ... seq2 hidden -> ... seq1 seq2");
  expect_close(named, reference);
  expect_close(classic, reference);
  expect_close(ellipsis, reference);
  // And the same FLOPs: 2 * batch * seq1 * hidden * seq2.
  const std::vector<Shape> shapes = {{2, 3, 4}, {2, 5, 4}};
  const auto expected = matmul_flops(x.shape(), y.transpose(-2, -1).shape());
  EXPECT_EQ(expected, 2 * 2 * 3 * 4 * 5);
  EXPECT_EQ(einsum_plan("batch seq1 hidden, batch seq2 hidden -> batch seq1 seq2", shapes).flops, expected);
  EXPECT_EQ(einsum_plan("bij,bkj->bik", shapes).flops, expected);
  EXPECT_EQ(einsum_plan("... seq1 hidden, ... seq2 hidden -> ... seq1 seq2", shapes).flops, expected);
  EXPECT_EQ(einsum_plan("bij,bkj->bik", shapes).output_shape, (Shape{2, 3, 5}));
}

TEST(EinopsLecture, ReduceSumOverHidden) {
  Tensor x = ones({2, 3, 4});
  Tensor y = reduce(x, "... hidden -> ...", "sum");
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(y.to_vector(), Values(6, 4.0));
  Tensor r = randn({2, 3, 4}, 3, {DType::f64});
  expect_close(reduce(r, "... hidden -> ...", "sum"), einsum(r, "... hidden -> ..."));
}

TEST(EinopsLecture, RearrangeHeadsRoundTrip) {
  Tensor x = randn({2, 3, 8}, 4, {DType::f64});  // batch seq total_hidden
  Tensor w = randn({4, 4}, 5, {DType::f64});     // hidden1 hidden2
  RearrangeResult split = rearrange(x, "... (heads hidden1) -> ... heads hidden1", {{"heads", 2}});
  EXPECT_EQ(split.tensor.shape(), (Shape{2, 3, 2, 4}));
  EXPECT_TRUE(split.is_view);
  EXPECT_TRUE(split.tensor.same_storage(x));
  Tensor mixed = einsum(split.tensor, w, "... hidden1, hidden1 hidden2 -> ... hidden2");
  EXPECT_EQ(mixed.shape(), (Shape{2, 3, 2, 4}));
  RearrangeResult merged = rearrange(mixed, "... heads hidden2 -> ... (heads hidden2)");
  EXPECT_EQ(merged.tensor.shape(), (Shape{2, 3, 8}));
  EXPECT_TRUE(merged.is_view);
  // Against the same computation by hand: per head, x_head @ w.
  for (std::int64_t h = 0; h < 2; ++h) {
    Tensor head = matmul(x.slice(-1, 4 * h, 4 * h + 4), w);
    expect_close(merged.tensor.slice(-1, 4 * h, 4 * h + 4).contiguous(), head);
  }
  // The identity round trip gives x back.
  RearrangeResult back = rearrange(split.tensor, "... heads hidden1 -> ... (heads hidden1)");
  EXPECT_EQ(back.tensor.to_vector(), x.to_vector());
  EXPECT_TRUE(back.tensor.same_storage(x));
}

// ---- rearrange -------------------------------------------------------------------------------

TEST(Rearrange, ViewsAndCopies) {
  Tensor x = arange(24).view({2, 3, 4});
  RearrangeResult t = rearrange(x, "b h w -> w h b");  // a permute: always a view
  EXPECT_TRUE(t.is_view);
  EXPECT_EQ(t.tensor.strides(), (Strides{1, 4, 12}));
  RearrangeResult merged = rearrange(x, "b h w -> b (h w)");
  EXPECT_TRUE(merged.is_view);
  EXPECT_EQ(merged.tensor.shape(), (Shape{2, 12}));
  RearrangeResult swapped = rearrange(x, "b h w -> b (w h)");  // needs a copy
  EXPECT_FALSE(swapped.is_view);
  EXPECT_EQ(swapped.tensor.shape(), (Shape{2, 12}));
  EXPECT_EQ(swapped.tensor.at({0, 1}), 4);  // (w=0, h=1)
  RearrangeResult split = rearrange(x, "b h (w1 w2) -> b w1 h w2", {{"w2", 2}});
  EXPECT_TRUE(split.is_view);
  EXPECT_EQ(split.tensor.shape(), (Shape{2, 2, 3, 2}));
  EXPECT_EQ(split.tensor.at({1, 1, 2, 0}), x.at({1, 2, 2}));
  RearrangeResult unit = rearrange(x, "b h w -> b 1 h w ()");
  EXPECT_EQ(unit.tensor.shape(), (Shape{2, 1, 3, 4, 1}));
  EXPECT_TRUE(unit.is_view);
  EXPECT_EQ(rearrange(unit.tensor, "b 1 h w () -> (b h) w").tensor.shape(), (Shape{6, 4}));
  EXPECT_EQ(rearrange(x, "b ... -> b (...)").tensor.shape(), (Shape{2, 12}));
  EXPECT_EQ(rearrange(x, "... -> ...").tensor.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(rearrange(x, "b h w -> (b h w)").tensor.to_vector(), x.to_vector());
  // From a non-contiguous input: a split is still a view.
  Tensor y = x.transpose(0, 2);  // [4, 3, 2]
  RearrangeResult s = rearrange(y, "(a b) h w -> a b h w", {{"a", 2}});
  EXPECT_TRUE(s.is_view);
  EXPECT_EQ(s.tensor.strides(), (Strides{2, 1, 4, 12}));
}

TEST(Rearrange, Errors) {
  Tensor x = arange(24).view({2, 3, 4});
  std::string m = error_of([&] { rearrange(x, "b h w -> b h"); });
  EXPECT_NE(m.find("rearrange pattern 'b h w -> b h': axis 'w' appears on the left but not on the right (at position 4)"),
            std::string::npos) << m;
  m = error_of([&] { rearrange(x, "b h -> b h"); });
  EXPECT_NE(m.find("[2, 3, 4]"), std::string::npos) << m;
  m = error_of([&] { rearrange(x, "b h (w1 w2) -> b h w1 w2"); });
  EXPECT_NE(m.find("cannot infer the lengths of both 'w1' and 'w2'"), std::string::npos) << m;
  m = error_of([&] { rearrange(x, "b h (w1 w2) -> b h w1 w2", {{"w1", 3}}); });
  EXPECT_NE(m.find("not divisible by 3"), std::string::npos) << m;
  m = error_of([&] { rearrange(x, "b (h -> b h"); });
  EXPECT_NE(m.find("'(' is not closed (at position 2)"), std::string::npos) << m;
  m = error_of([&] { rearrange(x, "b h w -> b h w", {{"q", 2}}); });
  EXPECT_NE(m.find("axis 'q' is given a length"), std::string::npos) << m;
  m = error_of([&] { rearrange(x, "b h w b -> b h w"); });
  EXPECT_NE(m.find("axis 'b' appears more than once on the left (at position 6)"), std::string::npos) << m;
  m = error_of([&] { rearrange(x, "b h w"); });
  EXPECT_NE(m.find("expected '->'"), std::string::npos) << m;
  m = error_of([&] { rearrange(x, "b h w -> b h w z"); });
  EXPECT_NE(m.find("axis 'z' appears on the right but not on the left (at position 15)"), std::string::npos) << m;
  m = error_of([&] { rearrange(x, "b h w -> b h w 2"); });
  EXPECT_NE(m.find("anonymous axis of length 2"), std::string::npos) << m;
  m = error_of([&] { rearrange(x, "b h w -> b h w $"); });
  EXPECT_NE(m.find("unexpected character '$' (at position 15)"), std::string::npos) << m;
  try {
    rearrange(x, "b (h -> b h");
    FAIL();
  } catch (const PatternError& e) {
    EXPECT_EQ(e.position(), 2u);
    EXPECT_EQ(e.caret(), "  b (h -> b h\n    ^");
  }
}

// ---- reduce ----------------------------------------------------------------------------------

TEST(Reduce, EveryReductionAgainstLoops) {
  Tensor x = randn({3, 4, 5}, 6, {DType::f64});
  for (Reduction reduction : {Reduction::sum, Reduction::mean, Reduction::max, Reduction::min, Reduction::prod}) {
    Tensor y = reduce(x, "a b c -> c a", reduction);  // reduce b, output in the order (c, a)
    ASSERT_EQ(y.shape(), (Shape{5, 3}));
    for (std::int64_t c = 0; c < 5; ++c)
      for (std::int64_t a = 0; a < 3; ++a) {
        double acc = x.at({a, 0, c});
        for (std::int64_t b = 1; b < 4; ++b) {
          const double v = x.at({a, b, c});
          switch (reduction) {
            case Reduction::sum:
            case Reduction::mean: acc += v; break;
            case Reduction::prod: acc *= v; break;
            case Reduction::max: acc = std::max(acc, v); break;
            case Reduction::min: acc = std::min(acc, v); break;
          }
        }
        if (reduction == Reduction::mean) acc /= 4;
        ASSERT_NEAR(y.at({c, a}), acc, 1e-12);
      }
  }
}

TEST(Reduce, PoolingGroupsAndAll) {
  Tensor x = arange(16).view({4, 4});
  Tensor pooled = reduce(x, "(h 2) (w 2) -> h w", "max");
  EXPECT_EQ(pooled.to_vector(), (Values{5, 7, 13, 15}));
  EXPECT_EQ(reduce(x, "h w -> ", "sum").item(), 120);
  EXPECT_EQ(reduce(x, "h w -> ", "sum").dim(), 0);
  EXPECT_EQ(reduce(x, "h w -> h 1", "mean").shape(), (Shape{4, 1}));
  EXPECT_EQ(reduce(x, "h w -> (w h)", "min").to_vector(), x.t().contiguous().to_vector());  // nothing reduced
  EXPECT_EQ(reduce(x.t(), "w h -> h", "sum").to_vector(), (Values{6, 22, 38, 54}));
  EXPECT_EQ(reduce(arange(6, {DType::bf16}).view({2, 3}), "a b -> a", "sum").dtype(), DType::bf16);
  Tensor nan = from_values({1, NAN, 3});
  EXPECT_TRUE(std::isnan(reduce(nan, "a ->", "max").item()));
  EXPECT_THROW(reduce(x, "h w -> h", "median"), std::invalid_argument);
  EXPECT_THROW(reduce(x, "h w -> h z", "sum"), PatternError);
}

// ---- einsum against nested loops -------------------------------------------------------------

TEST(Einsum, AgainstNestedLoops) {
  const auto opt = TensorOptions{DType::f64};
  for (std::uint64_t seed = 0; seed < 4; ++seed) {
    const std::int64_t b = 2 + static_cast<std::int64_t>(seed % 2), i = 3, j = 2 + static_cast<std::int64_t>(seed), k = 4, l = 3;
    Tensor A = randn({b, i, j}, 10 + seed, opt), B = randn({b, j, k}, 20 + seed, opt);
    {  // bmm
      Tensor out = einsum(A, B, "bij,bjk->bik");
      Tensor ref = zeros({b, i, k}, opt);
      for (std::int64_t p = 0; p < b; ++p)
        for (std::int64_t q = 0; q < i; ++q)
          for (std::int64_t r = 0; r < k; ++r) {
            double sum = 0;
            for (std::int64_t s = 0; s < j; ++s) sum += A.at({p, q, s}) * B.at({p, s, r});
            ref.set({p, q, r}, sum);
          }
      expect_close(out, ref);
      expect_close(einsum(A, B, "batch left inner, batch inner right -> batch left right"), ref);
      expect_close(einsum(A, B, "bij,bjk->bik"), einsum(A, B, "bij,bjk...->...bik"));
      expect_close(einsum(A.transpose(1, 2), B, "bji,bjk->bik"), ref);  // strided operand
    }
    Tensor S = randn({j, j}, 30 + seed, opt), T = randn({b, j, j}, 40 + seed, opt);
    {  // repeated axes: diagonal, trace, batched diagonal times a vector
      Tensor diag = einsum(S, "ii->i"), trace = einsum(S, "ii->");
      double sum = 0;
      for (std::int64_t q = 0; q < j; ++q) {
        EXPECT_EQ(diag.at({q}), S.at({q, q}));
        sum += S.at({q, q});
      }
      EXPECT_NEAR(trace.item(), sum, 1e-12);
      Tensor v = randn({b, j}, 50 + seed, opt);
      Tensor out = einsum(T, v, "bii,bi->b");
      for (std::int64_t p = 0; p < b; ++p) {
        double s = 0;
        for (std::int64_t q = 0; q < j; ++q) s += T.at({p, q, q}) * v.at({p, q});
        EXPECT_NEAR(out.at({p}), s, 1e-12);
      }
    }
    {  // summed axes: everything, one operand's private axis, outer product
      Tensor all = einsum(A, "bij->");
      double sum = 0;
      for (double x : A.to_vector()) sum += x;
      EXPECT_NEAR(all.item(), sum, 1e-12);
      Tensor C = randn({j, l}, 60 + seed, opt);
      Tensor out = einsum(A, C, "bij,jl->i");  // b and l summed, j contracted
      for (std::int64_t q = 0; q < i; ++q) {
        double s = 0;
        for (std::int64_t p = 0; p < b; ++p)
          for (std::int64_t r = 0; r < j; ++r)
            for (std::int64_t t = 0; t < l; ++t) s += A.at({p, q, r}) * C.at({r, t});
        EXPECT_NEAR(out.at({q}), s, 1e-12);
      }
      Tensor u = randn({i}, 70 + seed, opt), w = randn({l}, 80 + seed, opt);
      Tensor outer = einsum(u, w, "i,j->ij");
      for (std::int64_t q = 0; q < i; ++q)
        for (std::int64_t t = 0; t < l; ++t) EXPECT_EQ(outer.at({q, t}), u.at({q}) * w.at({t}));
    }
    {  // three operands, and ellipsis with batch broadcasting
      Tensor P = randn({i, j}, 90 + seed, opt), Q = randn({j, k}, 91 + seed, opt), R = randn({k, l}, 92 + seed, opt);
      expect_close(einsum(P, Q, R, "ij,jk,kl->il"), matmul(matmul(P, Q), R), 1e-10);
      expect_close(einsum(P, Q, "ij,jk"), matmul(P, Q), 1e-10);  // implicit output: the axes used once, i k
      EXPECT_EQ(einsum(A, B, "bij,bjk").shape(), (Shape{i, k}));  // b is used twice: summed
      Tensor X = randn({b, 1, i, j}, 93 + seed, opt), Y = randn({3, j, k}, 94 + seed, opt);
      expect_close(einsum(X, Y, "...ij,...jk->...ik"), matmul(X, Y), 1e-10);
    }
  }
}

// ---- einsum FLOPs (Note [einsum FLOPs]) ------------------------------------------------------

std::int64_t flops(std::string_view pattern, std::vector<Shape> shapes, EinsumOrder order = EinsumOrder::left_to_right) {
  return einsum_plan(pattern, shapes, order).flops;
}

TEST(EinsumFlops, AsTorchFlopCounter) {
  EXPECT_EQ(flops("ij,jk->ik", {{3, 4}, {4, 5}}), 2 * 3 * 4 * 5);                 // mm
  EXPECT_EQ(flops("bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}), 2 * 2 * 3 * 4 * 5);     // bmm
  EXPECT_EQ(flops("ij,j->i", {{3, 4}, {4}}), 2 * 3 * 4);                           // bmm with n = 1
  EXPECT_EQ(flops("i,i->", {{7}, {7}}), 2 * 7);
  EXPECT_EQ(flops("ij,ij->ij", {{3, 4}, {3, 4}}), 0);                              // a mul: not counted
  EXPECT_EQ(flops("i,j->ij", {{3}, {4}}), 0);                                      // outer product: mul
  EXPECT_EQ(flops("ij,jk->i", {{3, 4}, {4, 5}}), 2 * 3 * 4);                       // k summed out of B first
  EXPECT_EQ(flops("ii->", {{5, 5}}), 0);                                           // one operand: sums only
  EXPECT_EQ(flops("...ij,...jk->...ik", {{6, 1, 3, 4}, {5, 4, 2}}), 2 * 30 * 3 * 4 * 2);
  // x @ y.transpose(-2, -1) and its einsum.
  EXPECT_EQ(flops("bsh,bth->bst", {{8, 128, 64}, {8, 128, 64}}),
            matmul_flops(Shape{8, 128, 64}, Shape{8, 64, 128}));
  // A size-1 contracted axis broadcasts: nothing left to contract, so torch multiplies.
  EXPECT_EQ(flops("ij,jk->ik", {{3, 1}, {1, 5}}), 0);
}

TEST(EinsumFlops, ThreeOperandOrders) {
  // ((A B) C): 2*i*j*k + 2*i*k*l. With i = 100, j = 2, k = 100, l = 2 that is 80000, while
  // (A (B C)) costs 2*j*k*l + 2*i*j*l = 1600.
  const std::vector<Shape> shapes = {{100, 2}, {2, 100}, {100, 2}};
  EinsumPlan left = einsum_plan("ij,jk,kl->il", shapes);
  EXPECT_EQ(left.flops, 2 * 100 * 2 * 100 + 2 * 100 * 100 * 2);
  ASSERT_EQ(left.steps.size(), 2u);
  EXPECT_EQ(left.steps[0].kind, "bmm");
  EXPECT_EQ(left.steps[0].left, "x0[i j]");
  EXPECT_EQ(left.steps[0].right, "x1[j k]");
  EXPECT_EQ(left.steps[0].k_axes, (std::vector<std::string>{"j"}));
  EinsumPlan best = einsum_plan("ij,jk,kl->il", shapes, EinsumOrder::optimal);
  EXPECT_EQ(best.flops, 2 * 2 * 100 * 2 + 2 * 100 * 2 * 2);
  EXPECT_EQ(best.output_shape, (Shape{100, 2}));
  // An axis shared by all three is a batch axis of the first pair and contracted by the second.
  EXPECT_EQ(flops("bi,bi,bi->", {{4, 3}, {4, 3}, {4, 3}}), 0 + 2 * 12);
}

TEST(EinsumFlops, PlanDetails) {
  EinsumPlan plan = einsum_plan("bij,bkj->bik", std::vector<Shape>{{2, 3, 4}, {2, 5, 4}});
  EXPECT_EQ(plan.form, EinsumForm::classic);
  ASSERT_EQ(plan.steps.size(), 1u);
  const EinsumStep& step = plan.steps[0];
  EXPECT_EQ(step.kind, "bmm");
  EXPECT_EQ(step.batch_axes, (std::vector<std::string>{"b"}));
  EXPECT_EQ(step.m_axes, (std::vector<std::string>{"i"}));
  EXPECT_EQ(step.k_axes, (std::vector<std::string>{"j"}));
  EXPECT_EQ(step.n_axes, (std::vector<std::string>{"k"}));
  EXPECT_EQ(step.batch * step.m * step.k * step.n, 2 * 3 * 4 * 5);
  EXPECT_EQ(plan.input_axes[1], (std::vector<std::string>{"b", "k", "j"}));
  EinsumPlan named = einsum_plan("batch seq1 hidden, batch seq2 hidden -> batch seq1 seq2",
                                 std::vector<Shape>{{2, 3, 4}, {2, 5, 4}});
  EXPECT_EQ(named.form, EinsumForm::named);
  EXPECT_EQ(named.output_axes, (std::vector<std::string>{"batch", "seq1", "seq2"}));
  EinsumPlan summed = einsum_plan("ij,jk->i", std::vector<Shape>{{3, 4}, {4, 5}});
  EXPECT_EQ(summed.steps[0].kind, "sum");
  EXPECT_EQ(summed.elementwise_flops, 20 - 4);
  // Summing an empty operand takes no additions (fuzz/regressions/einsum: it counted -1).
  EXPECT_EQ(einsum_plan("bi->", std::vector<Shape>{{0, 5}}).elementwise_flops, 0);
  // Forms: spaces between names, or a digit or '_' in one, mean named.
  EXPECT_EQ(einsum_plan("hidden,hidden->", std::vector<Shape>{{4}, {4}}, EinsumOrder::left_to_right, EinsumForm::named).flops, 8);
  EXPECT_EQ(einsum_plan("i j, j k -> i k", std::vector<Shape>{{2, 3}, {3, 4}}).form, EinsumForm::named);
  EXPECT_EQ(einsum_plan("x_1,x_1->", std::vector<Shape>{{4}, {4}}).form, EinsumForm::named);
}

TEST(EinsumFlops, OverflowIsAnErrorNotAWrappedCount) {
  constexpr std::int64_t k2_21 = std::int64_t{1} << 21, k2_30 = std::int64_t{1} << 30, k2_40 = std::int64_t{1} << 40;
  // 2 * 2^21 * 2^21 * 2^21 = 2^64: one more than int64 holds (it used to print "FLOPs: 0").
  EXPECT_EQ(error_of([&] { einsum_plan("ij,jk->ik", std::vector<Shape>{{k2_21, k2_21}, {k2_21, k2_21}}); }),
            "bmm FLOPs: 8796093022208 x 2097152 overflows 64 bits");
  // A zero-size axis makes a count 0 whatever the others ([2^40, 2^40, 0] is empty), in every
  // order (fuzz/regressions/einsum).
  const EinsumPlan empty = einsum_plan("i,jk->ijk", std::vector<Shape>{{k2_40}, {k2_40, 0}});
  EXPECT_EQ(empty.elementwise_flops, 0);
  EXPECT_EQ(empty.output_shape, (Shape{k2_40, k2_40, 0}));
  // 2^62 FLOPs fit: exact.
  EXPECT_EQ(einsum_plan("ij,jk->ik", std::vector<Shape>{{k2_30, k2_30}, {k2_30, 2}}).flops, std::int64_t{1} << 62);
  // An operand of 2^90 elements cannot exist (its sum used to count "-1 additions").
  EXPECT_EQ(error_of([&] { einsum_plan("ijk->", std::vector<Shape>{{k2_30, k2_30, k2_30}}); }),
            "element count of an operand: 1152921504606846976 x 1073741824 overflows 64 bits");
  // Every operand fits, the output does not.
  EXPECT_THROW(einsum_plan("i,j->ij", std::vector<Shape>{{k2_40}, {k2_40}}), SizeOverflow);
  // The optimal search skips an order whose counts overflow and keeps one that fits: ((x0 x1) x2)
  // costs 2^83 FLOPs, (x0 (x1 x2)) 2^44.
  const std::vector<Shape> chain = {{k2_40, 2}, {2, k2_40}, {k2_40, 2}};
  EXPECT_THROW(einsum_plan("ij,jk,kl->il", chain), SizeOverflow);
  EXPECT_EQ(einsum_plan("ij,jk,kl->il", chain, EinsumOrder::optimal).flops, std::int64_t{1} << 44);
  // When no order fits, the search says so.
  EXPECT_THROW(einsum_plan("ij,jk,kl->il", std::vector<Shape>{{k2_40, 1 << 20}, {1 << 20, k2_40}, {k2_40, 1 << 20}},
                           EinsumOrder::optimal),
               SizeOverflow);
}

TEST(Einops, LengthsThatOverflowAreErrors) {
  // Views of one element with huge shapes (stride 0): no memory, every size computation.
  const Tensor x = zeros({1}).expand({std::int64_t{1} << 40, std::int64_t{1} << 20});
  EXPECT_EQ(rearrange(x, "a b -> (a b)").tensor.shape(), (Shape{std::int64_t{1} << 60}));
  EXPECT_THROW(rearrange(x, "a b -> (a b b2)", {}), PatternError);  // b2 is not on the left
  EXPECT_EQ(error_of([&] { rearrange(x, "(a c) b -> a c b", {{"c", std::int64_t{1} << 62}, {"a", 4}}); }),
            "axis lengths of a group: 4 x 4611686018427387904 overflows 64 bits");
  // An anonymous axis too long for 64 bits is a pattern error, not std::out_of_range.
  EXPECT_NE(error_of([&] { reduce(x, "a b 99999999999999999999 -> a", "sum"); }).find("does not fit 64 bits"),
            std::string::npos);
  EXPECT_THROW(zeros({1}).expand({std::int64_t{1} << 40, std::int64_t{1} << 40}), SizeOverflow);
}

TEST(EinsumErrors, NameThePatternAndPosition) {
  const std::vector<Shape> two = {{2, 3}, {3, 4}};
  auto message = [&](std::string_view pattern, std::vector<Shape> shapes) {
    return error_of([&] { einsum_plan(pattern, shapes); });
  };
  EXPECT_EQ(message("ij$,jk->ik", two),
            "einsum pattern 'ij$,jk->ik': invalid subscript '$' (classic subscripts are letters a-z, A-Z) (at position 2)");
  EXPECT_NE(message("ij,jk->iz", two).find("output axis 'z' does not appear in any operand (at position 8)"), std::string::npos);
  EXPECT_NE(message("ij,jk->ii", two).find("output axis 'i' appears more than once (at position 8)"), std::string::npos);
  EXPECT_NE(message("ij,jk", {{2, 3}}).find("names 2 operands but 1 were given"), std::string::npos);
  EXPECT_NE(message("ijk,jk->ik", two).find("operand 0 has shape [2, 3] (2 dimensions) but its subscripts name 3 (at position 0)"),
            std::string::npos);
  EXPECT_NE(message("ij,ik->jk", two).find("axis 'i' has size 3 in operand 1"), std::string::npos);
  EXPECT_NE(message("ij,jk->i.k", two).find("'.' that is not part of '...' (at position 8)"), std::string::npos);
  EXPECT_NE(message("i...j...,jk->ik", two).find("'...' appears more than once"), std::string::npos);
  EXPECT_NE(message("ii,jk->ik", two).find("axis 'i' is repeated in operand 0 but its sizes differ (2 != 3)"), std::string::npos);
  EXPECT_NE(message("a b, b c", two).find("the named form needs '->'"), std::string::npos);
  EXPECT_NE(message("a 1b, b c -> a c", two).find("invalid axis name '1b'"), std::string::npos);
  EXPECT_NE(message("i(j),jk->ik", two).find("parentheses are not allowed"), std::string::npos);
  EXPECT_NE(message("ij,jk->ik->i", two).find("'->' appears more than once"), std::string::npos);
  EXPECT_THROW(einsum(zeros({2, 3}), zeros({3, 4}, {DType::f64}), "ij,jk->ik"), PatternError);
}

}  // namespace
}  // namespace flopscope
