// The GPU simulator on hand-built plans: in-order streams, event waits,
// kernel slots, host issue of plain launches, and determinism.
#include "sim/simulator.h"

#include <catch2/catch.hpp>

#include "core/error.h"

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
  void sync() { plan.steps.push_back({Step::Kind::kSync, 0, -1, -1}); }
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
  // Two kernels that fit the device's slots together, each drawing half the
  // DRAM bandwidth: together exactly all of it.
  auto pair = [](double bandwidth_share, double working_set_mb) {
    PlanBuilder b(2);
    b.launch(0, {kernel(0.0, 10.0, 0.4, bandwidth_share, working_set_mb)});
    b.launch(1, {kernel(0.0, 10.0, 0.4, bandwidth_share, working_set_mb)});
    return b;
  };
  DeviceLimits limits;
  limits.l2_cache_mb = 6.0;
  CHECK(pair(0.5, 1.5).run(limits).makespan_us == Approx(10.0));  // no contention term: full speed
  limits.cache_contention = 0.2;
  // 3 MB of 6 fill half the L2: their traffic grows by 0.2 * 0.5, beyond
  // the bandwidth, which then bounds them: 1.0 * 1.1.
  CHECK(pair(0.5, 1.5).run(limits).makespan_us == Approx(11.0));
  // 60 MB overflow it: the whole term, no more.
  CHECK(pair(0.5, 30.0).run(limits).makespan_us == Approx(12.0));
  // Compute-bound kernels lose their cached data too, but the extra traffic
  // (0.2 * 1.2 of the bandwidth) does not bound them.
  CHECK(pair(0.1, 30.0).run(limits).makespan_us == Approx(10.0));
  // A kernel alone contends with nobody.
  PlanBuilder alone(1);
  alone.launch(0, {kernel(0.0, 10.0, 0.4, 0.9, 30.0)});
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

TEST_CASE("a host synchronization waits for the whole device, then the host issues on", "[sim]") {
  // Stage 1: a long kernel on stream 0 and a short one on stream 1; the host
  // synchronizes; stage 2: one kernel on stream 1 (no events: the device is
  // idle when it is issued).
  PlanBuilder b(2);
  b.launch(0, {kernel(1.0, 50.0)});
  b.launch(1, {kernel(1.0, 5.0)});
  b.sync();
  b.launch(1, {kernel(1.0, 10.0)});
  DeviceLimits limits;
  limits.mode = LaunchMode::kPlain;
  limits.host_call_us = 2.0;
  limits.host_sync_us = 7.0;
  const sim::Timeline t = b.run(limits);
  // Stream 0 ends at 2 + 1 + 50 = 53; the host returns at 60 and issues the
  // last kernel by 62; it ends at 62 + 1 + 10.
  REQUIRE(t.kernels.size() == 3);
  CHECK(t.kernels[2].begin_us == Approx(62.0));
  CHECK(t.makespan_us == Approx(73.0));
  // Without the synchronization stream 1 runs its second kernel right after
  // its first, beside the long one.
  PlanBuilder events(2);
  events.launch(0, {kernel(1.0, 50.0)});
  events.launch(1, {kernel(1.0, 5.0)});
  events.launch(1, {kernel(1.0, 10.0)});
  CHECK(events.run(limits).makespan_us == Approx(53.0));
}

TEST_CASE("a synchronization the device had finished costs one call, and the last one ends the plan", "[sim]") {
  // The host is slower than the device: when it reaches the kSync the device
  // is idle, so it costs the host one call, not the wake-up.
  PlanBuilder b(1);
  for (int i = 0; i < 3; ++i) b.launch(0, {kernel(0.5, 0.5)});
  b.sync();
  DeviceLimits limits;
  limits.mode = LaunchMode::kPlain;
  limits.host_call_us = 10.0;
  limits.host_sync_us = 3.0;
  // Calls return at 10, 20, 30; the last kernel ends at 31; the host returns
  // from the synchronization at max(30 + 10, 31 + 3) = 40, which ends the plan.
  CHECK(b.run(limits).makespan_us == Approx(40.0));
  limits.host_call_us = 0.1;
  // Now the device is behind: the host waits for the end (3.0 + 0.1) and 3 us more.
  CHECK(b.run(limits).makespan_us == Approx(0.1 + 3.0 + 3.0));
}

TEST_CASE("a host synchronization cannot be captured in a CUDA graph", "[sim]") {
  PlanBuilder b(1);
  b.launch(0, {kernel(1.0, 1.0)});
  b.sync();
  CHECK_THROWS_AS(b.run({}), InternalError);
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
