#include "sched/ios_dp.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <unordered_map>

#include "core/error.h"
#include "sched/mask_map.h"

namespace ios::sched {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct MemoEntry {
  double cost = kInf;
  uint64_t choice = 0;  // the last stage's units
  Strategy strategy = Strategy::kConcurrent;
};

// Thrown out of the recursion when SolveLimits::deadline passes.
struct Abandoned {};

using StageEntry = CachedStageCost;

class Solver {
 public:
  // `cost` may be null for a solver that only counts endings.
  Solver(const BlockDag& dag, const IosOptions& options, sched::CostModel* cost,
         const MergePredicate& can_merge, const SolveLimits& limits = {},
         StageCostCache* cache = nullptr)
      : dag_(dag),
        options_(options),
        cost_(cost),
        can_merge_(can_merge),
        deadline_(limits.deadline),
        memory_(limits.memory),
        r_(options.max_group_units),
        s_(options.max_groups),
        memo_(1 << 10),
        own_stages_(cache != nullptr ? 16 : 1 << 14),
        stages_(cache != nullptr ? *cache : own_stages_) {
    use_concurrent_ = options.strategies != StrategySet::kMerge;
    use_merge_ = options.strategies != StrategySet::kConcurrent;
    // Merge-only stages are single units or merges, both antichains of units
    // without successors in S: the DOS enumeration covers exactly those.
    sinks_only_ = options.ending_rule == EndingRule::kDos || !use_concurrent_;
    if (cost_ != nullptr) {
      bool any = false;
      bool classed = true;
      for (int x = 0; x < dag_.n; ++x) {
        CostModel::UnitBound& b = bound_.emplace_back();
        std::vector<int64_t>& classes = classes_.emplace_back();
        for_members(x, [&](UnitId u) {
          const CostModel::UnitBound ub = cost_->unit_bound(u);
          b.stream_ms += ub.stream_ms;
          b.slots_ms += ub.slots_ms;
          b.dram_ms += ub.dram_ms;
          classes.push_back(cost_->cost_class(u));
          classed = classed && classes.back() >= 0;
        });
        any = any || b.stream_ms > 0.0 || b.slots_ms > 0.0 || b.dram_ms > 0.0;
      }
      if (!any) bound_.clear();
      if (!classed) classes_.clear();
    }
  }

  double solve(uint64_t s) {
    if (s == 0) return 0.0;
    if (const MemoEntry* m = memo_.find(s)) return m->cost;
    ++states_;
    Level level;
    level.state = s;
    enumerate(level);
    // Under a memory bound a state may have no ending that fits: its cost
    // stays infinite and no transition leads through it.
    IOS_ASSERT(level.best.cost < kInf || memory_ != nullptr, "no schedulable ending for state {:#x}", s);
    memo_.insert(s, level.best);
    return level.best.cost;
  }

  // The endings of `s` the search would evaluate, counted without solving
  // or costing anything (for estimate_search).
  int64_t count_endings(uint64_t s) {
    count_only_ = true;
    counted_ = 0;
    Level level;
    level.state = s;
    enumerate(level);
    count_only_ = false;
    return counted_;
  }

  // The stages of the optimal schedule of `all`, in execution order.
  std::vector<Stage> rebuild(uint64_t all) {
    std::vector<Stage> stages;
    for (uint64_t s = all; s != 0;) {
      const MemoEntry* m = memo_.find(s);
      IOS_ASSERT(m != nullptr && m->choice != 0 && (m->choice & ~s) == 0,
                 "broken choice for state {:#x}", s);
      const uint64_t e = m->choice;
      Stage stage;
      stage.strategy = m->strategy;
      if (m->strategy == Strategy::kMerge) {
        stage.groups.emplace_back();
        for (uint64_t b = e; b; b &= b - 1) {
          for_members(lowest(b), [&](UnitId u) { stage.groups.back().push_back(u); });
        }
      } else {
        fill_groups(e, stage);
      }
      const StageEntry* st = stages_.find(e);
      IOS_ASSERT(st != nullptr, "stage {:#x} was never costed", e);
      stage.predicted_ms = st->cost;
      stages.push_back(std::move(stage));
      s &= ~e;
    }
    std::reverse(stages.begin(), stages.end());
    return stages;
  }

