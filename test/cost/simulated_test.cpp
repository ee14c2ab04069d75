// The simulated cost model: determinism, monotonicity, and the qualitative
// behaviour the IOS paper relies on (small kernels gain from running
// concurrently, large ones do not; merging small convs beats running them
// side by side).
#include "cost/simulated.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "core/error.h"
#include "cost/device_profile.h"
#include "cost/ir_builder.h"
#include "cost/unit_work.h"
#include "sched/merge.h"
#include "sched/unit_graph.h"

using ios::cost::DeviceProfile;
using ios::cost::load_device_profile;
using ios::cost::SimulatedCostModel;
using ios::sched::Stage;
using ios::sched::Strategy;
using ios::sched::UnitGraph;
using ios::sched::UnitId;
using ios::test::IrBuilder;

namespace {

UnitId unit(const UnitGraph& g, const char* id) {
  const auto u = g.find(id);
  REQUIRE(u.has_value());
  return *u;
}

Stage concurrent(std::vector<std::vector<UnitId>> groups) {
  Stage s;
  s.strategy = Strategy::kConcurrent;
  s.groups = std::move(groups);
  return s;
}

Stage merge(std::vector<UnitId> units) {
  Stage s;
  s.strategy = Strategy::kMerge;
  s.groups = {std::move(units)};
  return s;
}

// Two convolutions `a` and `b` reading the same input.
IrBuilder two_convs(ios::ir::Shape input, int64_t cout, int64_t k) {
  IrBuilder b;
  const auto x = b.input("x", std::move(input));
  b.output(b.conv("a", x, cout, k, 1, k / 2));
  b.output(b.conv("b", x, cout, k, 1, k / 2));
  return b;
}

// Every tensor of the graph (activations and weights) stored as `type`: the
// graph a conversion with 16-bit inputs and outputs makes of a float32 one
// without sensitive operators.
void store_all_as(IrBuilder& b, ios::ir::ElementType type) {
  for (size_t t = 0; t < b.graph.num_tensors(); ++t) {
    b.graph.tensor(static_cast<ios::ir::TensorId>(t)).type = type;
  }
}

}  // namespace

TEST_CASE("the simulated model is deterministic", "[cost][simulated]") {
  IrBuilder b = two_convs({1, 64, 28, 28}, 64, 3);
  const UnitGraph g = UnitGraph::form(b.graph);
  SimulatedCostModel m1(g, load_device_profile("h100"));
  SimulatedCostModel m2(g, load_device_profile("h100"));
  const Stage both = concurrent({{unit(g, "a")}, {unit(g, "b")}});
  const double first = m1.stage_latency(both);
  CHECK(first > 0.0);
  CHECK(m1.stage_latency(both) == first);
  CHECK(m2.stage_latency(both) == first);
  CHECK(m1.name() == "simulated");
}

TEST_CASE("latency grows with FLOPs", "[cost][simulated]") {
  IrBuilder b;
  const auto x = b.input("x", {1, 64, 28, 28});
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{8, 1},   {16, 1},  {32, 1},  {64, 1},
                                                           {128, 1}, {256, 1}, {512, 1}, {64, 3},
                                                           {128, 3}, {256, 3}, {512, 3}, {1024, 3}};
  std::vector<std::string> names;
  for (const auto& [cout, k] : shapes) {
    names.push_back("c" + std::to_string(cout) + "k" + std::to_string(k));
    b.output(b.conv(names.back(), x, cout, k, 1, k / 2));
  }
  const UnitGraph g = UnitGraph::form(b.graph);
  for (const char* device : {"h100", "v100"}) {
    SimulatedCostModel model(g, load_device_profile(device));
    std::vector<std::pair<double, double>> flops_latency;
    for (const auto& name : names) {
      const UnitId u = unit(g, name.c_str());
      flops_latency.emplace_back(model.work(u).flops(), model.unit_latency(u));
    }
    std::sort(flops_latency.begin(), flops_latency.end());
    INFO(device);
    for (size_t i = 1; i < flops_latency.size(); ++i) {
      INFO("flops " << flops_latency[i - 1].first << " -> " << flops_latency[i].first);
      CHECK(flops_latency[i].second >= flops_latency[i - 1].second);
    }
    // Past the fixed launch cost, the largest conv (~0.9 GFLOPs) works far
    // longer than the smallest.
    const double launch_ms = load_device_profile(device).launch_overhead_us / 1000.0;
    CHECK(flops_latency.back().second - launch_ms > 4.0 * (flops_latency.front().second - launch_ms));
  }
}

