#include "sched/schedule_dot.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

#include "core/error.h"
#include "core/file_io.h"
#include "core/output_files.h"
#include "core/run_program.h"

namespace ios::sched {
namespace {

// Fill colours of groups (stage-local) and streams, from ColorBrewer's Set3.
constexpr const char* kPalette[] = {"#8dd3c7", "#ffffb3", "#bebada", "#fb8072",
                                    "#80b1d3", "#fdb462", "#b3de69", "#fccde5",
                                    "#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f"};
constexpr size_t kColors = sizeof(kPalette) / sizeof(kPalette[0]);

// Names longer than this are shortened in labels: Graphviz refuses a label
// over 16,384 characters, and a readable picture needs far less.
constexpr size_t kMaxLabelName = 200;

// Length of the valid UTF-8 sequence at text[i], or 0 when it is not one.
size_t utf8_length(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  const size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > text.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  return n;
}

// A DOT double-quoted string: ONNX names may hold quotes, backslashes,
// control characters (a NUL ends Graphviz's string) and bytes that are not
// UTF-8 (Graphviz's input encoding); those are shown as \xNN.
std::string dot_string(std::string_view text) {
  std::string out = "\"";
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '\n') {
      out += "\\n";
      ++i;
      continue;
    }
    const size_t n = utf8_length(text, i);
    if (n == 0 || static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
      out += fmt::format("\\\\x{:02x}", static_cast<unsigned char>(c));
      ++i;
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out.append(text.substr(i, n));
    i += n;
  }
  return out + "\"";
}

// A name as a label shows it: at most kMaxLabelName bytes.
std::string label_name(std::string_view name) {
  if (name.size() <= kMaxLabelName) return std::string(name);
  size_t cut = kMaxLabelName;
  // Never cut inside a UTF-8 sequence.
  while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;
  return fmt::format("{}... ({} bytes)", name.substr(0, cut), name.size());
}

// Graphviz's limits for --dot FILE.svg and --html; IOS_DOT_TIME_LIMIT_S
// overrides the time (docs/cli.md).
double dot_time_limit_s() {
  if (const char* text = std::getenv("IOS_DOT_TIME_LIMIT_S")) {
    char* end = nullptr;
    const double value = std::strtod(text, &end);
    if (end != text && *end == '\0' && value > 0 && value <= 86400) return value;
  }
  return 60.0;
}
constexpr uint64_t kDotMemoryBytes = uint64_t{2} << 30;
constexpr uint64_t kMaxSvgBytes = uint64_t{512} << 20;

std::string node_name(UnitId u) { return fmt::format("u{}", u); }

std::string node_line(const UnitGraph& graph, UnitId u, std::string_view color,
                      std::string_view extra) {
  const Unit& unit = graph.unit(u);
  return fmt::format("    {} [label={}, fillcolor=\"{}\"{}];\n", node_name(u),
                     dot_string(fmt::format("{}\n{}", label_name(unit.id), unit_kind_name(unit.kind))), color,
                     extra);
}

}  // namespace