  int64_t states() const { return states_; }
  int64_t transitions() const { return transitions_; }
  int64_t stages_costed() const { return stages_costed_; }

 private:
  struct Level {
    uint64_t state = 0;
    std::array<uint64_t, kMaxBlockUnits> closure;  // {x} + desc(x) & state, for x in state
    MemoEntry best;
  };

  // Every ending of level.state under the rules and the pruning, each
  // passed to evaluate() once.
  void enumerate(Level& level) {
    const uint64_t s = level.state;
    if (sinks_only_) {
      uint64_t sinks = 0;
      for (uint64_t b = s; b; b &= b - 1) {
        const int x = lowest(b);
        if ((dag_.succ[static_cast<size_t>(x)] & s) == 0) sinks |= bit(x);
      }
      enumerate_sinks(level, sinks, 0, 0);
      return;
    }
    uint64_t candidates = 0;
    for (uint64_t b = s; b; b &= b - 1) {
      const int x = lowest(b);
      const uint64_t c = (dag_.desc[static_cast<size_t>(x)] | bit(x)) & s;
      level.closure[static_cast<size_t>(x)] = c;
      if (r_ == 0 || popcount(c) <= r_) candidates |= bit(x);
    }
    if (options_.group_shape == GroupShape::kSingleEntry) {
      enumerate_single_entry(level, candidates, 0, 0);
    } else if (r_ == 0 && s_ == 0) {
      enumerate_any(level, candidates, 0);
    } else {
      enumerate_any_pruned(level, candidates, 0, 0, 0);
    }
  }

  // The clock is read every 1,024 evaluations (a read costs about as much
  // as a transition) and before every costing (which may be a GPU
  // measurement).
  void check_deadline(bool always) {
    if (!deadline_ || (!always && (++ticks_ & 1023) != 0)) return;
    if (std::chrono::steady_clock::now() >= *deadline_) throw Abandoned{};
  }

  // One candidate last stage `e` of `level.state`.
  void evaluate(Level& level, uint64_t e) {
    if (count_only_) {
      ++counted_;
      return;
    }
    check_deadline(false);
    // A stage over the memory bound is no candidate (and no transition).
    if (memory_ != nullptr && memory_->stage_bytes(level.state & ~e, e) > memory_->bound) return;
    if (use_concurrent_) {
      // Every ending is a candidate stage. Stage latencies are non-negative,
      // so when the rest alone is no better than the best so far the stage
      // cannot win: it is counted but neither looked up nor costed (most
      // transitions end here, and a measured cost model profiles fewer
      // stages).
      ++transitions_;
      const double rest = solve(level.state & ~e);
      if (rest >= level.best.cost) return;
      // Likewise when the stage's longest group alone would make it lose
      // (the cost model's unit bounds); a merge may be faster than its
      // members, so a possible merge is always costed.
      if (!bound_.empty() && !(use_merge_ && (e & (e - 1)) != 0 && is_antichain(e)) &&
          rest + stage_bound(e) >= level.best.cost) {
        return;
      }
      const StageEntry stage = stage_cost(e);
      if (rest + stage.cost < level.best.cost) {
        level.best.cost = rest + stage.cost;
        level.best.choice = e;
        level.best.strategy = stage.strategy;
      }
      return;
    }
    const StageEntry stage = stage_cost(e);
    if (stage.cost == kInf) return;  // merge-only and not mergeable: not a stage
    ++transitions_;
    const double total = solve(level.state & ~e) + stage.cost;
    if (total < level.best.cost) {
      level.best.cost = total;
      level.best.choice = e;
      level.best.strategy = stage.strategy;
    }
  }

