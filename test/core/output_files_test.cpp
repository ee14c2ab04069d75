#include "core/output_files.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <csignal>
#include <functional>
#include <fstream>

#include "core/error.h"
#include "core/run_program.h"
#include "cost/temp_dir.h"

namespace ios {
namespace {

void write(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("output kinds are recognised by their content", "[output]") {
  test::TempDir dir;
  write(dir / "schedule.json", R"({"device": {"name": "h100"}, "format": "ios-schedule", "stages": []})");
  write(dir / "report.json", R"({"blocks": [1, 2], "format": "ios-optimize-report"})");
  write(dir / "trace.json", R"({"displayTimeUnit": "ms", "otherData": {"format": "ios-trace"}})");
  write(dir / "nested-format.json", R"({"stages": [{"format": "ios-schedule"}]})");
  write(dir / "profile.json", R"({"name": "x", "sm_count": 132})");
  write(dir / "notes.txt", "my notes\n");
  write(dir / "a.npy", std::string("\x93NUMPY\x01\x00", 8));
  write(dir / "p.dot", std::string(kDotMarker) + "\ndigraph schedule {\n}\n");
  // A hostile file: 10 MB of nested arrays costs neither memory nor time.
  write(dir / "deep.json", std::string(10'000'000, '['));

  CHECK(is_file_of_kind(dir / "schedule.json", OutputKind::kSchedule));
  CHECK(is_file_of_kind(dir / "report.json", OutputKind::kOptimizeReport));
  CHECK(is_file_of_kind(dir / "trace.json", OutputKind::kTrace));
  CHECK(is_file_of_kind(dir / "profile.json", OutputKind::kDeviceProfile));
  CHECK(is_file_of_kind(dir / "a.npy", OutputKind::kNpy));
  CHECK(is_file_of_kind(dir / "p.dot", OutputKind::kDot));
  CHECK_FALSE(is_file_of_kind(dir / "report.json", OutputKind::kSchedule));
  CHECK_FALSE(is_file_of_kind(dir / "nested-format.json", OutputKind::kSchedule));
  CHECK_FALSE(is_file_of_kind(dir / "trace.json", OutputKind::kTimes));
  CHECK_FALSE(is_file_of_kind(dir / "notes.txt", OutputKind::kDot));
  CHECK_FALSE(is_file_of_kind(dir / "notes.txt", OutputKind::kNpy));
  CHECK_FALSE(is_file_of_kind(dir / "missing.json", OutputKind::kSchedule));
  const auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(is_file_of_kind(dir / "deep.json", OutputKind::kSchedule));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

TEST_CASE("outputs never name an input or each other", "[output]") {
  test::TempDir dir;
  write(dir / "m.onnx", "model");
  std::filesystem::create_hard_link(dir / "m.onnx", dir / "hard.onnx");
  const std::string model = (dir / "m.onnx").string();
  OutputFiles outputs({{model, "the input model"}}, /*force=*/true);
  CHECK_THAT(error_of([&] { outputs.add("-o", model, OutputKind::kSchedule); }),
             Catch::Contains("is the input model"));
  CHECK_THAT(error_of([&] { outputs.add("-o", (dir / "hard.onnx").string(), OutputKind::kSchedule); }),
             Catch::Contains("is the input model " + model));
  outputs.add("-o", (dir / "s.json").string(), OutputKind::kSchedule);
  CHECK_THAT(error_of([&] { outputs.add("--dot", (dir / "x/../s.json").string(), OutputKind::kDot); }),
             Catch::Contains("-o and --dot both name"));
  outputs.add("--report-json", "-", OutputKind::kOptimizeReport);
  CHECK_THAT(error_of([&] { outputs.add("--dot", "/dev/stdout", OutputKind::kDot); }),
             Catch::Contains("--report-json and --dot both name standard output"));
  // Devices take any number of outputs.
  outputs.add("--html", "/dev/null", OutputKind::kHtml);
  outputs.add("--trace", "/dev/null", OutputKind::kTrace);
  CHECK_THAT(error_of([&] { outputs.add("--trace", "", OutputKind::kTrace); }),
             Catch::Contains("--trace needs a file name"));
  CHECK_THAT(error_of([&] { outputs.add("--dot", (dir / "new/").string(), OutputKind::kDot); }),
             Catch::Contains("ends in '/'"));
  CHECK_THAT(error_of([&] { outputs.add("--dot", (dir / "m.onnx/x.dot").string(), OutputKind::kDot); }),
             Catch::Contains("is a file, not a folder"));
  CHECK_FALSE(std::filesystem::exists(dir / "new"));
}

// Two runs writing one file at once would leave one run's schedule beside
// the other's report: the second is refused while the first holds the file.
// flock locks belong to the open file, so two OutputFiles of one process
// stand for two runs.
TEST_CASE("a file another run is writing is refused until that run ends", "[output]") {
  test::TempDir dir;
  std::filesystem::create_directory(dir / "locks");
  setenv("IOS_LOCK_DIR", (dir / "locks").c_str(), 1);
  const std::string schedule = (dir / "s.json").string(), report = (dir / "r.json").string();
  {
    OutputFiles first({}, /*force=*/false);
    first.add("-o", schedule, OutputKind::kSchedule);
    first.add("--report-json", report, OutputKind::kOptimizeReport);
    first.add("--dot", "/dev/null", OutputKind::kDot);  // devices are not locked
    OutputFiles second({}, /*force=*/false);
    CHECK_THAT(error_of([&] { second.add("--report-json", (dir / "x/../r.json").string(), OutputKind::kOptimizeReport); }),
               Catch::Contains("r.json: another ios run is writing this file now"));
    CHECK_NOTHROW(second.add("--dot", "/dev/null", OutputKind::kDot));
    CHECK_NOTHROW(second.add("-o", "-", OutputKind::kSchedule));
    CHECK_NOTHROW(second.add("--html", (dir / "other.html").string(), OutputKind::kHtml));
  }
  OutputFiles after({}, /*force=*/false);
  CHECK_NOTHROW(after.add("-o", schedule, OutputKind::kSchedule));
  CHECK_NOTHROW(after.add("--report-json", report, OutputKind::kOptimizeReport));
  unsetenv("IOS_LOCK_DIR");
}

TEST_CASE("an existing file of another kind needs force", "[output]") {
  test::TempDir dir;
  write(dir / "notes.txt", "my notes\n");
  OutputFiles careful({}, /*force=*/false);
  CHECK_THAT(error_of([&] { careful.add("--dot", (dir / "notes.txt").string(), OutputKind::kDot); }),
             Catch::Contains("the file exists and is not a schedule picture (DOT)"));
  OutputFiles forced({}, /*force=*/true);
  CHECK_NOTHROW(forced.add("--dot", (dir / "notes.txt").string(), OutputKind::kDot));
}

TEST_CASE("output files in a folder get unique names", "[output]") {
  test::TempDir dir;
  OutputFiles outputs({}, false);
  const std::string folder = (dir / "out").string();
  outputs.add_folder("--output-dir", folder);
  auto file = [&](const std::string& name) {
    return std::filesystem::path(outputs.add_in_folder("--output-dir", folder, name, ".npy", OutputKind::kNpy))
        .filename()
        .string();
  };
  CHECK(file("y/0") == "y_0.npy");
  CHECK(file("y_0") == "y_0-2.npy");
  CHECK(file("y:0") == "y_0-3.npy");
  CHECK(file("..") == "_...npy");
  CHECK(file(".hidden") == "_.hidden.npy");
  const std::string long_name(5000, 'x');
  const std::string shortened = file(long_name);
  CHECK(shortened.size() < 255);
  CHECK(shortened != file(long_name + "y"));  // told apart by the hash of the whole name
  write(dir / "plain", "x");
  CHECK_THAT(error_of([&] { outputs.add_folder("--output-dir", (dir / "plain").string()); }),
             Catch::Contains("is a file, not a folder"));
}

TEST_CASE("external programs are bounded", "[output]") {
  const ProgramResult echo = run_program({"cat"}, "through a pipe");
  CHECK(echo.started);
  CHECK(echo.exit_code == 0);
  CHECK(echo.output == "through a pipe");
  // More input than a pipe buffers, while the program writes it back.
  const std::string big(1 << 20, 'x');
  CHECK(run_program({"cat"}, big).output == big);
  const auto start = std::chrono::steady_clock::now();
  const ProgramResult slow = run_program({"sleep", "30"}, "", {0.2, 0, 0});
  CHECK(slow.timed_out);
  CHECK(slow.signal == SIGKILL);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
  const ProgramResult chatty = run_program({"yes"}, "", {10.0, 0, 1 << 16});
  CHECK(chatty.output_too_large);
  const ProgramResult failing = run_program({"sh", "-c", "echo first >&2; echo second >&2; exit 3"});
  CHECK(failing.exit_code == 3);
  CHECK(failing.errors == "first");
  CHECK_FALSE(run_program({"/nonexistent/program"}).started);
  // The memory limit applies to the program: a 1 GiB allocation fails under 256 MiB.
  const ProgramResult hungry =
      run_program({"python3", "-c", "x = bytearray(1 << 30)"}, "", {10.0, uint64_t{256} << 20, 0});
  CHECK(hungry.exit_code != 0);
}

}  // namespace ios