std::string schedule_to_dot(const Schedule& schedule, const UnitGraph& graph,
                            std::string_view title) {
  std::string out = std::string(kDotMarker) + "\ndigraph schedule {\n";
  out += fmt::format(
      "  label={};\n  labelloc=t;\n  rankdir=TB;\n  compound=true;\n",
      dot_string(fmt::format("{} ({} schedule by {}, {} units, predicted {:.4f} ms)", label_name(title),
                             form_description(schedule), schedule.scheduler.name,
                             graph.size(), schedule.predicted_latency_ms)));
  out += "  node [shape=box, style=\"rounded,filled\", fontsize=10];\n";
  if (schedule.is_staged()) {
    const auto& stages = schedule.staged().stages;
    for (size_t s = 0; s < stages.size(); ++s) {
      const Stage& stage = stages[s];
      const bool merge = stage.strategy == Strategy::kMerge;
      out += fmt::format("  subgraph cluster_stage{} {{\n", s);
      out += fmt::format(
          "    label={};\n",
          dot_string(merge
                         ? fmt::format("stage {}: operator merge, {:.4f} ms", s, stage.predicted_ms)
                         : fmt::format("stage {}: {} group(s) concurrent, {:.4f} ms", s,
                                       stage.groups.size(), stage.predicted_ms)));
      out += merge ? "    style=\"bold,dashed\";\n    color=\"#d62728\";\n"
                   : "    style=rounded;\n    color=\"#555555\";\n";
      for (size_t g = 0; g < stage.groups.size(); ++g) {
        for (UnitId u : stage.groups[g]) {
          // Merged units share one colour and a red border; concurrent groups
          // get one colour each, so a group (one stream) reads at a glance.
          out += merge ? node_line(graph, u, "#f4cccc",
                                   ", color=\"#d62728\", penwidth=2, xlabel=\"merged\"")
                       : node_line(graph, u, kPalette[g % kColors],
                                   fmt::format(", xlabel=\"g{}\"", g));
        }
      }
      out += "  }\n";
    }
  } else {
    const StreamedSchedule& streamed = schedule.streamed();
    std::vector<std::vector<std::pair<size_t, UnitId>>> by_stream(
        static_cast<size_t>(streamed.num_streams));
    for (size_t i = 0; i < streamed.launches.size(); ++i) {
      const auto& launch = streamed.launches[i];
      by_stream.at(static_cast<size_t>(launch.stream)).emplace_back(i, launch.unit);
    }
    for (size_t s = 0; s < by_stream.size(); ++s) {
      if (by_stream[s].empty()) continue;
      out += fmt::format(
          "  subgraph cluster_stream{} {{\n    label=\"stream {}\";\n    style=rounded;\n", s, s);
      for (const auto& [issue, u] : by_stream[s]) {
        out += node_line(graph, u, kPalette[s % kColors], fmt::format(", xlabel=\"#{}\"", issue));
      }
      out += "  }\n";
    }
  }
  for (UnitId u = 0; u < graph.size(); ++u) {
    for (UnitId v : graph.succs(u)) out += fmt::format("  {} -> {};\n", node_name(u), node_name(v));
  }
  out += "}\n";
  return out;
}

void check_picture_size(std::string_view option, const std::string& path, int64_t units) {
  if (std::filesystem::path(path).extension() == ".svg" && units > kMaxSvgUnits) {
    user_error("{} {}: the model has {} units, more than the {} that Graphviz lays out in bounded "
               "time and memory; write DOT text instead (a path not ending in .svg)",
               option, path, units, kMaxSvgUnits);
  }
}

std::string render_svg(const std::string& dot, const std::string& for_path) {
  const double time_limit_s = dot_time_limit_s();
  const ProgramResult result =
      run_program({"dot", "-Tsvg"}, dot, {time_limit_s, kDotMemoryBytes, kMaxSvgBytes});
  if (!result.started) {
    throw GraphvizMissing(fmt::format(
        "cannot write {}: drawing SVG needs Graphviz's 'dot' on PATH (Debian: apt-get install "
        "graphviz), or write DOT text to a file not ending in .svg",
        for_path));
  }
  const std::string instead = "write DOT text instead (a path not ending in .svg)";
  if (result.timed_out) {
    user_error("cannot write {}: Graphviz's dot did not finish within {:g} s; {}, or raise "
               "IOS_DOT_TIME_LIMIT_S",
               for_path, time_limit_s, instead);
  }
  if (result.output_too_large) {
    user_error("cannot write {}: Graphviz's dot wrote more than {} MiB of SVG; {}", for_path,
               kMaxSvgBytes >> 20, instead);
  }
  if (result.exit_code != 0) {
    user_error("cannot write {}: Graphviz's dot failed ({}{}{}, within {} GiB of memory); {}",
               for_path,
               result.signal != 0 ? fmt::format("killed by signal {}", result.signal)
                                  : fmt::format("exit {}", result.exit_code),
               result.errors.empty() ? "" : ": ", result.errors, kDotMemoryBytes >> 30, instead);
  }
  // Marked as ios's own, so that a later run may replace it (core/output_files.h).
  std::string svg = result.output;
  const size_t line_end = svg.starts_with("<?xml") ? svg.find('\n') : std::string::npos;
  const size_t at = line_end == std::string::npos ? 0 : line_end + 1;
  svg.insert(at, std::string(kSvgMarker) + "\n");
  return svg;
}

void write_schedule_picture(const std::string& path, const Schedule& schedule,
                            const UnitGraph& graph, std::string_view title) {
  check_picture_size("--dot", path, graph.size());
  const std::string dot = schedule_to_dot(schedule, graph, title);
  create_parent_folder(path);
  if (std::filesystem::path(path).extension() != ".svg") {
    write_file_atomically(path, dot);
    return;
  }
  write_file_atomically(path, render_svg(dot, path));
}

}  // namespace ios::sched
