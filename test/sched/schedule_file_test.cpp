// The schedule file: round trip, atomic writes, and every kind of bad file.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fmt/format.h>
#include <functional>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_limits.h"
#include "sched/schedule_io.h"
#include "sched/validate.h"

using namespace ios;
using namespace ios::sched;

namespace {

// 0 -> {1, 2} -> 3
UnitGraph diamond() { return UnitGraph::from_edges(4, {{0, 1}, {0, 2}, {1, 3}, {2, 3}}); }

Schedule staged_schedule() {
  Schedule s;
  s.model = {"model.onnx", std::string(64, 'a'), 1, {{"input", {1, 3, 8, 8}}}};
  s.device = {"NVIDIA H100 80GB HBM3", "9.0", "580.00", "9.19.0"};
  s.scheduler = {"ios", {{"r", "3"}, {"s", "8"}}, "simulated", ""};
  s.predicted_latency_ms = 0.5;
  StagedSchedule staged;
  staged.stages.push_back(Stage{Strategy::kConcurrent, {{0}}, 0.1});
  staged.stages.push_back(Stage{Strategy::kConcurrent, {{1}, {2}}, 0.3});
  staged.stages.push_back(Stage{Strategy::kConcurrent, {{3}}, 0.1});
  s.body = staged;
  return s;
}

std::string error_of(const std::string& text, const UnitGraph& g) {
  try {
    parse_schedule(text, "bad.json", g);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

nlohmann::json as_json(const Schedule& s, const UnitGraph& g) {
  return nlohmann::json::parse(schedule_to_json(s, g));
}

}  // namespace

TEST_CASE("a staged schedule survives a round trip", "[schedule_file]") {
  const UnitGraph g = diamond();
  const Schedule s = staged_schedule();
  const Schedule back = parse_schedule(schedule_to_json(s, g), "x.json", g);
  REQUIRE(back.is_staged());
  CHECK(back.staged().stages.size() == 3);
  CHECK(back.staged().stages[1].groups == std::vector<std::vector<UnitId>>{{1}, {2}});
  CHECK(back.model.sha256 == s.model.sha256);
  CHECK(back.model.inputs == s.model.inputs);
  CHECK(back.device.compute_capability == "9.0");
  CHECK(back.scheduler.params == s.scheduler.params);
  CHECK(back.predicted_latency_ms == Approx(0.5));
}

TEST_CASE("a staged schedule's barriers survive a round trip; files without them keep barriers",
          "[schedule_file]") {
  const UnitGraph g = diamond();
  Schedule s = staged_schedule();
  // The default form writes no "barriers" field: files are what they were.
  CHECK_FALSE(as_json(s, g).contains("barriers"));
  CHECK(parse_schedule(schedule_to_json(s, g), "x.json", g).staged().barriers == Barriers::kStages);
  std::get<StagedSchedule>(s.body).barriers = Barriers::kDependencies;
  CHECK(as_json(s, g)["barriers"] == "dependencies");
  const Schedule back = parse_schedule(schedule_to_json(s, g), "x.json", g);
  CHECK(back.staged().barriers == Barriers::kDependencies);
  auto j = as_json(s, g);
  j["barriers"] = "none";
  CHECK(error_of(j.dump(), g).find("field 'barriers' must be \"stages\" or \"dependencies\"") !=
        std::string::npos);
}

TEST_CASE("a streamed schedule survives a round trip", "[schedule_file]") {
  const UnitGraph g = diamond();
  Schedule s = staged_schedule();
  StreamedSchedule streamed;
  streamed.num_streams = 2;
  streamed.launches = {{0, 0, 0, 1}, {1, 0, 1, 2}, {2, 1, 1, 3}, {3, 0, 3, 4}};
  s.body = streamed;
  const Schedule back = parse_schedule(schedule_to_json(s, g), "x.json", g);
  REQUIRE_FALSE(back.is_staged());
  CHECK(back.streamed().num_streams == 2);
  CHECK(back.streamed().launches[2].stream == 1);
  CHECK(back.streamed().launches[3].predicted_finish_ms == Approx(4));
}

TEST_CASE("bad schedule files are rejected with the reason", "[schedule_file]") {
  const UnitGraph g = diamond();
  const std::string good = schedule_to_json(staged_schedule(), g);

  SECTION("cut in half") {
    const std::string e = error_of(good.substr(0, good.size() / 2), g);
    CHECK(e.find("bad.json: not valid JSON") != std::string::npos);
  }
  SECTION("not JSON at all") { CHECK(error_of("\x89PNG\r\n", g).find("not valid JSON") != std::string::npos); }
  SECTION("another format") {
    CHECK(error_of(R"({"format": "x"})", g).find("not an ios schedule") != std::string::npos);
  }
  SECTION("a future version") {
    auto j = as_json(staged_schedule(), g);
    j["version"] = 99;
    CHECK(error_of(j.dump(), g).find("version 99 is not supported") != std::string::npos);
  }
  SECTION("a missing field names its path") {
    auto j = as_json(staged_schedule(), g);
    j["model"].erase("sha256");
    CHECK(error_of(j.dump(), g).find("'model.sha256' is missing") != std::string::npos);
  }
  SECTION("a field of the wrong type names its path") {
    auto j = as_json(staged_schedule(), g);
    j["stages"][1]["strategy"] = 7;
    CHECK(error_of(j.dump(), g).find("'stages[1].strategy' must be a string") != std::string::npos);
  }
  SECTION("a dropped unit") {
    auto j = as_json(staged_schedule(), g);
    j["stages"][1]["groups"].erase(1);
    CHECK(error_of(j.dump(), g).find("unit 'u2' is missing") != std::string::npos);
  }
  SECTION("a duplicated unit") {
    auto j = as_json(staged_schedule(), g);
    j["stages"][2]["groups"][0].push_back("u1");
    CHECK(error_of(j.dump(), g).find("unit 'u1' is scheduled twice") != std::string::npos);
  }
  SECTION("a broken dependency") {
    auto j = as_json(staged_schedule(), g);
    std::swap(j["stages"][0], j["stages"][2]);
    CHECK(error_of(j.dump(), g).find("runs before or beside its input") != std::string::npos);
  }
  SECTION("dependent units in concurrent groups of one stage") {
    auto j = as_json(staged_schedule(), g);
    j["stages"] = nlohmann::json::array(
        {{{"strategy", "concurrent"}, {"predicted_ms", 0}, {"groups", {{"u0"}, {"u1"}, {"u2"}}}},
         {{"strategy", "concurrent"}, {"predicted_ms", 0}, {"groups", {{"u3"}}}}});
    CHECK(error_of(j.dump(), g).find("runs before or beside its input 'u0'") != std::string::npos);
  }
  SECTION("a unit id the model does not have") {
    auto j = as_json(staged_schedule(), g);
    j["stages"][0]["groups"][0][0] = "conv_999";
    CHECK(error_of(j.dump(), g).find("'stages[0].groups[0][0]' names unit 'conv_999'") !=
          std::string::npos);
  }
  SECTION("numbers out of range") {
    auto j = as_json(staged_schedule(), g);
    j["model"]["batch"] = 0;
    CHECK(error_of(j.dump(), g).find("'model.batch' must be an integer from 1 to") != std::string::npos);
    j["model"]["batch"] = 1000000000000LL;
    CHECK(error_of(j.dump(), g).find("'model.batch' must be an integer from 1 to") != std::string::npos);
    const std::string huge = std::string(R"({"format": "ios-schedule", "version": 1, "x": 1e400})");
    CHECK(error_of(huge, g).find("bad.json: not a valid schedule") != std::string::npos);
  }
  SECTION("a schedule for a model with another unit count") {
    auto j = as_json(staged_schedule(), g);
    j["model"]["units"] = 40;
    CHECK(error_of(j.dump(), g).find("covers 40 units but the model has 4") != std::string::npos);
  }
  SECTION("a streamed schedule with a stream out of range") {
    auto j = as_json(staged_schedule(), g);
    j.erase("stages");
    j["form"] = "streamed";
    j["num_streams"] = 1;
    j["launches"] = nlohmann::json::array();
    for (const char* u : {"u0", "u1", "u2", "u3"}) {
      j["launches"].push_back({{"unit", u}, {"stream", 0}, {"start_ms", 0}, {"finish_ms", 0}});
    }
    j["launches"][2]["stream"] = 3;
    CHECK(error_of(j.dump(), g).find("'launches[2].stream' must be a stream from 0 to 0") !=
          std::string::npos);
  }
}

TEST_CASE("a schedule made for another model is refused unless forced", "[schedule_file]") {
  const Schedule s = staged_schedule();
  ModelInfo other = s.model;
  other.path = "other.onnx";
  other.sha256 = std::string(64, 'b');
  CHECK_THROWS_WITH(check_schedule_matches_model(s, other, "s.json", false),
                    Catch::Contains("made for another model") && Catch::Contains("--force"));
  CHECK_NOTHROW(check_schedule_matches_model(s, other, "s.json", true));
  ModelInfo batch8 = s.model;
  batch8.batch = 8;
  CHECK_THROWS_WITH(check_schedule_matches_model(s, batch8, "s.json", false),
                    Catch::Contains("batch 1") && Catch::Contains("batch 8") &&
                        Catch::Contains("--retarget"));
  // Another batch on request: the inputs may differ in their leading dimension only.
  for (auto& input : batch8.inputs) input.second[0] = 8;
  CHECK_NOTHROW(check_schedule_matches_model(s, batch8, "s.json", false, /*other_batch=*/true));
  REQUIRE(!batch8.inputs.empty());
  batch8.inputs[0].second.back() += 1;
  CHECK_THROWS_WITH(check_schedule_matches_model(s, batch8, "s.json", false, true),
                    Catch::Contains("in the schedule but"));
}

TEST_CASE("the launch mode is recorded, and files without it still load", "[schedule_file]") {
  const UnitGraph g = diamond();
  Schedule s = staged_schedule();
  CHECK(s.scheduler.launch.empty());
  auto doc = nlohmann::json::parse(schedule_to_json(s, g));
  CHECK_FALSE(doc["scheduler"].contains("launch"));  // as files written before the field
  CHECK(parse_schedule(doc.dump(), "s.json", g).scheduler.launch.empty());
  for (const char* launch : {"graph", "plain", "synced"}) {
    s.scheduler.launch = launch;
    doc = nlohmann::json::parse(schedule_to_json(s, g));
    CHECK(doc["scheduler"]["launch"] == launch);
    CHECK(parse_schedule(doc.dump(), "s.json", g).scheduler.launch == launch);
  }
  doc["scheduler"]["launch"] = "eager";
  CHECK_THROWS_WITH(parse_schedule(doc.dump(), "s.json", g),
                    Catch::Contains("'scheduler.launch' must be \"graph\", \"plain\" or \"synced\""));
}

TEST_CASE("writes are atomic and leave no temporary file", "[schedule_file]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "ios-schedule-test";
  fs::remove_all(dir);
  const UnitGraph g = diamond();
  const std::string path = (dir / "sub" / "s.json").string();
  write_schedule(path, staged_schedule(), g);
  write_schedule(path, staged_schedule(), g);  // replaces
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir / "sub")) {
    ++files;
    CHECK(entry.path().filename() == "s.json");
  }
  CHECK(files == 1);
  CHECK(read_schedule(path, g).staged().stages.size() == 3);
  CHECK_THROWS_WITH(read_schedule((dir / "missing.json").string(), g),
                    Catch::Contains("missing.json: cannot open"));
  fs::remove_all(dir);
}

