#include "cost/calibrate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/error.h"
#include "sched/scheduler.h"

namespace ios::cost {
namespace {

// Answers like the simulated model and remembers every distinct stage asked.
class RecordingCost : public sched::CostModel {
 public:
  RecordingCost(const sched::UnitGraph& graph, SimulatedCostModel& model)
      : graph_(graph), model_(model) {}
  std::string name() const override { return model_.name(); }
  double stage_latency(const sched::Stage& stage) override {
    if (seen_.insert(stage_signature(graph_, stage)).second) stages_.push_back(stage);
    return model_.stage_latency(stage);
  }
  std::vector<sched::Stage> take() { return std::move(stages_); }

 private:
  const sched::UnitGraph& graph_;
  SimulatedCostModel& model_;
  std::set<std::string> seen_;
  std::vector<sched::Stage> stages_;
};

// A fitted field, searched as the logarithm of its value.
struct Knob {
  const char* name;
  double DeviceProfile::*field;
  bool fraction;  // an efficiency: at most 1
};

// Nelder-Mead on f over R^n from x0 (initial steps `step`), at most
// `max_evaluations` evaluations. Deterministic.
template <class F>
std::vector<double> nelder_mead(F&& f, std::vector<double> x0, double step, int max_evaluations,
                                int& evaluations) {
  const size_t n = x0.size();
  std::vector<std::vector<double>> simplex(n + 1, x0);
  for (size_t i = 0; i < n; ++i) simplex[i + 1][i] += step;
  std::vector<double> value(n + 1);
  for (size_t i = 0; i <= n; ++i) value[i] = f(simplex[i]);
  evaluations += static_cast<int>(n + 1);
  std::vector<size_t> order(n + 1);
  auto point = [&](const std::vector<double>& from, const std::vector<double>& to, double t) {
    std::vector<double> p(n);
    for (size_t k = 0; k < n; ++k) p[k] = from[k] + t * (to[k] - from[k]);
    return p;
  };
  while (evaluations < max_evaluations) {
    for (size_t i = 0; i <= n; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return value[a] < value[b]; });
    const size_t best = order[0], worst = order[n], second = order[n - 1];
    double spread = 0.0;
    for (size_t i = 1; i <= n; ++i) {
      for (size_t k = 0; k < n; ++k)
        spread = std::max(spread, std::abs(simplex[order[i]][k] - simplex[best][k]));
    }
    if (spread < 1e-7) break;
    std::vector<double> centroid(n, 0.0);
    for (size_t i = 0; i < n; ++i) {
      for (size_t k = 0; k < n; ++k) centroid[k] += simplex[order[i]][k] / static_cast<double>(n);
    }
    const std::vector<double> reflected = point(centroid, simplex[worst], -1.0);
    const double fr = f(reflected);
    ++evaluations;
    if (fr < value[best]) {
      const std::vector<double> expanded = point(centroid, simplex[worst], -2.0);
      const double fe = f(expanded);
      ++evaluations;
      if (fe < fr) {
        simplex[worst] = expanded;
        value[worst] = fe;
      } else {
        simplex[worst] = reflected;
        value[worst] = fr;
      }
    } else if (fr < value[second]) {
      simplex[worst] = reflected;
      value[worst] = fr;
    } else {
      const bool outside = fr < value[worst];
      const std::vector<double> contracted =
          point(centroid, outside ? reflected : simplex[worst], 0.5);
      const double fc = f(contracted);
      ++evaluations;
      if (fc < std::min(fr, value[worst])) {
        simplex[worst] = contracted;
        value[worst] = fc;
      } else {  // shrink towards the best
        for (size_t i = 0; i <= n; ++i) {
          if (i == best) continue;
          simplex[i] = point(simplex[best], simplex[i], 0.5);
          value[i] = f(simplex[i]);
          ++evaluations;
        }
      }
    }
  }
  return simplex[static_cast<size_t>(std::min_element(value.begin(), value.end()) - value.begin())];
}

}  // namespace

std::vector<sched::Stage> candidate_stages(const sched::UnitGraph& graph,
                                           const DeviceProfile& profile,
                                           const SimulatedOptions& options) {
  SimulatedCostModel model(graph, profile, options);
  RecordingCost recorder(graph, model);
  for (const char* name : {"sequential", "greedy", "ios"}) {
    const sched::SchedulerEntry& entry = sched::find_scheduler(name);
    sched::SearchStats stats;
    entry.make(sched::Params::parse(entry.name, entry.params, ""))->run(graph, recorder, stats);
  }
  return recorder.take();
}