TEST_CASE("latency grows with the batch", "[cost][simulated]") {
  double previous = 0.0;
  for (int64_t batch : {1, 2, 4, 8, 16, 32}) {
    IrBuilder b;
    b.output(b.conv("c", b.input("x", {batch, 96, 17, 17}), 96, 3, 1, 1));
    const UnitGraph g = UnitGraph::form(b.graph);
    SimulatedCostModel model(g, load_device_profile("h100"));
    const double latency = model.unit_latency(0);
    INFO("batch " << batch);
    CHECK(latency >= previous);
    previous = latency;
  }
}

TEST_CASE("two tiny convs run faster concurrently than one after the other", "[cost][simulated]") {
  IrBuilder b = two_convs({1, 64, 8, 8}, 64, 1);
  const UnitGraph g = UnitGraph::form(b.graph);
  for (const std::string& device : ios::cost::shipped_device_profiles()) {
    SimulatedCostModel model(g, load_device_profile(device));
    const UnitId a = unit(g, "a"), c = unit(g, "b");
    const double sequential = model.stage_latency(concurrent({{a, c}}));
    const double parallel = model.stage_latency(concurrent({{a}, {c}}));
    INFO(device << ": sequential " << sequential << " ms, concurrent " << parallel << " ms");
    CHECK(parallel < sequential);
    // One group is the sum of its units run alone.
    CHECK(sequential == Approx(model.unit_latency(a) + model.unit_latency(c)));
  }
}

TEST_CASE("two huge convs gain at most a launch and their last waves from running concurrently",
          "[cost][simulated]") {
  IrBuilder b = two_convs({8, 256, 56, 56}, 256, 3);  // ~30 GFLOPs each
  const UnitGraph g = UnitGraph::form(b.graph);
  for (const std::string& device : ios::cost::shipped_device_profiles()) {
    const DeviceProfile profile = load_device_profile(device);
    SimulatedCostModel model(g, profile);
    const UnitId a = unit(g, "a"), c = unit(g, "b");
    const double sequential = model.stage_latency(concurrent({{a, c}}));
    const double parallel = model.stage_latency(concurrent({{a}, {c}}));
    INFO(device << ": sequential " << sequential << " ms, concurrent " << parallel << " ms");
    // At best the second launch overhead is hidden, and with whole waves the
    // second kernel's blocks fill the first one's last wave: the pair gains
    // at most one launch and one wave of each kernel.
    const double launch_ms = profile.launch_overhead_us / 1000.0;
    if (!profile.whole_waves) CHECK(parallel >= sequential - launch_ms);
    const double outputs = 8.0 * 256 * 56 * 56;
    const double fill = static_cast<double>(profile.sm_count * profile.blocks_per_sm);
    const double waves = std::ceil(outputs / ios::cost::tile_outputs(profile, outputs) / fill);
    INFO(waves << " waves per convolution");
    CHECK(waves >= 2);
    CHECK(parallel >= sequential - launch_ms - (sequential - 2 * launch_ms) / waves);
  }
}

TEST_CASE("merging two small 1x1 convs beats running them concurrently", "[cost][simulated]") {
  IrBuilder b = two_convs({1, 64, 14, 14}, 32, 1);
  const UnitGraph g = UnitGraph::form(b.graph);
  const UnitId a = unit(g, "a"), c = unit(g, "b");
  REQUIRE(ios::sched::check_merge(g, {a, c}).spec.has_value());
  for (const std::string& device : ios::cost::shipped_device_profiles()) {
    SimulatedCostModel model(g, load_device_profile(device));
    const double merged = model.stage_latency(merge({a, c}));
    const double parallel = model.stage_latency(concurrent({{a}, {c}}));
    const double sequential = model.stage_latency(concurrent({{a, c}}));
    INFO(device << ": merged " << merged << " ms, concurrent " << parallel << " ms");
    CHECK(merged < parallel);
    CHECK(merged < sequential);
  }
}

TEST_CASE("an unmergeable merge stage is an internal error", "[cost][simulated]") {
  IrBuilder b;
  const auto x = b.input("x", {1, 8, 8, 8});
  const auto a = b.conv("a", x, 8, 1);
  b.output(b.conv("b", a, 8, 1));  // reads a's output: not the same input
  const UnitGraph g = UnitGraph::form(b.graph);
  SimulatedCostModel model(g, load_device_profile("h100"));
  CHECK_THROWS_AS(model.stage_latency(merge({unit(g, "a"), unit(g, "b")})), ios::InternalError);
}

