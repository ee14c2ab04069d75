// The IOS and DOS schedulers: the DP of ios_dp.cpp run block by block, the
// blocks' stages concatenated.
//
// Every block first gets its greedy and sequential schedules (a complete
// schedule within milliseconds), and keeps the fastest of those and the
// DP's: pruning (r, s) can forbid the stage greedy picks (a stage of more
// than s parallel branches), so the DP alone may lose to greedy. IOS-Merge
// compares with sequential only: greedy's concurrent stages are outside its
// space.
//
// Under a time limit the DP then improves blocks in the order of their
// expected gain (the gap between the sequential and greedy schedules: the
// concurrency there is to exploit). Each block gets a share of the time left
// in proportion to the estimated size of its search (estimate_search) at the
// requested pruning, so when the whole search fits in the limit every block
// is searched as without one. A block whose search does not fit its share
// gets the first cheaper pruning of a fixed ladder that fits, or is skipped;
// a search that overruns its deadline is abandoned and the block keeps its
// baseline stages.
//
// Where the cost model's stage costs follow stage signatures (the simulator,
// measurements), a block that repeats an earlier one (same signature: the
// same units, edges and shared inputs, as NASNet's cells are) is not
// searched again: it gets the earlier block's result with its own units,
// which is what its own search would have found.
//
// With several threads (and a thread-safe cost model) the blocks are
// searched in parallel, taken in the same order; a block's share of the time
// left then counts every thread's time. Each block's search is independent
// of the others', so whenever every block completes, the schedule is the
// same with any number of threads.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>

#include "core/log.h"
#include "sched/builtin_schedulers.h"
#include "sched/merge.h"
#include "sched/signature.h"

namespace ios::sched {

namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// The requested pruning, then cheaper ones: at most 3 units per group and
// fewer groups per stage (the number of endings of a state grows with
// C(width, s)).
std::vector<IosOptions> pruning_ladder(const IosOptions& requested) {
  std::vector<IosOptions> steps = {requested};
  const int r = requested.max_group_units;
  const int capped_r = (r == 0 || r > 3) ? 3 : r;
  for (int s : {8, 4, 2}) {
    const IosOptions& last = steps.back();
    if (last.max_groups != 0 && s >= last.max_groups && capped_r == last.max_group_units) continue;
    IosOptions step = requested;
    step.max_group_units = capped_r;
    step.max_groups = last.max_groups == 0 ? s : std::min(s, last.max_groups);
    if (step.max_groups == last.max_groups && step.max_group_units == last.max_group_units) continue;
    steps.push_back(step);
  }
  return steps;
}

// Milliseconds per DP transition (costing included), learned from the
// blocks searched so far. The prior is a slow machine's rate for the
// simulated cost model (about 150 ns measured on the 2-core development
// machine under load), so the first blocks are not over-committed.
class SearchRate {
 public:
  void add(int64_t transitions, double ms) {
    transitions_ += static_cast<double>(transitions);
    ms_ += ms;
  }
  double ms_per_transition() const {
    constexpr double kPrior = 2.5e-4;
    // Too few transitions measure the clock and the baselines, not the DP.
    if (transitions_ < 1e6) return kPrior;
    return std::max(ms_ / transitions_, kPrior / 8.0);
  }

 private:
  double transitions_ = 0.0;
  double ms_ = 0.0;
};

// Estimated transitions of each ladder step, per block shape: the parts of
// one wide region are mostly the same DAG, estimated once.
class EstimateCache {
 public:
  const std::vector<double>& get(const BlockDag& dag, const std::vector<IosOptions>& ladder) {
    std::vector<uint64_t> key(dag.pred.begin(), dag.pred.begin() + dag.n);
    key.push_back(static_cast<uint64_t>(dag.n));
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    std::vector<double> transitions;
    for (const IosOptions& step : ladder) transitions.push_back(estimate_search(dag, step).transitions);
    return cache_.emplace(std::move(key), std::move(transitions)).first->second;
  }

 private:
  std::map<std::vector<uint64_t>, std::vector<double>> cache_;
};

// One block's schedules and statistics while the search runs.
struct BlockWork {
  BlockDag dag;
  // What the DP searches: `dag` with its free units joined to the units they
  // chain to (contract_free_units), or `dag` itself under a memory bound (a
  // stage's live bytes are the units' own).
  BlockDag search_dag;
  BaselineBlock greedy, sequential;
  std::optional<BlockSolution> solution;  // the DP's, once it finished
  BlockStats stats;
  const BlockMemory* memory = nullptr;  // under a memory bound
  // Whether `stages` keep within the memory bound (always without one).
  bool fits(const std::vector<Stage>& stages) const {
    return memory == nullptr || memory->peak(dag, stages) <= memory->bound;
  }
};

class DpScheduler : public Scheduler {
 public:
  DpScheduler(std::string name, Params params, IosOptions options)
      : name_(std::move(name)), params_(std::move(params)), options_(options),
        ladder_(pruning_ladder(options)) {}