  // DOS endings (and merge-only stages): non-empty subsets of `sinks`.
  void enumerate_sinks(Level& level, uint64_t candidates, uint64_t e, int groups) {
    for (uint64_t c = candidates; c; c &= c - 1) {
      const uint64_t next = e | (c & -c);
      evaluate(level, next);
      if (s_ == 0 || groups + 1 < s_) enumerate_sinks(level, c & (c - 1), next, groups + 1);
    }
  }

  // Single-entry endings: unions of pairwise disjoint closures. Each root
  // is taken in increasing order, so every ending appears once.
  void enumerate_single_entry(Level& level, uint64_t candidates, uint64_t e, int groups) {
    for (uint64_t c = candidates; c; c &= c - 1) {
      const int x = lowest(c);
      const uint64_t cx = level.closure[static_cast<size_t>(x)];
      if (cx & e) continue;
      const uint64_t next = e | cx;
      evaluate(level, next);
      if (s_ == 0 || groups + 1 < s_) {
        enumerate_single_entry(level, (c & (c - 1)) & ~cx, next, groups + 1);
      }
    }
  }

  // Any-shape endings without pruning: E = union of closures of an antichain
  // of roots, taken in increasing order (later roots are never descendants
  // of earlier ones, and ancestors have lower indices).
  void enumerate_any(Level& level, uint64_t candidates, uint64_t e) {
    for (uint64_t c = candidates; c; c &= c - 1) {
      const int x = lowest(c);
      const uint64_t next = e | level.closure[static_cast<size_t>(x)];
      evaluate(level, next);
      enumerate_any(level, (c & (c - 1)) & ~dag_.desc[static_cast<size_t>(x)], next);
    }
  }

  // Any-shape endings under pruning: the groups (connected components) are
  // tracked as roots are added. A group only grows when roots are added, so
  // a group over r units prunes the whole branch; the group count can drop
  // (a new closure may join two groups), so s is checked per ending, and
  // |E| > r*s prunes the branch.
  void enumerate_any_pruned(Level& level, uint64_t candidates, uint64_t e, size_t comps_begin,
                            int num_comps) {
    // The groups live on comp_stack_ (indices, not pointers: it may grow);
    // each call pushes its children's groups above its own and pops them.
    for (uint64_t c = candidates; c; c &= c - 1) {
      const int x = lowest(c);
      const uint64_t cx = level.closure[static_cast<size_t>(x)];
      const size_t top = comp_stack_.size();
      uint64_t joined = cx;
      for (int i = 0; i < num_comps; ++i) {
        const uint64_t comp = comp_stack_[comps_begin + static_cast<size_t>(i)];
        if (comp & cx) {
          joined |= comp;
        } else {
          comp_stack_.push_back(comp);
        }
      }
      if (r_ != 0 && popcount(joined) > r_) {
        comp_stack_.resize(top);
        continue;
      }
      comp_stack_.push_back(joined);
      const int kept = static_cast<int>(comp_stack_.size() - top);
      const uint64_t next = e | cx;
      if (s_ == 0 || kept <= s_) evaluate(level, next);
      if (r_ == 0 || s_ == 0 || popcount(next) < r_ * s_) {
        enumerate_any_pruned(level, (c & (c - 1)) & ~dag_.desc[static_cast<size_t>(x)], next, top, kept);
      }
      comp_stack_.resize(top);
    }
  }

  bool is_antichain(uint64_t e) const {
    for (uint64_t b = e; b; b &= b - 1) {
      if (dag_.succ[static_cast<size_t>(lowest(b))] & e) return false;
    }
    return true;
  }

