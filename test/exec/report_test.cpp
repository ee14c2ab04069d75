// Latency statistics and reports (lib/exec/stats.h, report.h). Expected values
// are worked out by hand from the definitions (nearest-rank percentiles,
// population standard deviation).
#include "exec/report.h"

#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "core/error.h"
#include "exec/stats.h"

using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;
using ios::exec::compute_stats;
using ios::exec::TimedRun;

namespace {

std::vector<double> one_to(int n) {
  std::vector<double> v;
  for (int i = 1; i <= n; ++i) v.push_back(i);
  std::shuffle(v.begin(), v.end(), std::mt19937(42));  // order must not matter
  return v;
}

TimedRun run(const std::string& name, std::vector<double> latencies) {
  TimedRun r;
  r.name = name;
  r.backend = "cpu";
  r.device = "reference";
  r.batch = 1;
  r.latencies_ms = std::move(latencies);
  return r;
}

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path =
        std::filesystem::temp_directory_path() / ("ios-report-test-" + std::to_string(::getpid()));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

}  // namespace

TEST_CASE("statistics of 1..100", "[exec][stats]") {
  const auto s = compute_stats(one_to(100), /*batch=*/4);
  CHECK(s.count == 100);
  CHECK(s.min == 1.0);
  CHECK(s.max == 100.0);
  CHECK(s.mean == Approx(50.5));
  CHECK(s.median == Approx(50.5));  // even count: mean of the 50th and 51st
  // Nearest rank: the ceil(p/100 * n)-th smallest.
  CHECK(s.p90 == 90.0);
  CHECK(s.p95 == 95.0);
  CHECK(s.p99 == 99.0);
  // Population stddev of 1..n is sqrt((n^2 - 1) / 12).
  CHECK(s.stddev == Approx(std::sqrt((100.0 * 100.0 - 1.0) / 12.0)));
  CHECK(s.cv == Approx(std::sqrt(9999.0 / 12.0) / 50.5));
  CHECK(s.throughput == Approx(4 * 1000.0 / 50.5));
}

TEST_CASE("percentiles on small samples", "[exec][stats]") {
  const auto ten = compute_stats(one_to(10), 1);
  CHECK(ten.p90 == 9.0);   // ceil(9.0) = 9th
  CHECK(ten.p95 == 10.0);  // ceil(9.5) = 10th
  CHECK(ten.p99 == 10.0);
  CHECK(ten.median == 5.5);

  const auto three = compute_stats(std::vector<double>{3.0, 1.0, 2.0}, 1);
  CHECK(three.median == 2.0);
  CHECK(three.p90 == 3.0);
  CHECK(three.stddev == Approx(std::sqrt(2.0 / 3.0)));

  const auto one = compute_stats(std::vector<double>{0.7}, 8);
  CHECK(one.min == 0.7);
  CHECK(one.p99 == 0.7);
  CHECK(one.stddev == 0.0);
  CHECK(one.cv == 0.0);
  CHECK(one.throughput == Approx(8 * 1000.0 / 0.7));

  const std::vector<double> sorted{1, 2, 3, 4};
  CHECK(ios::exec::percentile(sorted, 0.0) == 1.0);
  CHECK(ios::exec::percentile(sorted, 25.0) == 1.0);
  CHECK(ios::exec::percentile(sorted, 26.0) == 2.0);
  CHECK(ios::exec::percentile(sorted, 100.0) == 4.0);
}

TEST_CASE("statistics reject empty and invalid samples", "[exec][stats]") {
  CHECK_THROWS_AS(compute_stats(std::vector<double>{}, 1), ios::UserError);
  CHECK_THROWS_AS(compute_stats(std::vector<double>{1.0, -2.0}, 1), ios::UserError);
  CHECK_THROWS_AS(compute_stats(std::vector<double>{1.0, NAN}, 1), ios::UserError);
}

