// lib/'s communication accounting (comm.hpp) against the nccl-tests rules and hand-computed values.
#include <gtest/gtest.h>

#include <stdexcept>

#include "flopscope/comm.hpp"

using namespace flopscope;

TEST(Comm, BusFactorsAreNcclTestsRules) {
  // nccl-tests doc/PERFORMANCE.md: all-reduce 2(n-1)/n, all-gather/reduce-scatter/all-to-all (n-1)/n, else 1.
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_reduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_reduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_gather, 8), 0.875);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::reduce_scatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_to_all, 2), 0.5);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::broadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::reduce, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::send_recv, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_reduce, 1), 0.0);
  EXPECT_THROW(bus_bandwidth_factor(Collective::all_reduce, 0), std::invalid_argument);
}

TEST(Comm, NamesRoundTrip) {
  for (Collective c : kAllCollectives) EXPECT_EQ(parse_collective(collective_name(c)), c);
  EXPECT_FALSE(parse_collective("allreduce"));
  EXPECT_EQ(parse_sharding("fsdp"), Sharding::zero3);
  EXPECT_EQ(parse_sharding("2"), Sharding::zero2);
  EXPECT_FALSE(parse_sharding("zero4"));
}

TEST(Comm, LayoutSplitsByRanks) {
  // all_gather of 1024 elements on 4 ranks: each sends 256, receives 1024; reduce_scatter the reverse.
  EXPECT_EQ(collective_layout(Collective::all_gather, 1024, 4).send_elements, 256);
  EXPECT_EQ(collective_layout(Collective::all_gather, 1024, 4).recv_elements, 1024);
  EXPECT_EQ(collective_layout(Collective::reduce_scatter, 1024, 4).recv_elements, 256);
  EXPECT_EQ(collective_layout(Collective::all_to_all, 1024, 4).send_elements, 1024);
  EXPECT_EQ(collective_layout(Collective::all_reduce, 1001, 4).recv_elements, 1001);
  EXPECT_THROW(collective_layout(Collective::all_gather, 1001, 4), std::invalid_argument);
  ASSERT_TRUE(layout_problem(Collective::all_to_all, 1001, 2));
  EXPECT_EQ(*layout_problem(Collective::all_to_all, 1001, 2),
            "1001 elements not divisible by 2 ranks (all_to_all splits its buffer in one piece per rank)");
  EXPECT_FALSE(layout_problem(Collective::broadcast, 1001, 2));
}

TEST(Comm, CostIsBytesAndRingAdditions) {
  // 1 MiB of f32 all-reduced on 8 ranks: 4 MiB; each rank adds 7/8 of 1 Mi elements = 917504.
  const Cost c = collective_cost(Collective::all_reduce, 1 << 20, DType::f32, 8);
  EXPECT_EQ(c.bytes, 4 << 20);
  EXPECT_EQ(c.flops, 917504);
  EXPECT_EQ(collective_cost(Collective::all_gather, 1 << 20, DType::bf16, 8).flops, 0);
  // 10 elements on 3 ranks: floor(10 x 2 / 3) = 6.
  EXPECT_EQ(collective_cost(Collective::reduce, 10, DType::f32, 3).flops, 6);
}

TEST(Comm, SecondsAtBusBandwidth) {
  // 1 GB all-reduced on 8 ranks at 400 GB/s busbw: 1e9 x 1.75 / 4e11 = 4.375 ms.
  EXPECT_DOUBLE_EQ(collective_seconds(Collective::all_reduce, 1'000'000'000, 8, 400e9), 4.375e-3);
  EXPECT_THROW(collective_seconds(Collective::all_reduce, 1, 8, 0), std::invalid_argument);
}

TEST(Comm, DataParallelGpt2SmallOn8GpusAt400GBs) {
  // GPT-2 small (124,439,808 parameters, tied embedding), bf16 gradients: 248,879,616 B.
  // DDP ring all-reduce: 248,879,616 x 2 x 7/8 / 400e9 = 1.08884832 ms; each link carries
  // 435,539,328 B. Compute 10 ms: serial 11.08884832 ms, overlapped 10 ms.
  const auto ddp = data_parallel_step(124'439'808, DType::bf16, DType::bf16, 8, Sharding::ddp, 400e9, 10e-3);
  EXPECT_EQ(ddp.gradient_bytes, 248'879'616);
  ASSERT_EQ(ddp.collectives.size(), 1u);
  EXPECT_EQ(ddp.link_bytes, 435'539'328);
  EXPECT_NEAR(ddp.comm_seconds, 1.08884832e-3, 1e-15);
  EXPECT_NEAR(ddp.step_seconds_serial, 11.08884832e-3, 1e-15);
  EXPECT_DOUBLE_EQ(ddp.step_seconds_overlapped, 10e-3);
  // ZeRO-2: reduce-scatter of G + all-gather of P: 2 x 248,879,616 x 7/8 = the same link bytes.
  const auto z2 = data_parallel_step(124'439'808, DType::bf16, DType::bf16, 8, Sharding::zero2, 400e9, 10e-3);
  ASSERT_EQ(z2.collectives.size(), 2u);
  EXPECT_EQ(z2.link_bytes, 435'539'328);
  // ZeRO-3 / FSDP: two all-gathers of P + a reduce-scatter of G: 1.5x DDP = 653,308,992 B, 1.63327248 ms.
  const auto z3 = data_parallel_step(124'439'808, DType::bf16, DType::bf16, 8, Sharding::zero3, 400e9, 1e-3);
  ASSERT_EQ(z3.collectives.size(), 3u);
  EXPECT_EQ(z3.link_bytes, 653'308'992);
  EXPECT_NEAR(z3.comm_seconds, 1.63327248e-3, 1e-15);
  EXPECT_NEAR(z3.step_seconds_overlapped, 1.63327248e-3, 1e-15);  // communication-bound
  // One rank: nothing crosses a link.
  const auto one = data_parallel_step(1000, DType::f32, DType::f32, 1, Sharding::ddp, 400e9, 1.0);
  EXPECT_TRUE(one.collectives.empty());
  EXPECT_DOUBLE_EQ(one.step_seconds_serial, 1.0);
  EXPECT_THROW(data_parallel_step(1000, DType::f32, DType::f32, 8, Sharding::ddp, -1, 1.0), std::invalid_argument);
}