  // A lower bound of the concurrent stage `e`'s latency (CostModel::UnitBound):
  // its longest weakly connected component (group) by the units' stream
  // bounds, or the device time all its units fill, less a relative 1e-6 for
  // the simulator's rounding.
  double stage_bound(uint64_t e) const {
    double longest = 0.0, slots = 0.0, dram = 0.0;
    for (uint64_t rest = e; rest;) {
      uint64_t comp = rest & -rest;
      double sum = 0.0;
      for (uint64_t frontier = comp; frontier;) {
        const int x = lowest(frontier);
        frontier &= frontier - 1;
        const CostModel::UnitBound& b = bound_[static_cast<size_t>(x)];
        sum += b.stream_ms;
        slots += b.slots_ms;
        dram += b.dram_ms;
        const uint64_t nb =
            (dag_.succ[static_cast<size_t>(x)] | dag_.pred[static_cast<size_t>(x)]) & e & ~comp;
        comp |= nb;
        frontier |= nb;
      }
      rest &= ~comp;
      longest = std::max(longest, sum);
    }
    return std::max({longest, slots, dram}) * (1.0 - 1e-6);
  }

  // Calls fn(u) for each global unit local unit x stands for, in order.
  template <typename Fn>
  void for_members(int x, Fn&& fn) const {
    if (dag_.members.empty()) {
      fn(dag_.units[static_cast<size_t>(x)]);
    } else {
      for (UnitId u : dag_.members[static_cast<size_t>(x)]) fn(u);
    }
  }
  bool single_members(uint64_t e) const {
    if (dag_.members.empty()) return true;
    for (uint64_t b = e; b; b &= b - 1) {
      if (dag_.members[static_cast<size_t>(lowest(b))].size() != 1) return false;
    }
    return true;
  }

  // The groups of the concurrent stage `e` (group_masks), as units. With
  // `key`, also the stage's cost classes (CostModel::cost_class) in the same
  // order, groups separated by -1: equal keys, equal latencies.
  void fill_groups(uint64_t e, Stage& stage, std::vector<int64_t>* key = nullptr) const {
    const std::vector<uint64_t> masks = group_masks(dag_, e);
    stage.groups.resize(masks.size());
    if (key != nullptr) key->clear();
    for (size_t k = 0; k < masks.size(); ++k) {
      auto& group = stage.groups[k];
      group.clear();
      for (uint64_t b = masks[k]; b; b &= b - 1) {
        const int x = lowest(b);
        for_members(x, [&](UnitId u) { group.push_back(u); });
        if (key != nullptr) {
          const auto& classes = classes_[static_cast<size_t>(x)];
          key->insert(key->end(), classes.begin(), classes.end());
        }
      }
      if (key != nullptr) key->push_back(-1);
    }
  }

  struct KeyHash {
    size_t operator()(const std::vector<int64_t>& key) const {
      uint64_t h = 1469598103934665603ull;
      for (int64_t v : key) h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
      return static_cast<size_t>(h);
    }
  };

  StageEntry stage_cost(uint64_t e) {
    if (const StageEntry* st = stages_.find(e); st != nullptr && !st->stale) return *st;
    check_deadline(true);
    StageEntry best;
    const bool single = (e & (e - 1)) == 0;
    if (use_concurrent_ || single) {
      scratch_.strategy = Strategy::kConcurrent;
      best.strategy = Strategy::kConcurrent;
      // A stage of the same cost classes as one costed before costs the same.
      // Building the key costs a tenth of a simulation or so: a block whose
      // stages seldom repeat (under one in four of the first 4,096) stops
      // looking (NASNet's cells, already searched once per signature).
      if (class_lookups_ == 4096 && class_hits_ * 4 < class_lookups_) classes_.clear();
      const bool classed = !classes_.empty();
      fill_groups(e, scratch_, classed ? &key_ : nullptr);
      const auto known = classed ? class_costs_.find(key_) : class_costs_.end();
      class_lookups_ += classed ? 1 : 0;
      if (known != class_costs_.end()) {
        ++class_hits_;
        best.cost = known->second;
      } else {
        best.cost = cost_->stage_latency(scratch_);
        IOS_ASSERT(best.cost >= 0.0, "cost model '{}' gave stage latency {}", cost_->name(), best.cost);
        ++stages_costed_;
        if (classed) class_costs_.emplace(key_, best.cost);
      }
    }
    if (use_merge_ && !single && can_merge_ && single_members(e) && is_antichain(e)) {
      std::vector<UnitId> units;
      for (uint64_t b = e; b; b &= b - 1) units.push_back(dag_.units[static_cast<size_t>(lowest(b))]);
      if (can_merge_(units)) {
        Stage merged;
        merged.strategy = Strategy::kMerge;
        merged.groups.push_back(std::move(units));
        const double latency = cost_->stage_latency(merged);
        IOS_ASSERT(latency >= 0.0, "cost model '{}' gave merge latency {}", cost_->name(), latency);
        ++stages_costed_;
        if (latency < best.cost) {
          best.cost = latency;
          best.strategy = Strategy::kMerge;
        }
      }
    }
    stages_.insert(e, best);
    return best;
  }

