#include "cuda/measured.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <unordered_map>

#include "core/error.h"
#include "core/log.h"
#include "cost/profile_db.h"
#include "cuda/check.h"
#include "cuda/context.h"
#include "cuda/device_pool.h"
#include "cuda/runtime.h"
#include "cuda/timing_plan.h"
#include "exec/stats.h"
#include "sched/schedule.h"
#include "sched/signature.h"

namespace ios::cuda {
namespace {

// A stage as an ExecPlan: one stream per group, or one merged launch; with
// `sync_after`, the host synchronizes the device after it (kSync), as a
// synced schedule does after a stage of several groups.
exec::ExecPlan stage_plan(const sched::Stage& stage, bool sync_after) {
  exec::ExecPlan plan;
  if (stage.strategy == sched::Strategy::kMerge) {
    IOS_ASSERT(stage.groups.size() == 1, "a merge stage has {} groups", stage.groups.size());
    plan.kernels.push_back({stage.groups[0], true});
    plan.steps.push_back({exec::Step::Kind::kLaunch, 0, 0, -1});
  } else {
    plan.num_streams = std::max<int>(1, static_cast<int>(stage.groups.size()));
    for (size_t g = 0; g < stage.groups.size(); ++g) {
      for (sched::UnitId u : stage.groups[g]) {
        plan.kernels.push_back({{u}, false});
        plan.steps.push_back(
            {exec::Step::Kind::kLaunch, static_cast<int>(g), static_cast<int>(plan.kernels.size() - 1), -1});
      }
    }
  }
  if (sync_after) plan.steps.push_back({exec::Step::Kind::kSync, 0, -1, -1});
  return plan;
}

// The median of `samples`, 0 for none.
double median_of(const std::vector<double>& samples) {
  return samples.empty() ? 0.0 : exec::compute_stats(samples, 1).median;
}

class MeasuredModel final : public MeasuredCostModel {
 public:
  MeasuredModel(const sched::UnitGraph& graph, const MeasuredOptions& options)
      : graph_(graph), options_(options), ctx_(options.device, options.math, options.workspace_limit_bytes, options.conv_kernels) {
    IOS_ASSERT(graph.ir() != nullptr, "the measured cost model needs a unit graph with an IR");
    const ir::Graph& ir = *graph.ir();
    if (!ir.inputs().empty() && !ir.tensor(ir.inputs()[0]).shape.empty()) {
      batch_ = ir.tensor(ir.inputs()[0]).shape[0];
    }
    if (options.use_database) {
      db_.emplace(options.db_path.empty() ? cost::ProfileDb::default_path() : std::filesystem::path(options.db_path));
    }
    IOS_ASSERT(std::find(sched::kLaunchModes.begin(), sched::kLaunchModes.end(), options.launch) !=
                   sched::kLaunchModes.end(),
               "launch mode '{}'", options.launch);
    // The L2 flush: twice the L2, so that no line of what a stage read last
    // survives whatever the replacement policy keeps.
    int l2_bytes = 0;
    IOS_CUDA_CALL(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, ctx_.ordinal()));
    flush_ = DeviceBuffer(std::max<size_t>(size_t{2} * static_cast<size_t>(std::max(l2_bytes, 0)), size_t{1} << 20));
  }

  double stage_latency(const sched::Stage& stage) override {
    const std::string signature = sched::stage_signature(graph_, stage);
    if (std::optional<double> ms = recall(signature)) {
      ++progress_.cache_hits;
      report();
      return *ms;
    }
    const cost::ProfileKey key = profile_key(signature);
    const auto t0 = std::chrono::steady_clock::now();
    int64_t repetitions = 0;
    const double ms = measure(stage, &repetitions);
    progress_.elapsed_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ++progress_.measured;
    if (db_) db_->store(key, ms, repetitions);
    memo_[signature] = ms;
    report();
    return ms;
  }

  // This run's memo, then the profile database: a budgeted search asks
  // this of every stage it considers, and measures only some.
  std::optional<double> known_latency(const sched::Stage& stage) override {
    return recall(sched::stage_signature(graph_, stage));
  }

  void expect(int stages) override {
    progress_.expected = stages;
    update_eta();
  }
  MeasureProgress progress() const override { return progress_; }
  const DeviceSummary& device() const override { return ctx_.device(); }
  const std::string& launch() const override { return options_.launch; }

 private:
  cost::ProfileKey profile_key(const std::string& signature) const {
    return {ctx_.device().name, ctx_.device().driver, ctx_.device().cudnn,
            ir::math_mode_name(options_.math), batch_, signature, options_.launch,
            exec::kernel_selection(options_.conv_kernels)};
  }

  std::optional<double> recall(const std::string& signature) {
    if (auto it = memo_.find(signature); it != memo_.end()) return it->second;
    if (!db_) return std::nullopt;
    std::optional<double> ms = db_->lookup(profile_key(signature));
    if (ms) memo_[signature] = *ms;
    return ms;
  }