TEST_CASE("concurrency is bounded by max_concurrent_kernels and pays the event waits",
          "[cost][simulated]") {
  IrBuilder b = two_convs({1, 64, 8, 8}, 64, 1);
  const UnitGraph g = UnitGraph::form(b.graph);
  const UnitId a = unit(g, "a"), c = unit(g, "b");
  DeviceProfile profile = load_device_profile("h100");
  SimulatedCostModel base(g, profile);
  const double alone = base.unit_latency(a);
  const double parallel = base.stage_latency(concurrent({{a}, {c}}));

  // Two identical kernels whose SM shares sum to < 1. The lowered stage is a
  // fork (stream 1 waits for stream 0's record), the two kernels, and a join
  // (stream 0 waits for stream 1's record): stream 1 starts one event wait
  // late and the join adds another, while the kernels overlap (each slowed
  // by the interference while both work).
  const auto k = base.time_kernel(base.work(a).kernels.at(0));
  REQUIRE(2 * k.sm_share <= 1.0);
  const double wait = profile.event_sync_overhead_us;
  CHECK(alone * 1000.0 == Approx(k.launch_us + k.work_us));
  CHECK(parallel * 1000.0 >= k.launch_us + k.work_us + 2 * wait - 1e-9);
  CHECK(parallel * 1000.0 <=
        k.launch_us + k.work_us * (1.0 + profile.concurrency_interference) + 2 * wait + 1e-9);

  profile.max_concurrent_kernels = 1;  // the second kernel cannot overlap the first
  SimulatedCostModel serial(g, profile);
  CHECK(serial.stage_latency(concurrent({{a}, {c}})) >= parallel - 1e-12);

  profile = load_device_profile("h100");
  profile.event_sync_overhead_us += 10.0;
  SimulatedCostModel slow_sync(g, profile);
  // Both the fork's and the join's wait are on the critical path.
  CHECK(slow_sync.stage_latency(concurrent({{a}, {c}})) == Approx(parallel + 0.020));
  CHECK(slow_sync.unit_latency(a) == Approx(alone));  // one stream: no events
}

TEST_CASE("one kernel follows the documented roofline", "[cost][simulated]") {
  // 1x1 conv, 1x256x14x14 -> 1x512x14x14 on H100 (FP32): worked by hand from
  // docs/cost-model.md with the profile's knobs.
  IrBuilder b;
  b.output(b.conv("c", b.input("x", {1, 256, 14, 14}), 512, 1));
  const UnitGraph g = UnitGraph::form(b.graph);
  const DeviceProfile p = load_device_profile("h100");
  SimulatedCostModel model(g, p);

  const double outputs = 512.0 * 14 * 14;                        // 100352
  const double flops = 2.0 * outputs * 256 + outputs + outputs;  // MACs, bias, ReLU
  const double bytes = 4.0 * (256 * 196 + 512 * 256 + 512 + outputs);
  const double fill = static_cast<double>(p.sm_count * p.blocks_per_sm);
  // Under one wave of the smallest tile: the library keeps that tile.
  REQUIRE(ios::cost::tile_outputs(p, outputs) == static_cast<double>(p.outputs_per_block));
  const double blocks = outputs / static_cast<double>(p.outputs_per_block);
  const double share = std::min(1.0, blocks / fill);  // reduction 256 < split_k_length: no split
  REQUIRE(256 < p.split_k_length);
  const double compute_us = flops / (p.peak_fp32_tflops * 1e6 * p.compute_efficiency * share);
  const double memory_us = bytes / (p.mem_bandwidth_gbs * 1e3 * p.memory_efficiency);
  CHECK(model.unit_latency(0) * 1000.0 ==
        Approx(p.launch_overhead_us + std::max(compute_us, memory_us)));

  // TF32 tensor cores speed up the same conv where the device has them.
  ios::cost::SimulatedOptions tf32;
  tf32.math = ios::ir::MathMode::kTf32;
  CHECK(SimulatedCostModel(g, p, tf32).unit_latency(0) < model.unit_latency(0));
  const DeviceProfile v100 = load_device_profile("v100");
  CHECK(SimulatedCostModel(g, v100, tf32).unit_latency(0) ==
        SimulatedCostModel(g, v100).unit_latency(0));
}

TEST_CASE("zero-copy units cost nothing; a faster device is faster", "[cost][simulated]") {
  IrBuilder b;
  const auto x = b.input("x", {1, 128, 28, 28});
  const auto a = b.conv("a", x, 128, 3, 1, 1);
  const auto c = b.conv("c", x, 128, 3, 1, 1);
  b.output(b.concat("cat", {a, c}));
  const UnitGraph g = UnitGraph::form(b.graph);
  SimulatedCostModel h100(g, load_device_profile("h100"));
  SimulatedCostModel v100(g, load_device_profile("v100"));
  CHECK(h100.unit_latency(unit(g, "cat")) == 0.0);
  CHECK(h100.unit_latency(unit(g, "a")) < v100.unit_latency(unit(g, "a")));
}

