// [host] tests of the engine's device-independent decisions: which models the
// GPU model test runs, how a missing or broken GPU is classified, how long
// element-wise chains are split, pointer alignment of slices, buffer reuse
// across streams, and the device pool's bookkeeping for stage measurement.
// They run with or without a GPU (see main.cpp).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "cuda/engine.h"
#include "gpu_util.h"
#include "test_paths.h"

#include "cpu/executor.h"

#ifdef IOS_HAVE_CUDA
#include "cuda/conv.h"
#include "exec/memory_layout.h"
#include "cuda/operations.h"
#include "cuda/program.h"
#include "cuda/residency.h"
#endif

namespace ios::gputest {
namespace {

using ir::OpKind;

TEST_CASE("the GPU model test finds the files make-models.sh writes, with their batch", "[host]") {
  const auto dir = std::filesystem::temp_directory_path() / "ios_shipped_models_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (const char* name : {"inception_v3-bdyn.onnx", "inception_v3.onnx", "randwire-bdyn-64x64.onnx",
                           "resnet50-b2-75x75.onnx", "squeezenet1_1.onnx", "notes.txt", "Bad-Name.onnx"}) {
    std::ofstream(dir / name) << "x";
  }
  const std::vector<ShippedModel> models = shipped_models(dir);
  REQUIRE(models.size() == 4);
  CHECK(models[0].name == "inception_v3");
  CHECK(models[0].file.filename() == "inception_v3-bdyn.onnx");  // the symbolic batch wins
  CHECK_FALSE(models[0].batch.has_value());
  CHECK(models[0].runs_at(8));
  CHECK(models[0].import_batch(8) == 8);
  CHECK(models[1].name == "randwire");
  CHECK_FALSE(models[1].batch.has_value());
  CHECK(models[2].name == "resnet50");
  CHECK(models[2].batch == 2);
  CHECK_FALSE(models[2].runs_at(1));
  CHECK_FALSE(models[2].import_batch(2).has_value());  // a static batch: the file's own
  CHECK(models[3].name == "squeezenet1_1");
  CHECK(models[3].batch == 1);
  CHECK_FALSE(models[3].runs_at(8));
  std::filesystem::remove_all(dir);

  // And the real folder: every model the tests generate runs at batch 1, and
  // the IOS paper's networks (a symbolic batch) at 8 too. The windowed
  // transformers and the detectors are exported as torchvision's users
  // export them, with a static batch of 1, and run at that batch only.
  const std::vector<ShippedModel> generated = shipped_models(test::models_dir());
  std::map<std::string, ShippedModel> by_name;
  for (const ShippedModel& m : generated) {
    INFO(m.file.string());
    CHECK(m.runs_at(1));
    by_name.emplace(m.name, m);
  }
  INFO("models directory " << test::models_dir());
  for (const char* expected : {"inception_v3", "squeezenet1_1", "randwire", "nasnet_a_large"}) {
    INFO(expected);
    REQUIRE(by_name.count(expected) == 1);
    CHECK(by_name.at(expected).runs_at(8));
  }
  for (const char* expected : {"swin_t", "maxvit_t", "retinanet_resnet50_fpn", "fcos_resnet50_fpn",
                               "ssdlite320_mobilenet_v3_large"}) {
    INFO(expected);
    REQUIRE(by_name.count(expected) == 1);
    CHECK(by_name.at(expected).batch == 1);
  }
}

TEST_CASE("a present but unusable GPU is told apart from no GPU", "[host]") {
  using cuda::DeviceState;
  CHECK(cuda::classify_device(1, true, "") == DeviceState::kUsable);
  CHECK(cuda::classify_device(0, false, "no CUDA device is present") == DeviceState::kAbsent);
  CHECK(cuda::classify_device(-1, false, "cudaGetDeviceCount failed: cudaErrorInsufficientDriver") ==
        DeviceState::kAbsent);
  // A kernel driver is loaded but the runtime cannot use it: too old, or broken.
  CHECK(cuda::classify_device(-1, true, "cudaGetDeviceCount failed: cudaErrorInsufficientDriver") ==
        DeviceState::kUnusable);
  CHECK(cuda::classify_device(1, true, "cuDNN 8 is loaded but ios was built with cuDNN 9") ==
        DeviceState::kUnusable);
  CHECK(cuda::classify_device(2, false, "compute capability 6.1") == DeviceState::kUnusable);
  // The driver works and says there is no (visible) device: CUDA_VISIBLE_DEVICES="".
  CHECK(cuda::classify_device(0, true, "cudaGetDeviceCount failed: cudaErrorNoDevice") == DeviceState::kAbsent);
  // This machine: whatever it is, it is never a broken one (that fails main()).
  const cuda::DeviceStatus status = cuda::device_status();
  CHECK(status.state != DeviceState::kUnusable);
  CHECK(status.summary.has_value() == (status.state == DeviceState::kUsable));
  CHECK(status.reason.empty() == (status.state == DeviceState::kUsable));
}

