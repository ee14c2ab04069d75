// FLOPs, bytes and kernels of schedule units (lib/cost/unit_work.h). Expected
// values are worked out here from the textbook formulas, not by the library.
#include "cost/unit_work.h"

#include <catch2/catch.hpp>

#include "core/error.h"
#include "cost/ir_builder.h"
#include "sched/merge.h"
#include "sched/unit_graph.h"

using ios::cost::merged_conv_work;
using ios::cost::merged_matmul_work;
using ios::cost::merged_work;
using ios::cost::unit_work;
using ios::sched::UnitGraph;
using ios::test::IrBuilder;

namespace {

ios::sched::UnitId unit(const UnitGraph& g, const char* id) {
  const auto u = g.find(id);
  REQUIRE(u.has_value());
  return *u;
}

}  // namespace

TEST_CASE("conv unit: 2*N*Cout*Hout*Wout*Cin*kh*kw plus bias and ReLU", "[cost][work]") {
  IrBuilder b;
  const auto x = b.input("x", {2, 3, 32, 32});
  b.output(b.conv("c", x, 16, 3, /*stride=*/2, /*pad=*/1));  // out 2x16x16x16
  const UnitGraph g = UnitGraph::form(b.graph);
  REQUIRE(g.size() == 1);
  const auto w = unit_work(g, unit(g, "c"));
  REQUIRE(w.kernels.size() == 1);  // the ReLU is fused
  const double out = 2.0 * 16 * 16 * 16;
  CHECK(w.flops() == Approx(2.0 * out * 3 * 3 * 3 + out /*bias*/ + out /*relu*/));
  const double read = 2.0 * 3 * 32 * 32 + 16 * 3 * 3 * 3 + 16;
  CHECK(w.kernels[0].bytes_read == Approx(4.0 * read));
  CHECK(w.kernels[0].bytes_written == Approx(4.0 * out));  // only the ReLU output leaves
  CHECK(w.kernels[0].outputs == out);
  CHECK(w.kernels[0].reduction == 27.0);
  CHECK(w.kernels[0].matmul_like);
  CHECK(w.parallelism() == out);
}

TEST_CASE("grouped conv counts Cin/group per output and is not matmul-like", "[cost][work]") {
  IrBuilder b;
  const auto x = b.input("x", {1, 32, 10, 10});
  b.output(b.conv("dw", x, 32, 3, 1, 1, /*group=*/32, /*relu=*/false));
  const UnitGraph g = UnitGraph::form(b.graph);
  const auto w = unit_work(g, unit(g, "dw"));
  REQUIRE(w.kernels.size() == 1);
  const double out = 32.0 * 10 * 10;
  CHECK(w.flops() == Approx(2.0 * out * 1 * 3 * 3 + out));
  CHECK_FALSE(w.kernels[0].matmul_like);
}

TEST_CASE("separable conv unit: two kernels, the intermediate goes through memory",
          "[cost][work]") {
  IrBuilder b;
  const auto x = b.input("x", {1, 8, 12, 12});
  const auto dw = b.conv("dw", x, 8, 3, 1, 1, /*group=*/8, /*relu=*/false);
  b.output(b.conv("pw", dw, 16, 1));
  const UnitGraph g = UnitGraph::form(b.graph);
  REQUIRE(g.size() == 1);
  REQUIRE(g.unit(0).kind == ios::sched::UnitKind::kSepConv);
  const auto w = unit_work(g, 0);
  REQUIRE(w.kernels.size() == 2);
  const double mid = 8.0 * 12 * 12, out = 16.0 * 12 * 12;
  CHECK(w.kernels[0].flops == Approx(2.0 * mid * 9 + mid));
  CHECK(w.kernels[1].flops == Approx(2.0 * out * 8 + out + out));
  CHECK(w.kernels[0].bytes_written == Approx(4.0 * mid));
  CHECK(w.kernels[1].bytes_read == Approx(4.0 * (mid + 16 * 8 + 16)));
  CHECK(w.kernels[1].bytes_written == Approx(4.0 * out));
}

TEST_CASE("pools, GEMM, views and zero-copy concat", "[cost][work]") {
  IrBuilder b;
  const auto x = b.input("x", {1, 4, 8, 8});
  const auto p = b.max_pool("p", x, 2, 2);     // 1x4x4x4
  const auto q = b.avg_pool("q", x, 3, 1, 1);  // 1x4x8x8
  const auto f = b.flatten("f", p);            // 1x64
  const auto y = b.gemm("fc", f, 10);          // 1x10
  const auto c = b.concat("cat", {q, x});
  b.output(y);
  b.output(c);
  const UnitGraph g = UnitGraph::form(b.graph);

  const auto pool = unit_work(g, unit(g, "p"));
  REQUIRE(pool.kernels.size() == 1);
  CHECK(pool.flops() == Approx(64.0 * 4));
  CHECK(pool.bytes() == Approx(4.0 * (256 + 64)));
  const auto avg = unit_work(g, unit(g, "q"));
  CHECK(avg.flops() == Approx(256.0 * 9));

  const auto fc = unit_work(g, unit(g, "fc"));
  REQUIRE(fc.kernels.size() == 1);
  CHECK(fc.flops() == Approx(2.0 * 1 * 10 * 64 + 10));
  CHECK(fc.kernels[0].reduction == 64.0);
  CHECK(fc.bytes() == Approx(4.0 * (64 + 640 + 10 + 10)));

  CHECK(unit_work(g, unit(g, "f")).kernels.empty());    // Flatten is a view
  CHECK(unit_work(g, unit(g, "cat")).kernels.empty());  // Concat is zero-copy
}

