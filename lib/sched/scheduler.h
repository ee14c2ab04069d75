// Scheduler interface and registry. Schedulers are registered by name with
// typed parameters; unknown or malformed parameters are user errors.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "sched/cost_model.h"
#include "sched/schedule.h"
#include "sched/unit_graph.h"

namespace ios::sched {

// How a searching scheduler's DP went on one block.
enum class BlockSearch {
  kNone,       // the scheduler does not search
  kComplete,   // searched completely with the requested pruning
  kReduced,    // searched completely with a cheaper pruning (r, s below) chosen for time
  kAbandoned,  // started, stopped by the time limit: no DP result
  kSkipped,    // not started: no time left for any pruning
};
// Whose stages the block's schedule uses: the scheduler's own, or a
// baseline's that was faster (or the only schedule when the DP did not finish).
enum class BlockSource { kScheduler, kGreedy, kSequential };

const char* block_search_name(BlockSearch search);  // "complete", "reduced", ...
const char* block_source_name(BlockSource source);  // "search", "greedy", "sequential"

// Search statistics of one block (IOS paper, Section 4.2 and Table 1).
struct BlockStats {
  int block = 0;
  int units = 0;              // n
  int width = 0;              // d
  int64_t states = 0;         // distinct S visited
  int64_t transitions = 0;    // (S, S') pairs evaluated
  int64_t stages_costed = 0;  // distinct stages sent to the cost model
  double search_ms = 0.0;
  double predicted_ms = 0.0;  // the block's scheduled latency
  BlockSearch search = BlockSearch::kNone;
  int r = 0, s = 0;  // the pruning the DP ran with (kComplete, kReduced, kAbandoned)
  BlockSource kept = BlockSource::kScheduler;
  // >= 0: this block repeats that earlier block (sched/signature.h), whose
  // search it reuses with its own units; its own counts are then zero.
  int same_as = -1;
};

struct SearchStats {
  std::vector<BlockStats> blocks;
  double total_search_ms = 0.0;
};

// A parameter: its declared type decides how "key=value" text is parsed.
using ParamValue = std::variant<int64_t, double, bool, std::string>;

struct ParamSpec {
  std::string name;
  ParamValue default_value;
  std::string help;
};

class Params {
 public:
  Params() = default;
  // Parses "r=3,s=8" against the specs; throws UserError naming the scheduler
  // and the parameter for unknown keys or values of the wrong type.
  static Params parse(const std::string& scheduler, const std::vector<ParamSpec>& specs,
                      const std::string& text);
  int64_t get_int(const std::string& name) const;
  double get_double(const std::string& name) const;
  bool get_bool(const std::string& name) const;
  const std::string& get_string(const std::string& name) const;
  // Effective values as text, sorted by name (written into schedule files).
  std::vector<std::pair<std::string, std::string>> to_strings() const;

 private:
  std::map<std::string, ParamValue> values_;
};

// Told after each block a searching scheduler finishes: blocks done, blocks
// in all (for progress displays; the search itself never depends on it).
using BlockProgress = std::function<void(int done, int total)>;

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  // Fills the schedule body, its predicted latency and the search statistics.
  // The caller fills model/device metadata.
  virtual Schedule run(const UnitGraph& graph, sched::CostModel& cost, SearchStats& stats) = 0;
  void set_block_progress(BlockProgress progress) { block_progress_ = std::move(progress); }
  // Seconds the search may take from the start of run(); 0 = no limit.
  // Schedulers that do not search ignore it (the CLI refuses it for them).
  void set_time_limit(double seconds) { time_limit_s_ = seconds; }
  // Threads the search may use (blocks searched in parallel, when the cost
  // model is thread-safe); results do not depend on it. At least 1.
  void set_threads(int threads) { threads_ = std::max(1, threads); }
  // The most live activation bytes a stage may have (sched/memory_bound.h);
  // 0 = no bound. The searching schedulers (IOS, DOS) keep every stage
  // within it where they can; the others ignore it (ios-optimize checks
  // every schedule's memory after the search).
  void set_memory_bound(int64_t live_bytes) { memory_bound_ = std::max<int64_t>(0, live_bytes); }
  // The most streams (groups of a stage) a schedule may use; 0 = no bound.
  // The pruning parameter s bounds the DP's own stages; this bounds the
  // baselines a searching scheduler keeps too (ios-optimize --max-streams).
  void set_max_streams(int streams) { max_streams_ = std::max(0, streams); }
  // A schedule this scheduler found with the same parameters and streams
  // under a looser memory bound (or none). Under a bound, a block whose
  // stages there keep within it is taken as it is, without a search: the
  // fastest schedule among more candidates that is also among fewer is the
  // fastest of the fewer. So only the blocks over the bound are searched
  // again (ios-optimize --memory-limit's bounded searches). Not owned.
  void set_prior(const StagedSchedule* prior) { prior_ = prior; }

 protected:
  double time_limit_s() const { return time_limit_s_; }
  int threads() const { return threads_; }
  int64_t memory_bound() const { return memory_bound_; }
  int max_streams() const { return max_streams_; }
  const StagedSchedule* prior() const { return prior_; }
  void report_block_done(int done, int total) const {
    if (block_progress_) block_progress_(done, total);
  }

 private:
  BlockProgress block_progress_;
  double time_limit_s_ = 0.0;
  int threads_ = 1;
  int64_t memory_bound_ = 0;
  int max_streams_ = 0;
  const StagedSchedule* prior_ = nullptr;
};

struct SchedulerEntry {
  std::string name;
  std::string description;  // one line, shown by --help and --list-schedulers
  std::vector<ParamSpec> params;
  std::function<std::unique_ptr<Scheduler>(const Params&)> make;
  bool searches = false;  // runs the DP: honours set_time_limit()
  bool streamed = false;  // writes a streamed schedule (LIOS, Nimble); else a staged one
};

// All registered schedulers, in registration order.
const std::vector<SchedulerEntry>& scheduler_registry();
// Throws UserError listing the known names when `name` is unknown.
const SchedulerEntry& find_scheduler(const std::string& name);

}  // namespace ios::sched