#ifdef IOS_HAVE_CUDA

std::vector<const cuda::EwOp*> elementwise_ops(const cuda::Launch& launch) {
  std::vector<const cuda::EwOp*> ops;
  for (const auto& op : launch.ops) {
    if (const auto* ew = dynamic_cast<const cuda::EwOp*>(op.get())) ops.push_back(ew);
  }
  return ops;
}

// x -> conv -> 5 x BatchNormalization -> Relu: 1 (bias) + 5 x 2 + 1 = 12 steps.
ir::Graph long_chain() {
  GraphBuilder b;
  const auto x = b.input("x", {2, 4, 6, 6});
  auto t = b.conv("c", x, 6, 3, 1, {1, 1, 1, 1});
  for (int i = 0; i < 5; ++i) {
    const std::string n = "bn" + std::to_string(i);
    ir::BatchNormAttrs bn;
    bn.epsilon = 1e-5f;
    const auto scale = b.weight(n + ".scale", {6}, 1.0f);
    const auto bias = b.weight(n + ".bias", {6}, 0.5f);
    const auto mean = b.weight(n + ".mean", {6}, 0.2f);
    const auto var = b.constant(n + ".var", {6}, std::vector<float>(6, 1.5f));
    t = b.node(OpKind::kBatchNorm, n, {t, scale, bias, mean, var}, bn);
  }
  b.output(b.node(OpKind::kRelu, "y", {t}));
  return std::move(b.graph());
}

TEST_CASE("element-wise chains longer than one kernel's steps are split, in order, in place", "[host]") {
  const ir::Graph graph = long_chain();
  const sched::UnitGraph units = sched::UnitGraph::form(graph);
  REQUIRE(units.size() == 1);
  const cuda::Program p = cuda::lower_program(units, exec::lower(units, sequential_schedule(units)));
  REQUIRE(p.launches.size() == 1);
  const std::vector<const cuda::EwOp*> ew = elementwise_ops(p.launches[0]);
  REQUIRE(ew.size() == 2);
  std::vector<ir::OpKind> kinds;
  for (const cuda::EwOp* op : ew) {
    CHECK(op->steps.size() <= static_cast<size_t>(cuda::kMaxEwStepsPerOp));
    CHECK(op->y == ew[0]->y);
    for (const cuda::EwStep& s : op->steps) kinds.push_back(s.kind);
  }
  CHECK(ew[0]->steps.size() == static_cast<size_t>(cuda::kMaxEwStepsPerOp));
  CHECK(ew[1]->x.is_value());
  CHECK(ew[1]->x.index == ew[1]->y);  // the rest continues in place
  REQUIRE(kinds.size() == 12);
  CHECK(kinds.front() == ir::OpKind::kAdd);  // the convolution's bias
  for (size_t i = 1; i < 11; i += 2) {
    CHECK(kinds[i] == ir::OpKind::kMul);
    CHECK(kinds[i + 1] == ir::OpKind::kAdd);
  }
  CHECK(kinds.back() == ir::OpKind::kRelu);
}

