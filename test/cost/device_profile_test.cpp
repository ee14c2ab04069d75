// Device profiles: the shipped ones, loading by name or path, and validation.
#include "cost/device_profile.h"

#include <catch2/catch.hpp>
#include <cmath>
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

TEST_CASE("the five profiles are shipped and carry the spec-sheet numbers", "[cost][profile]") {
  CHECK(ios::cost::shipped_device_profiles() ==
        std::vector<std::string>{"a100", "h100", "h200", "k80", "v100"});

  const DeviceProfile k80 = load_device_profile("k80");  // one GK210 die of the board
  CHECK(k80.sm_count == 13);
  CHECK(k80.peak_fp32_tflops == 4.37);
  CHECK(k80.mem_bandwidth_gbs == 240.0);
  CHECK(k80.max_concurrent_kernels == 32);

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

  // Dense 16-bit tensor-core peaks (NVIDIA's datasheets; docs/cost-model.md).
  CHECK(h100.peak_fp16_tflops == 989.4);
  CHECK(h100.peak_bf16_tflops == 989.4);
  CHECK(h100.peak_tf32_tflops == 494.7);
  CHECK(h200.peak_fp16_tflops == 989.4);
  CHECK(h200.peak_bf16_tflops == 989.4);
  CHECK(a100.peak_fp16_tflops == 312.0);
  CHECK(a100.peak_bf16_tflops == 312.0);
  CHECK(v100.peak_fp16_tflops == 125.0);
  CHECK(v100.peak_bf16_tflops == 0.0);  // no bfloat16 on Volta
  CHECK(k80.peak_fp16_tflops == 0.0);   // no tensor cores
  CHECK(k80.peak_bf16_tflops == 0.0);
}

TEST_CASE("the compiled-in profiles equal the files in device_profiles/", "[cost][profile]") {
  for (const std::string& name : ios::cost::shipped_device_profiles()) {
    const auto path = ios::test::source_dir() / "device_profiles" / (name + ".json");
    const DeviceProfile from_file = load_device_profile(path.string());
    const DeviceProfile shipped = load_device_profile(name);
    CHECK(from_file.name == shipped.name);
    CHECK(from_file.sm_count == shipped.sm_count);
    CHECK(from_file.peak_tf32_tflops == shipped.peak_tf32_tflops);
    CHECK(from_file.peak_fp16_tflops == shipped.peak_fp16_tflops);
    CHECK(from_file.peak_bf16_tflops == shipped.peak_bf16_tflops);
    CHECK(from_file.launch_overhead_us == shipped.launch_overhead_us);
    CHECK(from_file.event_sync_overhead_us == shipped.event_sync_overhead_us);
    CHECK(from_file.host_launch_us == shipped.host_launch_us);
    CHECK(from_file.concurrency_interference == shipped.concurrency_interference);
    CHECK(from_file.outputs_per_block == shipped.outputs_per_block);
    CHECK(from_file.max_outputs_per_block == shipped.max_outputs_per_block);
  }
}