  Schedule run(const UnitGraph& graph, sched::CostModel& cost, SearchStats& stats) override {
    const Clock::time_point start = Clock::now();
    Schedule schedule = new_schedule(name_, params_, cost);
    if (graph.ir() != nullptr) {
      can_merge_ = [&graph](const std::vector<UnitId>& units) {
        return check_merge(graph, units).spec.has_value();
      };
    }
    const int num_blocks = static_cast<int>(graph.blocks().size());
    std::vector<BlockWork> work(static_cast<size_t>(num_blocks));
    std::vector<BlockMemory> memories;
    if (memory_bound() > 0 && graph.ir() != nullptr) memories = block_memories(graph, memory_bound());
    for (int b = 0; b < num_blocks; ++b) {
      BlockWork& w = work[static_cast<size_t>(b)];
      if (!memories.empty()) w.memory = &memories[static_cast<size_t>(b)];
      w.dag = BlockDag::from_block(graph, graph.blocks()[static_cast<size_t>(b)]);
      const bool contract = w.memory == nullptr && options_.ending_rule == EndingRule::kIos &&
                            options_.strategies != StrategySet::kMerge;
      w.search_dag = contract ? contract_free_units(w.dag, cost, can_merge_) : w.dag;
      w.greedy = greedy_block(w.dag, cost);
      w.sequential = sequential_block(w.dag, cost);
      // A budgeted measured model answers with estimates until asked to
      // settle: the baselines the DP must beat are measured.
      if (cost.settle(w.greedy.stages) | cost.settle(w.sequential.stages)) {
        w.greedy = greedy_block(w.dag, cost);
        w.sequential = sequential_block(w.dag, cost);
      }
      w.stats = plain_block_stats(graph, b, 0.0, 0.0);
      w.stats.search = BlockSearch::kSkipped;
    }
    std::vector<int> distinct = find_repeats(graph, cost, work);
    if (!memories.empty() && prior() != nullptr) {
      take_prior_blocks(*prior(), cost, work);
      std::erase_if(distinct, [&](int b) { return work[static_cast<size_t>(b)].solution.has_value(); });
    }
    workers_ = cost.thread_safe() ? std::min(threads(), std::max(1, static_cast<int>(distinct.size())))
                                  : 1;
    if (time_limit_s() <= 0.0) {
      for_each_block(distinct, [&](int b) {
        search(work[static_cast<size_t>(b)], options_, SolveLimits{}, cost);
      });
    } else {
      const auto limit = std::chrono::duration<double>(time_limit_s());
      search_within(work, distinct, start + std::chrono::duration_cast<Clock::duration>(limit),
                    cost);
    }
    for (BlockWork& w : work) {
      if (w.stats.same_as >= 0 && !w.solution) reuse_search(work[static_cast<size_t>(w.stats.same_as)], w);
    }
    // A repeated block lives among other activations than the block it
    // repeats: under a memory bound, one whose reused stages do not fit is
    // searched on its own (within the time left, if limited).
    // Copies in the same memory context (the same bytes carried through and
    // coming in) share one search.
    std::map<std::vector<int64_t>, int> searched;
    for (size_t b = 0; b < work.size(); ++b) {
      BlockWork& w = work[b];
      if (w.memory == nullptr || w.stats.same_as < 0 || (w.solution && w.fits(w.solution->stages))) continue;
      std::vector<int64_t> context = {w.stats.same_as, w.memory->carried, static_cast<int64_t>(w.memory->escapes)};
      for (const auto& [bytes, readers] : w.memory->inputs) {
        context.push_back(bytes);
        context.push_back(static_cast<int64_t>(readers));
      }
      if (auto it = searched.find(context); it != searched.end()) {
        w.solution.reset();
        reuse_search(work[static_cast<size_t>(it->second)], w);
        if (!w.solution || w.fits(w.solution->stages)) continue;
      }
      w.solution.reset();
      w.stats.same_as = -1;
      searched[context] = static_cast<int>(b);
      SolveLimits limits;
      if (time_limit_s() > 0.0) {
        limits.deadline = start + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(time_limit_s()));
      }
      search(w, options_, limits, cost);
    }
    StagedSchedule staged;
    for (BlockWork& w : work) {
      keep_fastest(w, staged);
      stats.blocks.push_back(w.stats);
      stats.total_search_ms += w.stats.search_ms;
      schedule.predicted_latency_ms += w.stats.predicted_ms;
    }
    schedule.body = std::move(staged);
    return schedule;
  }

