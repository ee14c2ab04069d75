// The storage plan both backends consume (exec/storage_plan.h) and its memory
// placement (exec/memory_layout.h), without a GPU: aliasing (concat slices,
// merged outputs, in-place epilogues), persistent inputs and outputs, and
// reuse across streams only where the plan's events order the uses.
#include <catch2/catch.hpp>

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
