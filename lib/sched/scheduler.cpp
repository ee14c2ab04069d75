// Scheduler parameters and the registry of built-in schedulers.
#include "sched/scheduler.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <set>

#include "core/error.h"
#include "sched/builtin_schedulers.h"

namespace ios::sched {

namespace {

std::string trim(std::string_view text) {
  size_t b = 0;
  size_t e = text.size();
  while (b < e && (text[b] == ' ' || text[b] == '\t')) ++b;
  while (e > b && (text[e - 1] == ' ' || text[e - 1] == '\t')) --e;
  return std::string(text.substr(b, e - b));
}

std::string param_list(const std::vector<ParamSpec>& specs) {
  if (specs.empty()) return "none";
  std::string out;
  for (const ParamSpec& spec : specs) {
    if (!out.empty()) out += ", ";
    out += spec.name;
  }
  return out;
}

const char* type_name(const ParamValue& value) {
  switch (value.index()) {
    case 0: return "an integer";
    case 1: return "a number";
    case 2: return "true or false";
    default: return "a word";
  }
}

std::string value_text(const ParamValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::string>) {
          return v;
        } else {
          return fmt::format("{}", v);
        }
      },
      value);
}

// Parses `text` as the type of `like`; nullopt when it does not fit.
std::optional<ParamValue> parse_value(const std::string& text, const ParamValue& like) {
  if (text.empty()) return std::nullopt;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  switch (like.index()) {
    case 0: {
      int64_t v = 0;
      auto [ptr, ec] = std::from_chars(begin, end, v);
      if (ec != std::errc() || ptr != end) return std::nullopt;
      return ParamValue(v);
    }
    case 1: {
      char* stop = nullptr;
      const double v = std::strtod(begin, &stop);
      if (stop != end) return std::nullopt;
      return ParamValue(v);
    }
    case 2: {
      if (text == "true" || text == "1" || text == "yes" || text == "on") return ParamValue(true);
      if (text == "false" || text == "0" || text == "no" || text == "off") return ParamValue(false);
      return std::nullopt;
    }
    default:
      return ParamValue(text);
  }
}

}  // namespace

Params Params::parse(const std::string& scheduler, const std::vector<ParamSpec>& specs,
                     const std::string& text) {
  Params params;
  for (const ParamSpec& spec : specs) params.values_[spec.name] = spec.default_value;
  std::set<std::string> seen;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = trim(std::string_view(text).substr(pos, comma - pos));
    pos = comma + 1;
    if (item.empty()) {
      if (comma == text.size()) break;
      continue;
    }
    const size_t eq = item.find('=');
    if (eq == std::string::npos) {
      user_error("scheduler '{}': parameter '{}' has no value; write it as name=value "
                 "(valid parameters: {})",
                 scheduler, item, param_list(specs));
    }
    const std::string key = trim(std::string_view(item).substr(0, eq));
    const std::string value = trim(std::string_view(item).substr(eq + 1));
    auto spec = std::find_if(specs.begin(), specs.end(),
                             [&](const ParamSpec& s) { return s.name == key; });
    if (spec == specs.end()) {
      user_error("scheduler '{}': unknown parameter '{}' (valid parameters: {})", scheduler, key,
                 param_list(specs));
    }
    if (!seen.insert(key).second) {
      user_error("scheduler '{}': parameter '{}' is given twice", scheduler, key);
    }
    std::optional<ParamValue> parsed = parse_value(value, spec->default_value);
    if (!parsed) {
      user_error("scheduler '{}': parameter '{}' must be {}, not '{}' ({})", scheduler, key,
                 type_name(spec->default_value), value, spec->help);
    }
    params.values_[key] = *parsed;
  }
  return params;
}

int64_t Params::get_int(const std::string& name) const {
  auto it = values_.find(name);
  IOS_ASSERT(it != values_.end() && std::holds_alternative<int64_t>(it->second),
             "no integer parameter '{}'", name);
  return std::get<int64_t>(it->second);
}

double Params::get_double(const std::string& name) const {
  auto it = values_.find(name);
  IOS_ASSERT(it != values_.end() && std::holds_alternative<double>(it->second),
             "no number parameter '{}'", name);
  return std::get<double>(it->second);
}

bool Params::get_bool(const std::string& name) const {
  auto it = values_.find(name);
  IOS_ASSERT(it != values_.end() && std::holds_alternative<bool>(it->second),
             "no boolean parameter '{}'", name);
  return std::get<bool>(it->second);
}

