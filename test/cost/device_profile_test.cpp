// Device profiles: the shipped ones, loading by name or path, and validation.
#include "cost/device_profile.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "cost/temp_dir.h"
#include "test_paths.h"

using Catch::Matchers::Contains;
using ios::cost::DeviceProfile;
using ios::cost::load_device_profile;

namespace {

nlohmann::json shipped_json(const std::string& name) {
  std::ifstream in(ios::test::source_dir() / "device_profiles" / (name + ".json"));
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

std::string write(const ios::test::TempDir& dir, const std::string& name, const std::string& text) {
  const auto path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

std::string error_of(const std::string& name_or_path) {
  try {
    load_device_profile(name_or_path);
  } catch (const ios::UserError& e) {
    return e.what();
  }
  FAIL("no UserError for " << name_or_path);
  return {};
}

}  // namespace

TEST_CASE("the four profiles are shipped and carry the spec-sheet numbers", "[cost][profile]") {
  CHECK(ios::cost::shipped_device_profiles() ==
        std::vector<std::string>{"a100", "h100", "h200", "v100"});

  const DeviceProfile h100 = load_device_profile("h100");
  CHECK(h100.name == "h100");
  CHECK(h100.sm_count == 132);
  CHECK(h100.peak_fp32_tflops == 67.0);
  CHECK(h100.mem_bandwidth_gbs == 3350.0);

  const DeviceProfile h200 = load_device_profile("H200");  // names are case-insensitive
  CHECK(h200.sm_count == 132);
  CHECK(h200.peak_fp32_tflops == 67.0);
  CHECK(h200.mem_bandwidth_gbs == 4800.0);

  const DeviceProfile a100 = load_device_profile("a100");
  CHECK(a100.sm_count == 108);
  CHECK(a100.peak_fp32_tflops == 19.5);
  CHECK(a100.peak_tf32_tflops == 156.0);
  CHECK(a100.mem_bandwidth_gbs == 2039.0);

  const DeviceProfile v100 = load_device_profile("v100");
  CHECK(v100.sm_count == 80);
  CHECK(v100.peak_fp32_tflops == 15.7);
  CHECK(v100.peak_tf32_tflops == 0.0);  // no TF32 tensor cores
  CHECK(v100.mem_bandwidth_gbs == 900.0);
}

TEST_CASE("the compiled-in profiles equal the files in device_profiles/", "[cost][profile]") {
  for (const std::string& name : ios::cost::shipped_device_profiles()) {
    const auto path = ios::test::source_dir() / "device_profiles" / (name + ".json");
    const DeviceProfile from_file = load_device_profile(path.string());
    const DeviceProfile shipped = load_device_profile(name);
    CHECK(from_file.name == shipped.name);
    CHECK(from_file.sm_count == shipped.sm_count);
    CHECK(from_file.peak_tf32_tflops == shipped.peak_tf32_tflops);
    CHECK(from_file.launch_overhead_us == shipped.launch_overhead_us);
    CHECK(from_file.event_sync_overhead_us == shipped.event_sync_overhead_us);
    CHECK(from_file.host_launch_us == shipped.host_launch_us);
    CHECK(from_file.concurrency_interference == shipped.concurrency_interference);
    CHECK(from_file.outputs_per_block == shipped.outputs_per_block);
  }
}

TEST_CASE("an unknown profile name lists the shipped ones", "[cost][profile]") {
  const std::string message = error_of("h300");
  CHECK_THAT(message, Contains("h300"));
  CHECK_THAT(message, Contains("a100, h100, h200, v100"));
}

TEST_CASE("profile validation names the file and the field", "[cost][profile]") {
  ios::test::TempDir dir;
  nlohmann::json good = shipped_json("h100");
  good["name"] = "mine";
  const std::string good_path = write(dir, "good.json", good.dump());
  CHECK(load_device_profile(good_path).name == "mine");

  SECTION("missing field") {
    nlohmann::json j = good;
    j.erase("mem_bandwidth_gbs");
    const std::string path = write(dir, "missing.json", j.dump());
    const std::string message = error_of(path);
    CHECK_THAT(message, Contains(path));
    CHECK_THAT(message, Contains("missing field 'mem_bandwidth_gbs'"));
  }
  SECTION("negative field") {
    nlohmann::json j = good;
    j["launch_overhead_us"] = -1.5;
    const std::string path = write(dir, "negative.json", j.dump());
    const std::string message = error_of(path);
    CHECK_THAT(message, Contains(path));
    CHECK_THAT(message, Contains("'launch_overhead_us' is negative"));
  }
  SECTION("negative integer field") {
    nlohmann::json j = good;
    j["sm_count"] = -4;
    const std::string message = error_of(write(dir, "negative_int.json", j.dump()));
    CHECK_THAT(message, Contains("'sm_count' is negative"));
  }
  SECTION("wrong type") {
    nlohmann::json j = good;
    j["sm_count"] = "many";
    CHECK_THAT(error_of(write(dir, "type.json", j.dump())),
               Contains("'sm_count' must be an integer"));
  }
  SECTION("efficiency above 1") {
    nlohmann::json j = good;
    j["compute_efficiency"] = 1.5;
    CHECK_THAT(error_of(write(dir, "range.json", j.dump())), Contains("'compute_efficiency'"));
  }
  SECTION("zero SMs") {
    nlohmann::json j = good;
    j["sm_count"] = 0;
    CHECK_THAT(error_of(write(dir, "zero.json", j.dump())), Contains("'sm_count'"));
  }
  SECTION("misspelled field") {
    nlohmann::json j = good;
    j["sm_cuont"] = 132;
    CHECK_THAT(error_of(write(dir, "typo.json", j.dump())), Contains("unknown field 'sm_cuont'"));
  }
  SECTION("not JSON") {
    const std::string path = write(dir, "broken.json", "{ \"name\": ");
    const std::string message = error_of(path);
    CHECK_THAT(message, Contains(path));
    CHECK_THAT(message, Contains("not valid JSON"));
  }
  SECTION("no such file") {
    const std::string path = (dir / "absent.json").string();
    CHECK_THAT(error_of(path), Contains(path));
  }
}
