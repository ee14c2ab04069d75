// The storage plan both backends consume (exec/storage_plan.h) and its memory
// placement (exec/memory_layout.h), without a GPU: aliasing (concat slices,
// merged outputs, in-place epilogues), persistent inputs and outputs, and
// reuse across streams only where the plan's events order the uses.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>
#include <string>

#include "core/error.h"
#include "cpu/graph_builder.h"
#include "exec/memory_layout.h"
#include "exec/plan.h"
#include "exec/storage_plan.h"
#include "sched/merge.h"
#include "sched/schedule.h"
#include "sched/unit_graph.h"

namespace ios::exec {
namespace {

using ir::OpKind;
using test::GraphBuilder;

Step launch(int stream, int kernel) { return {Step::Kind::kLaunch, stream, kernel, -1}; }
Step record(int stream, int event) { return {Step::Kind::kRecord, stream, -1, event}; }
Step wait(int stream, int event) { return {Step::Kind::kWait, stream, -1, event}; }
Step sync() { return {Step::Kind::kSync, 0, -1, -1}; }

sched::Stage concurrent(std::vector<std::vector<sched::UnitId>> groups) {
  sched::Stage stage;
  stage.strategy = sched::Strategy::kConcurrent;
  stage.groups = std::move(groups);
  return stage;
}

sched::Schedule staged(std::vector<sched::Stage> stages) {
  sched::Schedule s;
  s.body = sched::StagedSchedule{std::move(stages)};
  return s;
}

sched::Schedule sequential(const sched::UnitGraph& g) {
  std::vector<sched::Stage> stages;
  for (sched::UnitId u = 0; u < g.size(); ++u) stages.push_back(concurrent({{u}}));
  return staged(std::move(stages));
}

sched::UnitId unit(const sched::UnitGraph& g, const std::string& id) {
  const auto u = g.find(id);
  REQUIRE(u.has_value());
  return *u;
}

ir::TensorId tensor(const ir::Graph& g, const std::string& name) {
  for (size_t t = 0; t < g.num_tensors(); ++t) {
    if (g.tensor(static_cast<ir::TensorId>(t)).name == name) return static_cast<ir::TensorId>(t);
  }
  FAIL("no tensor " << name);
  return ir::kNone;
}

// x -> conv a + relu, conv b, maxpool p -> concat (axis 1) with x -> relu out.
ir::Graph inception_like(int64_t batch) {
  GraphBuilder b;
  const auto x = b.input("x", {batch, 8, 10, 10});
  const auto a = b.relu(b.conv(x, 8, 4, {1, 1}, {0, 0, 0, 0}, "a_conv"), "a");
  const auto c = b.conv(x, 8, 6, {3, 3}, {1, 1, 1, 1}, "b");
  ir::PoolAttrs pool;
  pool.kernel = {3, 3};
  pool.pads = {1, 1, 1, 1};
  const auto p = b.node(OpKind::kMaxPool, {x}, pool, "p");
  const auto cat = b.concat({a, c, p, x}, "cat");
  return b.finish({b.relu(cat, "out")});
}

TEST_CASE("happens-before follows stream order and event waits", "[exec][storage]") {
  // stream 0: L0 record(e0) L2 ; stream 1: L1 wait(e0) L3 record(e1); stream 0: wait(e1) L4
  const std::vector<Step> steps{launch(0, 0), record(0, 0), launch(1, 1), wait(1, 0),  launch(1, 3),
                                launch(0, 2), record(1, 1), wait(0, 1),   launch(0, 4)};
  const HappensBefore order(5, 2, 2, steps);
  CHECK(order.before(0, 2));
  CHECK(order.before(0, 3));        // through e0
  CHECK_FALSE(order.before(0, 1));  // L1 was issued before the wait
  CHECK(order.before(1, 3));
  CHECK_FALSE(order.before(2, 3));
  CHECK_FALSE(order.before(3, 2));
  CHECK(order.before(3, 4));  // through e1
  CHECK(order.before(1, 4));
  CHECK(order.before(2, 4));
  CHECK_FALSE(order.before(4, 4));
}

TEST_CASE("a host synchronization orders everything before it before everything after", "[exec][storage]") {
  // stream 0: L0; stream 1: L1; host sync; stream 1: L2; stream 0: L3 (no events).
  const std::vector<Step> steps{launch(0, 0), launch(1, 1), sync(), launch(1, 2), launch(0, 3)};
  const HappensBefore order(4, 2, 0, steps);
  CHECK(order.before(0, 2));  // across streams, through the synchronization
  CHECK(order.before(1, 3));
  CHECK(order.before(0, 3));
  CHECK(order.before(1, 2));
  CHECK_FALSE(order.before(0, 1));  // both before it, unordered with each other
  CHECK_FALSE(order.before(2, 3));  // both after it
  CHECK_FALSE(order.before(3, 2));
}

// Random plans: launches issued out of number order on up to four streams,
// events recorded and waited on, occasional host synchronizations, and
// requests with random users (some persistent, some unused).
struct RandomPlan {
  std::vector<Step> steps;
  int launches = 0, streams = 0, events = 0;
  std::vector<MemoryRequest> requests;
};

RandomPlan random_plan(std::mt19937& rng) {
  RandomPlan p;
  p.launches = std::uniform_int_distribution<int>(0, 40)(rng);
  p.streams = std::uniform_int_distribution<int>(1, 4)(rng);
  std::vector<int> issue(static_cast<size_t>(p.launches));
  std::iota(issue.begin(), issue.end(), 0);
  std::shuffle(issue.begin(), issue.end(), rng);
  std::uniform_int_distribution<int> stream(0, p.streams - 1), roll(0, 9);
  for (int k : issue) {
    const int s = stream(rng);
    const int r = roll(rng);
    if (r < 3 && p.events > 0) p.steps.push_back(wait(s, std::uniform_int_distribution<int>(0, p.events - 1)(rng)));
    if (r == 9) p.steps.push_back(sync());
    p.steps.push_back(launch(s, k));
    if (r >= 6) p.steps.push_back(record(s, p.events++));
  }
  const int num_requests = std::uniform_int_distribution<int>(0, 30)(rng);
  for (int i = 0; i < num_requests; ++i) {
    MemoryRequest r;
    r.bytes = std::uniform_int_distribution<int64_t>(1, 5000)(rng);
    r.persistent = roll(rng) == 0;
    const int users = p.launches == 0 ? 0 : std::uniform_int_distribution<int>(0, 3)(rng);
    for (int u = 0; u < users; ++u) r.users.push_back(std::uniform_int_distribution<int>(0, p.launches - 1)(rng));
    p.requests.push_back(std::move(r));
  }
  return p;
}

TEST_CASE("memory conflicts and the live peak agree with the pairwise definitions on random plans",
          "[exec][storage]") {
  std::mt19937 rng(20261127);
  for (int trial = 0; trial < 300; ++trial) {
    const RandomPlan p = random_plan(rng);
    const HappensBefore order(p.launches, p.streams, std::max(p.events, 1), p.steps);
    const auto& r = p.requests;
    const auto listed_conflicts = memory_conflicts(r, order);
    REQUIRE(listed_conflicts.has_value());
    const std::vector<std::vector<int>>& conflicts = *listed_conflicts;
    for (size_t a = 0; a < r.size(); ++a) {
      const std::set<int> listed(conflicts[a].begin(), conflicts[a].end());
      REQUIRE(listed.size() == conflicts[a].size());  // each pair once per side
      for (size_t b = 0; b < r.size(); ++b) {
        if (a == b) continue;
        INFO("trial " << trial << ", requests " << a << " and " << b);
        REQUIRE(listed.count(static_cast<int>(b)) == (may_share(r[a], r[b], order) ? 0U : 1U));
      }
    }
    int64_t peak = 0;
    for (int k = 0; k < p.launches; ++k) {
      int64_t live = 0;
      for (const MemoryRequest& q : r) {
        if (q.users.empty()) continue;
        bool all_before = true, all_after = true;
        for (int u : q.users) {
          all_before = all_before && u != k && order.before(u, k);
          all_after = all_after && u != k && order.before(k, u);
        }
        if (q.persistent || !(all_before || all_after)) live += (q.bytes + 255) / 256 * 256;
      }
      peak = std::max(peak, live);
    }
    if (p.launches == 0) {
      for (const MemoryRequest& q : r) peak += q.persistent ? (q.bytes + 255) / 256 * 256 : 0;
    }
    INFO("trial " << trial);
    CHECK(live_peak_bytes(r, order, 256) == peak);
  }
}

TEST_CASE("a 20000-launch chain is placed in two buffers", "[exec][storage]") {
  // What gather_chain_20000 asks of every ios-optimize: one stream, each
  // launch reading the buffer the one before it wrote. Its time is held by
  // the large-models command-line test (the pairwise placement took ~35 s).
  constexpr int kLaunches = 20000;
  std::vector<Step> steps;
  std::vector<MemoryRequest> requests;
  for (int k = 0; k < kLaunches; ++k) {
    steps.push_back(launch(0, k));
    requests.push_back({4096, false, k + 1 < kLaunches ? std::vector<int>{k, k + 1} : std::vector<int>{k}});
  }
  const HappensBefore order(kLaunches, 1, 1, steps);
  const MemoryLayout layout = plan_memory(requests, order, 256);
  const int64_t live = live_peak_bytes(requests, order, 256);
  CHECK(layout.total_bytes == 2 * 4096);  // a chain needs two buffers
  CHECK(live == 2 * 4096);
}

TEST_CASE("too many buffers live at once get memory of their own, never overlapping", "[exec][storage]") {
  // 3000 launches each writing a buffer that one last launch reads: every
  // pair conflicts (4.5 million pairs, over the placement's limit).
  constexpr int kBranches = 3000;
  std::vector<Step> steps;
  std::vector<MemoryRequest> requests;
  for (int k = 0; k <= kBranches; ++k) steps.push_back(launch(0, k));
  for (int k = 0; k < kBranches; ++k) requests.push_back({1000, false, {k, kBranches}});
  const HappensBefore order(kBranches + 1, 1, 1, steps);
  CHECK_FALSE(memory_conflicts(requests, order).has_value());
  const MemoryLayout layout = plan_memory(requests, order, 256);
  CHECK(layout.total_bytes == layout.unshared_bytes);
  CHECK(layout.total_bytes == int64_t{kBranches} * 1024);
  std::set<int64_t> offsets(layout.offsets.begin(), layout.offsets.end());
  CHECK(offsets.size() == static_cast<size_t>(kBranches));
  CHECK(live_peak_bytes(requests, order, 256) == layout.total_bytes);
}

TEST_CASE("memory planning shares only buffers that are never live together", "[exec][storage]") {
  // Two streams, no events: launches on different streams are unordered.
  const std::vector<Step> steps{launch(0, 0), launch(0, 1), launch(1, 2), launch(0, 3)};
  const HappensBefore order(4, 2, 0, steps);
  std::vector<MemoryRequest> r(5);
  r[0] = {1000, false, {0, 1}};  // dies at L1
  r[1] = {1000, false, {3}};     // born at L3: may reuse r[0]
  r[2] = {1000, false, {2}};     // on stream 1: unordered with everything on stream 0
  r[3] = {500, true, {3}};       // persistent: never shared
  r[4] = {100, false, {1}};      // used by L1 together with r[0]
  CHECK(may_share(r[0], r[1], order));
  CHECK_FALSE(may_share(r[0], r[2], order));
  CHECK_FALSE(may_share(r[1], r[2], order));
  CHECK_FALSE(may_share(r[0], r[4], order));
  CHECK_FALSE(may_share(r[3], r[1], order));
  const MemoryLayout layout = plan_memory(r, order, 256);
  auto overlap = [&](size_t a, size_t b) {
    const int64_t ea = layout.offsets[a] + r[a].bytes, eb = layout.offsets[b] + r[b].bytes;
    return layout.offsets[a] < eb && layout.offsets[b] < ea;
  };
  for (size_t a = 0; a < r.size(); ++a) {
    CHECK(layout.offsets[a] % 256 == 0);
    for (size_t b = a + 1; b < r.size(); ++b) {
      if (!may_share(r[a], r[b], order)) {
        INFO("requests " << a << " and " << b);
        CHECK_FALSE(overlap(a, b));
      }
    }
  }
  CHECK(layout.offsets[0] == layout.offsets[1]);  // reuse happened
  CHECK(layout.total_bytes < layout.unshared_bytes);
  CHECK(layout.unshared_bytes == 1024 + 1024 + 1024 + 512 + 256);
}

TEST_CASE("concat inputs are channel slices of the concat's storage at any batch",
          "[exec][storage]") {
  for (int64_t batch : {1, 3}) {
    INFO("batch " << batch);
    const ir::Graph g = inception_like(batch);
    const auto units = sched::UnitGraph::form(g);
    const StoragePlan plan(units, lower(units, sequential(units)));
    const Region& cat = plan.region(tensor(g, "cat"));
    const int64_t hw = 100, total = 4 + 6 + 8 + 8;
    CHECK(cat.shape == ir::Shape{batch, total, 10, 10});
    for (const auto& [name, channel] :
         std::vector<std::pair<std::string, int64_t>>{{"a", 0}, {"b", 4}, {"p", 10}}) {
      INFO(name);
      const Region& r = plan.region(tensor(g, name));
      CHECK(plan.zero_copy_concat_input(tensor(g, name)));
      CHECK(r.storage == cat.storage);
      CHECK(r.offset == cat.offset + channel * hw);
      CHECK(r.batch_stride == total * hw);
      CHECK(r.dense() == (batch == 1));
    }
    // x is a graph input (also read by the convolutions): its own storage, copied.
    CHECK_FALSE(plan.zero_copy_concat_input(tensor(g, "x")));
    CHECK(plan.region(tensor(g, "x")).storage != cat.storage);
    CHECK(plan.zero_copy_concat_inputs() == 3);
    // a's convolution writes the slice; its ReLU runs there in place.
    const Region& conv = plan.region(tensor(g, "a_conv"));
    CHECK(conv.storage == cat.storage);
    CHECK(conv.offset == plan.region(tensor(g, "a")).offset);
    const ir::NodeId conv_node = g.tensor(tensor(g, "a_conv")).producer;
    REQUIRE(plan.epilogue(conv_node).size() == 1);
    CHECK(plan.in_epilogue(plan.epilogue(conv_node)[0]));
    // Graph inputs and outputs are persistent; nothing else here is.
    for (size_t s = 0; s < plan.storages().size(); ++s) {
      const bool io = static_cast<int>(s) == plan.region(tensor(g, "x")).storage ||
                      static_cast<int>(s) == plan.region(tensor(g, "out")).storage;
      CHECK(plan.storages()[s].persistent == io);
    }
  }
}

// A concat whose first input keeps its own storage (x, a graph input) and
// whose middle input does too (m, read again after the concat): every
// input's slice starts after the channels of all inputs before it, copied
// ones included.
TEST_CASE("concat slices start after every earlier input, copied ones included",
          "[exec][storage]") {
  for (int64_t batch : {1, 2}) {
    INFO("batch " << batch);
    GraphBuilder b;
    const auto x = b.input("x", {batch, 8, 10, 10});
    const auto a = b.relu(b.conv(x, 8, 4, {1, 1}, {0, 0, 0, 0}, "a_conv"), "a");
    const auto m = b.conv(x, 8, 2, {1, 1}, {0, 0, 0, 0}, "m");
    const auto c = b.conv(x, 8, 6, {3, 3}, {1, 1, 1, 1}, "c");
    ir::PoolAttrs pool;
    pool.kernel = {3, 3};
    pool.pads = {1, 1, 1, 1};
    const auto p = b.node(OpKind::kMaxPool, {x}, pool, "p");
    const auto cat = b.concat({x, a, m, c, p}, "cat");
    const ir::Graph g = b.finish({b.relu(cat, "out"), b.relu(m, "m_out")});
    const auto units = sched::UnitGraph::form(g);
    const StoragePlan plan(units, lower(units, sequential(units)));
    const Region& whole = plan.region(tensor(g, "cat"));
    const int64_t hw = 100, total = 8 + 4 + 2 + 6 + 8;
    REQUIRE(whole.shape == ir::Shape{batch, total, 10, 10});
    // The copied inputs: a graph input, and a tensor with a second reader.
    for (const std::string name : {"x", "m"}) {
      INFO(name);
      CHECK_FALSE(plan.zero_copy_concat_input(tensor(g, name)));
      CHECK(plan.region(tensor(g, name)).storage != whole.storage);
    }
    // Channels: x 0-7, a 8-11, m 12-13, c 14-19, p 20-27.
    for (const auto& [name, channel] :
         std::vector<std::pair<std::string, int64_t>>{{"a", 8}, {"c", 14}, {"p", 20}}) {
      INFO(name);
      const Region& r = plan.region(tensor(g, name));
      CHECK(plan.zero_copy_concat_input(tensor(g, name)));
      CHECK(r.storage == whole.storage);
      CHECK(r.offset == whole.offset + channel * hw);
      CHECK(r.batch_stride == total * hw);
    }
    CHECK(plan.zero_copy_concat_inputs() == 3);
  }
}

TEST_CASE("every region lies inside its storage and distinct tensors never overlap while both live",
          "[exec][storage]") {
  const ir::Graph g = inception_like(2);
  const auto units = sched::UnitGraph::form(g);
  const ExecPlan exec_plan = lower(units, sequential(units));
  const StoragePlan plan(units, exec_plan);
  for (size_t t = 0; t < g.num_tensors(); ++t) {
    const auto id = static_cast<ir::TensorId>(t);
    if (g.tensor(id).is_constant()) continue;
    REQUIRE(plan.has_region(id));
    const Region& r = plan.region(id);
    INFO(g.tensor(id).name);
    CHECK(r.shape == g.tensor(id).shape);
    CHECK(r.offset >= 0);
    CHECK(r.offset + r.extent() <= plan.storages()[static_cast<size_t>(r.storage)].elements);
  }
  const auto requests = plan.memory_requests();
  REQUIRE(requests.size() == plan.storages().size());
  for (const MemoryRequest& r : requests) CHECK(!r.users.empty());
}

TEST_CASE("a merged convolution's members are slices of one storage", "[exec][storage]") {
  GraphBuilder b;
  const auto x = b.input("x", {2, 8, 6, 6});
  const auto a = b.relu(b.conv(x, 8, 4, {1, 1}, {0, 0, 0, 0}, "a_conv"), "a");
  const auto c = b.relu(b.conv(x, 8, 6, {3, 3}, {1, 1, 1, 1}, "c_conv"), "c");
  const ir::Graph g = b.finish({a, c});
  const auto units = sched::UnitGraph::form(g);
  sched::Stage merge;
  merge.strategy = sched::Strategy::kMerge;
  merge.groups = {{unit(units, "a"), unit(units, "c")}};
  const StoragePlan plan(units, lower(units, staged({merge})));
  const Region& whole = plan.merged_region(0);
  CHECK(whole.shape == ir::Shape{2, 10, 6, 6});
  CHECK(
      plan.storages()[static_cast<size_t>(whole.storage)].persistent);  // graph outputs live in it
  const Region& ra = plan.region(tensor(g, "a"));
  const Region& rc = plan.region(tensor(g, "c"));
  CHECK(ra.storage == whole.storage);
  CHECK(rc.storage == whole.storage);
  CHECK(ra.batch_stride == 10 * 36);
  CHECK(rc.offset - ra.offset == 4 * 36);
  // The convolutions' outputs are the same slices: the ReLUs run in place.
  CHECK(plan.region(tensor(g, "a_conv")).offset == ra.offset);
  CHECK(plan.region(tensor(g, "c_conv")).offset == rc.offset);
  CHECK(plan.merge_spec(0).members.size() == 2);
}

TEST_CASE("a merged matrix product writes a storage of its own; members are placed as if unmerged",
          "[exec][storage]") {
  GraphBuilder b;
  const auto x = b.input("x", {2, 5, 16});
  auto linear = [&](const std::string& name, int64_t out) {
    const auto mm = b.node(OpKind::kMatMul, {x, b.constant(name + "_w", {16, out})},
                           std::monostate{}, name + "_mm");
    return b.node(OpKind::kAdd, {b.constant(name + "_b", {out}), mm}, std::monostate{}, name);
  };
  const auto q = linear("q", 16), k = linear("k", 8);
  const ir::Graph g = b.finish({b.node(
      OpKind::kMatMul, {b.node(OpKind::kTranspose, {k}, ir::TransposeAttrs{{0, 2, 1}}, "kt"), q},
      std::monostate{}, "y")});
  const auto units = sched::UnitGraph::form(g);
  sched::Stage merge;
  merge.strategy = sched::Strategy::kMerge;
  merge.groups = {{unit(units, "q"), unit(units, "k")}};
  std::vector<sched::Stage> stages{merge, concurrent({{unit(units, "kt")}}),
                                   concurrent({{unit(units, "y")}})};
  const StoragePlan plan(units, lower(units, staged(stages)));
  CHECK(plan.merge_spec(0).kind == sched::MergeKind::kMatMul);
  const Region& whole = plan.merged_region(0);
  CHECK(whole.shape == ir::Shape{2, 5, 24});
  CHECK(whole.dense());
  CHECK_FALSE(plan.storages()[static_cast<size_t>(whole.storage)].persistent);
  for (const char* name : {"q", "k"}) {
    const Region& r = plan.region(tensor(g, name));
    CHECK(r.storage != whole.storage);
    CHECK(r.dense());
    // The bias Add runs in place on the product's output.
    CHECK(plan.region(tensor(g, std::string(name) + "_mm")).storage == r.storage);
  }
  CHECK(plan.epilogue(g.tensor(tensor(g, "q_mm")).producer).size() == 1);
}

TEST_CASE("a plan that merges units which cannot merge is a user error", "[exec][storage]") {
  GraphBuilder b;
  const auto x = b.input("x", {1, 4, 6, 6});
  const auto a = b.conv(x, 4, 4, {1, 1}, {0, 0, 0, 0}, "a");
  const auto c = b.conv(a, 4, 4, {1, 1}, {0, 0, 0, 0}, "c");  // reads a: not the same input
  const ir::Graph g = b.finish({c});
  const auto units = sched::UnitGraph::form(g);
  ExecPlan plan;
  plan.kernels = {{{unit(units, "a"), unit(units, "c")}, true}};
  plan.steps = {launch(0, 0)};
  CHECK_THROWS_WITH(StoragePlan(units, plan), Catch::Matchers::Contains("cannot merge") &&
                                                  Catch::Matchers::Contains("'a', 'c'"));
}

// Four independent conv chains a, b, c, d of three units each, joined by a
// concat y: stages {a | b}, {d | c}, {y}; c runs on stream 1 after a ran on
// stream 0.
TEST_CASE("storages are reused across streams only where events order their uses",
          "[exec][storage]") {
  GraphBuilder b;
  const auto x = b.input("x", {1, 8, 16, 16});
  std::vector<ir::TensorId> ends;
  for (const std::string name : {"a", "b", "c", "d"}) {
    // c's tensors are the largest, so they are placed first and a's (on the
    // other stream, ordered before them by the stage boundary) can take
    // their memory.
    const int64_t channels = name == "c" ? 16 : 8;
    auto t = x;
    int64_t in = 8;
    for (int i = 0; i < 3; ++i) {
      const std::string id = name + std::to_string(i);
      t = b.relu(b.conv(t, in, channels, {3, 3}, {1, 1, 1, 1}, id + "_conv"), id);
      in = channels;
    }
    ends.push_back(t);
  }
  const ir::Graph g = b.finish({b.concat(ends, "y")});
  const auto units = sched::UnitGraph::form(g);
  auto ids = [&](const std::string& name) {
    std::vector<sched::UnitId> v;
    for (int i = 0; i < 3; ++i) v.push_back(unit(units, name + std::to_string(i)));
    return v;
  };
  const ExecPlan exec_plan =
      lower(units, staged({concurrent({ids("a"), ids("b")}), concurrent({ids("d"), ids("c")}),
                           concurrent({{unit(units, "y")}})}));
  REQUIRE(exec_plan.num_streams == 2);
  const StoragePlan plan(units, exec_plan);
  const auto requests = plan.memory_requests();
  const HappensBefore order(static_cast<int>(exec_plan.kernels.size()), exec_plan.num_streams,
                            exec_plan.num_events, exec_plan.steps);
  const MemoryLayout layout = plan_memory(requests, order);
  CHECK(layout.total_bytes < layout.unshared_bytes);
  std::vector<int> stream_of(exec_plan.kernels.size(), -1);
  for (const Step& s : exec_plan.steps) {
    if (s.kind == Step::Kind::kLaunch) stream_of[static_cast<size_t>(s.kernel)] = s.stream;
  }
  auto streams_of = [&](size_t storage) {
    std::set<int> s;
    for (int l : requests[storage].users) s.insert(stream_of[static_cast<size_t>(l)]);
    return s;
  };
  int shared_across_streams = 0;
  for (size_t a = 0; a < requests.size(); ++a) {
    for (size_t c = a + 1; c < requests.size(); ++c) {
      const int64_t ea = layout.offsets[a] + requests[a].bytes,
                    ec = layout.offsets[c] + requests[c].bytes;
      if (!(layout.offsets[a] < ec && layout.offsets[c] < ea)) continue;
      INFO("storages " << plan.storages()[a].name << " and " << plan.storages()[c].name);
      CHECK(may_share(requests[a], requests[c], order));
      if (streams_of(a) != streams_of(c)) ++shared_across_streams;
    }
  }
  CHECK(shared_across_streams > 0);
}

}  // namespace
}  // namespace ios::exec