const std::string& Params::get_string(const std::string& name) const {
  auto it = values_.find(name);
  IOS_ASSERT(it != values_.end() && std::holds_alternative<std::string>(it->second),
             "no word parameter '{}'", name);
  return std::get<std::string>(it->second);
}

std::vector<std::pair<std::string, std::string>> Params::to_strings() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, value] : values_) out.emplace_back(name, value_text(value));
  return out;
}

// --- shared helpers ----------------------------------------------------------

const char* block_search_name(BlockSearch search) {
  switch (search) {
    case BlockSearch::kNone: return "none";
    case BlockSearch::kComplete: return "complete";
    case BlockSearch::kReduced: return "reduced";
    case BlockSearch::kAbandoned: return "abandoned";
    case BlockSearch::kSkipped: return "skipped";
  }
  return "none";
}

const char* block_source_name(BlockSource source) {
  switch (source) {
    case BlockSource::kScheduler: return "search";
    case BlockSource::kGreedy: return "greedy";
    case BlockSource::kSequential: return "sequential";
  }
  return "search";
}

BaselineBlock greedy_block(const BlockDag& dag, CostModel& cost) {
  BaselineBlock out;
  uint64_t done = 0;
  while (done != dag.all()) {
    uint64_t ready = 0;
    for (uint64_t rest = dag.all() & ~done; rest; rest &= rest - 1) {
      const int x = lowest(rest);
      if ((dag.pred[static_cast<size_t>(x)] & ~done) == 0) ready |= bit(x);
    }
    Stage stage;
    for (uint64_t r = ready; r; r &= r - 1) {
      stage.groups.push_back({dag.units[static_cast<size_t>(lowest(r))]});
    }
    stage.predicted_ms = cost.stage_latency(stage);
    ++out.stages_costed;
    out.latency_ms += stage.predicted_ms;
    out.stages.push_back(std::move(stage));
    done |= ready;
  }
  return out;
}

BaselineBlock sequential_block(const BlockDag& dag, CostModel& cost) {
  BaselineBlock out;
  for (UnitId u : dag.units) {
    Stage stage;
    stage.groups = {{u}};
    stage.predicted_ms = cost.stage_latency(stage);
    ++out.stages_costed;
    out.latency_ms += stage.predicted_ms;
    out.stages.push_back(std::move(stage));
  }
  return out;
}

Schedule new_schedule(const std::string& name, const Params& params, const sched::CostModel& cost) {
  Schedule schedule;
  schedule.scheduler.name = name;
  schedule.scheduler.params = params.to_strings();
  schedule.scheduler.cost_model = cost.name();
  return schedule;
}

BlockStats plain_block_stats(const UnitGraph& graph, int index, double predicted_ms,
                             double search_ms) {
  const Block& block = graph.blocks().at(static_cast<size_t>(index));
  BlockStats stats;
  stats.block = index;
  stats.units = block.size();
  stats.width = block.width;
  stats.predicted_ms = predicted_ms;
  stats.search_ms = search_ms;
  return stats;
}

void schedule_blocks(const UnitGraph& graph, SearchStats& stats,
                     const std::function<PlainBlock(int)>& schedule_block) {
  for (int b = 0; b < static_cast<int>(graph.blocks().size()); ++b) {
    const auto start = std::chrono::steady_clock::now();
    const PlainBlock block = schedule_block(b);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    BlockStats block_stats = plain_block_stats(graph, b, block.predicted_ms, ms);
    block_stats.stages_costed = block.stages_costed;
    stats.blocks.push_back(block_stats);
    stats.total_search_ms += ms;
  }
}

// --- registry -----------------------------------------------------------------