TEST_CASE("the simulated model needs an IR-backed unit graph", "[cost][simulated]") {
  const UnitGraph g = UnitGraph::from_edges(3, {{0, 1}, {1, 2}});
  CHECK_THROWS_AS(SimulatedCostModel(g, load_device_profile("h100")), ios::InternalError);
}

TEST_CASE("every profile the parser accepts simulates to a finite, positive latency",
          "[cost][simulated][profile]") {
  // Corners of the knob ranges (all low, all high) and deterministic random
  // profiles inside them, on concurrent, merged and sequential stages of a
  // large and a tiny pair of convolutions.
  const DeviceProfile base = load_device_profile("h100");
  auto set = [](DeviceProfile& p, std::string_view field, double v) {
    if (field == "sm_count") p.sm_count = static_cast<int64_t>(v);
    if (field == "peak_fp32_tflops") p.peak_fp32_tflops = v;
    if (field == "peak_tf32_tflops") p.peak_tf32_tflops = v;
    if (field == "peak_fp16_tflops") p.peak_fp16_tflops = v;
    if (field == "peak_bf16_tflops") p.peak_bf16_tflops = v;
    if (field == "mem_bandwidth_gbs") p.mem_bandwidth_gbs = v;
    if (field == "launch_overhead_us") p.launch_overhead_us = v;
    if (field == "event_sync_overhead_us") p.event_sync_overhead_us = v;
    if (field == "host_launch_us") p.host_launch_us = v;
    if (field == "max_concurrent_kernels") p.max_concurrent_kernels = static_cast<int64_t>(v);
    if (field == "compute_efficiency") p.compute_efficiency = v;
    if (field == "tensor_core_efficiency") p.tensor_core_efficiency = v;
    if (field == "memory_efficiency") p.memory_efficiency = v;
    if (field == "blocks_per_sm") p.blocks_per_sm = static_cast<int64_t>(v);
    if (field == "outputs_per_block") p.outputs_per_block = static_cast<int64_t>(v);
    if (field == "max_outputs_per_block") p.max_outputs_per_block = static_cast<int64_t>(v);
    if (field == "split_k_length") p.split_k_length = static_cast<int64_t>(v);
    if (field == "concurrency_interference") p.concurrency_interference = v;
  };
  std::vector<DeviceProfile> profiles;
  uint64_t state = 12345;
  auto uniform = [&] {  // [0, 1), a fixed LCG: the same profiles every run
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state >> 11) / 9007199254740992.0;
  };
  for (int i = 0; i < 42; ++i) {
    DeviceProfile p = base;
    for (const ios::cost::FieldRange& r : ios::cost::device_profile_ranges()) {
      const double lo = std::max(r.min, r.zero_allowed ? r.min : 1e-3);
      double v = i == 0 ? r.min : i == 1 ? r.max : lo * std::pow(r.max / lo, uniform());
      if (r.integer) v = std::round(v);
      set(p, r.field, std::clamp(v, r.min, r.max));
    }
    // The largest tile is 0 or at least the smallest (the parser's rule).
    if (p.max_outputs_per_block != 0) {
      p.max_outputs_per_block = std::max(p.max_outputs_per_block, p.outputs_per_block);
    }
    REQUIRE_NOTHROW(ios::cost::validate_device_profile(p, "generated"));
    profiles.push_back(p);
  }
  for (const auto& [input, cout] : {std::pair<ios::ir::Shape, int64_t>{{1, 3, 4, 4}, 2},
                                    std::pair<ios::ir::Shape, int64_t>{{8, 256, 56, 56}, 512}}) {
    for (const auto type : {ios::ir::ElementType::kFloat32, ios::ir::ElementType::kFloat16,
                            ios::ir::ElementType::kBFloat16}) {
      IrBuilder b = two_convs(input, cout, 3);
      store_all_as(b, type);
      const UnitGraph g = UnitGraph::form(b.graph);
      const UnitId a = unit(g, "a"), c = unit(g, "b");
      for (const auto math : {ios::ir::MathMode::kFp32, ios::ir::MathMode::kTf32}) {
        for (const DeviceProfile& p : profiles) {
          SimulatedCostModel model(g, p, {math});
          for (const Stage& stage : {concurrent({{a}, {c}}), concurrent({{a, c}}), merge({a, c})}) {
            const double ms = model.stage_latency(stage);
            INFO("sm_count " << p.sm_count << " compute_efficiency " << p.compute_efficiency);
            CHECK(std::isfinite(ms));
            CHECK(ms > 0.0);
          }
        }
      }
    }
  }
}

