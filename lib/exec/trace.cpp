#include "exec/trace.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/file_io.h"

namespace ios::exec {

std::string chrome_trace_json(const std::vector<TraceIteration>& iterations,
                              const std::map<std::string, std::string>& metadata) {
  nlohmann::json events = nlohmann::json::array();
  for (size_t pid = 0; pid < iterations.size(); ++pid) {
    const TraceIteration& it = iterations[pid];
    const std::string label = it.label.empty() ? fmt::format("plan {}", pid) : it.label;
    events.push_back(
        {{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", label}}}});
    events.push_back({{"name", "process_sort_index"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"args", {{"sort_index", pid}}}});
    for (int s = 0; s < it.num_streams; ++s) {
      events.push_back({{"name", "thread_name"},
                        {"ph", "M"},
                        {"pid", pid},
                        {"tid", s},
                        {"args", {{"name", fmt::format("stream {}", s)}}}});
    }
    for (const TraceEvent& e : it.events) {
      nlohmann::json event = {{"name", e.name},      {"cat", "launch"}, {"ph", "X"},
                              {"pid", pid},          {"tid", e.stream}, {"ts", e.start_us},
                              {"dur", e.duration_us}};
      if (!e.args.empty()) event["args"] = e.args;
      events.push_back(std::move(event));
    }
  }
  nlohmann::json doc = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
  // The format mark lets a later run recognise and replace its own trace
  // (core/output_files.h); trace viewers show otherData as metadata.
  nlohmann::json other = metadata;
  other["format"] = "ios-trace";
  doc["otherData"] = other;
  return doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

void write_chrome_trace(const std::string& path, const std::vector<TraceIteration>& iterations,
                        const std::map<std::string, std::string>& metadata) {
  write_file_atomically(path, chrome_trace_json(iterations, metadata));
}

}  // namespace ios::exec
