// Timelines of plan iterations (what ran when, on which stream) and their
// export as a Chrome / Perfetto trace. The CUDA engine records them on the
// GPU (cuda::Engine::trace); the simulator predicts them (ios-run --backend
// sim). One writer, so both open the same way in ui.perfetto.dev or
// chrome://tracing.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace ios::exec {

// One launch (or one device kernel of it) with its stream and interval.
struct TraceEvent {
  std::string name;  // unit id(s) of the launch
  int stream = 0;
  double start_us = 0.0;  // from the start of the iteration
  double duration_us = 0.0;
  std::map<std::string, std::string> args;  // shown with the slice; may be empty
};

struct TraceIteration {
  std::string label;  // e.g. the schedule file; a process name in the trace
  int num_streams = 1;
  double total_us = 0.0;
  std::vector<TraceEvent> events;
};

// The trace document (JSON Trace Event Format, object form) as text: one
// process per iteration (named by its label), one thread (track) per stream
// named "stream N", one complete ("X") event per TraceEvent, and `metadata`
// as the document's "otherData".
std::string chrome_trace_json(const std::vector<TraceIteration>& iterations,
                              const std::map<std::string, std::string>& metadata = {});

// Writes chrome_trace_json() to `path` atomically (temporary file, then
// rename); UserError naming the path on failure.
void write_chrome_trace(const std::string& path, const std::vector<TraceIteration>& iterations,
                        const std::map<std::string, std::string>& metadata = {});

}  // namespace ios::exec
