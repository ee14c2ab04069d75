// The GPU simulator on hand-built plans: in-order streams, event waits,
// kernel slots, host issue of plain launches, and determinism.
#include "sim/simulator.h"

#include <catch2/catch.hpp>

using namespace ios;
using exec::ExecPlan;
using exec::Step;
using sim::DeviceLimits;
using sim::KernelCost;
using sim::LaunchMode;

namespace {

KernelCost kernel(double launch_us, double work_us, double sm_share = 0.1,
                  double bandwidth_share = 0.0, double working_set_mb = 0.0) {
  return {launch_us, work_us, sm_share, bandwidth_share, working_set_mb};
}

// A plan builder mirroring exec::lower's steps.
struct PlanBuilder {
  ExecPlan plan;
  std::vector<std::vector<KernelCost>> costs;
  explicit PlanBuilder(int streams) { plan.num_streams = streams; }
  void launch(int stream, std::vector<KernelCost> parts) {
    plan.kernels.push_back({{static_cast<sched::UnitId>(plan.kernels.size())}, false});
    costs.push_back(std::move(parts));
    plan.steps.push_back(
        {Step::Kind::kLaunch, stream, static_cast<int>(plan.kernels.size() - 1), -1});
  }
  int record(int stream) {
    plan.steps.push_back({Step::Kind::kRecord, stream, -1, plan.num_events});
    return plan.num_events++;
  }
  void wait(int stream, int event) { plan.steps.push_back({Step::Kind::kWait, stream, -1, event}); }
  sim::Timeline run(const DeviceLimits& limits) const { return sim::simulate(plan, costs, limits); }
};

}  // namespace

TEST_CASE("one stream runs its kernels in order, launch then work", "[sim]") {
  PlanBuilder b(1);
  b.launch(0, {kernel(3.0, 10.0)});
  b.launch(0, {kernel(3.0, 5.0), kernel(2.0, 1.0)});  // a unit of two kernels
  b.launch(0, {});                                    // a zero-copy unit
  const sim::Timeline t = b.run({});
  CHECK(t.makespan_us == Approx(3 + 10 + 3 + 5 + 2 + 1));
  REQUIRE(t.kernels.size() == 3);
  CHECK(t.kernels[1].begin_us == Approx(13.0));
  CHECK(t.kernels[1].start_us == Approx(16.0));
  CHECK(t.kernels[2].part == 1);
  CHECK(t.launch_end_us[2] == Approx(t.makespan_us));
  CHECK(t.launch_begin_us[2] == t.launch_end_us[2]);
}

TEST_CASE("a fork and a join each pay the event wait latency", "[sim]") {
  DeviceLimits limits;
  limits.event_wait_us = 2.0;
  limits.concurrency_interference = 0.0;
  PlanBuilder b(2);
  const int fork = b.record(0);
  b.wait(1, fork);
  b.launch(0, {kernel(3.0, 10.0)});
  b.launch(1, {kernel(3.0, 10.0)});
  b.wait(0, b.record(1));
  const sim::Timeline t = b.run(limits);
  // Stream 1 starts 2 us late; both fit on the device side by side (shares
  // 0.1); the join adds 2 us after stream 1's end.
  CHECK(t.stream_end_us[1] == Approx(2 + 3 + 10));
  CHECK(t.makespan_us == Approx(2 + 3 + 10 + 2));

  limits.event_wait_us = 0.0;
  CHECK(b.run(limits).makespan_us == Approx(13.0));
}

TEST_CASE("kernels that oversubscribe the device share it; interference slows sharing", "[sim]") {
  PlanBuilder b(2);
  b.launch(0, {kernel(0.0, 10.0, 1.0)});
  b.launch(1, {kernel(0.0, 10.0, 1.0)});
  DeviceLimits limits;
  CHECK(b.run(limits).makespan_us == Approx(20.0));  // each wants the whole device
  limits.concurrency_interference = 0.1;
  CHECK(b.run(limits).makespan_us == Approx(22.0));
  limits.max_concurrent_kernels = 1;  // the second waits for a slot: no sharing, no interference
  const sim::Timeline serial = b.run(limits);
  CHECK(serial.makespan_us == Approx(20.0));
  CHECK(serial.kernels[1].start_us == Approx(10.0));

  PlanBuilder memory(2);  // bandwidth is shared the same way
  memory.launch(0, {kernel(0.0, 10.0, 0.1, 0.8)});
  memory.launch(1, {kernel(0.0, 10.0, 0.1, 0.8)});
  CHECK(memory.run({}).makespan_us == Approx(16.0));
}