  // Runs the stage's timing plan (timing_plan.h) round after round until the
  // cost is stable, and returns it.
  double measure(const sched::Stage& stage, int64_t* repetitions) {
    IOS_CUDA_CALL(cudaSetDevice(ctx_.ordinal()));
    const auto t0 = std::chrono::steady_clock::now();
    const TimingPlan plan =
        make_timing_plan(options_.launch, static_cast<int>(stage.groups.size()), options_.round);
    LowerOptions lower;
    lower.partial = true;
    lower.derived = &derived_;
    Runtime runtime(ctx_, lower_program(graph_, stage_plan(stage, plan.sync_after), lower),
                    /*cuda_graph=*/options_.launch == "graph", &pool_);
    while (events_.size() < 2 * static_cast<size_t>(plan.samples())) events_.push_back(make_event(true));
    progress_.setup_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (int i = 0; i < options_.warmup; ++i) {
      runtime.execute();
      if (plan.subtract_empty) runtime.execute_empty();
    }
    runtime.synchronize();

    using clock = std::chrono::steady_clock;
    cudaStream_t stream = ctx_.stream(0);
    std::vector<clock::time_point> host_start(static_cast<size_t>(plan.samples()));
    std::vector<double> round_ms(static_cast<size_t>(plan.samples()));
    std::vector<double> stage_ms, empty_ms;
    const int limit = std::max(options_.max_repetitions, plan.stage_samples());
    double previous = -1.0, cost = 0.0;
    uint8_t flush_byte = 0;
    while (static_cast<int>(stage_ms.size()) < limit) {
      for (const TimingStep& step : plan.round) {
        const auto i = static_cast<size_t>(step.sample);
        switch (step.kind) {
          case TimingStep::Kind::kFlushL2:
            // A different byte each time: nothing can skip a write of what is there.
            IOS_CUDA_CALL(cudaMemsetAsync(flush_.get(), ++flush_byte, flush_.bytes(), stream));
            break;
          case TimingStep::Kind::kRewriteInputs: runtime.rewrite_inputs(); break;
          case TimingStep::Kind::kReplayAhead: runtime.execute(); break;
          case TimingStep::Kind::kSynchronize: runtime.synchronize(); break;
          case TimingStep::Kind::kStart:
            if (plan.host_timed) {
              host_start[i] = clock::now();
            } else {
              IOS_CUDA_CALL(cudaEventRecord(events_[2 * i].get(), stream));
            }
            break;
          case TimingStep::Kind::kRunStage: runtime.execute(); break;
          case TimingStep::Kind::kRunEmpty: runtime.execute_empty(); break;
          case TimingStep::Kind::kStop:
            if (plan.host_timed) {
              // The stage's run ended in its device synchronization.
              round_ms[i] = std::chrono::duration<double, std::milli>(clock::now() - host_start[i]).count();
            } else {
              IOS_CUDA_CALL(cudaEventRecord(events_[2 * i + 1].get(), stream));
            }
            break;
        }
      }
      runtime.synchronize();
      for (size_t i = 0; i < round_ms.size(); ++i) {
        if (!plan.host_timed) {
          float ms = 0.0f;
          IOS_CUDA_CALL(cudaEventElapsedTime(&ms, events_[2 * i].get(), events_[2 * i + 1].get()));
          round_ms[i] = ms;
        }
        (plan.empty[i] ? empty_ms : stage_ms).push_back(round_ms[i]);
      }
      cost = stage_cost(plan, median_of(stage_ms), median_of(empty_ms));
      if (static_cast<int>(stage_ms.size()) >= options_.min_repetitions && previous >= 0.0 &&
          std::abs(cost - previous) <= options_.stable_tolerance * previous) {
        break;
      }
      previous = cost;
    }
    *repetitions = static_cast<int64_t>(stage_ms.size());
    return cost;
  }

  void update_eta() {
    const int answered = progress_.measured + progress_.cache_hits;
    if (progress_.expected > 0 && progress_.measured > 0) {
      const int left = std::max(progress_.expected - answered, 0);
      progress_.eta_s = left * progress_.elapsed_s / progress_.measured;
    } else {
      progress_.eta_s = -1.0;
    }
  }

  void report() {
    update_eta();
    if (options_.progress) options_.progress(progress_);
  }

  const sched::UnitGraph& graph_;
  MeasuredOptions options_;
  Context ctx_;
  int64_t batch_ = 1;
  std::optional<cost::ProfileDb> db_;
  std::unordered_map<std::string, double> memo_;
  std::vector<Event> events_;  // two per sample of a round, reused
  DeviceBuffer flush_;         // written over before every sample: evicts L2
  DevicePool pool_;  // arena, resident weights: reused by every stage's runtime
  DerivedConstants derived_;  // folded and merged weights, shared across stages so they stay resident
  MeasureProgress progress_;
};

}  // namespace

std::unique_ptr<MeasuredCostModel> make_measured_cost_model(const sched::UnitGraph& graph,
                                                            const MeasuredOptions& options) {
  return std::make_unique<MeasuredModel>(graph, options);
}

}  // namespace ios::cuda