TEST_CASE("summary block: trtexec-style lines and the instability warning", "[exec][report]") {
  const TimedRun steady = run("ios", {1.0, 1.01, 0.99, 1.0});
  const auto s = compute_stats(steady.latencies_ms, steady.batch);
  const std::string text = ios::exec::format_summary(steady, s);
  CHECK_THAT(text, Contains("Performance summary: ios (cpu, batch 1, 4 iterations)"));
  CHECK_THAT(text, Contains("Latency: min = 0.9900 ms, max = 1.0100 ms, mean = 1.0000 ms, "
                            "median = 1.0000 ms, percentile(90%) = 1.0100 ms"));
  CHECK_THAT(text, Contains("percentile(99%) = 1.0100 ms"));
  CHECK_THAT(text, Contains("Throughput: 1000.00 qps"));
  CHECK(text.find("[W]") == std::string::npos);

  // mean 2, population stddev 1: CV 50% > 10%.
  const TimedRun noisy = run("noisy", {1.0, 3.0, 1.0, 3.0});
  const auto n = compute_stats(noisy.latencies_ms, 1);
  CHECK(n.cv == Approx(0.5));
  const std::string warned = ios::exec::format_summary(noisy, n);
  CHECK_THAT(warned, Contains("[W] Latency is unstable: coefficient of variation 50.00% > 10%"));
  ios::exec::ReportOptions lenient;
  lenient.cv_warning = 0.6;
  CHECK(ios::exec::format_summary(noisy, n, lenient).find("[W]") == std::string::npos);
}

TEST_CASE("comparison table: memory columns only where a run knows them", "[exec][report][memory]") {
  TimedRun a = run("sequential", {2.0, 2.0});
  TimedRun b = run("ios", {1.0, 1.0});
  CHECK(ios::exec::format_comparison({a, b}).find("MiB") == std::string::npos);
  a.allocated_activation_bytes = 3 << 20;
  b.allocated_activation_bytes = 5 << 19;
  b.schedule_peak_bytes = 7 << 20;
  const std::string table = ios::exec::format_comparison({a, b});
  std::istringstream lines(table);
  std::string header, base, ios_row;
  std::getline(lines, header);
  std::getline(lines, base);
  std::getline(lines, ios_row);
  CHECK_THAT(header, Contains("Arena (MiB)"));
  CHECK_THAT(header, Contains("Peak (MiB)"));
  CHECK_THAT(base, Contains("3.00"));
  CHECK_THAT(base, EndsWith("-"));  // no recorded peak
  CHECK_THAT(ios_row, Contains("2.50"));
  CHECK_THAT(ios_row, EndsWith("7.00"));
  CHECK(base.size() == header.size());
  CHECK(ios_row.size() == header.size());
  const auto doc = nlohmann::json::parse(ios::exec::times_json({a, b}));
  CHECK(doc["runs"][1]["allocated_activation_bytes"] == 5 << 19);
  CHECK(doc["runs"][1]["schedule_peak_bytes"] == 7 << 20);
  CHECK_FALSE(doc["runs"][0].contains("schedule_peak_bytes"));
}

TEST_CASE("comparison table: speed-up of each schedule against the first", "[exec][report]") {
  const std::vector<TimedRun> runs = {run("sequential", {2.0, 2.0, 2.0}),
                                      run("ios", {1.0, 1.0, 1.0}),
                                      run("greedy-with-a-long-name", {4.0, 4.0, 4.0})};
  const std::string table = ios::exec::format_comparison(runs);
  std::istringstream lines(table);
  std::string header, base, ios_row, greedy, verdict;
  std::getline(lines, header);
  std::getline(lines, base);
  std::getline(lines, ios_row);
  std::getline(lines, greedy);
  std::getline(lines, verdict);
  CHECK_THAT(header, Contains("Speed-up"));
  CHECK_THAT(base, Contains("sequential"));
  CHECK_THAT(base, Contains("1.00x"));
  CHECK_THAT(ios_row, Contains("2.00x"));
  CHECK_THAT(ios_row, Contains("1.0000"));
  CHECK_THAT(greedy, Contains("0.50x"));
  CHECK_THAT(verdict, Contains("Fastest: ios, 2.00x faster than sequential"));
  // Columns line up: every row as wide as the header.
  CHECK(base.size() == header.size());
  CHECK(greedy.size() == header.size());
}