TEST_CASE("kernels side by side contend for the L2 as far as their working sets fill it", "[sim]") {
  // Two kernels that fit the device together (no slot or bandwidth sharing).
  auto pair = [](double working_set_mb) {
    PlanBuilder b(2);
    b.launch(0, {kernel(0.0, 10.0, 0.4, 0.0, working_set_mb)});
    b.launch(1, {kernel(0.0, 10.0, 0.4, 0.0, working_set_mb)});
    return b;
  };
  DeviceLimits limits;
  limits.l2_cache_mb = 6.0;
  CHECK(pair(1.5).run(limits).makespan_us == Approx(10.0));  // no contention term: full speed
  limits.cache_contention = 0.2;
  // 3 MB of 6 fill half the L2: 1 + 0.2 * 0.5.
  CHECK(pair(1.5).run(limits).makespan_us == Approx(11.0));
  // 60 MB overflow it: the whole term, no more.
  CHECK(pair(30.0).run(limits).makespan_us == Approx(12.0));
  // A kernel alone contends with nobody.
  PlanBuilder alone(1);
  alone.launch(0, {kernel(0.0, 10.0, 0.4, 0.0, 30.0)});
  CHECK(alone.run(limits).makespan_us == Approx(10.0));
}

TEST_CASE("plain launches are issued by one host thread in plan order", "[sim]") {
  // Eight tiny kernels on two streams: a CUDA graph overlaps them; plain
  // launches cost the host 5 us each, which then bounds the iteration.
  PlanBuilder b(2);
  const int fork = b.record(0);
  b.wait(1, fork);
  for (int i = 0; i < 4; ++i) {
    b.launch(0, {kernel(1.0, 1.0)});
    b.launch(1, {kernel(1.0, 1.0)});
  }
  b.wait(0, b.record(1));
  DeviceLimits limits;
  limits.host_call_us = 5.0;
  const double graph = b.run(limits).makespan_us;
  limits.mode = LaunchMode::kPlain;
  const double plain = b.run(limits).makespan_us;
  CHECK(graph == Approx(8.0));
  // 12 host calls; the last (the join's wait) returns at 60 us.
  CHECK(plain >= 60.0);
  CHECK(plain == Approx(60.0));
}

TEST_CASE("a wait binds to the latest earlier record of its event", "[sim]") {
  PlanBuilder b(2);
  b.wait(1, 0);  // no record yet: a no-op, as in CUDA
  b.launch(1, {kernel(0.0, 1.0)});
  const int e = b.record(0);
  b.launch(0, {kernel(0.0, 50.0)});
  b.plan.steps.push_back({Step::Kind::kRecord, 0, -1, e});  // re-record after the long kernel
  b.wait(1, e);
  b.launch(1, {kernel(0.0, 1.0)});
  DeviceLimits limits;
  const sim::Timeline t = b.run(limits);
  CHECK(t.kernels.front().start_us == 0.0);
  CHECK(t.stream_end_us[1] == Approx(51.0));
}

TEST_CASE("the simulator is deterministic", "[sim]") {
  PlanBuilder b(3);
  const int fork = b.record(0);
  b.wait(1, fork);
  b.wait(2, fork);
  for (int i = 0; i < 20; ++i)
    b.launch(i % 3, {kernel(1.0 + i % 4, 3.0 + (i * 7) % 11, 0.05 * (i % 9 + 1), 0.1 * (i % 5))});
  b.wait(0, b.record(1));
  b.wait(0, b.record(2));
  DeviceLimits limits;
  limits.concurrency_interference = 0.05;
  limits.event_wait_us = 1.5;
  const sim::Timeline first = b.run(limits);
  for (int i = 0; i < 5; ++i) {
    const sim::Timeline again = b.run(limits);
    CHECK(again.makespan_us == first.makespan_us);
    REQUIRE(again.kernels.size() == first.kernels.size());
    for (size_t k = 0; k < first.kernels.size(); ++k)
      CHECK(again.kernels[k].end_us == first.kernels[k].end_us);
  }
}