TEST_CASE("every stage lasts at least the bounds the search prunes with", "[cost][simulated]") {
  // Six independent convolutions from tiny to device-filling, every subset
  // of them in every way of splitting it into two groups.
  for (const int64_t batch : {1, 128}) {
    IrBuilder b;
    const auto x = b.input("x", {batch, 64, 28, 28});
    const std::vector<std::pair<int64_t, int64_t>> shapes = {{8, 1}, {16, 3}, {64, 1},
                                                             {64, 3}, {256, 3}, {512, 5}};
    std::vector<std::string> names;
    for (size_t i = 0; i < shapes.size(); ++i) {
      names.push_back("c" + std::to_string(i));
      b.output(b.conv(names.back(), x, shapes[i].first, shapes[i].second, 1, shapes[i].second / 2));
    }
    const UnitGraph g = UnitGraph::form(b.graph);
    std::vector<UnitId> units;
    for (const std::string& name : names) units.push_back(unit(g, name.c_str()));
    for (const std::string& device : ios::cost::shipped_device_profiles()) {
      SimulatedCostModel model(g, load_device_profile(device));
      bool device_bound_binds = false;  // the slot or DRAM bound above the longest group's
      for (uint32_t subset = 1; subset < (1u << units.size()); ++subset) {
        for (uint32_t second = subset;; second = (second - 1) & subset) {
          std::vector<std::vector<UnitId>> groups(2);
          double slots = 0.0, dram = 0.0, stream[2] = {0.0, 0.0};
          for (size_t i = 0; i < units.size(); ++i) {
            if (!(subset >> i & 1)) continue;
            const int gi = (second >> i & 1) ? 1 : 0;
            groups[static_cast<size_t>(gi)].push_back(units[i]);
            const auto bound = model.unit_bound(units[i]);
            stream[gi] += bound.stream_ms;
            slots += bound.slots_ms;
            dram += bound.dram_ms;
          }
          std::erase_if(groups, [](const auto& group) { return group.empty(); });
          const double latency = model.stage_latency(concurrent(groups));
          const double longest = std::max(stream[0], stream[1]);
          INFO(device << " batch " << batch << " subset " << subset << " second " << second
                      << ": latency " << latency << " ms, longest group " << longest
                      << ", slots " << slots << ", dram " << dram);
          CHECK(latency >= longest * (1.0 - 1e-6));
          CHECK(latency >= slots * (1.0 - 1e-6));
          CHECK(latency >= dram * (1.0 - 1e-6));
          device_bound_binds = device_bound_binds || std::max(slots, dram) > longest;
          if (second == 0) break;
        }
      }
      // With 128 images the large convolutions fill the device for a dozen
      // waves or more of the largest tiles (the tails and launches are a few
      // percent): running them side by side gains little, and the device
      // bound says so.
      INFO(device << " batch " << batch);
      if (batch == 128) CHECK(device_bound_binds);
    }
  }
}

TEST_CASE("blocks run in whole waves: a partly filled last wave costs a wave and frees slots",
          "[cost][simulated]") {
  DeviceProfile p = load_device_profile("v100");
  p.whole_waves = true;
  p.max_outputs_per_block = 0;  // one tile size: the waves are the kernels' own
  IrBuilder b = two_convs({1, 8, 8, 8}, 8, 1);
  const UnitGraph g = UnitGraph::form(b.graph);
  const SimulatedCostModel model(g, p);
  const double fill = static_cast<double>(p.sm_count * p.blocks_per_sm);
  // A kernel of `waves` waves of blocks, each with the same short reduction
  // (no split-K) and compute-bound (no bytes).
  auto kernel_of = [&](double waves) {
    ios::cost::KernelWork k;
    k.outputs = waves * fill * static_cast<double>(p.outputs_per_block);
    k.reduction = 64;
    k.flops = 2.0 * k.outputs * k.reduction;
    return model.time_kernel(k);
  };
  const auto one = kernel_of(1.0), tail = kernel_of(1.25), two = kernel_of(2.0);
  CHECK(one.sm_share == Approx(1.0));
  CHECK(two.sm_share == Approx(1.0));
  // 1.25 waves take as long as two ...
  CHECK(tail.work_us == Approx(two.work_us));
  CHECK(tail.work_us == Approx(2.0 * one.work_us));
  // ... and occupy five eighths of the slots on average: the rest is free
  // for a kernel beside it.
  CHECK(tail.sm_share == Approx(0.625));
  // Under one wave nothing changes: the kernel fills its share of the slots.
  CHECK(kernel_of(0.5).sm_share == Approx(0.5));
  CHECK(kernel_of(0.5).work_us == Approx(one.work_us));
  // Without whole waves, blocks are spread evenly: 1.25 waves take 1.25.
  p.whole_waves = false;
  const SimulatedCostModel even(g, p);
  ios::cost::KernelWork k;
  k.outputs = 1.25 * fill * static_cast<double>(p.outputs_per_block);
  k.reduction = 64;
  k.flops = 2.0 * k.outputs * k.reduction;
  CHECK(even.time_kernel(k).work_us == Approx(1.25 * one.work_us));
  CHECK(even.time_kernel(k).sm_share == Approx(1.0));
}