  const BlockDag& dag_;
  const IosOptions& options_;
  sched::CostModel* cost_;
  const MergePredicate& can_merge_;
  const std::optional<std::chrono::steady_clock::time_point> deadline_;
  const BlockMemory* memory_ = nullptr;
  const int r_;
  const int s_;
  bool use_concurrent_ = true;
  bool use_merge_ = true;
  bool sinks_only_ = false;
  MaskMap<MemoEntry> memo_;
  MaskMap<StageEntry> own_stages_;  // when no cache is shared
  MaskMap<StageEntry>& stages_;
  std::vector<CostModel::UnitBound> bound_;  // per block unit; empty: the model gives none
  // Per block unit, its members' cost classes; empty: some unit has none.
  std::vector<std::vector<int64_t>> classes_;
  std::vector<int64_t> key_;
  int64_t class_lookups_ = 0;
  int64_t class_hits_ = 0;
  std::unordered_map<std::vector<int64_t>, double, KeyHash> class_costs_;  // concurrent stages by classes
  Stage scratch_;
  std::vector<uint64_t> comp_stack_;
  int64_t states_ = 0;
  int64_t transitions_ = 0;
  int64_t stages_costed_ = 0;
  bool count_only_ = false;
  int64_t counted_ = 0;
  uint32_t ticks_ = 0;
};

// Every predecessor-closed non-empty subset of `dag`, up to `max_states`
// of them (nullopt beyond).
std::optional<std::vector<uint64_t>> all_states(const BlockDag& dag, int64_t max_states) {
  std::vector<uint64_t> states = {dag.all()};
  MaskMap<char> seen(1024);
  seen.insert(dag.all(), 1);
  for (size_t i = 0; i < states.size(); ++i) {
    const uint64_t s = states[i];
    for (uint64_t b = s; b; b &= b - 1) {
      const int x = lowest(b);
      const uint64_t rest = s & ~bit(x);
      if ((dag.succ[static_cast<size_t>(x)] & s) != 0 || rest == 0 || seen.find(rest)) continue;
      if (static_cast<int64_t>(states.size()) >= max_states) return std::nullopt;
      seen.insert(rest, 1);
      states.push_back(rest);
    }
  }
  return states;
}

}  // namespace

