#include "optimize/html_report.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/file_io.h"
#include "core/output_files.h"
#include "sched/schedule_dot.h"

namespace ios::optimize {
namespace {

std::string escaped(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        // Control characters (a NUL in an ONNX name) are shown, not embedded.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') {
          out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  return out;
}

// The SVG as dot writes it, minus the XML prolog and doctype (not allowed
// inside an HTML body).
std::string inline_svg(const std::string& svg) {
  const size_t start = svg.find("<svg");
  return start == std::string::npos ? svg : svg.substr(start);
}

}  // namespace

void write_html_report(const std::string& path, const OptimizeReport& report,
                       const sched::Schedule& schedule, const sched::UnitGraph& units) {
  const std::string title = report.schedule_file.empty() ? report.model_path : report.schedule_file;
  // The page is worth having without its picture: a model too large to
  // draw, or a Graphviz failure, leaves a note in its place.
  std::string picture;
  if (units.size() > sched::kMaxSvgUnits) {
    picture = fmt::format("<p>No picture: the model has {} units, more than the {} drawn.</p>\n",
                          units.size(), sched::kMaxSvgUnits);
  } else {
    try {
      picture = inline_svg(sched::render_svg(sched::schedule_to_dot(schedule, units, title), path));
    } catch (const sched::GraphvizMissing&) {
      throw;
    } catch (const UserError& e) {
      picture = fmt::format("<p>No picture: {}</p>\n", escaped(e.what()));
    }
  }
  std::string html = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n{1}\n"
      "<title>ios-optimize: {0}</title>\n<style>\n"
      "body {{ font-family: sans-serif; margin: 1.5em; }}\n"
      "table {{ border-collapse: collapse; margin: 1em 0; }}\n"
      "td, th {{ border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: right; }}\n"
      "td:first-child, th:first-child, .text {{ text-align: left; }}\n"
      ".picture {{ overflow: auto; border: 1px solid #ccc; }}\n"
      "</style>\n</head>\n<body>\n<h1>ios-optimize: {0}</h1>\n",
      escaped(title), kHtmlMarker);
  html += "<table id=\"summary\">\n";
  for (const auto& [label, value] : summary_rows(report)) {
    html += fmt::format("<tr><th>{}</th><td class=\"text\">{}</td></tr>\n", escaped(label),
                        escaped(value));
  }
  html += "</table>\n<h2>Schedule</h2>\n<div class=\"picture\">\n" + picture + "</div>\n";
  html +=
      "<h2>Blocks</h2>\n<table id=\"blocks\">\n<tr><th>block</th><th>first unit</th><th>n</th>"
      "<th>width</th><th>states</th><th>transitions</th><th>stages costed</th><th>search "
      "(ms)</th><th>search</th><th>predicted (ms)</th><th>split by size cap</th></tr>\n";
  for (const BlockReport& b : report.blocks) {
    const sched::BlockStats s = b.search.value_or(sched::BlockStats{});
    html += fmt::format(
        "<tr><td>{}</td><td class=\"text\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{:.3f}</td><td class=\"text\">{}</td><td>{:.4f}</td><td>{}</td></tr>\n",
        b.index, escaped(b.first_unit), b.units, b.width, s.states, s.transitions, s.stages_costed,
        s.search_ms, escaped(search_cell(s)), s.predicted_ms, b.split_by_cap ? "yes" : "");
  }
  html += "</table>\n</body>\n</html>\n";
  create_parent_folder(path);
  write_file_atomically(path, html);
}

}  // namespace ios::optimize