TEST_CASE("a larger kernel takes a larger tile, as long as it still fills a wave",
          "[cost][simulated]") {
  DeviceProfile p = load_device_profile("v100");
  p.outputs_per_block = 1000;
  p.max_outputs_per_block = 8000;
  p.whole_waves = true;
  const double fill = static_cast<double>(p.sm_count * p.blocks_per_sm);
  using ios::cost::tile_outputs;
  // Under two waves of the smallest tile, doubling it would leave SMs idle.
  CHECK(tile_outputs(p, 0.5 * fill * 1000) == 1000);
  CHECK(tile_outputs(p, 1.99 * fill * 1000) == 1000);
  // Doubled while a wave stays full, up to the largest.
  CHECK(tile_outputs(p, 2.0 * fill * 1000) == 2000);
  CHECK(tile_outputs(p, 5.0 * fill * 1000) == 4000);
  CHECK(tile_outputs(p, 8.0 * fill * 1000) == 8000);
  CHECK(tile_outputs(p, 100.0 * fill * 1000) == 8000);
  // Without a largest tile (0) or with it equal to the smallest: one size.
  for (const int64_t largest : {int64_t{0}, int64_t{1000}}) {
    p.max_outputs_per_block = largest;
    CHECK(tile_outputs(p, 100.0 * fill * 1000) == 1000);
  }

  // The effect on a kernel: with large tiles, a kernel of 8.8 waves of small
  // tiles has 2.2 waves of large ones. Its time (whole waves) is that of
  // three large-tile waves, each four small-tile waves long, and its last
  // wave leaves four fifths of the slots to a kernel beside it.
  IrBuilder b = two_convs({1, 8, 8, 8}, 8, 1);
  const UnitGraph g = UnitGraph::form(b.graph);
  ios::cost::KernelWork k;
  k.outputs = 8.8 * fill * 1000;
  k.reduction = 64;
  k.flops = 2.0 * k.outputs * k.reduction;
  p.max_outputs_per_block = 0;
  const auto small = SimulatedCostModel(g, p).time_kernel(k);
  p.max_outputs_per_block = 4000;
  const auto large = SimulatedCostModel(g, p).time_kernel(k);
  CHECK(small.sm_share == Approx(8.8 / 9.0));
  CHECK(large.sm_share == Approx(2.2 / 3.0));
  CHECK(large.work_us == Approx(small.work_us * 12.0 / 9.0));
}

