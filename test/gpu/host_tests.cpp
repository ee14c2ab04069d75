// [host] tests: run with or without a GPU (see main.cpp). In a build with
// CUDA they check the device-independent parts of the backend (memory
// planning by liveness, lowering to GPU operations); in every build they
// check the no-device behaviour.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "core/error.h"
#include "cuda/engine.h"
#include "cuda/measured.h"
#include "gpu_util.h"
#include "ir/half_conversion.h"

#ifdef IOS_HAVE_CUDA
#include "cuda/conv.h"
#include "cuda/launch.h"
#include "cuda/operations.h"
#include "cuda/program.h"
#include "exec/memory_layout.h"
#endif

namespace ios::gputest {
namespace {

using ir::OpKind;

TEST_CASE("require_device agrees with probe_device and names the missing device", "[host]") {
  const auto probed = cuda::probe_device();
  if (probed) {
    const cuda::DeviceSummary summary = cuda::require_device();
    CHECK(summary.name == probed->name);
    CHECK(summary.sm_count > 0);
    CHECK(!summary.cudnn.empty());
  } else {
    try {
      cuda::require_device();
      FAIL("require_device() returned without a usable device");
    } catch (const NoDeviceError& e) {
      CHECK(std::string(e.what()).rfind("no CUDA device: ", 0) == 0);
      CHECK(e.exit_code() == ExitCode::kNoDevice);
    }
  }
}

TEST_CASE("without a device every entry point throws NoDeviceError", "[host]") {
  if (cuda::probe_device()) return;  // covered by the GPU tests
  GraphBuilder b;
  const auto x = b.input("x", {1, 3, 8, 8});
  b.output(b.node(OpKind::kRelu, "y", {x}));
  const sched::UnitGraph units = sched::UnitGraph::form(b.graph());
  const exec::ExecPlan plan = exec::lower(units, sequential_schedule(units));
  CHECK_THROWS_AS(cuda::Engine(units, plan), NoDeviceError);
  CHECK_THROWS_WITH(cuda::Engine(units, plan), Catch::Matchers::StartsWith("no CUDA device"));
  CHECK_THROWS_AS(cuda::make_measured_cost_model(units), NoDeviceError);
}

// The 16-bit GPU checks' rule (half_bound, check_half_outputs) on numbers
// whose verdict is known: each element within 4 ulps times 1 + |expected|.
// An error of 0.5 at an element of 0.001 fails although the output also
// holds 1000 (a bound scaled by the largest value, 4 x 2^-10 x 1000 = 3.9,
// would pass it).
TEST_CASE("the 16-bit output rule bounds each element by its own magnitude", "[host]") {
  const double f16 = std::ldexp(1.0, -10), bf16 = std::ldexp(1.0, -7);
  CHECK(half_bound(ir::ElementType::kFloat16, 0.0, 4.0) == 4.0 * f16);
  CHECK(half_bound(ir::ElementType::kFloat16, -3.0, 4.0) == 16.0 * f16);
  CHECK(half_bound(ir::ElementType::kBFloat16, 1.0, 4.0) == 8.0 * bf16);
  const float inf = std::numeric_limits<float>::infinity(),
              nan = std::numeric_limits<float>::quiet_NaN();
  const exec::HostTensor expected({1, 6}, {1000.0f, 0.001f, -2.0f, inf, nan, 0.25f});
  const auto actual = [&](float big, float small, float neg, float infinite, float not_a_number,
                          float quarter) {
    return exec::HostTensor({1, 6}, {big, small, neg, infinite, not_a_number, quarter});
  };
  // Within: 3.9 ulps of 1001 at 1000, 3.9 ulps of 1 + 0.001 beside it.
  const float big_ok = static_cast<float>(1000.0 + 3.9 * f16 * 1001.0);
  const float small_ok = static_cast<float>(0.001 + 3.9 * f16 * 1.001);
  HalfMismatches ok = half_mismatches(actual(big_ok, small_ok, -2.0f, inf, nan, 0.25f), expected,
                                      ir::ElementType::kFloat16, 4.0);
  CHECK(ok.count == 0);
  CHECK(ok.first.empty());
  // Beyond: 0.5 at 0.001, 4.1 ulps of 3 at -2, -inf for inf, a number for NaN.
  const float neg_bad = static_cast<float>(-2.0 - 4.1 * f16 * 3.0);
  HalfMismatches bad = half_mismatches(actual(1000.0f, 0.501f, neg_bad, -inf, 1.0f, 0.25f),
                                       expected, ir::ElementType::kFloat16, 4.0);
  CHECK(bad.count == 4);
  REQUIRE(bad.first.size() == 4);
  CHECK(bad.first[0].rfind("element 1: ", 0) == 0);
  // bfloat16's ulp is 8 float16 ulps: the same 0.5 at 0.001 still fails,
  // 4.1 float16 ulps of 3 at -2 pass.
  bad = half_mismatches(actual(1000.0f, 0.501f, neg_bad, inf, nan, 0.25f), expected,
                        ir::ElementType::kBFloat16, 4.0, 1);
  CHECK(bad.count == 1);
  CHECK(bad.first.size() == 1);
  // Another shape is a mismatch of every element.
  CHECK(half_mismatches(exec::HostTensor({6, 1}, expected.data), expected,
                        ir::ElementType::kFloat16, 4.0)
            .count == 6);
}

#ifdef IOS_HAVE_CUDA

exec::Step launch(int stream, int kernel) { return {exec::Step::Kind::kLaunch, stream, kernel, -1}; }

// The memory placement itself (happens-before, plan_memory) is tested in
// test/exec/storage_plan_test.cpp: it is backend-independent.

TEST_CASE("every operator of the IR has a CUDA lowering (the kernel table is complete)", "[host]") {
  for (int i = 0; i < ir::kNumOpKinds; ++i) {
    const auto op = static_cast<OpKind>(i);
    INFO(ir::op_name(op));
    CHECK(cuda::has_lowering(op));
  }
}

// x -> conv a, conv b, maxpool -> concat (axis 1) -> relu
ir::Graph inception_like(int64_t batch) {
  GraphBuilder b;
  const auto x = b.input("x", {batch, 8, 10, 10});
  const auto a = b.node(OpKind::kRelu, "a", {b.conv("a_conv", x, 4, 1)});
  const auto c = b.conv("b", x, 6, 3, 1, {1, 1, 1, 1});
  ir::PoolAttrs pool;
  pool.kernel = {3, 3};
  pool.pads = {1, 1, 1, 1};
  const auto p = b.node(OpKind::kMaxPool, "p", {x}, pool);
  ir::AxisAttrs axis;
  const auto cat = b.node(OpKind::kConcat, "cat", {a, c, p, x}, axis);
  b.output(b.node(OpKind::kRelu, "out", {cat}));
  return std::move(b.graph());
}

const cuda::Value& value_named(const cuda::Program& p, const std::string& name) {
  for (const cuda::Value& v : p.values) {
    if (v.name == name) return v;
  }
  FAIL("no value named " << name);
  return p.values.front();
}

TEST_CASE("concat inputs are written in place as strided channel slices", "[host]") {
  for (int64_t batch : {1, 3}) {
    INFO("batch " << batch);
    const ir::Graph graph = inception_like(batch);
    const sched::UnitGraph units = sched::UnitGraph::form(graph);
    const cuda::Program p = cuda::lower_program(units, exec::lower(units, sequential_schedule(units)));
    const cuda::Value& cat = value_named(p, "cat");
    const int64_t hw = 100, total = 4 + 6 + 8 + 8;
    CHECK(cat.shape == ir::Shape{batch, total, 10, 10});
    // Producers a (its conv writes, the ReLU runs in place), b and p are slices.
    const std::vector<std::pair<std::string, int64_t>> slices{{"a", 0}, {"b", 4}, {"p", 10}};
    for (const auto& [name, channel] : slices) {
      const cuda::Value& v = value_named(p, name);
      INFO(name);
      CHECK(v.buffer == cat.buffer);
      CHECK(v.offset == cat.offset + channel * hw);
      CHECK(v.batch_stride == total * hw);
      CHECK(v.dense() == (batch == 1));
    }
    // x is a graph input (also read by the convs): copied into its slice.
    CHECK(p.concat_inputs_zero_copy == 3);
    CHECK(p.concat_inputs_copied == 1);
    CHECK(value_named(p, "x").buffer != cat.buffer);
    // The conv of unit a writes the slice and ReLU is fused by cuDNN.
    bool found = false;
    for (const cuda::Launch& l : p.launches) {
      for (const auto& op : l.ops) {
        if (const auto* conv = dynamic_cast<const cuda::ConvOp*>(op.get()); conv && conv->label == "a_conv") {
          found = true;
          CHECK(p.values[static_cast<size_t>(conv->y)].buffer == cat.buffer);
          CHECK(conv->fused);
          CHECK(conv->relu);
        }
      }
    }
    CHECK(found);
  }
}

TEST_CASE("element-wise chains after a convolution run in place in one operation", "[host]") {
  GraphBuilder b;
  const auto x = b.input("x", {2, 4, 9, 9});
  // Asymmetric pads (0,0,1,1) need an explicit pad in front of cuDNN.
  const auto c = b.conv("c", x, 8, 3, 2, {0, 0, 1, 1});
  ir::ClipAttrs clip;
  clip.min = 0.0f;
  clip.max = 6.0f;
  const auto y = b.node(OpKind::kHardSwish, "y", {b.node(OpKind::kClip, "clip", {c}, clip)});
  b.output(y);
  const sched::UnitGraph units = sched::UnitGraph::form(b.graph());
  REQUIRE(units.size() == 1);
  const cuda::Program p = cuda::lower_program(units, exec::lower(units, sequential_schedule(units)));
  REQUIRE(p.launches.size() == 1);
  const auto& ops = p.launches[0].ops;
  REQUIRE(ops.size() == 3);
  const auto* pad = dynamic_cast<const cuda::PadOp*>(ops[0].get());
  const auto* conv = dynamic_cast<const cuda::ConvOp*>(ops[1].get());
  const auto* ew = dynamic_cast<const cuda::EwOp*>(ops[2].get());
  REQUIRE(pad != nullptr);
  REQUIRE(conv != nullptr);
  REQUIRE(ew != nullptr);
  CHECK(pad->begin == std::vector<int64_t>{0, 0, 0, 0});
  CHECK(p.values[static_cast<size_t>(pad->y)].shape == ir::Shape{2, 4, 10, 10});
  CHECK(conv->x == pad->y);
  CHECK(conv->pad == ir::Dims{0, 0});
  CHECK_FALSE(conv->fused);
  CHECK(p.values[static_cast<size_t>(conv->y)].name == "y");  // the conv writes the chain's output
  CHECK(ew->x.is_value());
  CHECK(ew->x.index == ew->y);
  CHECK(ew->y == conv->y);
  REQUIRE(ew->steps.size() == 3);  // bias, clip, hardswish
  CHECK(ew->steps[0].kind == ir::OpKind::kAdd);
  CHECK(ew->steps[0].operand.is_constant());
  CHECK(ew->steps[1].kind == ir::OpKind::kClip);
  CHECK(ew->steps[1].p1 == 6.0f);
  CHECK(ew->steps[2].kind == ir::OpKind::kHardSwish);
}

TEST_CASE("a fused Sub or Div keeps the node's operand order", "[host]") {
  // conv -> c - y -> y / c: the first step's constant operand is the left
  // one (operand_first), the second's the right one.
  GraphBuilder b;
  const auto x = b.input("x", {1, 4, 5, 5});
  const auto c = b.conv("c", x, 8, 1);
  const auto shift = b.weight("shift", {8, 1, 1});
  const auto scale = b.weight("scale", {1});
  const auto minus = b.node(OpKind::kSub, "minus", {shift, c});
  b.output(b.node(OpKind::kDiv, "y", {minus, scale}));
  const sched::UnitGraph units = sched::UnitGraph::form(b.graph());
  REQUIRE(units.size() == 1);
  const cuda::Program p = cuda::lower_program(units, exec::lower(units, sequential_schedule(units)));
  REQUIRE(p.launches.size() == 1);
  const cuda::EwOp* ew = nullptr;
  for (const auto& op : p.launches[0].ops) {
    if (const auto* e = dynamic_cast<const cuda::EwOp*>(op.get())) ew = e;
  }
  REQUIRE(ew != nullptr);
  REQUIRE(ew->steps.size() == 3);  // bias, c - y, y / c
  CHECK(ew->steps[0].kind == ir::OpKind::kAdd);
  CHECK_FALSE(ew->steps[0].operand_first);
  CHECK(ew->steps[1].kind == ir::OpKind::kSub);
  CHECK(ew->steps[1].operand_first);
  CHECK(ew->steps[2].kind == ir::OpKind::kDiv);
  CHECK_FALSE(ew->steps[2].operand_first);

  // Alone (no convolution before it), c - x runs on x with c first.
  GraphBuilder alone;
  const auto ax = alone.input("x", {1, 4, 5, 5});
  alone.output(alone.node(OpKind::kSub, "y", {alone.weight("shift", {4, 1, 1}), ax}));
  const sched::UnitGraph alone_units = sched::UnitGraph::form(alone.graph());
  const cuda::Program q = cuda::lower_program(alone_units, exec::lower(alone_units, sequential_schedule(alone_units)));
  REQUIRE(q.launches.size() == 1);
  const auto* sub = dynamic_cast<const cuda::EwOp*>(q.launches[0].ops.at(0).get());
  REQUIRE(sub != nullptr);
  REQUIRE(sub->steps.size() == 1);
  CHECK(sub->x.is_value());
  CHECK(sub->steps[0].operand.is_constant());
  CHECK(sub->steps[0].operand_first);
}

TEST_CASE("a merged convolution writes one buffer whose slices are the members' outputs", "[host]") {
  GraphBuilder b;
  const auto x = b.input("x", {2, 8, 6, 6});
  const auto a = b.node(OpKind::kRelu, "a", {b.conv("a_conv", x, 4, 1)});
  const auto c = b.node(OpKind::kRelu, "c", {b.conv("c_conv", x, 6, 3, 1, {1, 1, 1, 1})});
  b.output(a);
  b.output(c);
  const sched::UnitGraph units = sched::UnitGraph::form(b.graph());
  REQUIRE(units.size() == 2);
  sched::StagedSchedule staged;
  sched::Stage merge;
  merge.strategy = sched::Strategy::kMerge;
  merge.groups = {{*units.find("a"), *units.find("c")}};
  staged.stages.push_back(merge);
  sched::Schedule schedule;
  schedule.body = staged;
  const cuda::Program p = cuda::lower_program(units, exec::lower(units, schedule));
  const cuda::Value& va = value_named(p, "a");
  const cuda::Value& vc = value_named(p, "c");
  CHECK(va.buffer == vc.buffer);
  CHECK(va.batch_stride == 10 * 36);
  CHECK(vc.offset - va.offset == 4 * 36);
  CHECK(p.buffers[static_cast<size_t>(va.buffer)].persistent);  // graph outputs live in it
  REQUIRE(p.launches.size() == 1);
  REQUIRE(p.launches[0].ops.size() == 1);
  const auto* conv = dynamic_cast<const cuda::ConvOp*>(p.launches[0].ops[0].get());
  REQUIRE(conv != nullptr);
  CHECK(conv->fused);  // both epilogues are exactly ReLU
  CHECK(conv->kernel == ir::Dims{3, 3});
  CHECK(p.constants[static_cast<size_t>(conv->weight)].shape == ir::Shape{10, 8, 3, 3});
}

TEST_CASE("a merged matrix product is one GEMM whose columns are copied to the members", "[host]") {
  GraphBuilder b;
  const auto x = b.input("x", {2, 5, 16});
  for (const auto& [name, out] :
       std::vector<std::pair<std::string, int64_t>>{{"q", 16}, {"k", 16}, {"v", 8}}) {
    const auto mm = b.node(OpKind::kMatMul, name + "_mm", {x, b.weight(name + ".w", {16, out})});
    b.output(b.node(OpKind::kAdd, name, {b.weight(name + ".b", {out}), mm}));
  }
  const sched::UnitGraph units = sched::UnitGraph::form(b.graph());
  REQUIRE(units.size() == 3);
  sched::StagedSchedule staged;
  sched::Stage merge;
  merge.strategy = sched::Strategy::kMerge;
  merge.groups = {{*units.find("q"), *units.find("k"), *units.find("v")}};
  staged.stages.push_back(merge);
  sched::Schedule schedule;
  schedule.body = staged;
  const cuda::Program p = cuda::lower_program(units, exec::lower(units, schedule));
  REQUIRE(p.launches.size() == 1);
  const auto& ops = p.launches[0].ops;
  REQUIRE(!ops.empty());
  const auto* gemm = dynamic_cast<const cuda::GemmOp*>(ops[0].get());
  REQUIRE(gemm != nullptr);
  CHECK(gemm->m == 10);
  CHECK(gemm->n == 40);
  CHECK(gemm->k == 16);
  CHECK(gemm->batch == 1);
  REQUIRE(gemm->b.is_constant());
  CHECK(p.constants[static_cast<size_t>(gemm->b.index)].shape == ir::Shape{16, 40});
  CHECK(p.values[static_cast<size_t>(gemm->y)].shape == ir::Shape{2, 5, 40});
  // Per member: a copy of its columns, then its bias Add in place on its output.
  std::vector<int64_t> offsets;
  int adds = 0;
  for (size_t i = 1; i < ops.size(); ++i) {
    if (const auto* copy = dynamic_cast<const cuda::CopyOp*>(ops[i].get())) {
      CHECK(copy->src == gemm->y);
      CHECK(copy->src_strides == std::vector<int64_t>{5 * 40, 40, 1});
      offsets.push_back(copy->src_offset);
    } else if (const auto* ew = dynamic_cast<const cuda::EwOp*>(ops[i].get())) {
      CHECK(ew->y == ew->x.index);  // in place
      ++adds;
    }
  }
  CHECK(offsets == std::vector<int64_t>{0, 16, 32});
  CHECK(adds == 3);
  CHECK(value_named(p, "v").shape == ir::Shape{2, 5, 8});
  CHECK(value_named(p, "v").dense());
}

TEST_CASE("activation memory is reused along a chain", "[host]") {
  GraphBuilder b;
  auto t = b.input("x", {1, 16, 32, 32});
  for (int i = 0; i < 6; ++i) t = b.node(OpKind::kRelu, "r" + std::to_string(i), {b.conv("c" + std::to_string(i), t, 16, 3, 1, {1, 1, 1, 1})});
  b.output(t);
  const sched::UnitGraph units = sched::UnitGraph::form(b.graph());
  const cuda::Program p = cuda::lower_program(units, exec::lower(units, sequential_schedule(units)));
  const exec::HappensBefore order(static_cast<int>(p.launches.size()), p.num_streams, p.num_events, p.steps);
  const std::vector<exec::MemoryRequest> requests = p.memory_requests();
  const exec::MemoryLayout layout = exec::plan_memory(requests, order);
  // 7 tensors of 64 KiB (input, 5 intermediates, output): two intermediates
  // alive at a time plus the two persistent ones.
  CHECK(layout.unshared_bytes == 7 * 65536);
  CHECK(layout.total_bytes == 4 * 65536);
}

TEST_CASE("a stage lowers with its external tensors as inputs and its results as outputs", "[host]") {
  const ir::Graph graph = inception_like(1);
  const sched::UnitGraph units = sched::UnitGraph::form(graph);
  exec::ExecPlan plan;
  plan.num_streams = 2;
  plan.kernels = {{{*units.find("a")}, false}, {{*units.find("b")}, false}};
  plan.steps = {launch(0, 0), launch(1, 1)};
  cuda::LowerOptions options;
  options.partial = true;
  const cuda::Program p = cuda::lower_program(units, plan, options);
  REQUIRE(p.inputs.size() == 1);
  CHECK(p.inputs[0].first == "x");
  REQUIRE(p.outputs.size() == 2);
  CHECK(p.outputs[0].first == "a");
  CHECK(p.outputs[1].first == "b");
  // The concat is outside the stage: outputs are dense buffers of their own.
  for (const auto& [name, v] : p.outputs) {
    CHECK(p.values[static_cast<size_t>(v)].dense());
    CHECK(p.buffers[static_cast<size_t>(p.values[static_cast<size_t>(v)].buffer)].persistent);
  }
}

// A float32 convolution + ReLU converted to float16 (float32 input and
// output, Casts at the boundaries): the buffers are sized in bytes of their
// type, the convolution reads and writes float16 with float16 weights, and
// the element-wise launches dispatch to the type pairs of their values (the
// input Cast float32 -> float16, the output Cast float16 -> float32), as
// their parameters (EwParams::x.type, y_type) say.
TEST_CASE("a graph converted to float16 lowers to typed buffers and typed kernel launches", "[host]") {
  for (const ir::ElementType type : {ir::ElementType::kFloat16, ir::ElementType::kBFloat16}) {
    INFO(ir::type_name(type));
    GraphBuilder b;
    const auto x = b.input("x", {2, 8, 6, 6});
    const auto c = b.conv("c", x, 16, 3, 1, {1, 1, 1, 1});
    b.output(b.node(OpKind::kRelu, "y", {c}));
    ir::ConversionOptions precision;
    precision.type = type;
    const ir::ConversionStats stats = ir::convert_to_half(b.graph(), precision, "test");
    CHECK(stats.casts == 2);
    const sched::UnitGraph units = sched::UnitGraph::form(b.graph());
    const exec::ExecPlan plan = exec::lower(units, sequential_schedule(units));
    const cuda::Program p = cuda::lower_program(units, plan);
    const int64_t elements_in = 2 * 8 * 6 * 6, elements_out = 2 * 16 * 6 * 6;
    std::map<std::string, const cuda::Buffer*> by_name;
    for (const cuda::Buffer& buffer : p.buffers) {
      CHECK(buffer.bytes() == buffer.elements * ir::bytes_of(buffer.type));
      by_name[buffer.name] = &buffer;
    }
    // The graph's input and output stay float32; what is between is 16-bit.
    const cuda::Value& in = p.values.at(static_cast<size_t>(p.inputs.at(0).second));
    const cuda::Value& out = p.values.at(static_cast<size_t>(p.outputs.at(0).second));
    CHECK(in.type == ir::ElementType::kFloat32);
    CHECK(out.type == ir::ElementType::kFloat32);
    CHECK(p.buffers.at(static_cast<size_t>(in.buffer)).bytes() == elements_in * 4);
    CHECK(p.buffers.at(static_cast<size_t>(out.buffer)).bytes() == elements_out * 4);
    int conv_ops = 0;
    std::vector<std::string> ew_launches;
    // Fake, well-aligned host addresses: a launch builds its parameters only.
    std::vector<std::vector<char>> memory;
    std::vector<void*> values;
    for (const cuda::Value& v : p.values) {
      memory.emplace_back(static_cast<size_t>(p.buffers.at(static_cast<size_t>(v.buffer)).bytes()) + 256);
      values.push_back(memory.back().data());
    }
    std::vector<const void*> constants(p.constants.size(), memory.front().data());
    for (const cuda::Launch& launch : p.launches) {
      for (const auto& op : launch.ops) {
        if (const auto* conv = dynamic_cast<const cuda::ConvOp*>(op.get())) {
          ++conv_ops;
          CHECK(p.values.at(static_cast<size_t>(conv->x)).type == type);
          CHECK(p.values.at(static_cast<size_t>(conv->y)).type == type);
          CHECK(p.constants.at(static_cast<size_t>(conv->weight)).type == type);
          CHECK(p.constants.at(static_cast<size_t>(conv->weight)).bytes() == 16 * 8 * 3 * 3 * 2);
          CHECK(p.buffers.at(static_cast<size_t>(p.values.at(static_cast<size_t>(conv->y)).buffer)).bytes() ==
                elements_out * 2);
        }
        if (dynamic_cast<const cuda::EwOp*>(op.get()) != nullptr) {
          cuda::Uses uses;
          op->uses(uses);
          const cuda::Binding binding(p, values, constants, uses);
          ew_launches.push_back(op->launch(binding)->describe());
        }
      }
    }
    CHECK(conv_ops == 1);
    const std::string to_half = std::string("(float32 -> ") + ir::type_name(type) + ")";
    const std::string to_float = std::string("(") + ir::type_name(type) + " -> float32)";
    int casts_in = 0, casts_out = 0;
    for (const std::string& d : ew_launches) {
      INFO(d);
      casts_in += d.find(to_half) != std::string::npos ? 1 : 0;
      casts_out += d.find(to_float) != std::string::npos ? 1 : 0;
    }
    CHECK(casts_in == 1);
    CHECK(casts_out == 1);
  }
}

TEST_CASE("an operation's launch gets the pointers of the values it declared only", "[host]") {
  cuda::Program p;
  for (int i = 0; i < 3; ++i) p.add_scratch("v" + std::to_string(i), {1, 4});
  std::vector<float> memory(12);
  const std::vector<void*> values{memory.data(), memory.data() + 4, memory.data() + 8};
  const std::vector<const void*> constants;
  cuda::Uses uses;
  uses.read(0);
  uses.write(1);
  const cuda::Binding binding(p, values, constants, uses);
  CHECK(binding.in(0) == values[0]);
  CHECK(binding.in(1) == values[1]);  // a written value may be read back
  CHECK(binding.out(1) == values[1]);
  CHECK_THROWS_AS(binding.out(0), InternalError);  // read-only
  CHECK_THROWS_AS(binding.in(2), InternalError);   // undeclared
  CHECK(binding.in(cuda::Ref{}) == nullptr);
}

// --- Windows over one and three spatial axes ----------------------------------

ir::TensorId conv_nd(GraphBuilder& b, const std::string& name, ir::TensorId x, int64_t out,
                     ir::Dims k, ir::Dims pads, bool bias = true) {
  ir::ConvAttrs a;
  a.kernel = k;
  a.stride = ir::Dims(k.size(), 1);
  a.dilation = ir::Dims(k.size(), 1);
  a.pads = std::move(pads);
  ir::Shape w{out, b.graph().tensor(x).shape.at(1)};
  w.insert(w.end(), k.begin(), k.end());
  std::vector<ir::TensorId> inputs{x, b.weight(name + ".w", w)};
  if (bias) inputs.push_back(b.weight(name + ".b", {out}));
  return b.node(OpKind::kConv, name, std::move(inputs), a);
}

std::vector<const cuda::Operation*> ops_of(const cuda::Program& p) {
  std::vector<const cuda::Operation*> ops;
  for (const cuda::Launch& l : p.launches) {
    for (const auto& op : l.ops) ops.push_back(op.get());
  }
  return ops;
}

TEST_CASE("a 1-D convolution is cuDNN's 2-D one with H = 1, asymmetric pads made explicit on L",
          "[host]") {
  GraphBuilder b;
  const auto x = b.input("x", {2, 4, 19});
  b.output(b.node(OpKind::kRelu, "y", {conv_nd(b, "c", x, 6, {3}, {0, 2})}));
  const sched::UnitGraph units = sched::UnitGraph::form(b.graph());
  const cuda::Program p =
      cuda::lower_program(units, exec::lower(units, sequential_schedule(units)));
  const auto ops = ops_of(p);
  REQUIRE(ops.size() == 2);
  const auto* pad = dynamic_cast<const cuda::PadOp*>(ops[0]);
  const auto* conv = dynamic_cast<const cuda::ConvOp*>(ops[1]);
  REQUIRE(pad != nullptr);
  REQUIRE(conv != nullptr);
  CHECK(pad->begin == std::vector<int64_t>{0, 0, 0});
  CHECK(p.values[static_cast<size_t>(pad->y)].shape == ir::Shape{2, 4, 21});
  CHECK(conv->x == pad->y);
  CHECK(conv->kernel == ir::Dims{3});
  CHECK(conv->pad == ir::Dims{0});
  CHECK(conv->fused);  // bias + ReLU in cuDNN's call, as for 2-D
  const cuda::ConvShape s = cuda::conv_shape(p, *conv);
  CHECK(s.x_dims() == ir::Shape{2, 4, 1, 21});
  CHECK(s.y_dims() == ir::Shape{2, 6, 1, 19});
  CHECK(s.w_dims() == ir::Shape{6, 4, 1, 3});
  CHECK(s.pad == ir::Dims{0, 0});
  CHECK(s.stride == ir::Dims{1, 1});
  CHECK(s.dilation == ir::Dims{1, 1});
  CHECK(s.x_item() == 4 * 21);
  CHECK(s.y_item() == 6 * 19);
}

TEST_CASE("a 3-D convolution keeps T, H and W, and its geometry keys the algorithm choice",
          "[host]") {
  GraphBuilder b;
  const auto x = b.input("x", {1, 3, 4, 6, 8});
  const auto c = conv_nd(b, "c", x, 5, {3, 3, 3}, {1, 1, 1, 1, 1, 1}, false);
  b.output(b.node(OpKind::kSigmoid, "y", {c}));
  const sched::UnitGraph units = sched::UnitGraph::form(b.graph());
  const cuda::Program p =
      cuda::lower_program(units, exec::lower(units, sequential_schedule(units)));
  const auto ops = ops_of(p);
  REQUIRE(ops.size() == 2);
  const auto* conv = dynamic_cast<const cuda::ConvOp*>(ops[0]);
  const auto* ew = dynamic_cast<const cuda::EwOp*>(ops[1]);
  REQUIRE(conv != nullptr);
  REQUIRE(ew != nullptr);
  CHECK_FALSE(conv->fused);
  const cuda::ConvShape s = cuda::conv_shape(p, *conv);
  CHECK(s.in == ir::Dims{4, 6, 8});
  CHECK(s.out == ir::Dims{4, 6, 8});
  CHECK(s.filter == ir::Dims{3, 3, 3});
  CHECK(s.pad == ir::Dims{1, 1, 1});
  CHECK(s.w_dims() == ir::Shape{5, 3, 3, 3, 3});
  cuda::ConvShape other = s;
  other.in = {4, 8, 6};
  CHECK(other.key() != s.key());  // every axis is in the key
  other = s;
  other.filter = {1, 3, 3};
  CHECK(other.key() != s.key());
}

TEST_CASE("merged 3-D convolutions are one convolution over [out, in, k, k, k] weights", "[host]") {
  GraphBuilder b;
  const auto x = b.input("x", {1, 4, 4, 5, 6});
  const auto a =
      b.node(OpKind::kRelu, "a", {conv_nd(b, "a_conv", x, 3, {1, 1, 1}, {0, 0, 0, 0, 0, 0})});
  const auto c =
      b.node(OpKind::kRelu, "c", {conv_nd(b, "c_conv", x, 5, {3, 3, 3}, {1, 1, 1, 1, 1, 1})});
  b.output(a);
  b.output(c);
  const sched::UnitGraph units = sched::UnitGraph::form(b.graph());
  sched::StagedSchedule staged;
  sched::Stage merge;
  merge.strategy = sched::Strategy::kMerge;
  merge.groups = {{*units.find("a"), *units.find("c")}};
  staged.stages.push_back(merge);
  sched::Schedule schedule;
  schedule.body = staged;
  const cuda::Program p = cuda::lower_program(units, exec::lower(units, schedule));
  REQUIRE(p.launches.size() == 1);
  REQUIRE(p.launches[0].ops.size() == 1);
  const auto* conv = dynamic_cast<const cuda::ConvOp*>(p.launches[0].ops[0].get());
  REQUIRE(conv != nullptr);
  CHECK(conv->fused);
  CHECK(conv->kernel == ir::Dims{3, 3, 3});
  CHECK(conv->pad == ir::Dims{1, 1, 1});
  CHECK(p.constants[static_cast<size_t>(conv->weight)].shape == ir::Shape{8, 4, 3, 3, 3});
  CHECK(cuda::conv_shape(p, *conv).y_dims() == ir::Shape{1, 8, 4, 5, 6});
}

TEST_CASE("a transposed convolution's bias and activation are one element-wise pass after it",
          "[host]") {
  for (const ir::Shape& xs : {ir::Shape{2, 4, 7}, ir::Shape{1, 4, 3, 4, 5}}) {
    const size_t spatial = xs.size() - 2;
    GraphBuilder b;
    const auto x = b.input("x", xs);
    ir::ConvTransposeAttrs a;
    a.kernel = ir::Dims(spatial, 3);
    a.stride = ir::Dims(spatial, 2);
    a.dilation = ir::Dims(spatial, 1);
    a.pads = ir::Dims(2 * spatial, 1);
    a.output_padding = ir::Dims(spatial, 1);
    ir::Shape w{4, 6};
    w.insert(w.end(), spatial, 3);
    const auto t =
        b.node(OpKind::kConvTranspose, "t", {x, b.weight("t.w", w), b.weight("t.b", {6})}, a);
    b.output(b.node(OpKind::kRelu, "y", {t}));
    const sched::UnitGraph units = sched::UnitGraph::form(b.graph());
    const cuda::Program p =
        cuda::lower_program(units, exec::lower(units, sequential_schedule(units)));
    const auto ops = ops_of(p);
    INFO(ir::to_string(xs));
    REQUIRE(ops.size() == 2);
    CHECK(ops[0]->describe(p).find("conv-transpose") == 0);
    const auto* ew = dynamic_cast<const cuda::EwOp*>(ops[1]);
    REQUIRE(ew != nullptr);
    REQUIRE(ew->steps.size() == 2);
    CHECK(ew->steps[0].kind == OpKind::kAdd);
    CHECK(ew->steps[0].operand.is_constant());
    ir::Shape bias(xs.size(), 1);
    bias[1] = 6;
    CHECK(p.constants.at(static_cast<size_t>(ew->steps[0].operand.index)).shape == bias);
    CHECK(ew->steps[1].kind == OpKind::kRelu);
    CHECK(ew->y == ew->x.index);  // in place on the transposed convolution's output
  }
}

TEST_CASE(
    "pooling over one and three spatial axes: cuDNN where it can, the own kernel for dilation and "
    "ceil mode",
    "[host]") {
  auto pool_nd = [](ir::Dims k, ir::Dims s, ir::Dims pads, bool ceil, ir::Dims dilation) {
    ir::PoolAttrs a;
    a.kernel = std::move(k);
    a.stride = std::move(s);
    a.pads = std::move(pads);
    a.ceil_mode = ceil;
    a.dilation = std::move(dilation);
    return a;
  };
  for (const ir::ElementType type : {ir::ElementType::kFloat32, ir::ElementType::kFloat16}) {
    GraphBuilder b;
    const auto l = b.input("l", {2, 4, 21});
    const auto v = b.input("v", {1, 3, 6, 7, 8});
    b.output(b.node(OpKind::kMaxPool, "l_cudnn", {l}, pool_nd({3}, {2}, {1, 1}, false, {1})));
    b.output(b.node(OpKind::kMaxPool, "l_dilated", {l}, pool_nd({3}, {1}, {2, 2}, false, {2})));
    b.output(b.node(OpKind::kMaxPool, "v_cudnn", {v},
                    pool_nd({3, 3, 3}, {2, 2, 2}, {1, 1, 1, 1, 1, 1}, false, {1, 1, 1})));
    b.output(b.node(OpKind::kMaxPool, "v_ceil", {v},
                    pool_nd({2, 2, 2}, {2, 2, 2}, {0, 0, 0, 0, 0, 0}, true, {1, 1, 1})));
    b.output(b.node(OpKind::kGlobalAveragePool, "v_gap", {v}));
    ir::Graph g = std::move(b.graph());
    if (type != ir::ElementType::kFloat32) {
      ir::ConversionOptions options;
      options.type = type;
      options.half_io = true;
      ir::convert_to_half(g, options, "pools");
    }
    const sched::UnitGraph units = sched::UnitGraph::form(g);
    const cuda::Program p =
        cuda::lower_program(units, exec::lower(units, sequential_schedule(units)));
    std::map<std::string, std::string> described;
    for (const cuda::Operation* op : ops_of(p)) {
      const std::string d = op->describe(p);
      for (const char* name : {"l_cudnn", "l_dilated", "v_cudnn", "v_ceil", "v_gap"}) {
        if (d.find(std::string("-> ") + name) != std::string::npos) described[name] = d;
      }
    }
    INFO(ir::type_name(type));
    REQUIRE(described.size() == 5);
    const bool f32 = type == ir::ElementType::kFloat32;
    CHECK((described["l_cudnn"].find("(cuDNN)") != std::string::npos) == f32);
    CHECK(described["l_dilated"].find("(own)") != std::string::npos);
    CHECK((described["v_cudnn"].find("maxpool 3x3x3 (cuDNN)") != std::string::npos) == f32);
    CHECK(described["v_ceil"].find("(own)") != std::string::npos);
    CHECK((described["v_gap"].find("avgpool 6x7x8 (cuDNN)") != std::string::npos) == f32);
  }
}

TEST_CASE("Resize of one and three spatial axes lowers to the own kernel", "[host]") {
  for (const ir::Shape& xs : {ir::Shape{2, 3, 11}, ir::Shape{1, 2, 3, 5, 4}}) {
    GraphBuilder b;
    const auto x = b.input("x", xs);
    ir::ResizeAttrs a;
    a.mode = ir::resize::Mode::kLinear;
    a.scale.assign(xs.size() - 2, 2.0f);
    a.size.clear();
    for (size_t d = 2; d < xs.size(); ++d) a.size.push_back(2 * xs[d]);
    b.output(b.node(OpKind::kResize, "y", {x}, a));
    const sched::UnitGraph units = sched::UnitGraph::form(b.graph());
    const cuda::Program p =
        cuda::lower_program(units, exec::lower(units, sequential_schedule(units)));
    const auto ops = ops_of(p);
    REQUIRE(ops.size() == 1);
    CHECK(ops[0]->describe(p) == "resize linear x -> y");
  }
}

#endif  // IOS_HAVE_CUDA

}  // namespace
}  // namespace ios::gputest
