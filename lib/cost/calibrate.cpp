#include "cost/calibrate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "core/error.h"
#include "sched/scheduler.h"
#include "sched/signature.h"

namespace ios::cost {
namespace {

// Answers like the simulated model and remembers every distinct stage asked.
class RecordingCost : public sched::CostModel {
 public:
  RecordingCost(const sched::UnitGraph& graph, SimulatedCostModel& model)
      : graph_(graph), model_(model) {}
  std::string name() const override { return model_.name(); }
  double stage_latency(const sched::Stage& stage) override {
    if (seen_.insert(sched::stage_signature(graph_, stage)).second) stages_.push_back(stage);
    return model_.stage_latency(stage);
  }
  std::vector<sched::Stage> take() { return std::move(stages_); }

 private:
  const sched::UnitGraph& graph_;
  SimulatedCostModel& model_;
  std::set<std::string> seen_;
  std::vector<sched::Stage> stages_;
};

// A fitted field, searched as the logarithm of its value and kept inside
// the range the profile parser accepts, so that the fit always loads.
struct Knob {
  const char* name;
  double DeviceProfile::*field;
};

// Measured latencies below this are treated like 0 (a stage that launches
// nothing): CUDA events resolve about 0.5 us, and the log ratio of a
// prediction to a denormal "measurement" would be infinite.
constexpr double kMinUsableMs = 1e-4;

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

// Whether the tensor-core efficiency is fitted: with TF32 on a device that
// has TF32 tensor cores (as before 16-bit types, whatever the graph), or when
// a product of a 16-bit type runs on its type's tensor cores.
bool fits_tensor_cores(const SimulatedCostModel& model) {
  const DeviceProfile& p = model.profile();
  if (model.options().math == ir::MathMode::kTf32 && p.peak_tf32_tflops > 0.0) return true;
  for (sched::UnitId u = 0; u < model.graph().size(); ++u) {
    for (const KernelWork& k : model.work(u).kernels) {
      if (k.matmul_like && ir::is_half(k.type) && tensor_core_peak_tflops(p, k.type) > 0.0) {
        return true;
      }
    }
  }
  return false;
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
                          const std::vector<sched::Stage>& candidates, ir::MathMode math,
                          int64_t batch) {
  std::unordered_map<std::string, size_t> candidate;  // signature -> index in `candidates`
  for (size_t i = 0; i < candidates.size(); ++i)
    candidate.emplace(sched::stage_signature(graph, candidates[i]), i);
  // Rows are streamed and only those of a candidate stage kept, so memory
  // follows the model, not the file; the caps bound a file crafted to match.
  constexpr size_t kMaxRows = 100000;
  constexpr size_t kMaxDeviceText = 256;
  using Device = std::tuple<std::string, std::string, std::string>;  // name, driver, cuDNN
  std::map<Device, std::vector<StageSample>> by_device;
  size_t kept = 0;
  db.for_each_entry(
      math, batch, [&](const ProfileKey& key, const ProfileEntry& entry) {
        // The simulator is fitted to stages timed as CUDA graphs (the
        // launch mode its knobs other than the host's describe).
        if (key.launch != "graph") return;
        const auto found = candidate.find(key.signature);
        if (found == candidate.end()) return;
        if (++kept > kMaxRows) {
          user_error(
              "profile database {}: more than {} rows match the model's stages at "
              "batch {}; calibrate from a database of the one device",
              db.path().string(), kMaxRows, batch);
        }
        if (std::max({key.device.size(), key.driver.size(), key.cudnn.size()}) > kMaxDeviceText) {
          user_error(
              "profile database {}: the row of device {}, batch {}, signature {} "
              "names its device, driver or cuDNN in more than {} bytes",
              db.path().string(), quoted_excerpt(key.device), key.batch,
              quoted_excerpt(key.signature), kMaxDeviceText);
        }
        by_device[{key.device, key.driver, key.cudnn}].push_back(
            {candidates[found->second], entry.latency_ms});
      });
  DbSamples out;
  for (auto& [device, samples] : by_device) {
    if (samples.size() > out.samples.size()) {
      const auto& [name, driver, cudnn] = device;
      // Quoted and escaped: the text goes into the profile's description.
      out.device = fmt::format("{} (driver {}, cuDNN {})", quoted_excerpt(name),
                               quoted_excerpt(driver), quoted_excerpt(cudnn));
      out.samples = std::move(samples);
    }
  }
  return out;
}

CalibrationResult calibrate_profile(const sched::UnitGraph& graph, const DeviceProfile& start,
                                    const SimulatedOptions& options,
                                    const std::vector<StageSample>& samples) {
  return calibrate_profile({ModelSamples{&graph, options, samples}}, start);
}

CalibrationResult calibrate_profile(const std::vector<ModelSamples>& models,
                                    const DeviceProfile& start) {
  std::vector<Knob> knobs = {
      {"launch_overhead_us", &DeviceProfile::launch_overhead_us},
      {"event_sync_overhead_us", &DeviceProfile::event_sync_overhead_us},
      {"compute_efficiency", &DeviceProfile::compute_efficiency},
      {"memory_efficiency", &DeviceProfile::memory_efficiency},
      {"concurrency_interference", &DeviceProfile::concurrency_interference}};
  // The tensor-core efficiency, where some kernel of some model uses tensor
  // cores: float32 products with TF32, and the products of 16-bit graphs
  // (always on their type's tensor cores where the device has them). One
  // knob for every type.
  bool tensor_cores = false;
  for (const ModelSamples& m : models) {
    if (m.graph == nullptr) internal_error("calibrate_profile: a model without its graph");
    tensor_cores =
        tensor_cores || fits_tensor_cores(SimulatedCostModel(*m.graph, start, m.options));
  }
  if (tensor_cores) {
    knobs.push_back({"tensor_core_efficiency", &DeviceProfile::tensor_core_efficiency});
  }
  std::vector<const FieldRange*> ranges;
  for (const Knob& k : knobs) ranges.push_back(&device_profile_range(k.name));
  auto profile_at = [&](const std::vector<double>& x) {
    DeviceProfile p = start;
    for (size_t i = 0; i < knobs.size(); ++i) {
      // exp() of a far-out simplex point may be 0 or inf: the clamp keeps
      // every evaluated profile one the parser accepts.
      p.*knobs[i].field = std::clamp(std::exp(x[i]), ranges[i]->min, ranges[i]->max);
    }
    return p;
  };

  // Stages that launch nothing (a zero-copy concat) carry no information.
  std::vector<std::vector<const StageSample*>> usable(models.size());
  CalibrationResult result;
  result.per_model.resize(models.size());
  size_t total = 0;
  for (size_t m = 0; m < models.size(); ++m) {
    SimulatedCostModel initial(*models[m].graph, start, models[m].options);
    FitError& error = result.per_model[m];
    for (const StageSample& s : models[m].samples) {
      const double predicted = initial.stage_latency(s.stage);
      if (!(s.measured_ms >= kMinUsableMs) || predicted <= 0.0) continue;
      usable[m].push_back(&s);
      error.mean_error_before += std::abs(predicted / s.measured_ms - 1.0);
    }
    error.samples = usable[m].size();
    result.mean_error_before += error.mean_error_before;
    if (error.samples > 0) error.mean_error_before /= static_cast<double>(error.samples);
    total += error.samples;
  }
  if (total < knobs.size() + 1) {
    user_error("calibration needs at least {} measured stages that launch kernels, found {}",
               knobs.size() + 1, total);
  }
  result.mean_error_before /= static_cast<double>(total);

  auto objective = [&](const std::vector<double>& x) {
    const DeviceProfile profile = profile_at(x);
    double sum = 0.0;
    for (size_t m = 0; m < models.size(); ++m) {
      if (usable[m].empty()) continue;
      SimulatedCostModel model(*models[m].graph, profile, models[m].options);
      for (const StageSample* s : usable[m]) {
        const double predicted = model.stage_latency(s->stage);
        const double r = std::log(std::max(predicted, 1e-12) / s->measured_ms);
        sum += r * r;
      }
    }
    return sum / static_cast<double>(total);
  };
  std::vector<double> x(knobs.size());
  for (size_t i = 0; i < knobs.size(); ++i) x[i] = std::log(std::max(start.*knobs[i].field, 1e-3));
  // Two rounds: the second restarts the simplex around the first's best,
  // which Nelder-Mead needs after it has collapsed along one direction.
  x = nelder_mead(objective, x, 0.3, 1500, result.evaluations);
  x = nelder_mead(objective, x, 0.05, 3000, result.evaluations);

  result.profile = profile_at(x);
  for (const Knob& k : knobs) result.fitted.emplace_back(k.name);
  result.samples = total;
  for (size_t m = 0; m < models.size(); ++m) {
    SimulatedCostModel fitted(*models[m].graph, result.profile, models[m].options);
    FitError& error = result.per_model[m];
    for (const StageSample* s : usable[m]) {
      const double e = std::abs(fitted.stage_latency(s->stage) / s->measured_ms - 1.0);
      error.mean_error_after += e;
      error.max_error_after = std::max(error.max_error_after, e);
    }
    result.mean_error_after += error.mean_error_after;
    result.max_error_after = std::max(result.max_error_after, error.max_error_after);
    if (error.samples > 0) error.mean_error_after /= static_cast<double>(error.samples);
  }
  result.mean_error_after /= static_cast<double>(total);
  return result;
}

}  // namespace ios::cost