TEST_CASE("per-shape efficiency: Winograd for 3x3, less for 1xk; a 1x3 + 3x1 merge is a 3x3",
          "[cost][simulated]") {
  IrBuilder b;
  const auto x = b.input("x", {32, 384, 8, 8});
  ios::ir::ConvAttrs wide, tall;
  wide.kernel = {1, 3};
  wide.pads = {0, 1, 0, 1};
  tall.kernel = {3, 1};
  tall.pads = {1, 0, 1, 0};
  for (auto [name, attrs] : {std::pair{"a", wide}, std::pair{"b", tall}}) {
    const auto w = b.weight(std::string(name) + "_w", {384, 384, attrs.kernel[0], attrs.kernel[1]});
    const auto y = b.activation(name, {32, 384, 8, 8});
    b.graph.add_node({std::string(name) + "_node", ios::ir::OpKind::kConv, {x, w}, {y}, attrs});
    b.output(y);
  }
  b.output(b.conv("c", x, 384, 3, 1, 1));
  const UnitGraph g = UnitGraph::form(b.graph);
  const UnitId a = unit(g, "a"), c = unit(g, "b"), square = unit(g, "c");
  REQUIRE(ios::sched::check_merge(g, {a, c}).spec.has_value());
  REQUIRE(ios::cost::unit_work(g, a).kernels.at(0).asymmetric);
  REQUIRE(ios::cost::unit_work(g, square).kernels.at(0).winograd);

  DeviceProfile plain = load_device_profile("v100");
  plain.winograd_speedup = 1.0;
  plain.asymmetric_conv_efficiency = 1.0;
  DeviceProfile shaped = plain;
  shaped.winograd_speedup = 2.0;
  shaped.asymmetric_conv_efficiency = 0.5;
  ios::cost::SimulatedOptions fp32;
  SimulatedCostModel before(g, plain, fp32), after(g, shaped, fp32);
  auto work_us = [](const SimulatedCostModel& m, UnitId u) {
    return m.time_kernel(ios::cost::unit_work(m.graph(), u).kernels.at(0)).work_us;
  };
  // Compute-bound at batch 32: the 3x3 takes half as long, the 1x3 twice as long.
  CHECK(work_us(after, square) == Approx(work_us(before, square) / 2.0).epsilon(0.01));
  CHECK(work_us(after, a) == Approx(work_us(before, a) * 2.0).epsilon(0.01));
  // Merged, the pair is one zero-padded 3x3 kernel reading the input once:
  // slower than the two side by side without the per-shape knobs, faster
  // with them (the IOS paper's Figure 10 at batch 32).
  const double merged_before = before.stage_latency(merge({a, c}));
  const double apart_before = before.stage_latency(concurrent({{a}, {c}}));
  const double merged_after = after.stage_latency(merge({a, c}));
  const double apart_after = after.stage_latency(concurrent({{a}, {c}}));
  INFO("before: merged " << merged_before << " ms, apart " << apart_before << " ms; after: merged "
                         << merged_after << " ms, apart " << apart_after << " ms");
  CHECK(merged_before > apart_before);
  CHECK(merged_after < apart_after);
}

TEST_CASE("16-bit tensors: products on their tensor cores, half the bytes",
          "[cost][simulated][half]") {
  using ios::ir::ElementType;
  const DeviceProfile h100 = load_device_profile("h100");
  ios::cost::SimulatedOptions tf32;
  tf32.math = ios::ir::MathMode::kTf32;
  auto latency = [&](IrBuilder b, ElementType type, const char* id, DeviceProfile p,
                     ios::cost::SimulatedOptions options) {
    store_all_as(b, type);
    const UnitGraph g = UnitGraph::form(b.graph);
    return SimulatedCostModel(g, std::move(p), options).unit_latency(unit(g, id));
  };

  SECTION("a compute-bound convolution is faster at fp16 and bf16 than at fp32 and tf32") {
    for (const int64_t k : {1, 3}) {  // 3x3: FP32 takes the Winograd path
      IrBuilder b;
      b.output(b.conv("c", b.input("x", {32, 512, 28, 28}), 512, k, 1, k / 2));
      const double fp32 = latency(b, ElementType::kFloat32, "c", h100, {});
      const double tf32_ms = latency(b, ElementType::kFloat32, "c", h100, tf32);
      const double fp16 = latency(b, ElementType::kFloat16, "c", h100, {});
      const double bf16 = latency(b, ElementType::kBFloat16, "c", h100, {});
      INFO("k " << k << ": fp32 " << fp32 << " tf32 " << tf32_ms << " fp16 " << fp16);
      CHECK(fp16 < fp32);
      CHECK(fp16 < tf32_ms);
      CHECK(bf16 == fp16);  // the H100's FP16 and BF16 peaks are equal
      // 16-bit products take the tensor cores whatever the precision option.
      CHECK(latency(b, ElementType::kFloat16, "c", h100, tf32) == fp16);
      if (k == 1) {
        // No Winograd: twice the TF32 peak at the same efficiency, so at
        // most half the TF32 time plus the launch (occupancy is the same).
        CHECK(fp16 - h100.launch_overhead_us / 1000.0 ==
              Approx((tf32_ms - h100.launch_overhead_us / 1000.0) / 2.0).epsilon(0.02));
      }
    }
  }

  SECTION("a memory-bound element-wise unit takes half the time (less its launch)") {
    IrBuilder b;
    const auto x = b.input("x", {32, 256, 56, 56});
    const auto y = b.activation("y", {32, 256, 56, 56});
    b.graph.add_node({"relu", ios::ir::OpKind::kRelu, {x}, {y}, {}});
    b.output(y);
    const double launch_ms = h100.launch_overhead_us / 1000.0;
    for (const ElementType type : {ElementType::kFloat16, ElementType::kBFloat16}) {
      const double fp32 = latency(b, ElementType::kFloat32, "y", h100, tf32);
      const double half = latency(b, type, "y", h100, tf32);
      CHECK(half - launch_ms == Approx((fp32 - launch_ms) / 2.0));
      CHECK(half < 0.55 * fp32);
    }
  }

  SECTION("bytes follow each tensor's type: a Cast reads 4 and writes 2 bytes an element") {
    IrBuilder b;
    const auto x = b.input("x", {8, 64, 32, 32});
    const auto y = b.activation("y", {8, 64, 32, 32});
    ios::ir::CastAttrs cast;
    cast.to = ElementType::kFloat16;
    b.graph.add_node({"cast", ios::ir::OpKind::kCast, {x}, {y}, cast});
    b.graph.tensor(y).type = ElementType::kFloat16;
    b.output(y);
    const UnitGraph g = UnitGraph::form(b.graph);
    const ios::cost::UnitWork w = ios::cost::unit_work(g, unit(g, "y"));
    REQUIRE(w.kernels.size() == 1);
    const double elements = 8.0 * 64 * 32 * 32;
    CHECK(w.kernels[0].bytes_read == 4.0 * elements);
    CHECK(w.kernels[0].bytes_written == 2.0 * elements);
    CHECK_FALSE(w.kernels[0].matmul_like);
  }

  SECTION("a device without tensor cores for the type runs its products at the FP32 rate") {
    IrBuilder b;
    b.output(b.conv("c", b.input("x", {32, 256, 56, 56}), 256, 1, 1, 0));
    // The V100 has FP16 tensor cores and no BF16 ones; the K80 none.
    const DeviceProfile v100 = load_device_profile("v100");
    CHECK(latency(b, ElementType::kFloat16, "c", v100, {}) <
          latency(b, ElementType::kFloat32, "c", v100, {}));
    const double bf16 = latency(b, ElementType::kBFloat16, "c", v100, {});
    CHECK(bf16 <= latency(b, ElementType::kFloat32, "c", v100, {}));
    CHECK(bf16 > latency(b, ElementType::kFloat16, "c", v100, {}));
    const DeviceProfile k80 = load_device_profile("k80");
    CHECK(latency(b, ElementType::kFloat16, "c", k80, {}) <=
          latency(b, ElementType::kFloat32, "c", k80, {}));
  }

  SECTION("an absent 16-bit peak is twice the TF32 one") {
    DeviceProfile p = h100;
    p.peak_fp16_tflops.reset();
    p.peak_bf16_tflops.reset();
    CHECK(ios::cost::tensor_core_peak_tflops(p, ElementType::kFloat16) == 2.0 * 494.7);
    CHECK(ios::cost::tensor_core_peak_tflops(p, ElementType::kBFloat16) == 2.0 * 494.7);
    CHECK(ios::cost::tensor_core_peak_tflops(p, ElementType::kFloat32) == 494.7);
    IrBuilder b;
    b.output(b.conv("c", b.input("x", {32, 256, 56, 56}), 256, 1, 1, 0));
    p.peak_fp16_tflops = 2.0 * 494.7;
    const double given = latency(b, ElementType::kFloat16, "c", p, {});
    p.peak_fp16_tflops.reset();
    CHECK(latency(b, ElementType::kFloat16, "c", p, {}) == given);
  }
}

