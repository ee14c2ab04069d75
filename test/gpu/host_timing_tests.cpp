// [host] tests of how the measured cost model times a stage (cuda/timing_plan.h):
// what each sample queues, times and flushes, and, on the simulator's costs
// with a model of graph launches, that stage costs measured so add up to the
// whole model's latency where the former plan (one event pair around one
// graph launch) was biased by a graph launch per stage.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "cost/device_profile.h"
#include "cost/simulated.h"
#include "cuda/timing_plan.h"
#include "exec/stats.h"
#include "gpu_util.h"

namespace ios::gputest {
namespace {

using K = cuda::TimingStep::Kind;

// The steps between the previous sample's kStop (or the round's start) and
// sample i's kStart, and those between its kStart and its kStop.
struct SampleSteps {
  std::vector<K> before, inside;
};

std::vector<SampleSteps> per_sample(const cuda::TimingPlan& plan) {
  std::vector<SampleSteps> out(static_cast<size_t>(plan.samples()));
  std::vector<K> pending;
  int open = -1;
  for (const cuda::TimingStep& step : plan.round) {
    if (step.kind == K::kStart) {
      REQUIRE(open == -1);  // samples do not nest or overlap
      REQUIRE(step.sample >= 0);
      REQUIRE(step.sample < plan.samples());
      open = step.sample;
      out[static_cast<size_t>(open)].before = pending;
      pending.clear();
    } else if (step.kind == K::kStop) {
      REQUIRE(step.sample == open);
      out[static_cast<size_t>(open)].inside = pending;
      pending.clear();
      open = -1;
    } else {
      pending.push_back(step.kind);
    }
  }
  CHECK(open == -1);
  CHECK(pending.empty());  // nothing queued after the last sample
  return out;
}

TEST_CASE("the timing plan flushes L2 and rewrites inputs outside every sample",
          "[host][measured]") {
  for (const std::string launch : {"graph", "plain", "synced"}) {
    for (int groups : {1, 3}) {
      INFO(launch << ", " << groups << " group(s)");
      const cuda::TimingPlan plan = cuda::make_timing_plan(launch, groups, 10);
      CHECK(plan.launch == launch);
      CHECK(plan.stage_samples() == 10);
      const std::vector<SampleSteps> samples = per_sample(plan);
      for (size_t i = 0; i < samples.size(); ++i) {
        INFO("sample " << i);
        // Exactly one run inside the events: no flush, no rewrite, no sync timed.
        REQUIRE(samples[i].inside.size() == 1);
        CHECK(samples[i].inside[0] == (plan.empty[i] ? K::kRunEmpty : K::kRunStage));
        // Before it, outside the events: L2 flushed, then the inputs written
        // again (cold weights, warm inputs).
        const std::vector<K>& before = samples[i].before;
        const auto flush = std::find(before.begin(), before.end(), K::kFlushL2);
        const auto rewrite = std::find(before.begin(), before.end(), K::kRewriteInputs);
        REQUIRE(flush != before.end());
        REQUIRE(rewrite != before.end());
        CHECK(flush < rewrite);
        CHECK(std::count(before.begin(), before.end(), K::kRunStage) == 0);
      }
      const bool synced_stage = launch == "synced" && groups > 1;
      CHECK(plan.sync_after == synced_stage);
      CHECK(plan.host_timed == synced_stage);
      CHECK(plan.subtract_empty == (launch == "graph"));
      if (plan.host_timed) {
        // From an idle device, as after the synchronization that ended the stage before.
        for (const SampleSteps& s : samples) CHECK(s.before.back() == K::kSynchronize);
        CHECK(std::none_of(plan.round.begin(), plan.round.end(),
                           [](const cuda::TimingStep& s) { return s.kind == K::kReplayAhead; }));
      } else {
        // The device has work ahead of the first sample's events.
        CHECK(plan.round.front().kind == K::kReplayAhead);
        CHECK(std::none_of(plan.round.begin(), plan.round.end(),
                           [](const cuda::TimingStep& s) { return s.kind == K::kSynchronize; }));
      }
      if (plan.subtract_empty) {
        CHECK(plan.samples() == 20);  // as many empty-graph samples, interleaved
        for (size_t i = 0; i < plan.empty.size(); ++i) CHECK(plan.empty[i] == (i % 2 == 1));
      } else {
        CHECK(plan.samples() == 10);
        CHECK(std::none_of(plan.empty.begin(), plan.empty.end(), [](bool e) { return e; }));
      }
    }
  }
  CHECK(cuda::make_timing_plan("graph", 1, 0).stage_samples() == 1);
  CHECK_THROWS_AS(cuda::make_timing_plan("eager", 1, 10), InternalError);
}

TEST_CASE("a stage's cost takes the empty graph off in graph mode only", "[host][measured]") {
  const cuda::TimingPlan graph = cuda::make_timing_plan("graph", 2, 4);
  const cuda::TimingPlan plain = cuda::make_timing_plan("plain", 2, 4);
  CHECK(cuda::stage_cost(graph, 0.050, 0.004) == Approx(0.046));
  CHECK(cuda::stage_cost(graph, 0.003, 0.004) == 0.0);  // a stage with no work costs nothing
  CHECK(cuda::stage_cost(plain, 0.050, 0.004) == 0.050);
}

// A model of the device and host that runs a timing plan: the host issues
// the steps in order, each CUDA call taking it `host_call_us` (a graph launch
// `graph_submit_us`); stream 0 runs what it was given in order, never before
// the host issued it. A graph launch spends `graph_gap_us` on the device
// before its work (the device-side gap between graph launches, which the
// simulator's graph mode leaves out because a whole model pays it once); the
// stage's work is what the simulator says the stage takes.
struct LaunchModel {
  double host_call_us = 0.0;
  double graph_submit_us = 0.0;
  double graph_gap_us = 0.0;
  double flush_us = 0.0;
  double rewrite_us = 0.0;
  double sync_us = 0.0;
};

// The stage's cost from one round of `plan`, its work `work_us`, in ms.
double model_cost(const cuda::TimingPlan& plan, double work_us, const LaunchModel& m) {
  double host = 0.0, device = 0.0;
  std::vector<double> start(static_cast<size_t>(plan.samples())), ms(start.size());
  auto device_work = [&](double us) { device = std::max(device, host) + us; };
  for (const cuda::TimingStep& step : plan.round) {
    const auto i = static_cast<size_t>(step.sample);
    switch (step.kind) {
      case K::kFlushL2:
        host += m.host_call_us;
        device_work(m.flush_us);
        break;
      case K::kRewriteInputs:
        host += m.host_call_us;
        device_work(m.rewrite_us);
        break;
      case K::kReplayAhead:
      case K::kRunStage:
        host += m.graph_submit_us;
        device_work(m.graph_gap_us + work_us);
        break;
      case K::kRunEmpty:
        host += m.graph_submit_us;
        device_work(m.graph_gap_us);
        break;
      case K::kSynchronize:
        host = std::max(host, device) + m.sync_us;
        break;
      case K::kStart:
        host += m.host_call_us;
        device = std::max(device, host);
        start[i] = device;
        break;
      case K::kStop:
        host += m.host_call_us;
        device = std::max(device, host);
        ms[i] = (device - start[i]) / 1000.0;
        break;
    }
  }
  std::vector<double> stage, empty;
  for (size_t i = 0; i < ms.size(); ++i) (plan.empty[i] ? empty : stage).push_back(ms[i]);
  const double empty_median = empty.empty() ? 0.0 : exec::compute_stats(empty, 1).median;
  return cuda::stage_cost(plan, exec::compute_stats(stage, 1).median, empty_median);
}

// The former plan: a round of event pairs, each around one graph launch
// queued to an idle device, nothing subtracted, nothing flushed.
cuda::TimingPlan former_plan(int per_round) {
  cuda::TimingPlan plan;
  plan.launch = "graph";
  for (int i = 0; i < per_round; ++i) {
    plan.round.push_back({K::kStart, i});
    plan.round.push_back({K::kRunStage});
    plan.round.push_back({K::kStop, i});
    plan.empty.push_back(false);
  }
  return plan;
}

TEST_CASE(
    "stage costs timed by the plan add up to the whole model's graph; one launch each did not",
    "[host][measured]") {
  // A small CNN: a stem, then 48 convolutions of a few tens of microseconds
  // or less each, run by the sequential schedule (one stage per unit).
  GraphBuilder b;
  ir::TensorId x = b.input("x", {1, 32, 28, 28});
  for (int i = 0; i < 48; ++i) {
    x = b.node(ir::OpKind::kRelu, "r" + std::to_string(i),
               {b.conv("c" + std::to_string(i), x, 32, 3, 1, {1, 1, 1, 1})});
  }
  b.output(x);
  const sched::UnitGraph units = sched::UnitGraph::form(b.graph());
  const sched::Schedule schedule = sequential_schedule(units);
  const auto& stages = schedule.staged().stages;
  REQUIRE(stages.size() >= 48);

  const cost::DeviceProfile profile = cost::load_device_profile("h100");
  cost::SimulatedCostModel simulator(units, profile);  // graph mode
  LaunchModel m;
  m.host_call_us = profile.host_launch_us;
  m.graph_submit_us = 2.5;  // host time of one cudaGraphLaunch
  m.graph_gap_us = 3.0;     // "a few microseconds" between two graph launches
  // Writing twice a 50 MB L2 at the profile's bandwidth.
  m.flush_us = 2 * profile.l2_cache_mb * 1e6 / (profile.mem_bandwidth_gbs * 1e3);
  m.rewrite_us = 2.0;
  m.sync_us = profile.host_sync_us;
  REQUIRE(m.host_call_us > 0.0);
  REQUIRE(m.flush_us > 10.0);

  // The whole model as Engine::time measures it: one graph launch per
  // iteration, iterations queued back to back (event to event: the gap and
  // the work).
  const double whole_ms = simulator.schedule_latency(schedule) + m.graph_gap_us / 1000.0;
  const cuda::TimingPlan plan = cuda::make_timing_plan("graph", 1, 10);
  const cuda::TimingPlan former = former_plan(10);
  double sum_new = 0.0, sum_former = 0.0, sum_work = 0.0;
  for (const sched::Stage& stage : stages) {
    const double work_us = simulator.stage_latency(stage) * 1000.0;
    sum_work += work_us / 1000.0;
    const double cost = model_cost(plan, work_us, m);
    CHECK(cost == Approx(work_us / 1000.0).margin(1e-9));  // the gap and the host taken off exactly
    sum_new += cost;
    sum_former += model_cost(former, work_us, m);
  }
  INFO("whole " << whole_ms << " ms, sum of stage work " << sum_work << " ms, new sum " << sum_new
                << " ms, former sum " << sum_former << " ms over " << stages.size() << " stages");
  // Tolerance: what the whole model pays once (one gap), plus 1% for the
  // simulator's stage boundaries (a staged schedule's stage costs are its
  // stages' latencies alone; the whole plan may overlap a fork or join).
  const double tolerance = m.graph_gap_us / 1000.0 + 0.01 * whole_ms;
  CHECK(std::abs(sum_new - whole_ms) <= tolerance);
  // The former way paid the gap (at least) once per stage: ~0.15 ms here.
  const double bias = sum_former - whole_ms;
  CHECK(bias > tolerance);
  CHECK(bias >= 0.9 * (static_cast<double>(stages.size()) - 1) * m.graph_gap_us / 1000.0);

  // A host slower than the device (a graph submission longer than the
  // stage) shows in the former samples, not in the plan's: the flush and
  // the rewrite keep the device ahead.
  LaunchModel slow_host = m;
  slow_host.graph_submit_us = 8.0;
  const double tiny_us = 1.5;
  CHECK(model_cost(plan, tiny_us, slow_host) == Approx(tiny_us / 1000.0).margin(1e-9));
  CHECK(model_cost(former, tiny_us, slow_host) >= slow_host.graph_submit_us / 1000.0);
}

}  // namespace
}  // namespace ios::gputest
