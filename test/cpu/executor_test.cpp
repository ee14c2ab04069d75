// CpuExecutor against the plain IR interpreter on hand-built graphs: every
// operator, nested zero-copy concats, in-place epilogues, buffer reuse, any
// valid issue order (staged with concurrent groups, streamed), and operator
// merges of convolutions with different kernel sizes against their unmerged
// members.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "core/error.h"
#include "cpu/executor.h"
#include "cpu/kernels.h"
#include "cpu/reference.h"
#include "exec/plan.h"
#include "graph_builder.h"
#include "sched/merge.h"
#include "sched/merge_geometry.h"
#include "sched/schedule.h"
#include "sched/unit_graph.h"

namespace ios::cpu {
namespace {

using ir::OpKind;
using test::GraphBuilder;

// --- Schedules ---------------------------------------------------------------

sched::Schedule staged(std::vector<sched::Stage> stages) {
  sched::Schedule s;
  s.body = sched::StagedSchedule{std::move(stages)};
  return s;
}

sched::Stage concurrent(std::vector<std::vector<sched::UnitId>> groups) {
  sched::Stage stage;
  stage.strategy = sched::Strategy::kConcurrent;
  stage.groups = std::move(groups);
  return stage;
}

sched::Stage merge(std::vector<sched::UnitId> units) {
  sched::Stage stage;
  stage.strategy = sched::Strategy::kMerge;
  stage.groups = {std::move(units)};
  return stage;
}

// One unit per stage in UnitId order (a topological order).
sched::Schedule sequential(const sched::UnitGraph& g) {
  std::vector<sched::Stage> stages;
  for (sched::UnitId u = 0; u < g.size(); ++u) stages.push_back(concurrent({{u}}));
  return staged(std::move(stages));
}

// Wavefronts: every unit whose predecessors are done, each on its own stream.
sched::Schedule wavefronts(const sched::UnitGraph& g) {
  std::vector<bool> done(static_cast<size_t>(g.size()), false);
  std::vector<sched::Stage> stages;
  int remaining = g.size();
  while (remaining > 0) {
    std::vector<std::vector<sched::UnitId>> groups;
    for (sched::UnitId u = g.size() - 1; u >= 0; --u) {  // reversed, so issue order differs from ids
      if (done[static_cast<size_t>(u)]) continue;
      const auto& preds = g.preds(u);
      if (std::all_of(preds.begin(), preds.end(), [&](sched::UnitId p) { return done[static_cast<size_t>(p)]; })) {
        groups.push_back({u});
      }
    }
    for (const auto& group : groups) done[static_cast<size_t>(group[0])] = true;
    remaining -= static_cast<int>(groups.size());
    stages.push_back(concurrent(std::move(groups)));
  }
  return staged(std::move(stages));
}

// A streamed schedule in a depth-first topological order (largest ready id
// first), units spread round-robin over three streams.
sched::Schedule streamed_depth_first(const sched::UnitGraph& g) {
  sched::StreamedSchedule body;
  body.num_streams = 3;
  std::vector<int> missing(static_cast<size_t>(g.size()));
  std::set<sched::UnitId> ready;
  for (sched::UnitId u = 0; u < g.size(); ++u) {
    missing[static_cast<size_t>(u)] = static_cast<int>(g.preds(u).size());
    if (missing[static_cast<size_t>(u)] == 0) ready.insert(u);
  }
  int i = 0;
  while (!ready.empty()) {
    const sched::UnitId u = *ready.rbegin();
    ready.erase(u);
    body.launches.push_back({u, i++ % 3, 0.0, 0.0});
    for (sched::UnitId s : g.succs(u)) {
      if (--missing[static_cast<size_t>(s)] == 0) ready.insert(s);
    }
  }
  sched::Schedule s;
  s.body = std::move(body);
  return s;
}

sched::UnitId unit(const sched::UnitGraph& g, const std::string& id) {
  const auto u = g.find(id);
  INFO("unit '" << id << "'");
  REQUIRE(u.has_value());
  return *u;
}

std::map<std::string, exec::HostTensor> random_inputs(const ir::Graph& g, uint64_t seed) {
  std::map<std::string, exec::HostTensor> inputs;
  for (ir::TensorId id : g.inputs()) inputs[g.tensor(id).name] = exec::random_tensor(g.tensor(id).shape, seed++);
  return inputs;
}

void require_identical(const std::map<std::string, exec::HostTensor>& got,
                       const std::map<std::string, exec::HostTensor>& want) {
  REQUIRE(got.size() == want.size());
  for (const auto& [name, tensor] : want) {
    INFO("output '" << name << "'");
    REQUIRE(got.count(name) == 1);
    REQUIRE(got.at(name).shape == tensor.shape);
    // Same kernels, same arithmetic: views and buffer reuse must not change a bit.
    const auto r = exec::compare(got.at(name), tensor, exec::Tolerance{0.0, 0.0}, name, 3);
    INFO(exec::format_report(r));
    REQUIRE(r.passed());
  }
}

// --- Graphs ------------------------------------------------------------------

// Every operator the IR has, with nested data flow: split -> concat (zero-copy),
// a residual add whose input has two uses, a graph output read by others,
// standalone BatchNorm, a separable conv, and a classifier head.
ir::Graph all_ops_graph() {
  GraphBuilder b;
  const auto x = b.input("x", {2, 3, 10, 10});
  const auto r1 = b.relu(b.conv(x, 3, 8, {3, 3}, {1, 1, 1, 1}, "c1"), "r1");
  const auto parts = b.node_n(OpKind::kSplit, {r1}, ir::SplitAttrs{1, {3, 5}}, {"s0", "s1"});
  const auto s0c = b.node(OpKind::kClip, {parts[0]}, ir::ClipAttrs{0.0f, 0.5f}, "s0c");
  const auto s1s = b.node(OpKind::kSigmoid, {parts[1]}, std::monostate{}, "s1s");
  const auto m = b.node(OpKind::kMul, {s1s, b.constant("scale", {1, 5, 1, 1})}, std::monostate{}, "m");
  const auto cat = b.concat({s0c, m}, "cat");
  const auto bn = b.node(OpKind::kBatchNorm,
                         {cat, b.constant("bn_s", {8}), b.constant("bn_b", {8}), b.constant("bn_m", {8}),
                          b.constant("bn_v", {8}, 0.5f, 1.5f)},
                         ir::BatchNormAttrs{1e-3f}, "bn");
  const auto hs = b.node(OpKind::kHardSwish, {bn}, std::monostate{}, "hs");
  const auto hsig = b.node(OpKind::kHardSigmoid, {hs}, ir::HardSigmoidAttrs{0.3f, 0.4f}, "hsig");
  const auto add = b.node(OpKind::kAdd, {hsig, r1}, std::monostate{}, "add");
  ir::PoolAttrs mp_attrs;
  mp_attrs.kernel = {3, 3};
  mp_attrs.stride = {2, 2};
  mp_attrs.ceil_mode = true;
  const auto mp = b.node(OpKind::kMaxPool, {add}, mp_attrs, "mp");  // 10 -> 5
  ir::PadAttrs pad_attrs;
  pad_attrs.pads = {0, 0, 1, 1, 0, 0, 1, 1};
  const auto pd = b.node(OpKind::kPad, {mp}, pad_attrs, "pd");  // 7x7
  ir::SliceAttrs sl_attrs{{2, 3}, {1, 0}, {7, 7}, {2, 3}};
  const auto sl = b.node(OpKind::kSlice, {pd}, sl_attrs, "sl");  // 3x3
  const auto tr = b.node(OpKind::kTranspose, {sl}, ir::TransposeAttrs{{0, 1, 3, 2}}, "tr");
  const auto rm = b.node(OpKind::kReduceMean, {tr}, ir::ReduceAttrs{{2, 3}, true}, "rm");
  const auto rs = b.node(OpKind::kReshape, {rm}, ir::ReshapeAttrs{{2, 8}}, "rs");
  const auto mm = b.node(OpKind::kMatMul, {rs, b.constant("mm_w", {8, 6})}, std::monostate{}, "mm");
  const auto gm = b.node(OpKind::kGemm, {mm, b.constant("gm_w", {6, 4}), b.constant("gm_b", {4})}, ir::GemmAttrs{},
                         "gm");
  const auto sm = b.node(OpKind::kSoftmax, {gm}, ir::AxisAttrs{1}, "sm");
  const auto dw = b.conv(add, 8, 8, {3, 3}, {1, 1, 1, 1}, "dw", {1, 1}, 8);
  const auto pw = b.conv(dw, 8, 4, {1, 1}, {0, 0, 0, 0}, "pw");
  const auto gap = b.node(OpKind::kGlobalAveragePool, {pw}, std::monostate{}, "gap");
  const auto fl = b.node(OpKind::kFlatten, {gap}, ir::AxisAttrs{1}, "fl");
  return b.finish({sm, fl, add});
}

// An Inception-style block: three convolutions of x (1x1, 1x1, 3x3) that can
// merge, a branch whose 1x3, 3x1 and 3x3 convolutions of one tensor can
// merge, a pooling branch, nested concats and a classifier head.
ir::Graph inception_graph() {
  GraphBuilder b;
  const auto x = b.input("x", {2, 6, 9, 9});
  const auto b1 = b.relu(b.conv(x, 6, 5, {1, 1}, {0, 0, 0, 0}, "b1_conv"), "b1");
  const auto b2a = b.relu(b.conv(x, 6, 4, {1, 1}, {0, 0, 0, 0}, "b2a_conv"), "b2a");
  const auto b2_13 = b.relu(b.conv(b2a, 4, 3, {1, 3}, {0, 1, 0, 1}, "b2_13_conv"), "b2_13");
  const auto b2_31 = b.relu(b.conv(b2a, 4, 3, {3, 1}, {1, 0, 1, 0}, "b2_31_conv"), "b2_31");
  const auto b2_33 = b.relu(b.conv(b2a, 4, 2, {3, 3}, {1, 1, 1, 1}, "b2_33_conv"), "b2_33");
  const auto b2 = b.concat({b2_13, b2_31, b2_33}, "b2");
  const auto b3 = b.relu(b.conv(x, 6, 7, {3, 3}, {1, 1, 1, 1}, "b3_conv"), "b3");
  ir::PoolAttrs pool;
  pool.kernel = {3, 3};
  pool.pads = {1, 1, 1, 1};
  pool.count_include_pad = true;
  const auto p = b.node(OpKind::kAveragePool, {x}, pool, "pool");
  const auto b4 = b.relu(b.conv(p, 6, 3, {1, 1}, {0, 0, 0, 0}, "b4_conv"), "b4");
  const auto cat = b.concat({b1, b2, b3, b4}, "cat");  // 5 + 8 + 7 + 3 = 23 channels
  const auto gap = b.node(OpKind::kGlobalAveragePool, {cat}, std::monostate{}, "gap");
  const auto flat = b.node(OpKind::kFlatten, {gap}, ir::AxisAttrs{1}, "flat");
  ir::GemmAttrs fc;
  fc.trans_b = true;
  const auto logits = b.node(OpKind::kGemm, {flat, b.constant("fc_w", {10, 23}), b.constant("fc_b", {10})}, fc, "logits");
  const auto prob = b.node(OpKind::kSoftmax, {logits}, ir::AxisAttrs{1}, "prob");
  return b.finish({cat, prob});
}

// --- Tests -------------------------------------------------------------------

TEST_CASE("executor reproduces the IR interpreter bit for bit on every operator", "[cpu][executor]") {
  const ir::Graph g = all_ops_graph();
  const auto units = sched::UnitGraph::form(g);
  const auto inputs = random_inputs(g, 1);
  const auto want = run_graph_reference(g, inputs);
  for (const auto& [name, schedule] : {std::pair{"sequential", sequential(units)},
                                       std::pair{"wavefronts", wavefronts(units)},
                                       std::pair{"streamed", streamed_depth_first(units)}}) {
    INFO("schedule " << name);
    CpuExecutor exec(units, exec::lower(units, schedule), ExecutorOptions{2});
    require_identical(exec.run(inputs), want);
    // Buffers persist between runs; a second run gives the same answer.
    require_identical(exec.run(inputs), want);
    const auto& stats = exec.memory_stats();
    CHECK(stats.zero_copy_concat_inputs == 2);  // s0c and m write into 'cat'
    CHECK(stats.in_place_nodes >= 3);
    CHECK(stats.buffers < stats.storages);  // liveness reuse happened
    CHECK(stats.buffer_bytes < stats.unshared_bytes);
  }
}

TEST_CASE("executor handles nested zero-copy concats in any issue order", "[cpu][executor]") {
  const ir::Graph g = inception_graph();
  const auto units = sched::UnitGraph::form(g);
  const auto inputs = random_inputs(g, 2);
  const auto want = run_graph_reference(g, inputs);
  for (const auto& schedule : {sequential(units), wavefronts(units), streamed_depth_first(units)}) {
    CpuExecutor exec(units, exec::lower(units, schedule), ExecutorOptions{1});
    require_identical(exec.run(inputs), want);
    // b1, b2 (itself a concat of three), b3, b4 into 'cat', and the three into 'b2'.
    CHECK(exec.memory_stats().zero_copy_concat_inputs == 7);
  }
}

TEST_CASE("merged kernels inside a block give the unmerged results", "[cpu][executor][merge]") {
  const ir::Graph g = inception_graph();
  const auto units = sched::UnitGraph::form(g);
  const auto inputs = random_inputs(g, 3);
  const auto want = run_graph_reference(g, inputs);
  const auto b1 = unit(units, "b1"), b2a = unit(units, "b2a"), b3 = unit(units, "b3");
  const auto b2_13 = unit(units, "b2_13"), b2_31 = unit(units, "b2_31"), b2_33 = unit(units, "b2_33");
  REQUIRE(sched::check_merge(units, {b1, b2a, b3}).spec.has_value());
  REQUIRE(sched::check_merge(units, {b2_13, b2_31, b2_33}).spec.has_value());
  // Everything else sequentially, in id order, around the merges.
  std::vector<sched::Stage> stages{merge({b3, b1, b2a}), merge({b2_33, b2_13, b2_31})};
  const std::set<sched::UnitId> merged{b1, b2a, b3, b2_13, b2_31, b2_33};
  for (sched::UnitId u = 0; u < units.size(); ++u) {
    if (merged.count(u)) continue;
    // Units before the merges (none read their outputs) may go anywhere
    // before; the pool branch and the head come after in id order.
    stages.push_back(concurrent({{u}}));
  }
  CpuExecutor exec(units, exec::lower(units, staged(stages)), ExecutorOptions{2});
  CHECK(exec.memory_stats().merged_kernels == 2);
  // conv2d blocks K by whole input channels, so a member zero-padded into the
  // merged kernel sums the same products in the same order: bit for bit.
  require_identical(exec.run(inputs), want);
}

// Members whose outputs are graph outputs, so each one is compared directly.
struct MergeCase {
  ir::Graph graph;
  std::vector<std::string> members;
};

MergeCase merge_1x1_3x3(bool epilogue, ios::ir::Dims stride, int64_t channels = 5) {
  GraphBuilder b;
  const auto x = b.input("x", {2, channels, 8, 7});
  auto a = b.conv(x, channels, 6, {1, 1}, {0, 0, 0, 0}, "a_conv", stride);
  auto c = b.conv(x, channels, 4, {3, 3}, {1, 1, 1, 1}, "c_conv", stride);
  if (epilogue) {
    a = b.relu(a, "a");
    c = b.relu(c, "c");
  }
  return {b.finish({a, c}), {epilogue ? "a" : "a_conv", epilogue ? "c" : "c_conv"}};
}

MergeCase merge_1x3_3x1_3x3(int64_t channels = 4) {
  GraphBuilder b;
  const auto x = b.input("x", {1, channels, 6, 9});
  const auto a = b.relu(b.conv(x, channels, 3, {1, 3}, {0, 1, 0, 1}, "a_conv"), "a");
  const auto c = b.relu(b.conv(x, channels, 5, {3, 1}, {1, 0, 1, 0}, "c_conv"), "c");
  const auto d = b.relu(b.conv(x, channels, 2, {3, 3}, {1, 1, 1, 1}, "d_conv"), "d");
  return {b.finish({a, c, d}), {"a", "c", "d"}};
}

// 1-D: kernels 1, 3 and 5 of one sequence, as an audio block's branches.
MergeCase merge_1d(int64_t channels = 4) {
  GraphBuilder b;
  const auto x = b.input("x", {2, channels, 17});
  const auto a = b.relu(b.conv(x, channels, 3, {1}, {0, 0}, "a_conv"), "a");
  const auto c = b.relu(b.conv(x, channels, 5, {3}, {1, 1}, "c_conv"), "c");
  const auto d = b.relu(b.conv(x, channels, 2, {5}, {2, 2}, "d_conv"), "d");
  return {b.finish({a, c, d}), {"a", "c", "d"}};
}

// 3-D: a 3x3x3 convolution beside a (2+1)D block's 1x3x3 spatial and 3x1x1
// temporal factors and a 1x1x1 projection, all of one clip, strided 1x2x2.
MergeCase merge_3d(int64_t channels = 3) {
  GraphBuilder b;
  const auto x = b.input("x", {1, channels, 4, 7, 6});
  const ios::ir::Dims stride{1, 2, 2};
  const auto a =
      b.relu(b.conv(x, channels, 4, {3, 3, 3}, {1, 1, 1, 1, 1, 1}, "a_conv", stride), "a");
  const auto c =
      b.relu(b.conv(x, channels, 2, {1, 3, 3}, {0, 1, 1, 0, 1, 1}, "c_conv", stride), "c");
  const auto d =
      b.relu(b.conv(x, channels, 3, {3, 1, 1}, {1, 0, 0, 1, 0, 0}, "d_conv", stride), "d");
  const auto e =
      b.relu(b.conv(x, channels, 2, {1, 1, 1}, {0, 0, 0, 0, 0, 0}, "e_conv", stride), "e");
  return {b.finish({a, c, d, e}), {"a", "c", "d", "e"}};
}

void check_merge_case(const MergeCase& mc, const ios::ir::Dims& merged_kernel = {3, 3}) {
  const auto units = sched::UnitGraph::form(mc.graph);
  std::vector<sched::UnitId> members;
  for (const auto& id : mc.members) members.push_back(unit(units, id));
  const auto spec = sched::check_merge(units, members);
  INFO(spec.reason);
  REQUIRE(spec.spec.has_value());
  // The merged kernel is the largest member kernel, so the members really
  // are zero-padded into it.
  CHECK(spec.spec->conv.kernel == merged_kernel);
  const auto inputs = random_inputs(mc.graph, 4);
  const auto unmerged = run_graph_reference(mc.graph, inputs);  // one conv per member
  CpuExecutor exec(units, exec::lower(units, staged({merge(members)})), ExecutorOptions{2});
  REQUIRE(exec.memory_stats().merged_kernels == 1);
  const auto merged = exec.run(inputs);
  require_identical(merged, unmerged);  // see conv2d: merged sums equal unmerged ones bit for bit
  // And each member against the direct convolution of its own weights.
  for (const auto& id : mc.members) {
    const auto& node = mc.graph.node(units.unit(unit(units, id)).anchor);
    const auto& w = mc.graph.tensor(node.inputs[1]);
    const auto& out_shape = mc.graph.tensor(node.outputs[0]).shape;
    exec::HostTensor direct(out_shape);
    const auto& xin = inputs.at("x");
    conv(KernelContext{1}, ConstView(xin.data.data(), xin.shape), w.data->data(),
         mc.graph.tensor(node.inputs[2]).data->data(), node.attr<ir::ConvAttrs>(),
         View(direct.data.data(), out_shape));
    if (units.unit(unit(units, id)).nodes.size() > 1) {  // the ReLU epilogue
      for (float& v : direct.data) v = std::max(v, 0.0f);
    }
    CHECK(merged.at(id).data == direct.data);
  }
}

TEST_CASE("merged 1x1 with 3x3 convolution equals its unmerged members", "[cpu][executor][merge]") {
  SECTION("with a ReLU epilogue") { check_merge_case(merge_1x1_3x3(true, {1, 1})); }
  SECTION("without epilogue (members' outputs are slices of the merged buffer)") {
    check_merge_case(merge_1x1_3x3(false, {1, 1}));
  }
  SECTION("stride 2") { check_merge_case(merge_1x1_3x3(true, {2, 2})); }
  // More input channels than one GEMM K block holds: the blocks must line up.
  SECTION("150 input channels") { check_merge_case(merge_1x1_3x3(true, {1, 1}, 150)); }
}

TEST_CASE("merged 1x3 with 3x1 with 3x3 convolution equals its unmerged members", "[cpu][executor][merge]") {
  SECTION("4 input channels") { check_merge_case(merge_1x3_3x1_3x3()); }
  SECTION("200 input channels") { check_merge_case(merge_1x3_3x1_3x3(200)); }
}

TEST_CASE("merged 1-D and 3-D convolutions equal their unmerged members",
          "[cpu][executor][merge]") {
  SECTION("1-D kernels 1, 3 and 5") { check_merge_case(merge_1d(), {5}); }
  SECTION("1-D, 150 input channels") { check_merge_case(merge_1d(150), {5}); }
  SECTION("3-D 3x3x3, 1x3x3, 3x1x1 and 1x1x1, stride 1x2x2") {
    check_merge_case(merge_3d(), {3, 3, 3});
  }
  SECTION("3-D, 70 input channels") { check_merge_case(merge_3d(70), {3, 3, 3}); }
}

TEST_CASE("convolutions of different spatial ranks do not merge", "[cpu][merge]") {
  // Two inputs of one shape family cannot be shared across ranks; a graph
  // whose 3-D convolution and a 2-D one read different tensors is refused
  // for reading different tensors, so check the rank rule on the geometry.
  sched::ConvGeometry two, three;
  two.conv.kernel = {3, 3};
  two.conv.stride = {1, 1};
  two.conv.dilation = {1, 1};
  two.conv.pads = {1, 1, 1, 1};
  two.input_spatial = {8, 8};
  two.output_spatial = {8, 8};
  three.conv.kernel = {1, 3, 3};
  three.conv.stride = {1, 1, 1};
  three.conv.dilation = {1, 1, 1};
  three.conv.pads = {0, 1, 1, 0, 1, 1};
  three.input_spatial = {1, 8, 8};
  three.output_spatial = {1, 8, 8};
  const auto r = sched::merge_geometry({two, three});
  CHECK_FALSE(r.merged.has_value());
  CHECK(r.reason.find("member 1 has stride 1x1x1, member 0 has 1x1") != std::string::npos);
}

// x [batch, 5, k] -> q, k, v projections (MatMul + bias Add as PyTorch
// exports nn.Linear, bias first), with K = `k`; v's output is also an input
// of a Concat on axis 1, so its product writes a strided slice.
ir::Graph projections(int64_t batch, int64_t k) {
  GraphBuilder b;
  const auto x = b.input("x", {batch, 5, k});
  auto linear = [&](const std::string& name, int64_t out) {
    const auto mm = b.node(OpKind::kMatMul, {x, b.constant(name + "_w", {k, out})},
                           std::monostate{}, name + "_mm");
    return b.node(OpKind::kAdd, {b.constant(name + "_b", {out}), mm}, std::monostate{}, name);
  };
  const auto q = linear("q", 16), kk = linear("k", 16), v = linear("v", 8);
  const auto sum = b.node(OpKind::kAdd, {q, kk}, std::monostate{}, "qk");
  const auto other = b.node(OpKind::kMatMul, {x, b.constant("o_w", {k, 8})}, std::monostate{}, "o");
  return b.finish({sum, b.concat({v, other}, "cat")});
}

void check_product_merge(const ir::Graph& graph, const std::vector<std::string>& ids) {
  const auto units = sched::UnitGraph::form(graph);
  std::vector<sched::UnitId> members;
  for (const auto& id : ids) members.push_back(unit(units, id));
  const auto check = sched::check_merge(units, members);
  INFO(check.reason);
  REQUIRE(check.spec.has_value());
  REQUIRE(check.spec->kind == sched::MergeKind::kMatMul);
  std::vector<sched::Stage> stages{merge(members)};
  for (sched::UnitId u = 0; u < units.size(); ++u) {
    if (std::find(members.begin(), members.end(), u) == members.end())
      stages.push_back(concurrent({{u}}));
  }
  const auto inputs = random_inputs(graph, 9);
  CpuExecutor exec(units, exec::lower(units, staged(stages)), ExecutorOptions{2});
  REQUIRE(exec.memory_stats().merged_kernels == 1);
  // The merged product sums every output in the same order as the members'
  // own products: bit for bit.
  require_identical(exec.run(inputs), run_graph_reference(graph, inputs));
}

TEST_CASE("merged matrix products equal their unmerged members", "[cpu][executor][merge]") {
  SECTION("Q, K, V at batch 1") { check_product_merge(projections(1, 16), {"q", "k", "v"}); }
  SECTION("Q, K, V at batch 3") { check_product_merge(projections(3, 16), {"q", "k", "v"}); }
  // More than one GEMM K block: the blocks must line up.
  SECTION("K = 300") { check_product_merge(projections(2, 300), {"q", "k", "v"}); }
  // A member without epilogue whose output is a slice of the Concat.
  SECTION("a product written into a concat slice") {
    check_product_merge(projections(2, 16), {"v", "o", "q"});
  }
  SECTION("Gemm with transB and C, and without C") {
    GraphBuilder b;
    const auto x = b.input("x", {4, 6});
    ir::GemmAttrs t;
    t.trans_b = true;
    const auto a =
        b.node(OpKind::kGemm, {x, b.constant("a_w", {3, 6}), b.constant("a_c", {3})}, t, "a");
    const auto c = b.node(OpKind::kGemm, {x, b.constant("c_w", {5, 6})}, t, "c");
    const auto d = b.node(OpKind::kGemm, {x, b.constant("d_w", {6, 2}), b.constant("d_c", {1, 2})},
                          ir::GemmAttrs{}, "d");
    check_product_merge(b.finish({b.relu(a, "ra"), c, d}), {"ra", "c", "d"});
  }
}

TEST_CASE("executor rejects missing, unknown and misshapen inputs", "[cpu][executor]") {
  const ir::Graph g = inception_graph();
  const auto units = sched::UnitGraph::form(g);
  CpuExecutor exec(units, exec::lower(units, sequential(units)), ExecutorOptions{1});
  CHECK_THROWS_WITH(exec.run({}), Catch::Contains("input 'x'") && Catch::Contains("not given"));
  CHECK_THROWS_WITH(exec.run({{"x", exec::HostTensor({1, 6, 9, 9})}}),
                    Catch::Contains("1x6x9x9") && Catch::Contains("2x6x9x9"));
  auto inputs = random_inputs(g, 5);
  inputs["y"] = exec::HostTensor({1});
  CHECK_THROWS_WITH(exec.run(inputs), Catch::Contains("'y' is not an input"));
}

// The memory check runs before the arena exists: a plan that does not fit is
// a UserError naming the sizes and the limit, never a std::bad_alloc.
TEST_CASE("a plan larger than the memory budget is refused before it is allocated",
          "[cpu][memory]") {
  const ir::Graph g = inception_graph();
  const auto units = sched::UnitGraph::form(g);
  const auto plan = exec::lower(units, sequential(units));
  const int64_t arena = CpuExecutor(units, plan, ExecutorOptions{1}).memory_stats().buffer_bytes;
  REQUIRE(arena > 0);
  MemoryBudget small_ram;
  small_ram.physical_bytes = arena / 2;
  CHECK_THROWS_WITH(CpuExecutor(units, plan, ExecutorOptions{1}, small_ram),
                    Catch::StartsWith("not enough memory: the CPU backend needs") &&
                        Catch::Contains("of physical memory"));
  MemoryBudget limited;  // ulimit -v: what is mapped already counts against the limit
  limited.address_space_limit = int64_t{1} << 30;
  limited.address_space_used = (int64_t{1} << 30) - 100 * (int64_t{1} << 20);
  CHECK_THROWS_WITH(CpuExecutor(units, plan, ExecutorOptions{1}, limited),
                    Catch::Contains("the address-space limit (ulimit -v) of 1024 MiB leaves "
                                    "100 MiB"));
  MemoryBudget ample;
  ample.physical_bytes = int64_t{1} << 40;
  ample.address_space_limit = int64_t{1} << 40;
  CpuExecutor fits(units, plan, ExecutorOptions{1}, ample);
  CHECK(fits.run(random_inputs(g, 1)).size() == g.outputs().size());
}

TEST_CASE("the memory budget compares new and resident bytes with each limit", "[cpu][memory]") {
  MemoryBudget b;
  b.physical_bytes = 1000 << 20;
  CHECK_NOTHROW(check_memory_budget(600 << 20, 400 << 20, "parts", b));
  CHECK_THROWS_WITH(check_memory_budget(600 << 20, 401 << 20, "parts", b),
                    Catch::Contains("needs 1001 MiB (parts) but the machine has 1000 MiB"));
  b.physical_bytes = -1;  // unknown: no physical check
  b.address_space_limit = 2000 << 20;
  b.address_space_used = 1000 << 20;
  CHECK_NOTHROW(check_memory_budget(700 << 20, 1 << 30, "parts", b));
  CHECK_THROWS_WITH(check_memory_budget(800 << 20, 0, "parts", b),
                    Catch::Contains("needs 800 MiB more (parts) plus 256 MiB for 1 thread,"));
  // Each further thread maps a stack and an allocator arena: the margin
  // grows with --threads instead of staying fixed.
  CHECK(thread_address_space(1) == 0);
  CHECK(thread_address_space(2) > 0);
  CHECK(thread_address_space(1024) - thread_address_space(512) >= 512 * (int64_t{1} << 20));  // a stack each
  CHECK_NOTHROW(check_memory_budget(700 << 20, 0, "parts", b, 1));
  CHECK_THROWS_WITH(check_memory_budget(700 << 20, 0, "parts", b, 64),
                    Catch::Contains("for 64 threads") && Catch::Contains("or --threads"));
  // The machine's own budget is plausible: some physical memory, and a
  // limit (when there is one) above what is mapped.
  const MemoryBudget here = current_memory_budget();
  CHECK(here.physical_bytes > 0);
  if (here.address_space_limit >= 0) CHECK(here.address_space_used < here.address_space_limit);
}

}  // namespace
}  // namespace ios::cpu