TEST_CASE("slice pointers report their real alignment, and algorithm choice is keyed by it", "[host]") {
  CHECK(cuda::pointer_alignment(0) == 256);
  CHECK(cuda::pointer_alignment(64) == 256);
  CHECK(cuda::pointer_alignment(1) == 4);
  CHECK(cuda::pointer_alignment(2) == 8);
  CHECK(cuda::pointer_alignment(147) == 4);
  CHECK(cuda::pointer_alignment(100) == 16);
  // x [1, 3, 7, 7] -> conv a (3 channels), conv b (5 channels) -> concat: b's
  // output starts 3 * 49 floats into the concat's buffer, 4-byte aligned.
  GraphBuilder b;
  const auto x = b.input("x", {1, 3, 7, 7});
  const auto a = b.conv("a", x, 3, 1);
  const auto c = b.conv("b", x, 5, 3, 1, {1, 1, 1, 1});
  ir::AxisAttrs axis;
  b.output(b.node(OpKind::kConcat, "cat", {a, c}, axis));
  const sched::UnitGraph units = sched::UnitGraph::form(b.graph());
  const cuda::Program p = cuda::lower_program(units, exec::lower(units, sequential_schedule(units)));
  std::map<std::string, cuda::ConvShape> shapes;
  for (const cuda::Launch& l : p.launches) {
    for (const auto& op : l.ops) {
      if (const auto* conv = dynamic_cast<const cuda::ConvOp*>(op.get())) shapes[conv->label] = cuda::conv_shape(p, *conv);
    }
  }
  REQUIRE(shapes.size() == 2);
  CHECK(shapes["a"].y_align == 256);
  CHECK(shapes["b"].y_align == 4);
  CHECK(shapes["b"].x_align == 256);
  cuda::ConvShape aligned = shapes["b"];
  aligned.y_align = 256;
  CHECK(aligned.key() != shapes["b"].key());
}

// x -> two chains of three convs (stage 1, one per stream) -> two more chains
// (stage 2, streams swapped) -> add. Stage 2's intermediates may reuse stage
// 1's, across streams, because the stage boundary joins them.
ir::Graph four_chains() {
  GraphBuilder b;
  const auto x = b.input("x", {1, 8, 16, 16});
  auto chain = [&](const std::string& name, ir::TensorId t) {
    for (int i = 0; i < 3; ++i) {
      const std::string n = name + std::to_string(i);
      t = b.node(OpKind::kRelu, n, {b.conv(n + "_conv", t, 8, 3, 1, {1, 1, 1, 1})});
    }
    return t;
  };
  const auto c = chain("c", chain("a", x));
  const auto d = chain("d", chain("b", x));
  b.output(b.node(OpKind::kAdd, "y", {c, d}));
  return std::move(b.graph());
}

sched::Schedule four_chain_schedule(const sched::UnitGraph& units) {
  auto ids = [&](const std::string& name) {
    std::vector<sched::UnitId> v;
    for (int i = 0; i < 3; ++i) v.push_back(*units.find(name + std::to_string(i)));
    return v;
  };
  sched::StagedSchedule staged;
  sched::Stage first, second, last;
  first.groups = {ids("a"), ids("b")};
  second.groups = {ids("d"), ids("c")};
  last.groups = {{*units.find("y")}};
  staged.stages = {first, second, last};
  sched::Schedule schedule;
  schedule.body = staged;
  return schedule;
}

TEST_CASE("the memory plan reuses buffers across streams only where events order them", "[host]") {
  const ir::Graph graph = four_chains();
  const sched::UnitGraph units = sched::UnitGraph::form(graph);
  const cuda::Program p = cuda::lower_program(units, exec::lower(units, four_chain_schedule(units)));
  CHECK(p.num_streams == 2);
  const exec::HappensBefore order(static_cast<int>(p.launches.size()), p.num_streams, p.num_events, p.steps);
  const std::vector<exec::MemoryRequest> requests = p.memory_requests();
  const exec::MemoryLayout layout = exec::plan_memory(requests, order);
  CHECK(layout.total_bytes < layout.unshared_bytes);
  auto streams_of = [&](size_t buffer) {
    std::set<int> s;
    for (int l : requests[buffer].users) s.insert(p.launches[static_cast<size_t>(l)].stream);
    return s;
  };
  int shared_across_streams = 0;
  for (size_t a = 0; a < requests.size(); ++a) {
    for (size_t b = a + 1; b < requests.size(); ++b) {
      const int64_t ea = layout.offsets[a] + requests[a].bytes, eb = layout.offsets[b] + requests[b].bytes;
      const bool overlap = layout.offsets[a] < eb && layout.offsets[b] < ea;
      if (!overlap) continue;
      INFO("buffers " << p.buffers[a].name << " and " << p.buffers[b].name);
      CHECK(exec::may_share(requests[a], requests[b], order));
      if (streams_of(a) != streams_of(b)) ++shared_across_streams;
    }
  }
  CHECK(shared_across_streams > 0);
}

