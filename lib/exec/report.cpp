#include "exec/report.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_io.h"

namespace ios::exec {
namespace {

std::string iso8601_utc(int64_t unix_ms) {
  if (unix_ms <= 0) return "";
  const auto seconds = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03}Z", buffer, unix_ms % 1000);
}

nlohmann::ordered_json summary_json(const LatencyStats& s) {
  return {{"count", s.count},   {"min_ms", s.min},       {"max_ms", s.max},   {"mean_ms", s.mean},
          {"median_ms", s.median}, {"p90_ms", s.p90},   {"p95_ms", s.p95},   {"p99_ms", s.p99},
          {"stddev_ms", s.stddev}, {"cv", s.cv},         {"throughput_qps", s.throughput}};
}

// ", precision fp16" for a 16-bit run; float32 runs' titles stay as they were.
std::string half_words(const TimedRun& run) {
  return run.precision && run.precision->is_half()
             ? std::string(", precision ") + run.precision->name()
             : std::string();
}

}  // namespace

std::string format_summary(const TimedRun& run, const LatencyStats& s,
                           const ReportOptions& options) {
  std::string warnings;
  for (const std::string& w : run.warnings) warnings += fmt::format("[W] {}\n", w);
  if (run.predicted) {
    // A prediction is one deterministic number: no spread to report.
    return fmt::format(
        "=== Predicted performance: {} ({}, {}, batch {}{}) ===\n"
        "Predicted throughput: {:.2f} qps\n"
        "Predicted GPU Compute Time: {:.4f} ms (simulated, not measured)\n{}",
        run.name, run.backend, run.device, run.batch, half_words(run), s.throughput, s.mean,
        warnings);
  }
  std::string out =
      fmt::format("=== Performance summary: {} ({}, batch {}{}, {} iterations) ===\n", run.name,
                  run.backend.empty() ? "?" : run.backend, run.batch, half_words(run), s.count);
  out += fmt::format("Throughput: {:.2f} qps\n", s.throughput);
  out += fmt::format(
      "{}: min = {:.4f} ms, max = {:.4f} ms, mean = {:.4f} ms, median = {:.4f} ms, "
      "percentile(90%) = {:.4f} ms, percentile(95%) = {:.4f} ms, percentile(99%) = {:.4f} ms\n",
      run.gpu_compute ? "GPU Compute Time" : "Latency", s.min, s.max, s.mean, s.median, s.p90, s.p95, s.p99);
  out += fmt::format("{} stddev = {:.4f} ms, coefficient of variation = {:.2f}%\n",
                     run.gpu_compute ? "GPU Compute Time" : "Latency", s.stddev, s.cv * 100.0);
  if (!run.end_to_end_ms.empty()) {
    const LatencyStats e = compute_stats(run.end_to_end_ms, run.batch);
    out += fmt::format(
        "End-to-end Host Latency: min = {:.4f} ms, mean = {:.4f} ms, median = {:.4f} ms, "
        "percentile(99%) = {:.4f} ms (submit to completion, idle GPU)\n",
        e.min, e.mean, e.median, e.p99);
  }
  if (s.cv > options.cv_warning) {
    const char* advice = run.gpu_compute
                             ? "Lock the GPU clocks (nvidia-smi -lgc), stop other GPU work, or "
                               "raise --iterations."
                             : "Stop other work on the machine, or raise --iterations.";
    out += fmt::format("[W] Latency is unstable: coefficient of variation {:.2f}% > {:.0f}%. {}\n",
                       s.cv * 100.0, options.cv_warning * 100.0, advice);
  }
  return out + warnings;
}

