#include "sched/schedule_dot.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/file_io.h"
#include "core/run_program.h"

namespace ios::sched {
namespace {

// Fill colours of groups (stage-local) and streams, from ColorBrewer's Set3.
constexpr const char* kPalette[] = {"#8dd3c7", "#ffffb3", "#bebada", "#fb8072",
                                    "#80b1d3", "#fdb462", "#b3de69", "#fccde5",
                                    "#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f"};
constexpr size_t kColors = sizeof(kPalette) / sizeof(kPalette[0]);

// A DOT double-quoted string: ONNX names may hold quotes and backslashes.
std::string dot_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string node_name(UnitId u) { return fmt::format("u{}", u); }

std::string node_line(const UnitGraph& graph, UnitId u, std::string_view color,
                      std::string_view extra) {
  const Unit& unit = graph.unit(u);
  return fmt::format("    {} [label={}, fillcolor=\"{}\"{}];\n", node_name(u),
                     dot_string(fmt::format("{}\n{}", unit.id, unit_kind_name(unit.kind))), color,
                     extra);
}

}  // namespace

std::string schedule_to_dot(const Schedule& schedule, const UnitGraph& graph,
                            std::string_view title) {
  std::string out = "digraph schedule {\n";
  out += fmt::format(
      "  label={};\n  labelloc=t;\n  rankdir=TB;\n  compound=true;\n",
      dot_string(fmt::format("{} ({} schedule by {}, {} units, predicted {:.4f} ms)", title,
                             schedule.is_staged() ? "staged" : "streamed", schedule.scheduler.name,
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

std::string render_svg(const std::string& dot, const std::string& for_path) {
  // dot reads and writes temporary files next to the target (same folder,
  // so a failure names a place the user chose).
  const std::string dot_file = fmt::format("{}.dot-{}", for_path, static_cast<long>(::getpid()));
  const std::string svg_file = fmt::format("{}.svg-{}", for_path, static_cast<long>(::getpid()));
  write_file_atomically(dot_file, dot);
  const ProgramResult result = run_program({"dot", "-Tsvg", "-o", svg_file, dot_file});
  std::error_code ignored;
  std::filesystem::remove(dot_file, ignored);
  if (!result.started) {
    user_error(
        "cannot write {}: drawing SVG needs Graphviz's 'dot' on PATH (Debian: apt-get install "
        "graphviz), or write DOT text to a file not ending in .svg",
        for_path);
  }
  if (result.exit_code != 0) {
    std::filesystem::remove(svg_file, ignored);
    internal_error("cannot write {}: dot exited with {}: {}", for_path, result.exit_code,
                   result.errors);
  }
  std::ifstream in(svg_file, std::ios::binary);
  std::stringstream svg;
  svg << in.rdbuf();
  std::filesystem::remove(svg_file, ignored);
  return svg.str();
}

void write_schedule_picture(const std::string& path, const Schedule& schedule,
                            const UnitGraph& graph, std::string_view title) {
  const std::string dot = schedule_to_dot(schedule, graph, title);
  create_parent_folder(path);
  if (std::filesystem::path(path).extension() != ".svg") {
    write_file_atomically(path, dot);
    return;
  }
  write_file_atomically(path, render_svg(dot, path));
}

}  // namespace ios::sched