TEST_CASE("grow-only buffers reallocate logarithmically often", "[host]") {
  constexpr int64_t MiB = int64_t{1} << 20;
  CHECK(cuda::grown_capacity(0, 1) == 2 * MiB);
  CHECK(cuda::grown_capacity(2 * MiB, 2 * MiB) == 2 * MiB);
  CHECK(cuda::grown_capacity(2 * MiB, 2 * MiB + 1) == 4 * MiB);
  CHECK(cuda::grown_capacity(4 * MiB, 100 * MiB) == 100 * MiB);
  std::mt19937_64 rng(7);
  int64_t capacity = 0, largest = 0;
  int reallocations = 0;
  for (int stage = 0; stage < 100000; ++stage) {
    const auto request = static_cast<int64_t>(rng() % (1024 * MiB));
    largest = std::max(largest, request);
    const int64_t next = cuda::grown_capacity(capacity, request);
    reallocations += next != capacity;
    capacity = next;
    REQUIRE(capacity >= request);
  }
  CHECK(reallocations <= 12);  // log2(1 GiB / 2 MiB) + a few
  CHECK(capacity < 2 * largest + 2 * MiB);
}

TEST_CASE("weights stay resident across stages and are uploaded once", "[host]") {
  auto tensor = [](size_t n) { return std::make_shared<const std::vector<float>>(n, 1.0f); };
  const auto a = tensor(10), b = tensor(100), c = tensor(1000);
  cuda::WeightResidency residency(int64_t{1} << 20);
  const auto first = residency.place({a, b});
  CHECK(first.upload == std::vector<bool>{true, true});
  CHECK(first.offsets == std::vector<int64_t>{0, 256});
  const auto second = residency.place({b, c});
  CHECK(second.upload == std::vector<bool>{false, true});
  CHECK(second.offsets[0] == 256);
  CHECK(second.offsets[1] == 256 + 512);
  const auto third = residency.place({c, a, a});
  CHECK(third.upload == std::vector<bool>{false, false, false});
  CHECK(third.offsets == std::vector<int64_t>{768, 0, 0});
  CHECK_FALSE(third.cleared);
  CHECK(residency.resident() == 3);

  // Fresh data each stage (merged weights) fills the budget, then everything
  // is dropped and the stage at hand is placed from the start.
  cuda::WeightResidency small(8192);
  std::weak_ptr<const std::vector<float>> first_merged;
  int clears = 0;
  for (int stage = 0; stage < 20; ++stage) {
    auto merged = tensor(500);  // 2000 bytes -> 2048 placed
    if (stage == 0) first_merged = merged;
    const auto placed = small.place({a, merged});
    clears += placed.cleared;
    CHECK(placed.upload[1]);
    CHECK(placed.end <= 8192);
    if (placed.cleared) CHECK(placed.upload[0]);  // a was dropped with the rest
  }
  CHECK(clears >= 4);
  // Entries hold their data alive, so an address is never reused while resident.
  CHECK(first_merged.expired());  // long since dropped
  std::weak_ptr<const std::vector<float>> watch;
  {
    const auto kept = tensor(500);
    watch = kept;
    small.place({kept});
  }
  CHECK_FALSE(watch.expired());
}

TEST_CASE("the weight buffer grows with what stays resident; stages then only reuse", "[host]") {
  // Two stages of 3 MiB of weights each, alternating (the pattern of a DP
  // that revisits blocks): after both are resident nothing grows or uploads.
  auto tensor = [](size_t n) { return std::make_shared<const std::vector<float>>(n, 1.0f); };
  const auto a = tensor(3 << 18), b = tensor(3 << 18);  // 3 MiB each
  cuda::WeightResidency residency(int64_t{1} << 30);
  int64_t capacity = 0;
  int growths = 0, uploads = 0;
  for (int stage = 0; stage < 100; ++stage) {
    const int64_t before = residency.used_bytes();
    const auto placement = residency.place({stage % 2 ? b : a});
    const cuda::BufferGrowth growth = cuda::weight_buffer_growth(capacity, before, placement);
    if (growth.grow_to > 0) {
      ++growths;
      CHECK(growth.copy_bytes == before);  // the resident weights move along
      capacity = growth.grow_to;
    }
    CHECK(placement.end <= capacity);
    uploads += placement.upload[0];
  }
  CHECK(growths == 2);
  CHECK(uploads == 2);
  // After a clear nothing is copied.
  cuda::WeightResidency tiny(int64_t{4} << 20);
  tiny.place({a});
  const auto cleared = tiny.place({b});
  REQUIRE(cleared.cleared);
  CHECK(cuda::weight_buffer_growth(int64_t{2} << 20, int64_t{3} << 20, cleared).copy_bytes == 0);
}

