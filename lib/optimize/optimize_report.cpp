#include "optimize/optimize_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "exec/schedule_memory.h"
#include "sched/schedule_io.h"

namespace ios::optimize {
namespace {

std::string format_params(const std::vector<std::pair<std::string, std::string>>& params) {
  std::string out;
  for (const auto& [k, v] : params) out += (out.empty() ? "" : ", ") + k + "=" + v;
  return out.empty() ? "none" : out;
}

double speedup(const OptimizeReport& r) { return r.sequential_ms / std::max(1e-12, r.predicted_ms); }

// How far the search got over the blocks, and where a baseline's stages
// were kept; empty for a scheduler that does not search.
std::string coverage(const OptimizeReport& r) {
  int searched = 0, complete = 0, reduced = 0, abandoned = 0, skipped = 0, greedy = 0, sequential = 0,
      repeats = 0;
  for (const BlockReport& b : r.blocks) {
    if (!b.search || b.search->search == sched::BlockSearch::kNone) continue;
    ++searched;
    complete += b.search->search == sched::BlockSearch::kComplete;
    reduced += b.search->search == sched::BlockSearch::kReduced;
    abandoned += b.search->search == sched::BlockSearch::kAbandoned;
    skipped += b.search->search == sched::BlockSearch::kSkipped;
    greedy += b.search->kept == sched::BlockSource::kGreedy;
    sequential += b.search->kept == sched::BlockSource::kSequential;
    repeats += b.search->same_as >= 0;
  }
  if (searched == 0) return {};
  std::string out = fmt::format("{} of {} blocks searched completely", complete, searched);
  if (repeats > 0) out += fmt::format(" ({} as repeats of earlier blocks)", repeats);
  if (complete < searched) {
    out += fmt::format(" ({} with a cheaper pruning, {} abandoned, {} skipped: time limit {:g} s)",
                       reduced, abandoned, skipped, r.time_limit_s);
  }
  out += fmt::format("; baseline stages kept in {} (greedy {}, sequential {})", greedy + sequential,
                     greedy, sequential);
  return out;
}

std::string without_trailing_spaces(std::string line) {
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

// --form's choice and both forms' predictions.
std::string form_line(const OptimizeReport& r) {
  return fmt::format("{} (--form {}): streamed {:.4f} ms (dependency waits only), staged {:.4f} ms "
                     "(stage barriers)",
                     r.dependency_barriers ? "streamed" : "staged", r.form_option,
                     r.streamed_form_ms, r.staged_form_ms);
}

std::string budget_line(const BudgetReport& b) {
  std::string out = fmt::format("--profile-budget {}: {} stages measured, {} reused, {} predicted only",
                                b.limit, b.measured, b.reused, b.predicted);
  if (b.schedule_predicted == 0) return out + "; every stage of the schedule measured";
  return out + fmt::format("; budget spent: {} of the schedule's {} stages are predicted (raise "
                           "--profile-budget to measure them)",
                           b.schedule_predicted, b.schedule_stages);
}

}  // namespace

std::string search_cell(const sched::BlockStats& s) {
  if (s.search == sched::BlockSearch::kNone) return "-";
  std::string out = sched::block_search_name(s.search);
  if (s.search == sched::BlockSearch::kReduced) out += fmt::format(" r{}s{}", s.r, s.s);
  if (s.kept != sched::BlockSource::kScheduler) {
    out += fmt::format(", {}", sched::block_source_name(s.kept));
  }
  if (s.same_as >= 0) out += fmt::format(", as block {}", s.same_as);
  return out;
}

std::string memory_line(const sched::MemoryInfo& m) {
  using exec::format_bytes;
  std::string workspaces = "none";
  if (m.workspaces_total() > 0) {
    int used = 0;
    for (int64_t w : m.workspace_bytes) used += w > 0;
    workspaces = fmt::format("{} on {} stream{}", format_bytes(m.workspaces_total()), used, used == 1 ? "" : "s");
  }
  return fmt::format("peak {}: activations {} (live {}; inputs {}, outputs {}), weights {}{}, workspaces {}{}",
                     format_bytes(m.peak_bytes()), format_bytes(m.arena_bytes), format_bytes(m.live_peak_bytes),
                     format_bytes(m.inputs_bytes), format_bytes(m.outputs_bytes), format_bytes(m.weights_bytes),
                     m.merged_weights_bytes > 0 ? fmt::format(" (merged {})", format_bytes(m.merged_weights_bytes))
                                                : std::string(),
                     workspaces, m.workspaces_predicted ? " (predicted)" : " (measured)");
}

namespace {

std::string limit_line(const OptimizeReport& r) {
  std::string line = fmt::format("{} ({} bytes)", exec::format_bytes(r.memory_limit), r.memory_limit);
  if (r.memory_search_bound > 0) {
    line += fmt::format(", search bound {} live per stage", exec::format_bytes(r.memory_search_bound));
  }
  if (!r.memory_note.empty()) line += "; " + r.memory_note;
  return line;
}

}  // namespace

std::string render_summary(const OptimizeReport& r) {
  std::string out = "\n=== ios-optimize summary ===\n";
  out += fmt::format("Model            {} (batch {}, sha256 {}...)\n", r.model_path, r.batch,
                     r.sha256.substr(0, 12));
  out += fmt::format("Units            {} in {} blocks (widest block: {} units, width {})\n", r.units,
                     r.blocks.size(), r.widest_units, r.widest_width);
  out += fmt::format("Scheduler        {} ({})\n", r.scheduler, format_params(r.params));
  out += fmt::format("Cost model       {}\n", r.cost_note);
  out += fmt::format("Search           {} states, {} transitions, {} stages costed in {:.3f} s "
                     "(import {:.2f} s)\n",
                     r.states, r.transitions, r.stages_costed, r.search_ms / 1000.0, r.import_ms / 1000.0);
  if (const std::string c = coverage(r); !c.empty()) out += fmt::format("Coverage         {}\n", c);
  if (r.measurement) {
    const MeasurementReport& m = *r.measurement;
    out += fmt::format("Measurement      {} stages timed on the GPU in {:.2f} s ({:.3f} ms setup per stage), "
                       "{} answered by the profile database or repeats\n",
                       m.measured, m.elapsed_s, m.measured > 0 ? 1000.0 * m.setup_s / m.measured : 0.0,
                       m.cache_hits);
    if (m.budget) out += fmt::format("Budget           {}\n", budget_line(*m.budget));
  }
  if (r.staged) {
    out += fmt::format("Schedule         {} stages, {} operator merges\n", r.stages, r.merges);
    if (r.form_option != "staged") out += fmt::format("Form             {}\n", form_line(r));
  } else {
    out += fmt::format("Schedule         {} units on {} streams\n", r.units, r.streams);
  }
  out += fmt::format("Latency          {:.4f} ms {} (sequential {:.4f} ms, {:.2f}x)\n", r.predicted_ms,
                     r.cost_model == "measured" ? "measured per stage" : "predicted (whole plan simulated)",
                     r.sequential_ms, speedup(r));
  if (r.memory) {
    out += fmt::format("Memory           {}\n", memory_line(*r.memory));
    if (r.memory_limit > 0) out += fmt::format("Memory limit     {}\n", limit_line(r));
  }
  // No file for the engine API's ios::Schedule::optimize(), which returns the schedule.
  if (!r.schedule_file.empty()) out += fmt::format("Written          {}\n", r.schedule_file);
  return out;
}

std::string render_analysis(const OptimizeReport& r) {
  std::string out = fmt::format("{:>5}  {:>4}  {:>5}  {:<34} {:>9} {:>11} {:>8} {:>10} {:>10}  {}\n",
                                "block", "n", "width", "units", "states", "transitions", "costed", "search ms",
                                "latency ms", "search");
  for (const BlockReport& b : r.blocks) {
    const sched::BlockStats s = b.search.value_or(sched::BlockStats{});
    out += without_trailing_spaces(fmt::format(
               "{:>5}  {:>4}  {:>5}  {:<34} {:>9} {:>11} {:>8} {:>10.3f} {:>10.4f}  {:<22}{}", b.index,
               b.units, b.width, b.kinds.substr(0, 34), s.states, s.transitions, s.stages_costed, s.search_ms,
               s.predicted_ms, search_cell(s), b.split_by_cap ? "  (part of a wider region)" : "")) +
           "\n";
  }
  out += fmt::format("total  {:>4}  {:>5}  {:<34} {:>9} {:>11} {:>8} {:>10.3f} {:>10.4f}\n", r.units,
                     r.widest_width, "", r.states, r.transitions, r.stages_costed, r.search_ms, r.predicted_ms);
  if (const std::string c = coverage(r); !c.empty()) out += c + "\n";
  return out;
}

std::string render_json(const OptimizeReport& r) {
  nlohmann::json blocks = nlohmann::json::array();
  for (const BlockReport& b : r.blocks) {
    nlohmann::json entry = {{"index", b.index},
                            {"first_unit", b.first_unit},
                            {"units", b.units},
                            {"width", b.width},
                            {"split_by_cap", b.split_by_cap}};
    if (b.search) {
      entry["states"] = b.search->states;
      entry["transitions"] = b.search->transitions;
      entry["stages_costed"] = b.search->stages_costed;
      entry["search_ms"] = b.search->search_ms;
      entry["predicted_ms"] = b.search->predicted_ms;
      if (b.search->search != sched::BlockSearch::kNone) {
        // "complete": the requested pruning finished; "reduced": a cheaper
        // one (r, s) did; "abandoned"/"skipped": the time limit stopped it.
        entry["search"] = sched::block_search_name(b.search->search);
        entry["search_r"] = b.search->r;
        entry["search_s"] = b.search->s;
        entry["kept"] = sched::block_source_name(b.search->kept);
        // The earlier block whose search this one repeats (its own counts are 0).
        if (b.search->same_as >= 0) entry["same_as"] = b.search->same_as;
      }
    }
    blocks.push_back(entry);
  }
  nlohmann::json params = nlohmann::json::object();
  for (const auto& [k, v] : r.params) params[k] = v;
  nlohmann::json doc = {{"format", "ios-optimize-report"},
                              {"version", 1},
                              {"model", r.model_path},
                              {"batch", r.batch},
                              {"units", r.units},
                              {"blocks", blocks},
                              {"scheduler", r.scheduler},
                              {"params", params},
                              {"cost_model", r.cost_model},
                              {"cost_note", r.cost_note},
                              {"device", r.device},
                              {"predicted_latency_ms", r.predicted_ms},
                              {"sequential_predicted_ms", r.sequential_ms},
                              {"search_ms", r.search_ms},
                              {"time_limit_s", r.time_limit_s},
                              {"import_ms", r.import_ms},
                              {"states", r.states},
                              {"transitions", r.transitions},
                              {"stages_costed", r.stages_costed},
                              {"schedule_file", r.schedule_file},
                              {"stages", r.staged ? r.stages : 0},
                              {"analyze_only", r.analyze_only}};
  if (r.measurement) {
    const MeasurementReport& m = *r.measurement;
    doc["measurement"] = {{"measured", m.measured},
                          {"elapsed_s", m.elapsed_s},
                          {"setup_s", m.setup_s},
                          {"cache_hits", m.cache_hits}};
    if (m.budget) {
      const BudgetReport& b = *m.budget;
      doc["measurement"]["budget"] = {{"limit", b.limit},
                                      {"measured", b.measured},
                                      {"reused", b.reused},
                                      {"predicted", b.predicted},
                                      {"exhausted", b.exhausted},
                                      {"schedule_stages", b.schedule_stages},
                                      {"schedule_predicted", b.schedule_predicted}};
    }
  }
  if (r.memory) {
    doc["memory"] = sched::memory_to_json(*r.memory);
    if (r.memory_limit > 0) {
      doc["memory"]["limit_bytes"] = r.memory_limit;
      doc["memory"]["search_bound_bytes"] = r.memory_search_bound;
      doc["memory"]["note"] = r.memory_note;
    }
  }
  if (r.max_streams > 0) doc["max_streams"] = r.max_streams;
  // Always present, so that scripts need not know when a form was chosen:
  // the --form asked, the form written (a streamed scheduler's is
  // "streamed"), each form's whole-plan prediction (null: not computed), and
  // the launch mode the schedule was planned for.
  auto prediction = [](double ms) { return ms > 0.0 ? nlohmann::json(ms) : nlohmann::json(nullptr); };
  doc["form"] = {{"option", r.form_option},
                 {"chosen", !r.staged || r.dependency_barriers ? "streamed" : "staged"},
                 {"staged_predicted_ms", prediction(r.staged_form_ms)},
                 {"streamed_predicted_ms", prediction(r.streamed_form_ms)}};
  doc["launch"] = r.launch;
  return doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::vector<std::pair<std::string, std::string>> summary_rows(const OptimizeReport& r) {
  std::vector<std::pair<std::string, std::string>> rows = {
      {"Model", fmt::format("{} (batch {}, sha256 {})", r.model_path, r.batch, r.sha256)},
      {"Units", fmt::format("{} in {} blocks", r.units, r.blocks.size())},
      {"Scheduler", fmt::format("{} ({})", r.scheduler, format_params(r.params))},
      {"Cost model", r.cost_note},
      {"Predicted latency", fmt::format("{:.4f} ms", r.predicted_ms)}};
  if (r.sequential_ms > 0) {
    rows.emplace_back("Sequential", fmt::format("{:.4f} ms ({:.2f}x)", r.sequential_ms, speedup(r)));
  }
  if (r.staged && r.form_option != "staged") rows.emplace_back("Form", form_line(r));
  if (r.memory) rows.emplace_back("Memory", memory_line(*r.memory));
  if (r.memory && r.memory_limit > 0) rows.emplace_back("Memory limit", limit_line(r));
  rows.emplace_back("Schedule file", r.schedule_file.empty() ? "(none: --analyze)" : r.schedule_file);
  return rows;
}

}  // namespace ios::optimize
