// A backend added from outside lib/ runs through the whole ios-run pipeline:
// registering it is the only line its user writes (echo_backend.h).
#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "backends/registry.h"
#include "core/error.h"
#include "cost/temp_dir.h"
#include "echo_backend.h"
#include "runner/runner.h"
#include "test_paths.h"

namespace ios {
namespace {

void register_echo_once() {
  static const bool registered = [] {
    backends::register_backend(test::echo_backend_entry());  // the one registry line
    return true;
  }();
  (void)registered;
}

nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

}  // namespace

TEST_CASE("a backend registered from outside lib/ runs every phase of ios-run", "[backend]") {
  register_echo_once();
  CHECK(backends::find("echo").traits.description.find("test backend") != std::string::npos);
  CHECK(backends::names().find("echo") != std::string::npos);
  test::TempDir dir;
  runner::RunOptions options;
  options.model_path = test::model("bad/tiny_conv.onnx").string();
  options.backend = "echo";
  options.check = true;
  options.export_times = (dir / "times.json").string();
  options.trace = (dir / "trace.json").string();
  options.output_dir = (dir / "out").string();
  options.quiet = true;
  const test::EchoCounters before = test::echo_counters();
  std::ostringstream out;
  CHECK(runner::run(options, out) == 0);
  const test::EchoCounters& after = test::echo_counters();
  CHECK(after.sessions - before.sessions == 1);  // the built-in sequential schedule is the reference
  CHECK(after.runs - before.runs == 1);
  CHECK(after.timed_iterations - before.timed_iterations == 3);  // the backend's default
  CHECK(after.traces - before.traces == 1);
  CHECK_THAT(out.str(), Catch::Contains("PASSED"));

  const nlohmann::json times = read_json(dir / "times.json");
  CHECK(times["runs"][0]["backend"] == "echo");
  CHECK(times["runs"][0]["device"] == "echo device");
  CHECK(times["runs"][0]["latency_metric"] == "wall");
  CHECK(times["runs"][0]["iterations"].size() == 3);
  const nlohmann::json trace = read_json(dir / "trace.json");
  CHECK(trace["otherData"]["backend"] == "echo");
  CHECK(std::filesystem::exists(dir / "out"));
  CHECK_FALSE(std::filesystem::is_empty(dir / "out"));
}

TEST_CASE("an unknown backend is refused with the registered names", "[backend]") {
  register_echo_once();
  runner::RunOptions options;
  options.model_path = test::model("bad/tiny_conv.onnx").string();
  options.backend = "tpu";
  std::ostringstream out;
  try {
    runner::run(options, out);
    FAIL("no error");
  } catch (const UserError& e) {
    CHECK_THAT(e.what(), Catch::Contains("unknown backend 'tpu'; backends: cuda, cpu, sim, echo"));
  }
}

TEST_CASE("a backend name is registered once", "[backend]") {
  register_echo_once();
  CHECK_THROWS_AS(backends::register_backend(test::echo_backend_entry()), InternalError);
}

}  // namespace ios