 private:
  // Marks each block that repeats an earlier one (BlockStats::same_as) where
  // the cost model allows it, and returns the others, in order: the blocks
  // to search.
  static std::vector<int> find_repeats(const UnitGraph& graph, const sched::CostModel& cost,
                                       std::vector<BlockWork>& work) {
    std::vector<int> distinct;
    std::map<std::string, int> first;  // block signature -> the first block with it
    const bool reuse = graph.ir() != nullptr && cost.costs_follow_signatures();
    for (int b = 0; b < static_cast<int>(work.size()); ++b) {
      if (reuse) {
        const auto [it, added] =
            first.emplace(block_signature(graph, graph.blocks()[static_cast<size_t>(b)]), b);
        if (!added) {
          work[static_cast<size_t>(b)].stats.same_as = it->second;
          continue;
        }
      }
      distinct.push_back(b);
    }
    return distinct;
  }

  // Under a memory bound: each block whose stages in `prior` keep within it
  // takes them as its solution (Scheduler::set_prior), a repeated block
  // included (it is no longer a copy). Stages are re-costed: a measured
  // model may have settled estimates since.
  static void take_prior_blocks(const StagedSchedule& prior, sched::CostModel& cost, std::vector<BlockWork>& work) {
    std::map<UnitId, size_t> block_of;
    for (size_t b = 0; b < work.size(); ++b) {
      for (UnitId u : work[b].dag.units) block_of[u] = b;
    }
    std::vector<std::vector<Stage>> stages(work.size());
    for (const Stage& stage : prior.stages) {
      if (stage.groups.empty() || stage.groups.front().empty()) continue;
      const auto it = block_of.find(stage.groups.front().front());
      if (it != block_of.end()) stages[it->second].push_back(stage);
    }
    for (size_t b = 0; b < work.size(); ++b) {
      BlockWork& w = work[b];
      size_t covered = 0;
      for (const Stage& stage : stages[b]) {
        for (const auto& group : stage.groups) covered += group.size();
      }
      if (covered != w.dag.units.size() || !w.fits(stages[b])) continue;
      BlockSolution solution;
      for (Stage& stage : stages[b]) {
        stage.predicted_ms = cost.stage_latency(stage);
        solution.latency_ms += stage.predicted_ms;
      }
      solution.stages = std::move(stages[b]);
      w.solution = std::move(solution);
      w.stats.same_as = -1;
      w.stats.search = BlockSearch::kComplete;
    }
  }

  // Gives `copy` the search result of the block it repeats, in its own units
  // (the same local order: unit i of one is unit i of the other).
  static void reuse_search(const BlockWork& original, BlockWork& copy) {
    const BlockStats& from = original.stats;
    BlockStats& to = copy.stats;
    to.search = from.search;
    to.r = from.r;
    to.s = from.s;
    if (!original.solution) return;
    BlockSolution solution = *original.solution;
    const UnitId offset = copy.dag.units.front() - original.dag.units.front();
    for (Stage& stage : solution.stages) {
      for (auto& group : stage.groups) {
        for (UnitId& u : group) u += offset;
      }
    }
    solution.states = solution.transitions = solution.stages_costed = 0;
    solution.search_ms = 0.0;
    copy.solution = std::move(solution);
  }

  // Runs `fn(b)` for every block b of `order`, in that order on one thread
  // or taken in that order by workers_ threads, and reports each block done.
  // An error in any block (an internal error, a failed allocation) stops the
  // others from taking new blocks and is rethrown here once all have ended.
  void for_each_block(const std::vector<int>& order, const std::function<void(int)>& fn) {
    std::atomic<size_t> next{0};
    int done = 0;
    std::exception_ptr error;
    auto worker = [&] {
      for (size_t k; (k = next.fetch_add(1)) < order.size();) {
        try {
          fn(order[k]);
        } catch (...) {
          const std::lock_guard<std::mutex> lock(mutex_);
          if (!error) error = std::current_exception();
          next = order.size();
          return;
        }
        const std::lock_guard<std::mutex> lock(mutex_);
        report_block_done(++done, static_cast<int>(order.size()));
      }
    };
    std::vector<std::thread> helpers;
    for (int t = 1; t < workers_; ++t) {
      // A thread the system refuses (ulimit -u, address space) leaves the
      // search to those that started: fewer threads, the same schedule.
      // Left to propagate, the error would destroy the running helpers
      // unjoined, which aborts the process.
      try {
        helpers.emplace_back(worker);
      } catch (const std::system_error& e) {
        logger("sched")->warn("started {} of {} search threads ({}); searching with {}", t, workers_,
                              e.what(), t);
        break;
      }
    }
    worker();
    for (std::thread& helper : helpers) helper.join();
    if (error) std::rethrow_exception(error);
  }