namespace {

int64_t non_negative(const std::string& scheduler, const Params& params, const std::string& name) {
  const int64_t v = params.get_int(name);
  if (v < 0 || v > kMaxBlockUnits) {
    user_error("scheduler '{}': parameter '{}' must be between 0 (no limit) and {}, not {}",
               scheduler, name, kMaxBlockUnits, v);
  }
  return v;
}

StrategySet parse_strategy(const std::string& scheduler, const std::string& text) {
  if (text == "both") return StrategySet::kBoth;
  if (text == "parallel" || text == "concurrent") return StrategySet::kConcurrent;
  if (text == "merge") return StrategySet::kMerge;
  user_error("scheduler '{}': strategy must be both, parallel or merge, not '{}'", scheduler, text);
}

GroupShape parse_groups(const std::string& scheduler, const std::string& text) {
  if (text == "any") return GroupShape::kAny;
  if (text == "single-entry") return GroupShape::kSingleEntry;
  user_error("scheduler '{}': groups must be any or single-entry, not '{}'", scheduler, text);
}

const ParamSpec kParamR{"r", int64_t{3}, "max units per group; 0 = no limit"};
const ParamSpec kParamS{"s", int64_t{8}, "max groups per stage; 0 = no limit"};
const ParamSpec kParamStrategy{"strategy", std::string("both"),
                               "both | parallel | merge (stage strategies tried)"};
const ParamSpec kParamGroups{"groups", std::string("any"),
                             "any | single-entry (group shape; single-entry is the IOS "
                             "reference implementation's space)"};

std::function<std::unique_ptr<Scheduler>(const Params&)> ios_factory(std::string name,
                                                                     std::optional<StrategySet> fixed) {
  return [name, fixed](const Params& params) {
    IosOptions options;
    options.ending_rule = EndingRule::kIos;
    options.max_group_units = static_cast<int>(non_negative(name, params, "r"));
    options.max_groups = static_cast<int>(non_negative(name, params, "s"));
    options.group_shape = parse_groups(name, params.get_string("groups"));
    options.strategies = fixed ? *fixed : parse_strategy(name, params.get_string("strategy"));
    return make_dp_scheduler(name, params, options);
  };
}

std::vector<SchedulerEntry> build_registry() {
  std::vector<SchedulerEntry> entries;
  entries.push_back({"sequential", "one unit per stage, in topological order", {},
                     make_sequential_scheduler});
  entries.push_back({"greedy",
                     "each stage runs every unit whose predecessors are done, each on its own "
                     "stream (IOS paper's greedy baseline)",
                     {},
                     make_greedy_scheduler});
  entries.push_back({"ios",
                     "IOS dynamic programming over stages (concurrent groups and operator merge)",
                     {kParamR, kParamS, kParamStrategy, kParamGroups},
                     ios_factory("ios", std::nullopt),
                     true});
  entries.push_back({"ios-parallel", "IOS with concurrent execution only (IOS-Parallel)",
                     {kParamR, kParamS, kParamGroups},
                     ios_factory("ios-parallel", StrategySet::kConcurrent),
                     true});
  entries.push_back({"ios-merge",
                     "IOS with operator merge only (IOS-Merge): stages are single units or merges",
                     {kParamR, kParamS, kParamGroups},
                     ios_factory("ios-merge", StrategySet::kMerge),
                     true});
  entries.push_back(
      {"dos",
       "DOS-style DP: the last stage is any set of units without successors in the rest "
       "(s = max units per stage, 0 = unpruned as in the paper)",
       {ParamSpec{"s", int64_t{8}, "max units per stage; 0 = no limit"}, kParamStrategy},
       [](const Params& params) {
         IosOptions options;
         options.ending_rule = EndingRule::kDos;
         options.max_group_units = 1;
         options.max_groups = static_cast<int>(non_negative("dos", params, "s"));
         options.group_shape = GroupShape::kSingleEntry;
         options.strategies = parse_strategy("dos", params.get_string("strategy"));
         return make_dp_scheduler("dos", params, options);
       },
       true});
  entries.push_back({"lios",
                     "LIOS list scheduling: longest unit first, on the stream where it finishes "
                     "earliest",
                     {ParamSpec{"streams", int64_t{8}, "number of streams x (>= 1)"}},
                     make_lios_scheduler,
                     false,
                     true});
  entries.push_back({"nimble",
                     "Nimble stream assignment: transitive reduction, maximum matching, chains "
                     "become streams",
                     {},
                     make_nimble_scheduler,
                     false,
                     true});
  return entries;
}

}  // namespace

const std::vector<SchedulerEntry>& scheduler_registry() {
  static const std::vector<SchedulerEntry> registry = build_registry();
  return registry;
}

const SchedulerEntry& find_scheduler(const std::string& name) {
  for (const SchedulerEntry& entry : scheduler_registry()) {
    if (entry.name == name) return entry;
  }
  std::string names;
  for (const SchedulerEntry& entry : scheduler_registry()) {
    if (!names.empty()) names += ", ";
    names += entry.name;
  }
  user_error("unknown scheduler '{}' (known schedulers: {})", name, names);
}

}  // namespace ios::sched
