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
                                   bool time_limit_given, int threads, const sched::BlockProgress& progress) {
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
  // workspaces within a bound (the limit less the model's weights); the
  // placed arena, the weights (merged ones included) and the workspaces of
  // the schedule found are checked against the limit, and the bound
  // lowered by the excess until they fit (a few rounds). Merged weights
  // stay for the whole run, which no stage bound sees: a schedule over the
  // limit with merges is searched again without them where the scheduler
  // has concurrent stages to fall back on.
  sched::SearchStats sequential_stats;
  sched::Schedule sequential = schedule_model(prepared, "sequential", "", cost, sequential_stats);
  searched_ms += sequential_stats.total_search_ms;
  const sched::MemoryInfo sequential_memory = memory_of(sequential);
  logger("cli")->debug("memory: the sequential schedule, peak {}, in {:.2f} s", sequential_memory.peak_bytes(),
                       seconds_since(start));
  seen(sequential_memory, "the sequential schedule");
  // The searches to make, last first. A schedule over the limit gets one
  // repair, or two where fewer streams would also do: fewer streams first
  // (the repair that meets most limits soonest), then the bound lowered
  // with every stream kept. Rounds go on after a fit while the budget
  // lasts, and the fastest schedule that fits wins: a repair that cost
  // streams no longer hides a faster fit the bound repair finds, which a
  // tighter limit's search finds too (docs/schedulers.md, *Memory*).
  struct Attempt {
    std::string params;
    int64_t bound = 0;
    int fewer_streams = 0;  // > 0: s lowered to this
    bool merges_dropped = false;
    bool unconstrained = false;  // the first search: no bound
    // A bound repair between a looser bound that did not fit (fails_at)
    // and, when refining, a tighter one that did (fits_at): the repair
    // lowers the bound by the whole excess, which may overshoot, so a fit
    // is searched again halfway back up while the two are kRefineBytes
    // apart or more (a looser bound, a faster schedule).
    int64_t fails_at = 0;
    int64_t fits_at = 0;
    bool refining = false;
    // The peak and stage figure of the search this one repairs: a bound
    // repair that leaves both as they were is not repeated (the bound no
    // longer moves what is over).
    int64_t repairs_peak = 0;
    int64_t repairs_used = 0;
  };
  constexpr int64_t kRefineBytes = 16 * 1024;
  std::vector<Attempt> pending = {{params, limit - sequential_memory.weights_bytes, 0, false, true}};
  std::optional<sched::Schedule> found;
  sched::SearchStats found_stats;
  Attempt found_how;
  constexpr int kRounds = 16;
  // No bounded round starts once the bounded rounds have taken
  // kRoundsFactor times the unconstrained search (at least kMinRoundsS): a
  // budget the rounds seldom reach, so that what a limit gets depends on the
  // rounds, not on how loaded the machine is (a bounded round keeps the
  // blocks that fit and is mostly far quicker than the first search). An
  // explicit --time-limit gives them the time left under it instead.
  constexpr double kMinRoundsS = 1.0;
  constexpr double kRoundsFactor = 4.0;
  double rounds_budget_s = 0.0;
  double rounds_start_ms = 0.0;  // searched_ms when they began
  // Every staged schedule searched so far and how: a bounded search takes
  // the one of the same parameters and streams under the tightest bound
  // still looser than its own.
  std::vector<std::pair<Attempt, sched::Schedule>> priors;
  int round = 0;
  while (!pending.empty() && round < kRounds) {
    const Attempt a = std::move(pending.back());
    pending.pop_back();
    if (!a.unconstrained && a.bound <= 0) continue;
    double left_s = 0.0;
    if (time_limit_s > 0.0) {
      left_s = time_limit_s - seconds_since(start);
      if (left_s <= 0.0) break;
    }
    // (A time limit inside the search would cost more than it saves: the
    // time-limited DP first estimates every block's search.)
    if (round > 0 && !time_limit_given && (searched_ms - rounds_start_ms) / 1000.0 >= rounds_budget_s) break;
    const auto round_start = std::chrono::steady_clock::now();
    // The first round searches without a bound: a limit the unconstrained
    // schedule keeps within changes nothing.
    // A schedule searched with the same parameters and streams under a
    // looser bound (the tightest such): its blocks that fit the new bound
    // are kept, and only the others are searched again.
    sched::SearchStats stats;
    const int streams = a.fewer_streams > 0 ? a.fewer_streams : max_streams;
    const sched::StagedSchedule* prior = nullptr;
    int64_t prior_bound = 0;
    for (const auto& [how, schedule] : priors) {
      if (how.params != a.params || how.fewer_streams != a.fewer_streams) continue;
      const int64_t b = how.unconstrained ? std::numeric_limits<int64_t>::max() : how.bound;
      if (a.unconstrained || b < a.bound || (prior != nullptr && b >= prior_bound)) continue;
      prior = &schedule.staged();
      prior_bound = b;
    }
    sched::Schedule s = schedule_model(prepared, scheduler, a.params, cost, stats, progress, left_s, threads,
                                       SearchBounds{a.unconstrained ? 0 : a.bound, streams, prior});
    searched_ms += stats.total_search_ms;
    if (s.is_staged()) priors.emplace_back(a, s);
    if (round == 0) {
      rounds_budget_s = std::max(kMinRoundsS, kRoundsFactor * stats.total_search_ms / 1000.0);
      rounds_start_ms = searched_ms;
    }
    ++round;
    const sched::MemoryInfo m = memory_of(s);
    seen(m, a.unconstrained ? std::string("the unconstrained search")
                            : fmt::format("{}, search bound {}", a.params.empty() ? "defaults" : a.params,
                                          bytes_text(a.bound)));
    logger("cli")->debug("memory round {}: {} ({}), bound {}: stage figure {}, peak {}, arena {}, merged weights {}, "
                         "workspaces {}, {:.4f} ms; {:.2f} s",
                         round, entry.name, a.params, a.unconstrained ? 0 : a.bound,
                         s.is_staged() ? sched::staged_live_peak(units, s.staged()) : -1, m.peak_bytes(), m.arena_bytes,
                         m.merged_weights_bytes, m.workspaces_total(), s.predicted_latency_ms, seconds_since(round_start));
    if (m.peak_bytes() <= limit) {
      if (!found || s.predicted_latency_ms < found->predicted_latency_ms) {
        found = std::move(s);
        found_stats = std::move(stats);
        found_how = a;
        out.bound = a.unconstrained ? 0 : a.bound;
        out.rounds = round;
      }
      if (!a.unconstrained && a.fails_at - a.bound >= kRefineBytes) {
        Attempt up = a;
        up.refining = true;
        up.fits_at = a.bound;
        up.bound = a.bound + (a.fails_at - a.bound) / 2;
        pending.push_back(std::move(up));
      }
      continue;
    }
    if (a.refining) {
      if (a.bound - a.fits_at >= kRefineBytes) {
        Attempt down = a;
        down.fails_at = a.bound;
        down.bound = a.fits_at + (a.bound - a.fits_at) / 2;
        pending.push_back(std::move(down));
      }
      continue;
    }
    const int64_t excess = m.peak_bytes() - limit;
    if (m.merged_weights_bytes > 0 && !a.merges_dropped && has_param(entry, "strategy") &&
        sched::Params::parse(entry.name, entry.params, a.params).get_string("strategy") == "both") {
      Attempt next = a;
      next.fails_at = 0;
      next.params = with_param(entry, a.params, "strategy", "parallel");
      next.merges_dropped = true;
      next.unconstrained = false;
      if (!a.unconstrained) next.bound -= std::max<int64_t>(0, excess - m.merged_weights_bytes);
      pending.push_back(std::move(next));
      continue;
    }
    // The schedule's own stage figure (what the bound compares with): a
    // bound that did not bind is lowered from there, not from itself.
    const int64_t used = s.is_staged() ? sched::staged_live_peak(units, s.staged()) : a.bound;
    Attempt repaired = a;
    repaired.unconstrained = false;
    repaired.fails_at = a.unconstrained ? 0 : a.bound;
    if (a.unconstrained) {
      repaired.bound = std::min(a.bound, used - excess);
      pending.push_back(std::move(repaired));  // the unconstrained search: now the bounded one
      continue;
    }
    repaired.bound = std::min(a.bound, used) - excess;  // the repair: the excess off the stage figure
    repaired.repairs_peak = m.peak_bytes();
    repaired.repairs_used = used;
    const bool stuck = a.repairs_peak == m.peak_bytes() && a.repairs_used == used;
    // Each stream keeps the workspace of its largest convolution for the
    // whole run, which no stage bound sees either: fewer streams (s, one
    // fewer each round) where the workspaces of the streams beyond the
    // first make up the excess, tried before the bound repair.
    const int64_t first = m.workspace_bytes.empty() ? 0 : m.workspace_bytes.front();
    const int64_t others = m.workspaces_total() - first;
    if (others >= excess && m.workspace_bytes.size() > 1 && has_param(entry, "s")) {
      // As many streams as keep their workspaces within what the excess
      // leaves (at least one fewer than now).
      const int64_t current = sched::Params::parse(entry.name, entry.params, a.params).get_int("s");
      const int64_t in_use = static_cast<int64_t>(m.workspace_bytes.size());
      int64_t streams = 1, kept = first;
      while (streams < in_use - 1 && kept + m.workspace_bytes[static_cast<size_t>(streams)] <= m.workspaces_total() - excess) {
        kept += m.workspace_bytes[static_cast<size_t>(streams)];
        ++streams;
      }
      streams = std::max<int64_t>(1, std::min({streams, current == 0 ? in_use - 1 : current - 1, in_use - 1}));
      Attempt fewer = a;
      fewer.fails_at = 0;
      fewer.repairs_peak = 0;
      fewer.repairs_used = 0;
      fewer.params = with_param(entry, a.params, "s", std::to_string(streams));
      fewer.fewer_streams = static_cast<int>(streams);
      if (!stuck) pending.push_back(std::move(repaired));
      pending.push_back(std::move(fewer));
      continue;
    }
    if (!stuck) pending.push_back(std::move(repaired));
  }
  if (!found) out.rounds = round;
  const bool sequential_fits = sequential_memory.peak_bytes() <= limit;
  if (found && (!sequential_fits || found->predicted_latency_ms <= sequential.predicted_latency_ms)) {
    std::string note = found_how.unconstrained ? std::string("the unconstrained schedule fits")
                                               : fmt::format("met in {} rounds of the bounded search", out.rounds);
    if (found_how.merges_dropped) note += ", without operator merges (their weights did not fit)";
    if (found_how.fewer_streams > 0) {
      note += fmt::format(", s lowered to {} (fewer streams, fewer workspaces)", found_how.fewer_streams);
    }
    return finish(std::move(*found), std::move(found_stats), std::move(note));
  }
  if (sequential_fits) {
    std::string note = found ? "the sequential schedule: the search's fit is predicted slower"
                             : "the sequential schedule: no searched schedule fits";
    return finish(std::move(sequential), std::move(sequential_stats), std::move(note));
  }
  return refuse();
}

}  // namespace ios::optimize