  // Runs the DP on one block with `options`; true when it finished. Where
  // the cost model settles the chosen stages (CostModel::settle: a budgeted
  // measured search), the block is searched again until its schedule's
  // stages are all settled, and keeps the fastest settled schedule found.
  bool search(BlockWork& w, const IosOptions& options, const SolveLimits& limits,
              sched::CostModel& cost) {
    StageCostCache known(1 << 14);  // shared by the rounds while the model's revision holds
    bool settling = false;
    for (int round = 1;; ++round) {
      const uint64_t revision = cost.revision();
      SolveLimits bounded = limits;
      bounded.memory = w.memory;
      BlockSolution solution = solve_block(w.search_dag, options, cost, can_merge_, bounded, &known);
      BlockStats& s = w.stats;
      s.states += solution.states;
      s.transitions += solution.transitions;
      s.stages_costed += solution.stages_costed;
      s.search_ms += solution.search_ms;
      s.r = options.max_group_units;
      s.s = options.max_groups;
      const bool requested = options.max_group_units == options_.max_group_units &&
                             options.max_groups == options_.max_groups;
      s.search = !solution.complete ? BlockSearch::kAbandoned
                 : requested        ? BlockSearch::kComplete
                                    : BlockSearch::kReduced;
      logger("sched")->debug("{} block {}: {} units, width {}, r={} s={}, round {}: {}, {} states, {} "
                             "transitions, {} stages costed, {:.3f} ms predicted, {:.1f} ms search",
                             name_, s.block, s.units, s.width, s.r, s.s, round,
                             block_search_name(s.search), solution.states, solution.transitions,
                             solution.stages_costed, solution.complete ? solution.latency_ms : 0.0,
                             solution.search_ms);
      if (!solution.complete) break;
      if (!solution.feasible) return true;  // searched: nothing fits, a cheaper pruning fits no better
      {
        const std::lock_guard<std::mutex> lock(mutex_);
        rate_.add(solution.transitions, solution.search_ms);
      }
      // A model that settles: the chosen stages' costs asked again. Any that
      // moved (measured now, or measured already under an identical stage's
      // mask whose cost this search had cached) is asked anew next round;
      // when the corrections moved, every cost is.
      settling = cost.settle(solution.stages) || settling;
      const bool moved = settling && reprice(solution, cost, w.search_dag, known);
      if (!w.solution || solution.latency_ms <= w.solution->latency_ms) w.solution = std::move(solution);
      if (!settling) break;
      if (cost.revision() != revision) {
        known = StageCostCache(1 << 14);
        continue;
      }
      if (!moved) break;
    }
    return w.solution.has_value();
  }

  // Asks the cost of each of the solution's stages again, updates them and
  // the solution's latency, and marks in `known` the stages whose cost
  // moved; true when any did.
  static bool reprice(BlockSolution& solution, sched::CostModel& cost, const BlockDag& dag,
                      StageCostCache& known) {
    bool moved = false;
    solution.latency_ms = 0.0;
    for (Stage& stage : solution.stages) {
      const double now = cost.stage_latency(stage);
      if (now != stage.predicted_ms) {
        moved = true;
        if (CachedStageCost* cached = known.find(stage_mask(dag, stage))) cached->stale = true;
      }
      stage.predicted_ms = now;
      solution.latency_ms += now;
    }
    return moved;
  }

