// ios-optimize --memory-limit and --max-streams (docs/schedulers.md,
// *Memory*): parsing, the schedulers' stream parameters, and the search for
// the fastest schedule whose peak device memory keeps within the limit.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>
#include <optional>

#include "core/error.h"
#include "core/log.h"
#include "exec/schedule_memory.h"
#include "optimize/optimizer.h"
#include "sched/memory_bound.h"

namespace ios::optimize {

int64_t parse_memory_limit(const std::string& text) {
  const auto bad = [&](std::string_view why) {
    user_error("--memory-limit '{}': {}; give bytes or a number with B, KiB, MiB or GiB, e.g. 512MiB",
               text.substr(0, 64), why);
  };
  // A leading '+' is a sign, as strtod and every other number option read it.
  const size_t start = !text.empty() && text.front() == '+' ? 1 : 0;
  size_t end = start;
  while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.')) ++end;
  const std::string number = text.substr(start, end - start);
  std::string unit = text.substr(end);
  while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
  if (!text.empty() && text.front() == '-') bad("must be positive");
  if (number.empty() || std::count(number.begin(), number.end(), '.') > 1 || number == ".") bad("not a number");
  const double value = std::strtod(number.c_str(), nullptr);
  static const std::vector<std::pair<std::string, double>> kUnits = {
      {"", 1.0}, {"B", 1.0}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}};
  const auto it = std::find_if(kUnits.begin(), kUnits.end(), [&](const auto& u) { return u.first == unit; });
  if (it == kUnits.end()) bad(fmt::format("unknown unit '{}'", unit.substr(0, 16)));
  const double bytes = value * it->second;
  if (!std::isfinite(bytes) || bytes >= 9.0e18) bad("too large");
  if (bytes < 1.0) bad("must be at least 1 byte");
  return static_cast<int64_t>(bytes);
}

std::string apply_max_streams(const std::string& scheduler, const std::string& params, int max_streams) {
  const sched::SchedulerEntry& entry = sched::find_scheduler(scheduler);
  if (max_streams <= 0) return params;
  if (entry.name == "greedy" || entry.name == "nimble") {
    user_error("--max-streams: the {} scheduler has no stream bound (its algorithm fixes the streams: {}); "
               "use ios, ios-parallel, ios-merge, dos or lios",
               entry.name,
               entry.name == "greedy" ? "every ready unit runs in the stage" : "one stream per chain");
  }
  const std::string key = entry.name == "lios" ? "streams" : "s";
  if (std::none_of(entry.params.begin(), entry.params.end(), [&](const sched::ParamSpec& p) { return p.name == key; })) {
    return params;  // sequential: one stream
  }
  const sched::Params parsed = sched::Params::parse(entry.name, entry.params, params);
  const int64_t own = parsed.get_int(key);
  if (own != 0 && own <= max_streams) return params;
  std::string out;
  for (const auto& [name, value] : parsed.to_strings()) {
    if (!out.empty()) out += ",";
    out += name + "=" + (name == key ? std::to_string(max_streams) : value);
  }
  return out;
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string bytes_text(int64_t bytes) { return exec::format_bytes(bytes); }

// `params` with `key` set to `value` (the entry must have `key`).
std::string with_param(const sched::SchedulerEntry& entry, const std::string& params, const std::string& key,
                       const std::string& value) {
  const sched::Params parsed = sched::Params::parse(entry.name, entry.params, params);
  std::string out;
  for (const auto& [name, v] : parsed.to_strings()) {
    if (!out.empty()) out += ",";
    out += name + "=" + (name == key ? value : v);
  }
  return out;
}

bool has_param(const sched::SchedulerEntry& entry, const std::string& key) {
  return std::any_of(entry.params.begin(), entry.params.end(), [&](const sched::ParamSpec& p) { return p.name == key; });
}

}  // namespace