TEST_CASE("16-bit merges: the merged kernel reads and writes 16-bit tensors",
          "[cost][simulated][half]") {
  IrBuilder b = two_convs({1, 64, 28, 28}, 32, 1);
  const UnitGraph g32 = UnitGraph::form(b.graph);
  const auto check32 = ios::sched::check_merge(g32, {unit(g32, "a"), unit(g32, "b")});
  REQUIRE(check32.spec.has_value());
  const auto w32 = ios::cost::merged_work(g32, *check32.spec);
  IrBuilder b16 = b;  // g32 keeps pointing at b's graph
  store_all_as(b16, ios::ir::ElementType::kFloat16);
  const UnitGraph g16 = UnitGraph::form(b16.graph);
  const auto check16 = ios::sched::check_merge(g16, {unit(g16, "a"), unit(g16, "b")});
  REQUIRE(check16.spec.has_value());
  const auto w16 = ios::cost::merged_work(g16, *check16.spec);
  REQUIRE(w16.kernels.size() == 1);
  CHECK(w16.kernels[0].type == ios::ir::ElementType::kFloat16);
  CHECK(w16.kernels[0].bytes() == w32.kernels[0].bytes() / 2.0);
  CHECK(w16.kernels[0].flops == w32.kernels[0].flops);
  SimulatedCostModel m32(g32, load_device_profile("h100"));
  SimulatedCostModel m16(g16, load_device_profile("h100"));
  CHECK(m16.stage_latency(merge({unit(g16, "a"), unit(g16, "b")})) <
        m32.stage_latency(merge({unit(g32, "a"), unit(g32, "b")})));
}