TEST_CASE("merged convolution: one kernel, input read once, zero-padded taps counted",
          "[cost][work][merge]") {
  IrBuilder b;
  const auto x = b.input("x", {1, 16, 14, 14});
  b.output(b.conv("a", x, 8, 1));
  b.output(b.conv("c", x, 24, 1));
  b.output(b.conv("k3", x, 4, 3, 1, 1));
  const UnitGraph g = UnitGraph::form(b.graph);
  const double hw = 14.0 * 14, in = 16.0 * hw;

  SECTION("two 1x1 convs") {
    const auto check = ios::sched::check_merge(g, {unit(g, "a"), unit(g, "c")});
    REQUIRE(check.spec.has_value());
    const auto m = merged_conv_work(g, *check.spec);
    REQUIRE(m.kernels.size() == 1);
    const double out = 32.0 * hw;
    CHECK(m.flops() == Approx(2.0 * out * 16 + out + out));
    CHECK(m.kernels[0].bytes_read == Approx(4.0 * (in + 32 * 16 + 32)));
    CHECK(m.kernels[0].bytes_written == Approx(4.0 * out));
    CHECK(m.kernels[0].outputs == out);
    // Same arithmetic as the two convs, less traffic: the input is read once.
    const auto a = unit_work(g, unit(g, "a")), c = unit_work(g, unit(g, "c"));
    CHECK(m.flops() == Approx(a.flops() + c.flops()));
    CHECK(m.bytes() == Approx(a.bytes() + c.bytes() - 4.0 * in));
  }
  SECTION("1x1 with 3x3: the 1x1 kernel is padded to 3x3") {
    const auto check = ios::sched::check_merge(g, {unit(g, "a"), unit(g, "k3")});
    REQUIRE(check.spec.has_value());
    const auto m = merged_conv_work(g, *check.spec);
    const double out = 12.0 * hw;
    CHECK(m.flops() == Approx(2.0 * out * 16 * 9 + out + out));
    CHECK(m.flops() > unit_work(g, unit(g, "a")).flops() + unit_work(g, unit(g, "k3")).flops());
  }
}

TEST_CASE("merged matrix product: one kernel, input read once, the temporary written and read back",
          "[cost][work][merge]") {
  IrBuilder b;
  const auto x = b.input("x", {6, 32});
  b.output(b.gemm("a", x, 16));
  b.output(b.gemm("c", x, 48));
  const UnitGraph g = UnitGraph::form(b.graph);
  const auto check = ios::sched::check_merge(g, {unit(g, "a"), unit(g, "c")});
  INFO(check.reason);
  REQUIRE(check.spec.has_value());
  const auto m = merged_matmul_work(g, *check.spec);
  REQUIRE(m.kernels.size() == 1);
  const double rows = 6, k = 32, n = 64, out = rows * n;
  // 2 * rows * K * N multiply-adds plus each Gemm's C (one add per output).
  CHECK(m.flops() == Approx(2.0 * out * k + out));
  CHECK(m.kernels[0].reduction == k);
  CHECK(m.kernels[0].matmul_like);
  CHECK(m.kernels[0].bytes_read == Approx(4.0 * (rows * k + k * n + n + out)));
  CHECK(m.kernels[0].bytes_written == Approx(4.0 * (out + out)));
  // Same arithmetic as the two Gemms; merged_work picks this by the kind.
  CHECK(m.flops() ==
        Approx(unit_work(g, unit(g, "a")).flops() + unit_work(g, unit(g, "c")).flops()));
  CHECK(merged_work(g, *check.spec).flops() == m.flops());
}

TEST_CASE("unit_work needs an IR behind the unit graph", "[cost][work]") {
  const UnitGraph g = UnitGraph::from_edges(2, {{0, 1}});
  CHECK_THROWS_AS(unit_work(g, 0), ios::InternalError);
}

TEST_CASE("resize unit: bilinear 11 FLOPs per output, nearest none; input read once", "[cost][work]") {
  for (const auto mode : {ios::ir::resize::Mode::kLinear, ios::ir::resize::Mode::kNearest}) {
    IrBuilder b;
    const auto x = b.input("x", {1, 8, 10, 12});
    const auto y = b.activation("y", {1, 8, 20, 24});
    ios::ir::ResizeAttrs a;
    a.mode = mode;
    a.scale = {2.0f, 2.0f};
    a.size = {20, 24};
    b.graph.add_node({"up", ios::ir::OpKind::kResize, {x}, {y}, a});
    b.output(y);
    const UnitGraph g = UnitGraph::form(b.graph);
    REQUIRE(g.size() == 1);
    const auto w = unit_work(g, unit(g, "y"));
    REQUIRE(w.kernels.size() == 1);
    const double out = 8.0 * 20 * 24;
    const bool linear = mode == ios::ir::resize::Mode::kLinear;
    CHECK(w.flops() == Approx(linear ? 11.0 * out : 0.0));
    CHECK(w.kernels[0].reduction == (linear ? 4.0 : 1.0));
    CHECK(w.kernels[0].bytes_read == Approx(4.0 * 8 * 10 * 12));
    CHECK(w.kernels[0].bytes_written == Approx(4.0 * out));
  }
}