LimitedSearch search_within_memory(const model::PreparedModel& prepared, const std::string& scheduler,
                                   const std::string& params, const CostChoice& cost, int64_t limit,
                                   int max_streams, exec::StageJoin join, double time_limit_s,
                                   int threads, const sched::BlockProgress& progress) {
  const sched::UnitGraph& units = *prepared.units;
  const sched::SchedulerEntry& entry = sched::find_scheduler(scheduler);
  const auto start = std::chrono::steady_clock::now();
  auto memory_of = [&](const sched::Schedule& s) { return exec::schedule_memory(units, s, join); };
  LimitedSearch out;
  double searched_ms = 0.0;
  // The smallest peak seen, for the error when nothing fits.
  int64_t smallest = std::numeric_limits<int64_t>::max();
  std::string smallest_what;
  auto seen = [&](const sched::MemoryInfo& m, const std::string& what) {
    if (m.peak_bytes() < smallest) {
      smallest = m.peak_bytes();
      smallest_what = what;
    }
  };
  auto finish = [&](sched::Schedule schedule, sched::SearchStats stats, std::string note) {
    out.schedule = std::move(schedule);
    out.stats = std::move(stats);
    out.note = std::move(note);
    // The searches' own time, as without a limit (SearchStats::total_search_ms),
    // summed over every schedule made.
    out.stats.total_search_ms = searched_ms;
    return out;
  };
  auto refuse = [&]() -> LimitedSearch {
    user_error("--memory-limit {} ({} bytes) is below the smallest peak ios found for {}: {} ({} bytes, {}); "
               "raise the limit",
               bytes_text(limit), limit, entry.name, bytes_text(smallest), smallest, smallest_what);
  };

  if (!entry.searches && entry.name != "lios") {
    // Nothing to trade: the algorithm fixes the schedule.
    sched::SearchStats stats;
    sched::Schedule s = schedule_model(prepared, scheduler, params, cost, stats, progress, 0.0, threads);
    searched_ms += stats.total_search_ms;
    const sched::MemoryInfo m = memory_of(s);
    if (m.peak_bytes() <= limit) return finish(std::move(s), std::move(stats), "within the limit as scheduled");
    seen(m, "its only schedule");
    if (entry.name == "sequential") refuse();
    user_error("--memory-limit {} ({} bytes): the {} schedule takes {} ({} bytes) and its algorithm cannot trade "
               "speed for memory; use ios, ios-parallel, ios-merge, dos, or lios with fewer streams",
               bytes_text(limit), limit, entry.name, bytes_text(m.peak_bytes()), m.peak_bytes());
  }

  if (entry.name == "lios") {
    // LIOS bounds nothing but its streams: fewer streams, fewer branches at once.
    const sched::Params parsed = sched::Params::parse(entry.name, entry.params, params);
    for (int64_t streams = parsed.get_int("streams"); streams >= 1; --streams) {
      const std::string p = streams == parsed.get_int("streams") ? params : fmt::format("streams={}", streams);
      sched::SearchStats stats;
      sched::Schedule s = schedule_model(prepared, scheduler, p, cost, stats, progress, 0.0, threads);
      searched_ms += stats.total_search_ms;
      const sched::MemoryInfo m = memory_of(s);
      seen(m, fmt::format("streams={}", streams));
      if (m.peak_bytes() <= limit) {
        return finish(std::move(s), std::move(stats),
                      streams == parsed.get_int("streams")
                          ? std::string("within the limit as scheduled")
                          : fmt::format("lios with {} streams (fewer streams, fewer branches live at once)", streams));
      }
    }
    refuse();
  }

  // The searching schedulers: the DP keeps each stage's live bytes and
  // workspaces within a bound, and the placed arena, the weights (merged
  // ones included) and every stream's workspace of the schedule found are
  // checked against the limit. Which bound and streams a limit needs is not
  // known in advance (the per-stream workspaces, which no stage bound sees,
  // and merged weights, which stay for the whole run, make up most of the
  // excess), so a fixed ladder of searches is made and the fastest schedule
  // that fits is kept. The ladder depends only on the model and the
  // unconstrained schedule, never on the limit: every schedule a tighter
  // limit could choose is searched under a looser one too, so a looser limit
  // never gets a slower schedule (docs/schedulers.md, *Memory*).
  sched::SearchStats sequential_stats;
  sched::Schedule sequential = schedule_model(prepared, "sequential", "", cost, sequential_stats);
  searched_ms += sequential_stats.total_search_ms;
  const sched::MemoryInfo sequential_memory = memory_of(sequential);
  logger("cli")->debug("memory: the sequential schedule, peak {}, in {:.2f} s", sequential_memory.peak_bytes(),
                       seconds_since(start));
  seen(sequential_memory, "the sequential schedule");

  struct Rung {
    std::string params;
    int64_t bound = 0;  // 0: unconstrained
    int streams = 0;    // the s searched with, 0: the scheduler's own
    bool merges_dropped = false;
    bool fewer_streams = false;
  };
  std::optional<sched::Schedule> found;
  sched::SearchStats found_stats;
  Rung found_how;
  int round = 0;
  bool out_of_time = false;
  int64_t transitions = 0;  // the DP's work so far (its transitions, over every block)
  // Each staged schedule searched, by parameters and streams: a bounded
  // search takes the one under the tightest looser bound as its prior (its
  // blocks that fit are kept, sched::Scheduler::set_prior).
  std::vector<std::pair<Rung, sched::Schedule>> priors;
  auto search = [&](const Rung& rung) -> std::optional<sched::MemoryInfo> {
    double left_s = 0.0;
    if (time_limit_s > 0.0) {
      left_s = time_limit_s - seconds_since(start);
      if (left_s <= 0.0) {
        out_of_time = true;
        return std::nullopt;
      }
    }
    const auto round_start = std::chrono::steady_clock::now();
    const sched::StagedSchedule* prior = nullptr;
    int64_t prior_bound = 0;
    for (const auto& [how, schedule] : priors) {
      if (how.params != rung.params || how.streams != rung.streams || rung.bound == 0) continue;
      const int64_t b = how.bound == 0 ? std::numeric_limits<int64_t>::max() : how.bound;
      if (b < rung.bound || (prior != nullptr && b >= prior_bound)) continue;
      prior = &schedule.staged();
      prior_bound = b;
    }
    sched::SearchStats stats;
    sched::Schedule s =
        schedule_model(prepared, scheduler, rung.params, cost, stats, progress, left_s, threads,
                       SearchBounds{rung.bound, rung.streams > 0 ? rung.streams : max_streams, prior});
    searched_ms += stats.total_search_ms;
    for (const sched::BlockStats& b : stats.blocks) transitions += b.transitions;
    ++round;
    const sched::MemoryInfo m = memory_of(s);
    seen(m, rung.bound == 0 ? std::string("the unconstrained search")
                            : fmt::format("{}, search bound {}", rung.params.empty() ? "defaults" : rung.params,
                                          bytes_text(rung.bound)));
    logger("cli")->debug("memory round {}: {} ({}), bound {}: stage figure {}, peak {}, arena {}, merged weights {}, "
                         "workspaces {}, {:.4f} ms; {:.2f} s",
                         round, entry.name, rung.params, rung.bound,
                         s.is_staged() ? sched::staged_live_peak(units, s.staged()) : -1, m.peak_bytes(), m.arena_bytes,
                         m.merged_weights_bytes, m.workspaces_total(), s.predicted_latency_ms, seconds_since(round_start));
    // The fastest fit wins; on a tie the first, the ladder's order being fixed.
    if (m.peak_bytes() <= limit && (!found || s.predicted_latency_ms < found->predicted_latency_ms)) {
      found = s;
      found_stats = std::move(stats);
      found_how = rung;
      out.bound = rung.bound;
      out.rounds = round;
    }
    if (s.is_staged()) priors.emplace_back(rung, std::move(s));
    return m;
  };

  // The unconstrained search: a limit it keeps within changes nothing.
  const std::optional<sched::MemoryInfo> free_memory = search(Rung{params});
  if (found) {
    return finish(std::move(*found), std::move(found_stats), "the unconstrained schedule fits");
  }
  // The ladder: bounds from 1/kSteps of the unconstrained schedule's stage
  // figure up to the whole of it, in kSteps equal steps; the scheduler's
  // streams (as many as the unconstrained schedule uses) and 1, 2, 3, 4, 6,
  // 8, ... below; the parameters given and, where the unconstrained
  // schedule merged operators, the same without merges. The ladder ends
  // once its searches have made kWorkFactor times the unconstrained
  // search's DP transitions (at least kMinWork): a budget of work, not of
  // seconds, so that where it ends depends on the model alone and every
  // limit still sees the same rungs. (Measured on docs/benchmarks.md's
  // Memory table: halving the streams instead missed SSDlite's s=2 and
  // NASNet-A's s=3 at the sequential peak, 1.86 ms against 3.05; a budget
  // of 6 cut NASNet-A's full-stream rungs, 1.32 ms against 1.22.)
  constexpr int kSteps = 6;
  constexpr int64_t kWorkFactor = 10;
  constexpr int64_t kMinWork = 2'000'000;
  std::vector<std::string> strategies = {params};
  const sched::Schedule* free_schedule = priors.empty() ? nullptr : &priors.front().second;
  if (free_memory && free_memory->merged_weights_bytes > 0 && has_param(entry, "strategy") &&
      sched::Params::parse(entry.name, entry.params, params).get_string("strategy") == "both") {
    strategies.push_back(with_param(entry, params, "strategy", "parallel"));
  }
  std::vector<int> stream_counts = {0};
  if (free_memory && has_param(entry, "s")) {
    const int64_t own = sched::Params::parse(entry.name, entry.params, params).get_int("s");
    const int in_use = static_cast<int>(free_memory->workspace_bytes.size());
    int s = static_cast<int>(own == 0 ? in_use : std::min<int64_t>(own, in_use));
    if (max_streams > 0) s = std::min(s, max_streams);
    // Below it: 1, 2, 3, 4, 6, 8, 12, ... (each at most half again the last).
    std::vector<int> fewer;
    for (int n = 1; n < s; n = n < 4 ? n + 1 : n + n / 2) fewer.push_back(n);
    stream_counts.insert(stream_counts.end(), fewer.rbegin(), fewer.rend());
  }
  const int64_t figure =
      free_schedule != nullptr ? sched::staged_live_peak(units, free_schedule->staged()) : limit;
  // Cheapest first: fewest streams (the DP's s prunes hardest), and in each
  // chain the tightest bound first (a bound that binds leaves few stages).
  // The bounds near the unconstrained figure with every stream are the
  // costly rungs (under a bound the DP cannot join free units), and they
  // come last, where the work budget may end the ladder.
  std::vector<Rung> ladder;
  for (auto streams = stream_counts.rbegin(); streams != stream_counts.rend(); ++streams) {
    for (const std::string& p : strategies) {
      const std::string rung_params = *streams == 0 ? p : with_param(entry, p, "s", std::to_string(*streams));
      for (int step = 1; step <= kSteps; ++step) {
        Rung rung{rung_params, figure * step / kSteps, *streams, p != params, *streams > 0};
        if (rung.bound > 0) ladder.push_back(std::move(rung));
      }
    }
  }
  const int64_t budget = std::max(kMinWork, kWorkFactor * transitions);
  transitions = 0;
  for (const Rung& rung : ladder) {
    if (out_of_time || transitions >= budget) break;
    search(rung);
  }
  if (!found) out.rounds = round;
  const bool sequential_fits = sequential_memory.peak_bytes() <= limit;
  if (found && (!sequential_fits || found->predicted_latency_ms <= sequential.predicted_latency_ms)) {
    std::string note = fmt::format("met in round {} of {} of the bounded search", out.rounds, round);
    if (found_how.merges_dropped) note += ", without operator merges (their weights did not fit)";
    if (found_how.fewer_streams) {
      note += fmt::format(", s lowered to {} (fewer streams, fewer workspaces)", found_how.streams);
    }
    if (out_of_time) note += "; the time limit ended the ladder early (a looser limit may then find a slower schedule)";
    return finish(std::move(*found), std::move(found_stats), std::move(note));
  }
  if (sequential_fits) {
    std::string note = found ? "the sequential schedule: the search's fit is predicted slower"
                             : "the sequential schedule: no searched schedule fits";
    if (out_of_time) note += "; the time limit ended the ladder early";
    return finish(std::move(sequential), std::move(sequential_stats), std::move(note));
  }
  return refuse();
}

}  // namespace ios::optimize