// JSON whose parsed form would not fit in memory, and user strings echoed in
// messages (core/json_limits.h; docs/cli.md, *Limits*).
TEST_CASE("JSON nesting and value counts are bounded before parsing", "[schedule_file][limits]") {
  const UnitGraph g = diamond();
  SECTION("nesting deeper than the limit names the byte where it is crossed") {
    const std::string deep = std::string(100, '[') + std::string(100, ']');
    const std::string e = error_of(deep, g);
    CHECK(e.find("bad.json: the schedule file nests arrays and objects more than 64 levels deep "
                 "(at byte 64)") != std::string::npos);
  }
  SECTION("nesting at the limit parses") {
    const std::string text = std::string(64, '[') + std::string(64, ']');
    CHECK(parse_json_limited(text, "x.json", "file").is_array());
    CHECK_THROWS_WITH(parse_json_limited("[" + text + "]", "x.json", "file"),
                      Catch::Contains("more than 64 levels deep (at byte 64)"));
  }
  SECTION("the value count includes keys, strings, numbers and literals") {
    const JsonLimits five{64, 5};
    CHECK(parse_json_limited(R"({"a": [1, true]})", "x.json", "file", five).is_object());
    CHECK(parse_json_limited(R"([null, "s", 1.5, false])", "x.json", "file", five).size() == 4);
    CHECK_THROWS_WITH(parse_json_limited("[1, 2, 3, 4, 5]", "x.json", "file", five),
                      Catch::Contains("x.json: the file holds more than 5 JSON values (the limit "
                                      "is reached at byte 13)"));
    CHECK_THROWS_WITH(parse_json_limited(R"({"a": {"b": {}, "c": 1}})", "x.json", "file", five),
                      Catch::Contains("more than 5 JSON values"));
  }
  SECTION("brackets and quotes inside strings are not structure") {
    const JsonLimits shallow{1, 4};
    const auto doc = parse_json_limited(R"(["[[[{{", "a\"[[", "\\"])", "x.json", "file", shallow);
    REQUIRE(doc.size() == 3);
    CHECK(doc[1] == "a\"[[");
  }
  SECTION("a shallow document of many small values is refused at the default limit") {
    std::string many = "[";
    for (int i = 0; i < (1 << 22); ++i) many += "[],";
    many += "[]]";
    CHECK(error_of(many, g).find("holds more than 4194304 JSON values") != std::string::npos);
  }
  SECTION("syntax errors and out-of-range numbers stay user errors with a bounded message") {
    CHECK_THROWS_WITH(parse_json_limited("[1, ", "x.json", "file"),
                      Catch::Contains("x.json: not valid JSON at byte"));
    const std::string big = "[1" + std::string(100000, '0') + "e400]";
    try {
      parse_json_limited(big, "x.json", "file");
      FAIL("no error");
    } catch (const UserError& e) {
      CHECK(std::string(e.what()).find("x.json: not a valid file") != std::string::npos);
      CHECK(std::string(e.what()).size() < 300);
    }
  }
}

TEST_CASE("a NUL byte ends no JSON document: what follows it is not ignored", "[schedule_file][limits]") {
  // nlohmann's parser takes a NUL for the end of the input; the schedule
  // loader (ios-run, ios::Schedule::load and from_json, the Python
  // module's Schedule.load and from_json) must not (issue 53, item 9).
  const UnitGraph g = diamond();
  const std::string text = schedule_to_json(staged_schedule(), g);
  REQUIRE(parse_schedule(text, "good.json", g).is_staged());
  using namespace std::string_literals;  // "...\0..."s keeps what follows the NUL
  for (const std::string& tail : {"\0{\"garbage\": ["s, "\0"s, "\0 "s}) {
    const std::string e = error_of(text + tail, g);
    CHECK(e.find("bad.json: not valid JSON at byte " + std::to_string(text.size()) + " (a NUL byte") !=
          std::string::npos);
  }
  // Inside a string, before the end, and as the first byte.
  CHECK(error_of("{\"a\0\": 1}"s, g).find("at byte 3 (a NUL byte") != std::string::npos);
  CHECK(error_of("\0"s + text, g).find("at byte 0 (a NUL byte") != std::string::npos);
  CHECK_THROWS_WITH(parse_json_limited("[1]\0]"s, "x.json", "file"),
                    Catch::Contains("x.json: not valid JSON at byte 3 (a NUL byte"));
}

TEST_CASE("the memory object's byte counts are bounded and named", "[schedule_file]") {
  const UnitGraph g = diamond();
  Schedule s = staged_schedule();
  MemoryInfo m;
  m.arena_bytes = 1000;
  m.weights_bytes = 200;
  m.workspace_bytes = {64, 0};
  s.memory = m;
  nlohmann::json doc = as_json(s, g);
  auto set = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json d = doc;
    edit(d["memory"]);
    return d.dump();
  };
  // 2^52 bytes of workspace is a byte count (issue 53, item 20).
  const std::string ws = set([](nlohmann::json& mem) {
    mem["workspace_bytes"] = {int64_t{1} << 52};
    mem["peak_bytes"] = 1200 + (int64_t{1} << 52);
  });
  CHECK(parse_schedule(ws, "ws.json", g).memory->workspaces_total() == int64_t{1} << 52);
  // A part out of range is named as itself, not as peak_bytes.
  for (const char* key : {"arena_bytes", "weights_bytes", "live_peak_bytes", "inputs_bytes"}) {
    INFO(key);
    const std::string e = error_of(set([&](nlohmann::json& mem) { mem[key] = int64_t{1} << 62; }), g);
    CHECK(e.find(fmt::format("field 'memory.{}' must be a byte count (an integer from 0 to 2^61), got "
                             "4611686018427387904",
                             key)) != std::string::npos);
  }
  CHECK(error_of(set([](nlohmann::json& mem) { mem["workspace_bytes"] = {int64_t{1} << 60, int64_t{1} << 60, 1}; }), g)
            .find("field 'memory.workspace_bytes' must be byte counts whose sum is at most 2^61") !=
        std::string::npos);
  CHECK(error_of(set([](nlohmann::json& mem) { mem["workspace_bytes"] = {-1}; }), g)
            .find("field 'memory.workspace_bytes[0]' must be a byte count (an integer from 0 to 2^61), got -1") !=
        std::string::npos);
  CHECK(error_of(set([](nlohmann::json& mem) { mem["peak_bytes"] = 5; }), g)
            .find("field 'memory.peak_bytes' must be arena_bytes + weights_bytes + the workspaces (1264), got 5") !=
        std::string::npos);
}

TEST_CASE("quote_excerpt quotes, escapes control characters and cuts long strings",
          "[schedule_file][limits]") {
  CHECK(quote_excerpt("conv1") == "'conv1'");
  CHECK(quote_excerpt(std::string("a\0b", 3)) == "'a\\x00b'");
  CHECK(quote_excerpt("a\nb\tc\x7f") == "'a\\nb\\tc\\x7f'");
  const std::string long_id(50'000'000, 'x');
  CHECK(quote_excerpt(long_id) == "'" + std::string(80, 'x') + "'... (50000000 bytes)");
  // A two-byte UTF-8 character across the cut is left out whole.
  const std::string accents = std::string(79, 'a') + "\xc3\xa9" + "tail";
  CHECK(quote_excerpt(accents) == "'" + std::string(79, 'a') + "'... (85 bytes)");
}

TEST_CASE("schedule messages say what the file holds, briefly", "[schedule_file][limits]") {
  const UnitGraph g = diamond();
  SECTION("a version of 2^64 - 1 is shown as such, not as -1") {
    const std::string text = R"({"format": "ios-schedule", "version": 18446744073709551615})";
    CHECK(error_of(text, g).find("version 18446744073709551615 is not supported") !=
          std::string::npos);
  }
  SECTION("a string version is named as a string") {
    const std::string text = R"({"format": "ios-schedule", "version": "1"})";
    CHECK(error_of(text, g).find("field 'version' must be an integer, got a string") !=
          std::string::npos);
  }
  SECTION("integers above 2^63 - 1 are refused with their value") {
    auto j = as_json(staged_schedule(), g);
    j["model"]["units"] = std::numeric_limits<uint64_t>::max();
    CHECK(error_of(j.dump(), g).find("field 'model.units' must be an integer below 2^63, got "
                                     "18446744073709551615") != std::string::npos);
  }
  SECTION("a 5 MB unit id is echoed as an excerpt") {
    auto j = as_json(staged_schedule(), g);
    j["stages"][0]["groups"][0][0] = std::string(5'000'000, 'u');
    const std::string e = error_of(j.dump(), g);
    CHECK(e.find("names unit '" + std::string(80, 'u') + "'... (5000000 bytes), which") !=
          std::string::npos);
    CHECK(e.size() < 400);
  }
  SECTION("a NUL and a newline in a unit id are escaped, the line stays whole") {
    auto j = as_json(staged_schedule(), g);
    j["stages"][0]["groups"][0][0] = std::string("u\0x\ny", 5);
    const std::string e = error_of(j.dump(), g);
    CHECK(e.find("names unit 'u\\x00x\\ny', which this model does not have") != std::string::npos);
    CHECK(e.find('\n') == std::string::npos);
  }
  SECTION("a long parameter name is cut in the field path") {
    auto j = as_json(staged_schedule(), g);
    j["scheduler"]["params"][std::string(1000, 'p')] = 3;
    const std::string e = error_of(j.dump(), g);
    CHECK(e.find("field 'scheduler.params.ppp") != std::string::npos);
    CHECK(e.find("... (1017 bytes) must be a string") != std::string::npos);
    CHECK(e.size() < 400);
  }
}