BlockSolution solve_block(const BlockDag& dag, const IosOptions& options, sched::CostModel& cost,
                          const MergePredicate& can_merge, const SolveLimits& limits,
                          StageCostCache* cache) {
  IOS_ASSERT(dag.n > 0 && dag.n <= kMaxBlockUnits, "block of {} units", dag.n);
  IOS_ASSERT(options.max_group_units >= 0 && options.max_groups >= 0, "negative pruning r={} s={}",
             options.max_group_units, options.max_groups);
  const auto start = std::chrono::steady_clock::now();
  Solver solver(dag, options, &cost, can_merge, limits, cache);
  BlockSolution out;
  try {
    out.latency_ms = solver.solve(dag.all());
    out.feasible = out.latency_ms < kInf;
    if (out.feasible) out.stages = solver.rebuild(dag.all());
  } catch (const Abandoned&) {
    out.complete = false;
  }
  out.states = solver.states();
  out.transitions = solver.transitions();
  out.stages_costed = solver.stages_costed();
  out.search_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

uint64_t stage_mask(const BlockDag& dag, const Stage& stage) {
  uint64_t mask = 0;
  for (const auto& group : stage.groups) {
    for (UnitId u : group) {
      int x = -1;
      for (int i = 0; i < dag.n && x < 0; ++i) {
        const auto& m = dag.members.empty() ? std::vector<UnitId>{dag.units[static_cast<size_t>(i)]}
                                            : dag.members[static_cast<size_t>(i)];
        if (std::find(m.begin(), m.end(), u) != m.end()) x = i;
      }
      IOS_ASSERT(x >= 0, "unit {} is not in the block", u);
      mask |= bit(x);
    }
  }
  return mask;
}

BlockDag contract_free_units(const BlockDag& dag, CostModel& cost, const MergePredicate& can_merge) {
  if (!dag.members.empty()) return dag;
  const auto n = static_cast<size_t>(dag.n);
  std::vector<bool> free(n);
  for (size_t x = 0; x < n; ++x) free[x] = cost.free_unit(dag.units[x]);
  if (std::none_of(free.begin(), free.end(), [](bool f) { return f; })) return dag;
  // Whether x merges with another unit of the block (then it stays on its
  // own: a merge stage is of single units). Asked lazily, once.
  std::vector<int> merges(n, -1);
  auto merges_with_some = [&](size_t x) {
    if (!can_merge) return false;
    if (merges[x] < 0) {
      merges[x] = 0;
      for (size_t y = 0; y < n && merges[x] == 0; ++y) {
        const bool related = y == x || ((dag.desc[x] | dag.anc[x]) & bit(static_cast<int>(y))) != 0;
        if (!related && can_merge({dag.units[x], dag.units[y]})) merges[x] = 1;
      }
    }
    return merges[x] == 1;
  };
  // Links a -> b of a chain (a's only successor is b, b's only predecessor
  // a) with a free end, whose other end is free or merges with nothing,
  // taken in the order of a while the path they make holds at most one unit
  // that is not free: a free unit joins one neighbour that costs, never two
  // (that would tie two costing units to one group and stage). Then any
  // schedule of the block becomes one of the joined DAG's, no slower, by
  // moving each free unit into its neighbour's group: it costs nothing
  // there and leaves a group (or a stage) that only loses a free unit.
  std::vector<int> next(n, -1);
  std::vector<bool> linked_in(n, false);
  std::vector<int> costing(n);  // per path, by its last unit: units that are not free
  for (size_t x = 0; x < n; ++x) costing[x] = free[x] ? 0 : 1;
  bool any = false;
  for (size_t a = 0; a < n; ++a) {
    if (popcount(dag.succ[a]) != 1) continue;
    const auto b = static_cast<size_t>(lowest(dag.succ[a]));
    if (popcount(dag.pred[b]) != 1 || !(free[a] || free[b])) continue;
    // b starts no path yet (its only incoming link is this one), so the
    // path is a's, extended by b.
    if (costing[a] + costing[b] > 1) continue;
    if ((!free[a] && merges_with_some(a)) || (!free[b] && merges_with_some(b))) continue;
    next[a] = static_cast<int>(b);
    linked_in[b] = true;
    costing[b] += costing[a];
    any = true;
  }
  if (!any) return dag;
  // Each path of links is one local unit, numbered by its first unit: an
  // edge into a path reaches its first unit and one out of it leaves its
  // last, so edges still go from lower to higher indices.
  std::vector<int> node_of(n, -1);
  std::vector<std::vector<UnitId>> members;
  for (size_t x = 0; x < n; ++x) {
    if (linked_in[x]) continue;
    const int node = static_cast<int>(members.size());
    members.emplace_back();
    for (int y = static_cast<int>(x); y >= 0; y = next[static_cast<size_t>(y)]) {
      node_of[static_cast<size_t>(y)] = node;
      members.back().push_back(dag.units[static_cast<size_t>(y)]);
    }
  }
  std::vector<std::pair<int, int>> edges;
  for (size_t u = 0; u < n; ++u) {
    for (uint64_t b = dag.succ[u]; b; b &= b - 1) {
      const int v = node_of[static_cast<size_t>(lowest(b))];
      if (v != node_of[u]) edges.emplace_back(node_of[u], v);
    }
  }
  BlockDag out = BlockDag::from_edges(static_cast<int>(members.size()), edges);
  for (size_t i = 0; i < members.size(); ++i) out.units[i] = members[i].front();
  out.members = std::move(members);
  return out;
}

SearchEstimate estimate_search(const BlockDag& dag, const IosOptions& options, int64_t max_states,
                               int samples) {
  IOS_ASSERT(dag.n > 0 && dag.n <= kMaxBlockUnits && samples > 0, "block of {} units", dag.n);
  SearchEstimate out;
  const std::optional<std::vector<uint64_t>> states = all_states(dag, max_states);
  if (!states) {
    out.exact_states = false;
    out.states = static_cast<double>(max_states);
    out.transitions = std::pow(10.0, log10_search_bound(dag.n, dag.width()));
    return out;
  }
  const MergePredicate never;
  Solver solver(dag, options, nullptr, never);
  const size_t n = states->size();
  const size_t taken = std::min(n, static_cast<size_t>(samples));
  double endings = 0.0;
  for (size_t k = 0; k < taken; ++k) {
    // Evenly spread over the list, which runs from the largest states (found
    // first) to the smallest, so large and small states are both sampled.
    endings += static_cast<double>(solver.count_endings((*states)[k * n / taken]));
  }
  out.states = static_cast<double>(n);
  out.transitions = endings / static_cast<double>(taken) * static_cast<double>(n);
  return out;
}

std::vector<uint64_t> group_masks(const BlockDag& dag, uint64_t mask) {
  struct Group {
    uint64_t units;
    int chain;  // the lowest chain of the group's first units
  };
  std::vector<Group> groups;
  for (uint64_t rest = mask; rest;) {
    uint64_t comp = rest & -rest;
    for (uint64_t frontier = comp; frontier;) {
      const int x = lowest(frontier);
      frontier &= frontier - 1;
      const uint64_t nb =
          (dag.succ[static_cast<size_t>(x)] | dag.pred[static_cast<size_t>(x)]) & mask & ~comp;
      comp |= nb;
      frontier |= nb;
    }
    rest &= ~comp;
    int chain = kMaxBlockUnits;
    for (uint64_t b = comp; b; b &= b - 1) {
      const int x = lowest(b);
      if ((dag.pred[static_cast<size_t>(x)] & comp) == 0) {
        chain = std::min(chain, dag.chain[static_cast<size_t>(x)]);
      }
    }
    groups.push_back({comp, chain});
  }
  std::stable_sort(groups.begin(), groups.end(),
                   [](const Group& a, const Group& b) { return a.chain < b.chain; });
  std::vector<uint64_t> out;
  out.reserve(groups.size());
  for (const Group& g : groups) out.push_back(g.units);
  return out;
}

std::vector<std::vector<int>> ending_groups(const BlockDag& dag, uint64_t mask) {
  std::vector<std::vector<int>> groups;
  for (uint64_t g : group_masks(dag, mask)) {
    groups.emplace_back();
    for (uint64_t b = g; b; b &= b - 1) groups.back().push_back(lowest(b));
  }
  return groups;
}

}  // namespace ios::sched
