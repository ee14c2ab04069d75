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
#include "exec/stats.h"
#include "sched/signature.h"

namespace ios::cuda {
namespace {

// A stage as an ExecPlan: one stream per group, or one merged launch.
exec::ExecPlan stage_plan(const sched::Stage& stage) {
  exec::ExecPlan plan;
  if (stage.strategy == sched::Strategy::kMerge) {
    IOS_ASSERT(stage.groups.size() == 1, "a merge stage has {} groups", stage.groups.size());
    plan.kernels.push_back({stage.groups[0], true});
    plan.steps.push_back({exec::Step::Kind::kLaunch, 0, 0, -1});
    return plan;
  }
  plan.num_streams = std::max<int>(1, static_cast<int>(stage.groups.size()));
  for (size_t g = 0; g < stage.groups.size(); ++g) {
    for (sched::UnitId u : stage.groups[g]) {
      plan.kernels.push_back({{u}, false});
      plan.steps.push_back({exec::Step::Kind::kLaunch, static_cast<int>(g), static_cast<int>(plan.kernels.size() - 1), -1});
    }
  }
  return plan;
}

class MeasuredModel final : public MeasuredCostModel {
 public:
  MeasuredModel(const sched::UnitGraph& graph, const MeasuredOptions& options)
      : graph_(graph), options_(options), ctx_(options.device, options.precision, options.workspace_limit_bytes) {
    IOS_ASSERT(graph.ir() != nullptr, "the measured cost model needs a unit graph with an IR");
    const ir::Graph& ir = *graph.ir();
    if (!ir.inputs().empty() && !ir.tensor(ir.inputs()[0]).shape.empty()) {
      batch_ = ir.tensor(ir.inputs()[0]).shape[0];
    }
    if (options.use_database) {
      db_.emplace(options.db_path.empty() ? cost::ProfileDb::default_path() : std::filesystem::path(options.db_path));
    }
    const int round = std::max(options.round, 1);
    for (int i = 0; i < 2 * round; ++i) events_.push_back(make_event(true));
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

 private:
  cost::ProfileKey profile_key(const std::string& signature) const {
    return {ctx_.device().name, ctx_.device().driver, ctx_.device().cudnn,
            std::string(precision_name(options_.precision)), batch_, signature};
  }

  std::optional<double> recall(const std::string& signature) {
    if (auto it = memo_.find(signature); it != memo_.end()) return it->second;
    if (!db_) return std::nullopt;
    std::optional<double> ms = db_->lookup(profile_key(signature));
    if (ms) memo_[signature] = *ms;
    return ms;
  }

  double measure(const sched::Stage& stage, int64_t* repetitions) {
    IOS_CUDA_CALL(cudaSetDevice(ctx_.ordinal()));
    const auto t0 = std::chrono::steady_clock::now();
    LowerOptions lower;
    lower.partial = true;
    lower.derived = &derived_;
    Runtime runtime(ctx_, lower_program(graph_, stage_plan(stage), lower), /*cuda_graph=*/true, &pool_);
    progress_.setup_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    cudaStream_t stream = ctx_.stream(0);
    for (int i = 0; i < options_.warmup; ++i) runtime.execute();
    runtime.synchronize();
    const int round = std::max(options_.round, 1);
    std::vector<double> samples;
    samples.reserve(static_cast<size_t>(std::max(options_.max_repetitions, round)));
    double previous = -1.0, median = 0.0;
    while (static_cast<int>(samples.size()) < std::max(options_.max_repetitions, round)) {
      for (int r = 0; r < round; ++r) {
        IOS_CUDA_CALL(cudaEventRecord(events_[static_cast<size_t>(2 * r)].get(), stream));
        runtime.execute();
        IOS_CUDA_CALL(cudaEventRecord(events_[static_cast<size_t>(2 * r + 1)].get(), stream));
      }
      IOS_CUDA_CALL(cudaEventSynchronize(events_[static_cast<size_t>(2 * round - 1)].get()));
      for (int r = 0; r < round; ++r) {
        float ms = 0.0f;
        IOS_CUDA_CALL(cudaEventElapsedTime(&ms, events_[static_cast<size_t>(2 * r)].get(),
                                           events_[static_cast<size_t>(2 * r + 1)].get()));
        samples.push_back(ms);
      }
      median = exec::compute_stats(samples, 1).median;
      if (static_cast<int>(samples.size()) >= options_.min_repetitions && previous > 0.0 &&
          std::abs(median - previous) <= options_.stable_tolerance * previous) {
        break;
      }
      previous = median;
    }
    *repetitions = static_cast<int64_t>(samples.size());
    return median;
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
  std::vector<Event> events_;
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