TEST_CASE("an unknown profile name lists the shipped ones", "[cost][profile]") {
  const std::string message = error_of("h300");
  CHECK_THAT(message, Contains("h300"));
  CHECK_THAT(message, Contains("a100, h100, h200, k80, v100"));
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
  SECTION("the fields added later may be absent: no cache contention, no per-shape efficiency, no host synchronization cost, one tile size") {
    nlohmann::json j = good;
    for (const char* field : {"l2_cache_mb", "cache_contention", "whole_waves", "winograd_speedup",
                              "asymmetric_conv_efficiency", "host_sync_us", "max_outputs_per_block"}) {
      j.erase(field);
    }
    const DeviceProfile p = load_device_profile(write(dir, "older.json", j.dump()));
    CHECK(p.l2_cache_mb == 0.0);
    CHECK(p.cache_contention == 0.0);
    CHECK(p.winograd_speedup == 1.0);
    CHECK_FALSE(p.whole_waves);
    CHECK(p.asymmetric_conv_efficiency == 1.0);
    CHECK(p.host_sync_us == 0.0);
    CHECK(p.max_outputs_per_block == 0);
  }
  SECTION("the largest tile is at least the smallest") {
    nlohmann::json j = good;
    j["outputs_per_block"] = 4096;
    j["max_outputs_per_block"] = 2048;
    CHECK_THAT(error_of(write(dir, "tiles.json", j.dump())),
               Contains("'max_outputs_per_block' (2048) must be at least 'outputs_per_block' (4096)"));
    j["max_outputs_per_block"] = 4096;
    CHECK(load_device_profile(write(dir, "tiles_equal.json", j.dump())).max_outputs_per_block == 4096);
    j["max_outputs_per_block"] = 0;
    CHECK(load_device_profile(write(dir, "tiles_zero.json", j.dump())).max_outputs_per_block == 0);
    j["max_outputs_per_block"] = 1.5;
    CHECK_THAT(error_of(write(dir, "tiles_real.json", j.dump())),
               Contains("'max_outputs_per_block' must be an integer"));
  }
  SECTION("cache contention needs the L2 size") {
    nlohmann::json j = good;
    j["l2_cache_mb"] = 0;
    j["cache_contention"] = 0.5;
    CHECK_THAT(error_of(write(dir, "no_l2.json", j.dump())),
               Contains("'l2_cache_mb' must be > 0 when 'cache_contention' is > 0"));
  }
  SECTION("whole_waves is true or false") {
    nlohmann::json j = good;
    j["whole_waves"] = 1;
    CHECK_THAT(error_of(write(dir, "waves.json", j.dump())),
               Contains("'whole_waves' must be true or false, got 1"));
  }
  SECTION("a Winograd speed-up below 1") {
    nlohmann::json j = good;
    j["winograd_speedup"] = 0.5;
    CHECK_THAT(error_of(write(dir, "winograd.json", j.dump())), Contains("'winograd_speedup'"));
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

TEST_CASE("hostile profiles: deep nesting and long values give short messages", "[cost][profile]") {
  nlohmann::json good = shipped_json("h100");
  const std::string text = good.dump();
  const std::string field = "\"sm_count\":132";
  REQUIRE(text.find(field) != std::string::npos);
  auto with_sm_count = [&](const std::string& value) {
    std::string t = text;
    t.replace(t.find(field), field.size(), "\"sm_count\":" + value);
    return t;
  };
  auto message_of = [](const std::string& json_text) {
    try {
      ios::cost::parse_device_profile(json_text, "p.json");
    } catch (const ios::UserError& e) {
      return std::string(e.what());
    }
    FAIL("no UserError");
    return std::string();
  };
  SECTION("100,000 levels: refused while parsing") {
    const std::string message =
        message_of(with_sm_count(std::string(100000, '[') + std::string(100000, ']')));
    CHECK_THAT(message, Contains("p.json"));
    CHECK_THAT(message, Contains("nested deeper than 32 levels"));
  }
  SECTION("within the depth limit: named by its type") {
    const std::string message =
        message_of(with_sm_count(std::string(30, '[') + std::string(30, ']')));
    CHECK_THAT(message, Contains("'sm_count' must be an integer, got an array"));
    CHECK(message.size() < 200);
  }
  SECTION("a long string with control characters: an escaped excerpt") {
    const std::string message =
        message_of(with_sm_count("\"\\n" + std::string(100000, 'x') + "\""));
    CHECK_THAT(message, Contains("got the string '\\x0axxx"));
    CHECK_THAT(message, Contains("...'"));
    CHECK(message.size() < 250);
    CHECK(message.find('\n') == std::string::npos);
  }
}

TEST_CASE("excerpts escape and cut at a character", "[cost][profile]") {
  using ios::cost::quoted_excerpt;
  CHECK(quoted_excerpt("abc") == "'abc'");
  CHECK(quoted_excerpt("a'b\\c\n") == "'a\\'b\\\\c\\x0a'");
  CHECK(quoted_excerpt(std::string(100, 'y'), 10) == "'yyyyyyyyyy...'");
  // "é" is two bytes: never cut between them.
  CHECK(quoted_excerpt("ééé", 2) == "'éé...'");
}

TEST_CASE("every knob has a range; the shipped profiles are inside them", "[cost][profile]") {
  nlohmann::json good = shipped_json("h100");
  for (const ios::cost::FieldRange& range : ios::cost::device_profile_ranges()) {
    INFO(range.field);
    CHECK(good.contains(std::string(range.field)));
    CHECK(range.min >= 0.0);
    CHECK(range.min < range.max);
  }
  for (const std::string& name : ios::cost::shipped_device_profiles()) {
    INFO(name);
    CHECK_NOTHROW(ios::cost::validate_device_profile(load_device_profile(name), name));
  }
  // Tiny positive values (denormals) are outside, and so are NaN and huge ones.
  for (const char* field : {"compute_efficiency", "memory_efficiency", "peak_fp32_tflops",
                            "mem_bandwidth_gbs", "peak_tf32_tflops", "tensor_core_efficiency"}) {
    for (const double value : {1e-310, 5e-324, 1e-300}) {
      nlohmann::json j = good;
      j[field] = value;
      INFO(field << " = " << value);
      CHECK_THROWS_AS(ios::cost::parse_device_profile(j.dump(), "p.json"), ios::UserError);
    }
  }
  DeviceProfile p = load_device_profile("h100");
  p.compute_efficiency = std::nan("");
  CHECK_THROWS_WITH(ios::cost::validate_device_profile(p, "p"),
                    Contains("'compute_efficiency' is not a number"));
  p = load_device_profile("h100");
  p.launch_overhead_us = 1e300;
  CHECK_THROWS_WITH(ios::cost::validate_device_profile(p, "p"), Contains("'launch_overhead_us'"));
}

TEST_CASE("16-bit tensor-core peaks: optional, range-checked, twice TF32 when absent",
          "[cost][profile][half]") {
  using ios::ir::ElementType;
  nlohmann::json good = shipped_json("h100");
  auto message_of = [](const nlohmann::json& j) {
    try {
      ios::cost::parse_device_profile(j.dump(), "p.json");
    } catch (const ios::UserError& e) {
      return std::string(e.what());
    }
    FAIL("no UserError");
    return std::string();
  };
  for (const char* field : {"peak_fp16_tflops", "peak_bf16_tflops"}) {
    INFO(field);
    const std::string name = std::string("'") + field + "'";
    nlohmann::json j = good;
    j[field] = -1.0;
    std::string message = message_of(j);
    CHECK_THAT(message, Contains("p.json") && Contains(name + " is negative"));
    CHECK(message.find('\n') == std::string::npos);
    j[field] = 1e300;
    message = message_of(j);
    CHECK_THAT(message, Contains(name + " = 1e+300 is out of range 0 or [0.01, 100000]"));
    CHECK(message.find('\n') == std::string::npos);
    j[field] = 1e-300;  // positive but absurd
    CHECK_THAT(message_of(j), Contains(name));
    j[field] = 200000;
    CHECK_THAT(message_of(j), Contains(name + " = 200000 is out of range"));
    j[field] = "fast";
    CHECK_THAT(message_of(j), Contains(name + " must be a number, got the string 'fast'"));
    j[field] = nlohmann::json::array({1, 2});
    CHECK_THAT(message_of(j), Contains(name + " must be a number, got an array"));
    // NaN cannot be written in JSON; a profile built in code is checked too.
    DeviceProfile p = load_device_profile("h100");
    (std::string(field) == "peak_fp16_tflops" ? p.peak_fp16_tflops : p.peak_bf16_tflops) =
        std::nan("");
    CHECK_THROWS_WITH(ios::cost::validate_device_profile(p, "p"),
                      Contains(name + " is not a number"));
    // A tensor-core peak needs a tensor-core efficiency.
    j = good;
    j["peak_tf32_tflops"] = 0;
    j["peak_fp16_tflops"] = 0;
    j["peak_bf16_tflops"] = 0;
    j["tensor_core_efficiency"] = 0;
    j[field] = 100;
    CHECK_THAT(message_of(j),
               Contains("'tensor_core_efficiency' must be > 0 when " + name + " is > 0"));
    j[field] = 0;  // none: fine
    CHECK_NOTHROW(ios::cost::parse_device_profile(j.dump(), "p.json"));
  }

  SECTION("absent: twice the TF32 peak; 0: none") {
    nlohmann::json j = good;
    j.erase("peak_fp16_tflops");
    j.erase("peak_bf16_tflops");
    const DeviceProfile p = ios::cost::parse_device_profile(j.dump(), "older.json");
    CHECK_FALSE(p.peak_fp16_tflops.has_value());
    CHECK_FALSE(p.peak_bf16_tflops.has_value());
    CHECK(ios::cost::tensor_core_peak_tflops(p, ElementType::kFloat16) == 2.0 * 494.7);
    CHECK(ios::cost::tensor_core_peak_tflops(p, ElementType::kBFloat16) == 2.0 * 494.7);
    CHECK(ios::cost::tensor_core_peak_tflops(p, ElementType::kFloat32) == 494.7);
    // Written back without them, so the fallback survives a round trip.
    const std::string text = ios::cost::device_profile_json(p);
    CHECK(text.find("peak_fp16_tflops") == std::string::npos);
    CHECK_FALSE(ios::cost::parse_device_profile(text, "again").peak_fp16_tflops.has_value());
    // A device without TF32 tensor cores and no 16-bit fields has none at all.
    j["peak_tf32_tflops"] = 0;
    const DeviceProfile none = ios::cost::parse_device_profile(j.dump(), "none.json");
    CHECK(ios::cost::tensor_core_peak_tflops(none, ElementType::kFloat16) == 0.0);
    const DeviceProfile v100 = load_device_profile("v100");
    CHECK(ios::cost::tensor_core_peak_tflops(v100, ElementType::kFloat16) == 125.0);
    CHECK(ios::cost::tensor_core_peak_tflops(v100, ElementType::kBFloat16) == 0.0);
  }
  SECTION("given: used as written, and written back") {
    const DeviceProfile a100 = load_device_profile("a100");
    CHECK(ios::cost::tensor_core_peak_tflops(a100, ElementType::kBFloat16) == 312.0);
    const DeviceProfile again =
        ios::cost::parse_device_profile(ios::cost::device_profile_json(a100), "again");
    CHECK(again.peak_fp16_tflops == 312.0);
    CHECK(again.peak_bf16_tflops == 312.0);
  }
}