TEST_CASE("export of per-iteration times: documented JSON, written atomically", "[exec][report]") {
  TempDir dir;
  TimedRun a = run("ios", {1.5, 1.25});
  a.schedule_file = "m.ios.json";
  a.backend = "cuda";
  a.batch = 2;
  a.warmup_iterations = 5;
  a.started_at_unix_ms = 1700000000123;  // 2023-11-14T22:13:20.123Z
  a.start_ms = {0.0, 1.6};
  const TimedRun b = run("sequential", {2.0});
  const auto path = dir.path / "times.json";
  ios::exec::export_times(path, {a, b});

  // Only the file itself: the temporary file was renamed away.
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir.path)) {
    names.push_back(e.path().filename().string());
  }
  CHECK(names == std::vector<std::string>{"times.json"});

  std::ifstream in(path);
  const auto doc = nlohmann::json::parse(in);
  CHECK(doc["format"] == "ios-times");
  CHECK(doc["version"] == 1);
  REQUIRE(doc["runs"].size() == 2);
  const auto& r = doc["runs"][0];
  CHECK(r["name"] == "ios");
  CHECK(r["schedule_file"] == "m.ios.json");
  CHECK(r["backend"] == "cuda");
  CHECK(r["batch"] == 2);
  CHECK(r["warmup_iterations"] == 5);
  CHECK(r["started_at"] == "2023-11-14T22:13:20.123Z");
  CHECK(r["summary"]["mean_ms"].get<double>() == Approx(1.375));
  CHECK(r["summary"]["throughput_qps"].get<double>() == Approx(2 * 1000.0 / 1.375));
  REQUIRE(r["iterations"].size() == 2);
  CHECK(r["iterations"][1]["index"] == 1);
  CHECK(r["iterations"][1]["start_ms"].get<double>() == 1.6);
  CHECK(r["iterations"][1]["latency_ms"].get<double>() == 1.25);
  CHECK_FALSE(doc["runs"][1]["iterations"][0].contains("start_ms"));
  CHECK(doc["runs"][1]["started_at"] == "");

  // Overwriting replaces the content whole.
  ios::exec::export_times(path, {b});
  std::ifstream again(path);
  CHECK(nlohmann::json::parse(again)["runs"].size() == 1);
}

TEST_CASE("GPU runs report compute time and end-to-end latency apart", "[exec][report]") {
  TimedRun gpu = run("ios", {1.0, 1.0, 1.0, 1.0});
  gpu.backend = "cuda";
  gpu.gpu_compute = true;
  gpu.end_to_end_ms = {1.2, 1.3, 1.2, 1.3};
  const std::string text = ios::exec::format_summary(gpu, compute_stats(gpu.latencies_ms, 1));
  CHECK_THAT(text, Contains("GPU Compute Time: min = 1.0000 ms"));
  CHECK_THAT(text, Contains("End-to-end Host Latency: min = 1.2000 ms, mean = 1.2500 ms"));
  // CPU runs keep the plain label and have no end-to-end line.
  const std::string cpu = ios::exec::format_summary(run("seq", {2.0}), compute_stats(std::vector<double>{2.0}, 1));
  CHECK_THAT(cpu, Contains("Latency: min = 2.0000 ms"));
  CHECK_THAT(cpu, !Contains("End-to-end"));
  TimedRun slower = gpu;
  slower.name = "sequential";
  slower.latencies_ms = {2.0, 2.0, 2.0, 2.0};
  CHECK_THAT(ios::exec::format_comparison({slower, gpu}), Contains("(mean GPU compute time)"));

  const auto doc = nlohmann::json::parse(ios::exec::times_json({gpu}));
  const auto& r = doc["runs"][0];
  CHECK(r["latency_metric"] == "gpu_compute");
  CHECK(r["end_to_end_summary"]["mean_ms"].get<double>() == Approx(1.25));
  CHECK(r["iterations"][1]["end_to_end_ms"].get<double>() == 1.3);
  const auto cpu_doc = nlohmann::json::parse(ios::exec::times_json({run("seq", {2.0})}));
  CHECK(cpu_doc["runs"][0]["latency_metric"] == "wall");
  CHECK_FALSE(cpu_doc["runs"][0].contains("end_to_end_summary"));
}

TEST_CASE("export to an unwritable place is a user error and leaves nothing", "[exec][report]") {
  TempDir dir;
  const auto path = dir.path / "missing-dir" / "times.json";
  try {
    ios::exec::export_times(path, {run("ios", {1.0})});
    FAIL("no error");
  } catch (const ios::UserError& e) {
    CHECK_THAT(std::string(e.what()), Contains(path.string()));
  }
  CHECK(std::filesystem::is_empty(dir.path));
}
