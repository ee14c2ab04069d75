// The Chrome / Perfetto trace writer shared by the CUDA engine and the
// simulator.
#include "exec/trace.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

using namespace ios;

TEST_CASE("Chrome traces have one process per plan and one track per stream", "[trace]") {
  exec::TraceIteration a;
  a.label = "sequential";
  a.num_streams = 1;
  a.events = {{"conv1", 0, 0.0, 10.0, {}}, {"conv2", 0, 12.0, 5.0, {{"kernel", "0"}}}};
  exec::TraceIteration b;
  b.label = "ios";
  b.num_streams = 2;
  b.events = {{"conv1", 0, 0.0, 10.0, {}}, {"conv2", 1, 1.0, 6.5, {}}};
  const auto path = std::filesystem::temp_directory_path() / "ios_host_trace_test.json";
  exec::write_chrome_trace(path.string(), {a, b}, {{"source", "test"}});
  std::ifstream in(path);
  const nlohmann::json doc = nlohmann::json::parse(in);
  std::map<int, std::string> processes;
  std::set<std::pair<int, int>> tracks, used;
  for (const auto& e : doc.at("traceEvents")) {
    const int pid = e.at("pid").get<int>();
    const int tid = e.contains("tid") ? e.at("tid").get<int>() : -1;
    if (e.at("ph") == "M" && e.at("name") == "process_name")
      processes[pid] = e.at("args").at("name").get<std::string>();
    if (e.at("ph") == "M" && e.at("name") == "thread_name") tracks.insert({pid, tid});
    if (e.at("ph") == "X") {
      used.insert({pid, tid});
      if (pid == 1 && tid == 1) {
        CHECK(e.at("name") == "conv2");
        CHECK(e.at("ts").get<double>() == 1.0);
        CHECK(e.at("dur").get<double>() == 6.5);
      }
    }
  }
  CHECK(processes == std::map<int, std::string>{{0, "sequential"}, {1, "ios"}});
  CHECK(tracks == std::set<std::pair<int, int>>{{0, 0}, {1, 0}, {1, 1}});
  CHECK(used == tracks);
  CHECK(doc.at("otherData").at("source") == "test");
  CHECK(doc.at("displayTimeUnit") == "ms");
  std::filesystem::remove(path);
}