  // The anytime search of the blocks `order`: by expected gain, each with its
  // share of the time left (see the file comment).
  void search_within(std::vector<BlockWork>& work, std::vector<int> order,
                     Clock::time_point deadline, sched::CostModel& cost) {
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return gap(work[static_cast<size_t>(a)]) > gap(work[static_cast<size_t>(b)]);
    });
    // Estimated transitions per ladder step; blocks not estimated before the
    // deadline are skipped.
    EstimateCache cache;
    std::vector<std::vector<double>> estimates(work.size());
    double rest = 0.0;  // the requested searches of the blocks not yet searched
    for (int b : order) {
      if (Clock::now() >= deadline) break;
      estimates[static_cast<size_t>(b)] = cache.get(work[static_cast<size_t>(b)].search_dag, ladder_);
      rest += estimates[static_cast<size_t>(b)].front();
    }
    for_each_block(order, [&](int b) {
      const std::vector<double>& estimate = estimates[static_cast<size_t>(b)];
      if (estimate.empty()) return;
      double share_ms = 0.0;
      {
        // The time left is every worker's: a block may take up to all of it
        // on its own thread.
        const std::lock_guard<std::mutex> lock(mutex_);
        const double left_ms = ms_between(Clock::now(), deadline);
        share_ms = std::min(left_ms, workers_ * left_ms * estimate.front() /
                                         std::max(rest, estimate.front()));
        rest -= estimate.front();
      }
      search_share(work[static_cast<size_t>(b)], estimate, share_ms, deadline, cost);
    });
  }

  // Searches one block with the most thorough pruning of the ladder whose
  // estimated time fits `share_ms`, falling back to cheaper ones when a
  // search is abandoned.
  void search_share(BlockWork& w, const std::vector<double>& estimate, double share_ms,
                    Clock::time_point deadline, sched::CostModel& cost) {
    const Clock::time_point start = Clock::now();
    for (size_t step = 0; step < ladder_.size(); ++step) {
      const Clock::time_point now = Clock::now();
      const double left_ms = share_ms - ms_between(start, now);
      const double expected_ms = estimate[step] * ms_per_transition();
      if (now >= deadline || left_ms <= 0.0) return;
      if (expected_ms > left_ms) continue;
      // Room for an estimate off by 3x; never past the overall deadline.
      const double allowed_ms = std::max(left_ms, 3.0 * expected_ms);
      SolveLimits limits;
      limits.deadline = std::min(
          deadline, now + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double, std::milli>(allowed_ms)));
      if (search(w, ladder_[step], limits, cost)) return;
    }
  }

  double ms_per_transition() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return rate_.ms_per_transition();
  }

  static double gap(const BlockWork& w) {
    return w.sequential.latency_ms - w.greedy.latency_ms;
  }

  // Whether no stage of `stages` has more groups than max_streams() allows.
  bool within_streams(const std::vector<Stage>& stages) const {
    return max_streams() == 0 || std::all_of(stages.begin(), stages.end(), [&](const Stage& s) {
             return static_cast<int>(s.groups.size()) <= max_streams();
           });
  }

  // Appends the block's fastest schedule (the DP's on a tie) to `staged`.
  // Greedy's stages are concurrent: they are a candidate only where the
  // scheduler's own stages may be (not for IOS-Merge, whose schedules are
  // single units and merges by definition).
  void keep_fastest(BlockWork& w, StagedSchedule& staged) const {
    const bool greedy_allowed = options_.strategies != StrategySet::kMerge;
    std::vector<Stage>* stages = nullptr;
    double best = 0.0;
    if (w.solution) {
      stages = &w.solution->stages;
      best = w.solution->latency_ms;
      w.stats.kept = BlockSource::kScheduler;
    }
    // Under a memory bound the baselines compete only where they fit (the
    // DP's stages always do); when nothing fits, sequential stays, and
    // ios-optimize reports the schedule over its limit.
    if (greedy_allowed && (!stages || w.greedy.latency_ms < best) && w.fits(w.greedy.stages) &&
        within_streams(w.greedy.stages)) {
      stages = &w.greedy.stages;
      best = w.greedy.latency_ms;
      w.stats.kept = BlockSource::kGreedy;
    }
    if (!stages || (w.sequential.latency_ms < best && w.fits(w.sequential.stages))) {
      stages = &w.sequential.stages;
      best = w.sequential.latency_ms;
      w.stats.kept = BlockSource::kSequential;
    }
    w.stats.predicted_ms = best;
    for (Stage& stage : *stages) staged.stages.push_back(std::move(stage));
  }

  std::string name_;
  Params params_;
  IosOptions options_;
  std::vector<IosOptions> ladder_;
  MergePredicate can_merge_;
  SearchRate rate_;      // under mutex_
  int workers_ = 1;      // threads searching blocks in this run
  std::mutex mutex_;     // rate_, the time shares, progress reports
};

}  // namespace

std::unique_ptr<Scheduler> make_dp_scheduler(const std::string& name, const Params& params,
                                             const IosOptions& options) {
  return std::make_unique<DpScheduler>(name, params, options);
}

}  // namespace ios::sched