std::string format_comparison(const std::vector<TimedRun>& runs) {
  if (runs.empty()) return "";
  std::vector<LatencyStats> stats;
  stats.reserve(runs.size());
  for (const auto& run : runs) stats.push_back(compute_stats(run.latencies_ms, run.batch));

  size_t width = std::string_view("Schedule").size();
  for (const auto& run : runs) width = std::max(width, run.name.size());
  std::string out;
  if (runs[0].predicted) out += fmt::format("Predicted on the {} (GPU simulator; nothing was executed)\n", runs[0].device);
  // Memory columns only where some run knows them: tables of older runs stay as they were.
  const bool arena = std::any_of(runs.begin(), runs.end(), [](const TimedRun& r) { return r.allocated_activation_bytes >= 0; });
  const bool peak = std::any_of(runs.begin(), runs.end(), [](const TimedRun& r) { return r.schedule_peak_bytes >= 0; });
  auto mib = [](int64_t bytes) { return bytes < 0 ? std::string("-") : fmt::format("{:.2f}", static_cast<double>(bytes) / 1048576.0); };
  out += fmt::format("{:<{}}  {:>10}  {:>12}  {:>10}  {:>9}", "Schedule", width,
                                "Mean (ms)", "Median (ms)", "p99 (ms)", "Speed-up");
  if (arena) out += fmt::format("  {:>11}", "Arena (MiB)");
  if (peak) out += fmt::format("  {:>10}", "Peak (MiB)");
  out += "\n";
  const double base = stats[0].mean;
  size_t fastest = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const double speedup = stats[i].mean > 0.0 ? base / stats[i].mean : 0.0;
    out += fmt::format("{:<{}}  {:>10.4f}  {:>12.4f}  {:>10.4f}  {:>8.2f}x", runs[i].name, width,
                       stats[i].mean, stats[i].median, stats[i].p99, speedup);
    if (arena) out += fmt::format("  {:>11}", mib(runs[i].allocated_activation_bytes));
    if (peak) out += fmt::format("  {:>10}", mib(runs[i].schedule_peak_bytes));
    out += "\n";
    if (stats[i].mean < stats[fastest].mean) fastest = i;
  }
  if (runs.size() > 1) {
    const char* metric = runs[0].predicted     ? "predicted GPU compute time"
                         : runs[0].gpu_compute ? "GPU compute time"
                                               : "latency";
    if (fastest == 0) {
      out += fmt::format("Fastest: {} (the baseline; mean {})\n", runs[0].name, metric);
    } else {
      out += fmt::format("Fastest: {}, {:.2f}x faster than {} (mean {})\n", runs[fastest].name,
                         base / stats[fastest].mean, runs[0].name, metric);
    }
  }
  return out;
}

std::string times_json(const std::vector<TimedRun>& runs) {
  nlohmann::ordered_json doc;
  doc["format"] = "ios-times";
  doc["version"] = 1;
  doc["runs"] = nlohmann::ordered_json::array();
  for (const auto& run : runs) {
    IOS_ASSERT(run.start_ms.empty() || run.start_ms.size() == run.latencies_ms.size(),
               "run '{}': {} start times for {} iterations", run.name, run.start_ms.size(),
               run.latencies_ms.size());
    const LatencyStats s = compute_stats(run.latencies_ms, run.batch);
    nlohmann::ordered_json r;
    r["name"] = run.name;
    r["schedule_file"] = run.schedule_file;
    r["backend"] = run.backend;
    r["device"] = run.device;
    r["batch"] = run.batch;
    if (run.precision) r["precision"] = run.precision->name();
    r["warmup_iterations"] = run.warmup_iterations;
    if (run.allocated_activation_bytes >= 0) r["allocated_activation_bytes"] = run.allocated_activation_bytes;
    if (run.allocated_total_bytes >= 0) r["allocated_total_bytes"] = run.allocated_total_bytes;
    if (run.schedule_peak_bytes >= 0) r["schedule_peak_bytes"] = run.schedule_peak_bytes;
    r["started_at"] = iso8601_utc(run.started_at_unix_ms);
    r["latency_metric"] = run.predicted ? "predicted_gpu_compute" : run.gpu_compute ? "gpu_compute" : "wall";
    r["summary"] = summary_json(s);
    IOS_ASSERT(run.end_to_end_ms.empty() || run.end_to_end_ms.size() == run.latencies_ms.size(),
               "run '{}': {} end-to-end samples for {} iterations", run.name, run.end_to_end_ms.size(),
               run.latencies_ms.size());
    if (!run.end_to_end_ms.empty()) r["end_to_end_summary"] = summary_json(compute_stats(run.end_to_end_ms, run.batch));
    auto& iterations = r["iterations"] = nlohmann::ordered_json::array();
    for (size_t i = 0; i < run.latencies_ms.size(); ++i) {
      nlohmann::ordered_json it;
      it["index"] = i;
      if (!run.start_ms.empty()) it["start_ms"] = run.start_ms[i];
      it["latency_ms"] = run.latencies_ms[i];
      if (!run.end_to_end_ms.empty()) it["end_to_end_ms"] = run.end_to_end_ms[i];
      iterations.push_back(std::move(it));
    }
    doc["runs"].push_back(std::move(r));
  }
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

void export_times(const std::filesystem::path& path, const std::vector<TimedRun>& runs) {
  write_file_atomically(path, times_json(runs));
}

}  // namespace ios::exec