DbSamples samples_from_db(const sched::UnitGraph& graph, const ProfileDb& db,
                          const std::vector<sched::Stage>& candidates, Precision precision,
                          int64_t batch) {
  // signature -> measured device -> latency, at this precision and batch
  std::map<std::string, std::map<std::string, double>> measured;
  for (const auto& [key, entry] : db.entries()) {
    if (key.precision != precision_name(precision) || key.batch != batch) continue;
    measured[key.signature][fmt::format("{} (driver {}, cuDNN {})", key.device, key.driver,
                                        key.cudnn)] = entry.latency_ms;
  }
  std::map<std::string, std::vector<StageSample>> by_device;
  for (const sched::Stage& stage : candidates) {
    const auto found = measured.find(stage_signature(graph, stage));
    if (found == measured.end()) continue;
    for (const auto& [device, latency] : found->second)
      by_device[device].push_back({stage, latency});
  }
  DbSamples out;
  for (auto& [device, samples] : by_device) {
    if (samples.size() > out.samples.size()) {
      out.device = device;
      out.samples = std::move(samples);
    }
  }
  return out;
}

CalibrationResult calibrate_profile(const sched::UnitGraph& graph, const DeviceProfile& start,
                                    const SimulatedOptions& options,
                                    const std::vector<StageSample>& samples) {
  std::vector<Knob> knobs = {
      {"launch_overhead_us", &DeviceProfile::launch_overhead_us, false},
      {"event_sync_overhead_us", &DeviceProfile::event_sync_overhead_us, false},
      {"compute_efficiency", &DeviceProfile::compute_efficiency, true},
      {"memory_efficiency", &DeviceProfile::memory_efficiency, true},
      {"concurrency_interference", &DeviceProfile::concurrency_interference, false}};
  if (options.precision == Precision::kTf32 && start.peak_tf32_tflops > 0.0) {
    knobs.push_back({"tensor_core_efficiency", &DeviceProfile::tensor_core_efficiency, true});
  }
  auto profile_at = [&](const std::vector<double>& x) {
    DeviceProfile p = start;
    for (size_t i = 0; i < knobs.size(); ++i) {
      const double v = std::exp(x[i]);
      p.*knobs[i].field = knobs[i].fraction ? std::min(v, 1.0) : v;
    }
    return p;
  };

  // Stages that launch nothing (a zero-copy concat) carry no information.
  SimulatedCostModel initial(graph, start, options);
  std::vector<const StageSample*> usable;
  CalibrationResult result;
  for (const StageSample& s : samples) {
    const double predicted = initial.stage_latency(s.stage);
    if (s.measured_ms <= 0.0 || predicted <= 0.0) continue;
    usable.push_back(&s);
    result.mean_error_before += std::abs(predicted / s.measured_ms - 1.0);
  }
  if (usable.size() < knobs.size() + 1) {
    user_error("calibration needs at least {} measured stages that launch kernels, found {}",
               knobs.size() + 1, usable.size());
  }
  result.mean_error_before /= static_cast<double>(usable.size());

  auto objective = [&](const std::vector<double>& x) {
    SimulatedCostModel model(graph, profile_at(x), options);
    double sum = 0.0;
    for (const StageSample* s : usable) {
      const double predicted = model.stage_latency(s->stage);
      const double r = std::log(std::max(predicted, 1e-12) / s->measured_ms);
      sum += r * r;
    }
    return sum / static_cast<double>(usable.size());
  };
  std::vector<double> x(knobs.size());
  for (size_t i = 0; i < knobs.size(); ++i) x[i] = std::log(std::max(start.*knobs[i].field, 1e-3));
  // Two rounds: the second restarts the simplex around the first's best,
  // which Nelder-Mead needs after it has collapsed along one direction.
  x = nelder_mead(objective, x, 0.3, 1500, result.evaluations);
  x = nelder_mead(objective, x, 0.05, 3000, result.evaluations);

  result.profile = profile_at(x);
  for (const Knob& k : knobs) result.fitted.emplace_back(k.name);
  result.samples = usable.size();
  SimulatedCostModel fitted(graph, result.profile, options);
  for (const StageSample* s : usable) {
    const double error = std::abs(fitted.stage_latency(s->stage) / s->measured_ms - 1.0);
    result.mean_error_after += error;
    result.max_error_after = std::max(result.max_error_after, error);
  }
  result.mean_error_after /= static_cast<double>(usable.size());
  return result;
}

}  // namespace ios::cost