// --- The same graphs on the GPU, against the CPU executor ---------------------

void check_on_gpu(const ir::Graph& graph, const sched::Schedule& schedule, const std::string& what) {
  const sched::UnitGraph units = sched::UnitGraph::form(graph);
  const exec::ExecPlan plan = exec::lower(units, schedule);
  const HostMap inputs = random_inputs(graph, 31);
  cpu::CpuExecutor cpu(units, plan, cpu::ExecutorOptions{1});
  const HostMap expected = cpu.run(inputs);
  for (bool cuda_graph : {true, false}) {
    cuda::EngineOptions options;
    options.math = ir::MathMode::kFp32;
    options.cuda_graph = cuda_graph;
    check_outputs(run_gpu(units, plan, inputs, options), expected, {1e-4, 1e-3},
                  what + (cuda_graph ? " (CUDA graph)" : " (plain launches)"));
  }
}

TEST_CASE("a split element-wise chain computes what the CPU executor does", "[gpu][engine]") {
  const ir::Graph graph = long_chain();
  const sched::UnitGraph units = sched::UnitGraph::form(graph);
  check_on_gpu(graph, sequential_schedule(units), "conv + 5 BatchNorm + ReLU");
}

TEST_CASE("buffers reused across streams give the CPU executor's outputs", "[gpu][engine]") {
  const ir::Graph graph = four_chains();
  const sched::UnitGraph units = sched::UnitGraph::form(graph);
  check_on_gpu(graph, four_chain_schedule(units), "four chains on two streams in two stages");
}

TEST_CASE("a convolution into a 4-byte-aligned concat slice gives the CPU executor's outputs", "[gpu][engine]") {
  GraphBuilder b;
  const auto x = b.input("x", {2, 3, 7, 7});
  const auto a = b.node(OpKind::kRelu, "a", {b.conv("a_conv", x, 3, 1)});
  const auto c = b.node(OpKind::kRelu, "c", {b.conv("c_conv", x, 5, 3, 1, {1, 1, 1, 1})});
  const auto d = b.conv("d", x, 7, 5, 1, {2, 2, 2, 2});
  ir::AxisAttrs axis;
  b.output(b.node(OpKind::kConcat, "cat", {a, c, d}, axis));
  const ir::Graph graph = std::move(b.graph());
  const sched::UnitGraph units = sched::UnitGraph::form(graph);
  check_on_gpu(graph, sequential_schedule(units), "odd channel slices");
}

// A transformer's class token: a constant (folded at import with the batch)
// concatenated before the patch embeddings. The ViT-style encoder was
// refused by the CUDA lowering for it on the first GPU run.
ir::Graph class_token_concat(int64_t batch) {
  GraphBuilder b;
  const auto x = b.input("x", {batch, 3, 8});
  const auto token = b.weight("token", {batch, 1, 8});
  ir::AxisAttrs axis;
  b.output(b.node(OpKind::kConcat, "cat", {token, x}, axis));
  return std::move(b.graph());
}

TEST_CASE("a constant concat input is copied from the program's constant", "[host]") {
  const ir::Graph graph = class_token_concat(2);
  const sched::UnitGraph units = sched::UnitGraph::form(graph);
  const cuda::Program p = cuda::lower_program(units, exec::lower(units, sequential_schedule(units)));
  int from_constant = 0;
  for (const cuda::Launch& l : p.launches) {
    for (const auto& op : l.ops) {
      if (const auto* copy = dynamic_cast<const cuda::CopyOp*>(op.get()); copy && copy->src_constant >= 0) {
        ++from_constant;
        CHECK(p.constants.at(static_cast<size_t>(copy->src_constant)).shape == ir::Shape{2, 1, 8});
        CHECK(copy->dst_offset == 0);  // the token comes first
        cuda::Uses uses;
        copy->uses(uses);
        CHECK(uses.reads.empty());  // no value read: the memory plan places nothing for it
      }
    }
  }
  CHECK(from_constant == 1);
}

TEST_CASE("a constant concat input gives the CPU executor's outputs", "[gpu][engine]") {
  for (int64_t batch : {1, 3}) {
    const ir::Graph graph = class_token_concat(batch);
    const sched::UnitGraph units = sched::UnitGraph::form(graph);
    check_on_gpu(graph, sequential_schedule(units), "class token at batch " + std::to_string(batch));
  }
}

#endif  // IOS_HAVE_CUDA

}  // namespace
}  // namespace ios::gputest
