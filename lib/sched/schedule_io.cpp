#include "sched/schedule_io.h"


#include <algorithm>
#include <array>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "core/error.h"
#include "core/file_io.h"
#include "core/json_limits.h"
#include "sched/validate.h"

namespace ios::sched {
namespace {

using nlohmann::json;

std::string_view form_name(const Schedule& s) { return s.is_staged() ? "staged" : "streamed"; }

// What a field holds, for "must be X, got Y". Strings are not echoed (they
// may be megabytes long); numbers are, unsigned ones above 2^63 as such.
std::string describe(const json& value) {
  switch (value.type()) {
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::null: return "null";
    default: return value.dump();  // booleans and numbers: short
  }
}

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

// Typed access to one JSON object with errors that name the field path.
class Reader {
 public:
  Reader(const json& value, std::string path, const std::string& file)
      : value_(value), path_(std::move(path)), file_(file) {}

  const json& field(const std::string& key, json::value_t type) const {
    if (!value_.is_object()) fail(path_, "an object");
    auto it = value_.find(key);
    if (it == value_.end()) {
      user_error("{}: field {} is missing; the file is not a complete ios schedule", file_,
                 quote_excerpt(join(key), 200));
    }
    const bool ok = type == json::value_t::number_float ? it->is_number()
                    : type == json::value_t::number_integer
                        ? it->is_number_integer()
                        : it->type() == type;
    if (!ok) fail(join(key), fmt::format("{}, got {}", type_name(type), describe(*it)));
    return *it;
  }
  std::string string(const std::string& key) const {
    return field(key, json::value_t::string).get<std::string>();
  }
  int64_t integer(const std::string& key) const {
    const json& value = field(key, json::value_t::number_integer);
    // get<int64_t>() would wrap an unsigned value above 2^63 - 1 to a negative one.
    if (value.is_number_unsigned() && value.get<uint64_t>() > uint64_t{INT64_MAX}) {
      fail(join(key), fmt::format("an integer below 2^63, got {}", value.dump()));
    }
    return value.get<int64_t>();
  }
  double number(const std::string& key) const {
    return field(key, json::value_t::number_float).get<double>();
  }
  const json& array(const std::string& key) const { return field(key, json::value_t::array); }
  Reader object(const std::string& key) const {
    return Reader(field(key, json::value_t::object), join(key), file_);
  }
  bool has(const std::string& key) const { return value_.is_object() && value_.contains(key); }
  std::string join(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

  // `where` may hold an object key from the file: it is echoed as an excerpt.
  [[noreturn]] void fail(const std::string& where, std::string_view expected) const {
    user_error("{}: field {} must be {}", file_, quote_excerpt(where, 200), expected);
  }

 private:
  static std::string_view type_name(json::value_t type) {
    switch (type) {
      case json::value_t::string: return "a string";
      case json::value_t::number_integer: return "an integer";
      case json::value_t::number_float: return "a number";
      case json::value_t::array: return "an array";
      case json::value_t::object: return "an object";
      default: return "of another type";
    }
  }

  const json& value_;
  std::string path_;
  const std::string& file_;
};

UnitId resolve(const json& id, const std::string& where, const UnitGraph& graph,
               const std::string& file) {
  if (!id.is_string()) {
    user_error("{}: field '{}' must be a unit id (a string), got {}", file, where, describe(id));
  }
  const auto unit = graph.find(id.get<std::string>());
  if (!unit) {
    user_error("{}: field '{}' names unit {}, which this model does not have; the schedule "
               "was made for another model or edited by hand",
               file, where, quote_excerpt(id.get<std::string>()));
  }
  return *unit;
}

// The optional "precision" object (files written before it was recorded
// lack it).
PrecisionInfo read_precision(const Reader& r) {
  PrecisionInfo p;
  const auto value = ir::parse_precision(r.string("name"));
  if (!value) {
    const std::vector<std::string> names = ir::precision_names();
    std::string expected;
    for (size_t i = 0; i < names.size(); ++i)
      expected += fmt::format("{}\"{}\"", i == 0 ? "" : i + 1 == names.size() ? " or " : ", ", names[i]);
    r.fail(r.join("name"), expected);
  }
  p.value = *value;
  const std::string source = r.string("source");
  if (source != "model" && source != "converted")
    r.fail(r.join("source"), "\"model\" or \"converted\"");
  p.converted = source == "converted";
  const std::string io = r.string("io");
  if (io != "float32" && io != "half") r.fail(r.join("io"), "\"float32\" or \"half\"");
  p.half_io = io == "half";
  const json& keep = r.array("keep_fp32");
  if (keep.size() > 4096) r.fail(r.join("keep_fp32"), "at most 4096 names");
  for (size_t i = 0; i < keep.size(); ++i) {
    if (!keep[i].is_string() || keep[i].get_ref<const std::string&>().empty()) {
      r.fail(r.join("keep_fp32[" + std::to_string(i) + "]"), "a node name or operator type");
    }
    p.keep_fp32.push_back(keep[i].get<std::string>());
  }
  if (!p.is_half() && (p.converted || p.half_io || !p.keep_fp32.empty())) {
    r.fail(r.join("name"), "\"fp16\" or \"bf16\" for a converted graph");
  }
  const Reader tensors = r.object("tensors");
  for (const ir::ElementTypeInfo& t : ir::kElementTypes) {
    int64_t& count = p.tensors[static_cast<size_t>(t.type)];
    count = tensors.integer(t.name);
    if (count < 0) tensors.fail(tensors.join(t.name), "a tensor count (an integer >= 0)");
  }
  return p;
}

// The optional "memory" object (files written before it was recorded lack
// it). peak_bytes is derived from the parts and only checked against them.
MemoryInfo read_memory(const Reader& memory) {
  // Each part, and the workspaces' sum, at most 2^61 bytes (no device has a
  // thousandth of that), so that peak_bytes, their sum, stays below 2^63.
  // A field out of range is reported under its own name, with the range.
  constexpr int64_t kMaxBytes = int64_t{1} << 61;
  constexpr const char* kByteCount = "a byte count (an integer from 0 to 2^61)";
  auto bytes = [&](const std::string& key) {
    const int64_t v = memory.integer(key);
    if (v < 0 || v > kMaxBytes) memory.fail(memory.join(key), fmt::format("{}, got {}", kByteCount, v));
    return v;
  };
  MemoryInfo m;
  m.arena_bytes = bytes("arena_bytes");
  m.live_peak_bytes = bytes("live_peak_bytes");
  m.inputs_bytes = bytes("inputs_bytes");
  m.outputs_bytes = bytes("outputs_bytes");
  m.weights_bytes = bytes("weights_bytes");
  m.merged_weights_bytes = bytes("merged_weights_bytes");
  const json& workspaces = memory.array("workspace_bytes");
  if (workspaces.size() > 1024) memory.fail(memory.join("workspace_bytes"), "at most 1024 streams");
  int64_t workspaces_total = 0;
  for (size_t i = 0; i < workspaces.size(); ++i) {
    const std::string where = memory.join("workspace_bytes[" + std::to_string(i) + "]");
    const json& w = workspaces[i];
    const bool in_range = w.is_number_integer() && !(w.is_number_unsigned() && w.get<uint64_t>() > uint64_t{kMaxBytes}) &&
                          w.get<int64_t>() >= 0 && w.get<int64_t>() <= kMaxBytes;
    if (!in_range) memory.fail(where, fmt::format("{}, got {}", kByteCount, describe(w)));
    workspaces_total += w.get<int64_t>();  // at most 1024 * 2^61: no overflow before the check
    if (workspaces_total > kMaxBytes) {
      memory.fail(memory.join("workspace_bytes"), "byte counts whose sum is at most 2^61");
    }
    m.workspace_bytes.push_back(w.get<int64_t>());
  }
  const std::string kind = memory.string("workspaces");
  if (kind != "predicted" && kind != "measured") memory.fail(memory.join("workspaces"), "\"predicted\" or \"measured\"");
  m.workspaces_predicted = kind == "predicted";
  if (memory.has("limit_bytes")) {
    const int64_t v = memory.integer("limit_bytes");
    if (v < 0) memory.fail(memory.join("limit_bytes"), fmt::format("a byte count (an integer >= 0), got {}", v));
    m.limit_bytes = v;
  }
  const int64_t peak = memory.integer("peak_bytes");
  if (peak != m.peak_bytes()) {
    memory.fail(memory.join("peak_bytes"),
                fmt::format("arena_bytes + weights_bytes + the workspaces ({}), got {}", m.peak_bytes(), peak));
  }
  return m;
}

}  // namespace

nlohmann::json precision_to_json(const PrecisionInfo& p) {
  json tensors = json::object();
  for (const ir::ElementTypeInfo& t : ir::kElementTypes) tensors[t.name] = p.tensors[static_cast<size_t>(t.type)];
  return {{"name", p.name()},
          {"source", p.converted ? "converted" : "model"},
          {"io", p.half_io ? "half" : "float32"},
          {"keep_fp32", p.keep_fp32},
          {"tensors", tensors}};
}

json memory_to_json(const MemoryInfo& m) {
  return {{"peak_bytes", m.peak_bytes()},
          {"arena_bytes", m.arena_bytes},
          {"live_peak_bytes", m.live_peak_bytes},
          {"inputs_bytes", m.inputs_bytes},
          {"outputs_bytes", m.outputs_bytes},
          {"weights_bytes", m.weights_bytes},
          {"merged_weights_bytes", m.merged_weights_bytes},
          {"workspace_bytes", m.workspace_bytes},
          {"workspaces", m.workspaces_predicted ? "predicted" : "measured"}};
}

std::string schedule_to_json(const Schedule& schedule, const UnitGraph& graph) {
  json doc;
  doc["format"] = "ios-schedule";
  doc["version"] = kScheduleFormatVersion;
  json inputs = json::array();
  for (const auto& [name, shape] : schedule.model.inputs) {
    inputs.push_back({{"name", name}, {"shape", shape}});
  }
  doc["model"] = {{"path", schedule.model.path},
                  {"sha256", schedule.model.sha256},
                  {"batch", schedule.model.batch},
                  {"inputs", inputs},
                  {"units", graph.size()}};
  doc["device"] = {{"name", schedule.device.name},
                   {"compute_capability", schedule.device.compute_capability},
                   {"driver", schedule.device.driver},
                   {"cudnn", schedule.device.cudnn}};
  json params = json::object();
  for (const auto& [key, value] : schedule.scheduler.params) params[key] = value;
  doc["scheduler"] = {{"name", schedule.scheduler.name},
                      {"params", params},
                      {"cost_model", schedule.scheduler.cost_model}};
  if (!schedule.scheduler.launch.empty()) doc["scheduler"]["launch"] = schedule.scheduler.launch;
  doc["predicted_latency_ms"] = schedule.predicted_latency_ms;
  if (schedule.precision) doc["precision"] = precision_to_json(*schedule.precision);
  if (schedule.memory) {
    const MemoryInfo& m = *schedule.memory;
    doc["memory"] = memory_to_json(m);
    if (m.limit_bytes > 0) doc["memory"]["limit_bytes"] = m.limit_bytes;
  }
  doc["created"] = now_utc();
  doc["form"] = form_name(schedule);
  if (schedule.is_staged()) {
    json stages = json::array();
    for (const Stage& stage : schedule.staged().stages) {
      json groups = json::array();
      for (const auto& group : stage.groups) {
        json ids = json::array();
        for (UnitId u : group) ids.push_back(graph.unit(u).id);
        groups.push_back(ids);
      }
      stages.push_back({{"strategy", strategy_name(stage.strategy)},
                        {"predicted_ms", stage.predicted_ms},
                        {"groups", groups}});
    }
    doc["stages"] = stages;
    // Written only when not the default, so that files of the barrier form
    // are what they always were.
    if (schedule.staged().barriers != Barriers::kStages) {
      doc["barriers"] = barriers_name(schedule.staged().barriers);
    }
  } else {
    const StreamedSchedule& streamed = schedule.streamed();
    doc["num_streams"] = streamed.num_streams;
    json launches = json::array();
    for (const auto& launch : streamed.launches) {
      launches.push_back({{"unit", graph.unit(launch.unit).id},
                          {"stream", launch.stream},
                          {"start_ms", launch.predicted_start_ms},
                          {"finish_ms", launch.predicted_finish_ms}});
    }
    doc["launches"] = launches;
  }
  // Names come from user files and may not be UTF-8: replace, never throw.
  return doc.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
}

void write_schedule(const std::string& path, const Schedule& schedule, const UnitGraph& graph) {
  create_parent_folder(path);
  write_file_atomically(path, schedule_to_json(schedule, graph));
}

json parse_schedule_document(const std::string& json_text, const std::string& path) {
  if (json_text.find_first_not_of(" \t\r\n") == std::string::npos) {
    user_error("{}: the schedule file is empty; regenerate it with ios-optimize", path);
  }
  json doc;
  try {
    doc = parse_json_limited(json_text, path, "schedule file");
  } catch (const UserError& e) {
    user_error("{}; regenerate it with ios-optimize", e.what());
  }
  const Reader root(doc, "", path);
  if (!doc.is_object() || root.string("format") != "ios-schedule") {
    user_error("{}: not an ios schedule file (field 'format' must be \"ios-schedule\")", path);
  }
  // Compared as JSON, not as int64_t: an unsigned 2^64 - 1 must not read as -1.
  const json& version = root.field("version", json::value_t::number_integer);
  if (version != kScheduleFormatVersion) {
    user_error("{}: schedule format version {} is not supported (this ios reads version {}); "
               "regenerate it with this ios-optimize",
               path, version.dump(), kScheduleFormatVersion);
  }
  return doc;
}

json read_schedule_document(const std::string& path) {
  return parse_schedule_document(read_file_limited(path, kMaxScheduleFileBytes, "schedule file"), path);
}

std::optional<PrecisionInfo> schedule_precision(const json& doc, const std::string& path) {
  const Reader root(doc, "", path);
  if (!root.has("precision")) return std::nullopt;
  return read_precision(root.object("precision"));
}

int64_t schedule_batch(const json& doc, const std::string& path) {
  const Reader model = Reader(doc, "", path).object("model");
  const int64_t batch = model.integer("batch");
  if (batch < 1 || batch > kMaxBatch) {
    model.fail("model.batch", fmt::format("an integer from 1 to {}", kMaxBatch));
  }
  // The batch is dimension 0 of the inputs that take it: one that no
  // recorded input has contradicts them, and the run would import one and
  // report the other. (Malformed inputs are left to the full parse.)
  if (model.has("inputs") && doc["model"]["inputs"].is_array()) {
    bool any_rank = false, matches = false;
    for (const json& input : doc["model"]["inputs"]) {
      if (!input.is_object() || !input.contains("shape") || !input["shape"].is_array()) return batch;
      const json& shape = input["shape"];
      if (shape.empty()) continue;
      any_rank = true;
      matches |= shape[0].is_number_integer() && shape[0].get<int64_t>() == batch;
    }
    if (any_rank && !matches) {
      user_error("{}: field model.batch is {} but no input in model.inputs has dimension 0 of {}; the "
                 "file contradicts itself: regenerate it with ios-optimize",
                 path, batch, batch);
    }
  }
  return batch;
}

Schedule parse_schedule(const std::string& json_text, const std::string& path,
                        const UnitGraph& graph) {
  return schedule_from_document(parse_schedule_document(json_text, path), path, graph);
}

Schedule read_schedule(const std::string& path, const UnitGraph& graph) {
  return schedule_from_document(read_schedule_document(path), path, graph);
}

Schedule schedule_from_document(const json& doc, const std::string& path, const UnitGraph& graph) {
  const Reader root(doc, "", path);
  Schedule schedule;
  const Reader model = root.object("model");
  schedule.model.path = model.string("path");
  schedule.model.sha256 = model.string("sha256");
  schedule.model.batch = schedule_batch(doc, path);
  const json& inputs = model.array("inputs");
  std::unordered_map<std::string, size_t> input_index;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Reader in(inputs[i], "model.inputs[" + std::to_string(i) + "]", path);
    ir::Shape shape;
    const json& dims = in.array("shape");
    for (size_t d = 0; d < dims.size(); ++d) {
      if (!dims[d].is_number_integer() || dims[d].get<int64_t>() <= 0 ||
          dims[d].get<int64_t>() > (int64_t{1} << 31)) {
        in.fail(in.join("shape[" + std::to_string(d) + "]"), "a positive integer");
      }
      shape.push_back(dims[d].get<int64_t>());
    }
    const std::string name = in.string("name");
    if (auto [it, fresh] = input_index.emplace(name, i); !fresh) {
      user_error("{}: model.inputs[{}] records input {} again (model.inputs[{}] has it); each input "
                 "is recorded once: regenerate the file with ios-optimize",
                 path, i, quote_excerpt(name), it->second);
    }
    schedule.model.inputs.emplace_back(name, shape);
  }
  const int64_t units = model.integer("units");
  if (units != graph.size()) {
    user_error("{}: the schedule covers {} units but the model has {}; it was made for another "
               "model or with another ios version",
               path, units, graph.size());
  }

  const Reader device = root.object("device");
  schedule.device.name = device.string("name");
  schedule.device.compute_capability = device.string("compute_capability");
  schedule.device.driver = device.string("driver");
  schedule.device.cudnn = device.string("cudnn");

  const Reader scheduler = root.object("scheduler");
  schedule.scheduler.name = scheduler.string("name");
  schedule.scheduler.cost_model = scheduler.string("cost_model");
  if (scheduler.has("launch")) {
    schedule.scheduler.launch = scheduler.string("launch");
    if (std::find(kLaunchModes.begin(), kLaunchModes.end(), schedule.scheduler.launch) ==
        kLaunchModes.end()) {
      scheduler.fail("scheduler.launch", "\"graph\", \"plain\" or \"synced\"");
    }
  }
  const json& params = scheduler.field("params", json::value_t::object);
  for (auto it = params.begin(); it != params.end(); ++it) {
    if (!it->is_string()) scheduler.fail("scheduler.params." + it.key(), "a string");
    schedule.scheduler.params.emplace_back(it.key(), it->get<std::string>());
  }
  schedule.predicted_latency_ms = root.number("predicted_latency_ms");
  if (root.has("memory")) schedule.memory = read_memory(root.object("memory"));
  if (root.has("precision")) schedule.precision = read_precision(root.object("precision"));

  const std::string form = root.string("form");
  if (form == "staged") {
    StagedSchedule staged;
    const json& stages = root.array("stages");
    for (size_t s = 0; s < stages.size(); ++s) {
      const std::string where = "stages[" + std::to_string(s) + "]";
      const Reader stage_reader(stages[s], where, path);
      Stage stage;
      const std::string strategy = stage_reader.string("strategy");
      if (strategy == "concurrent") {
        stage.strategy = Strategy::kConcurrent;
      } else if (strategy == "merge") {
        stage.strategy = Strategy::kMerge;
      } else {
        stage_reader.fail(where + ".strategy", "\"concurrent\" or \"merge\"");
      }
      stage.predicted_ms = stage_reader.number("predicted_ms");
      const json& groups = stage_reader.array("groups");
      for (size_t g = 0; g < groups.size(); ++g) {
        const std::string gwhere = where + ".groups[" + std::to_string(g) + "]";
        if (!groups[g].is_array()) stage_reader.fail(gwhere, "an array of unit ids");
        std::vector<UnitId> group;
        for (size_t i = 0; i < groups[g].size(); ++i) {
          group.push_back(resolve(groups[g][i], gwhere + "[" + std::to_string(i) + "]", graph, path));
        }
        stage.groups.push_back(std::move(group));
      }
      staged.stages.push_back(std::move(stage));
    }
    if (root.has("barriers")) {
      const std::string barriers = root.string("barriers");
      if (barriers == "dependencies") {
        staged.barriers = Barriers::kDependencies;
      } else if (barriers != "stages") {
        root.fail("barriers", "\"stages\" or \"dependencies\"");
      }
    }
    schedule.body = std::move(staged);
  } else if (form == "streamed") {
    StreamedSchedule streamed;
    const int64_t num_streams = root.integer("num_streams");
    if (num_streams < 1 || num_streams > 1024) root.fail("num_streams", "an integer from 1 to 1024");
    streamed.num_streams = static_cast<int>(num_streams);
    const json& launches = root.array("launches");
    for (size_t i = 0; i < launches.size(); ++i) {
      const std::string where = "launches[" + std::to_string(i) + "]";
      const Reader launch_reader(launches[i], where, path);
      StreamedSchedule::Launch launch;
      launch.unit = resolve(launch_reader.field("unit", json::value_t::string), where + ".unit",
                            graph, path);
      const int64_t stream = launch_reader.integer("stream");
      if (stream < 0 || stream >= num_streams) {
        launch_reader.fail(where + ".stream", fmt::format("a stream from 0 to {}", num_streams - 1));
      }
      launch.stream = static_cast<int>(stream);
      launch.predicted_start_ms = launch_reader.number("start_ms");
      launch.predicted_finish_ms = launch_reader.number("finish_ms");
      streamed.launches.push_back(launch);
    }
    schedule.body = std::move(streamed);
  } else {
    root.fail("form", "\"staged\" or \"streamed\"");
  }
  // A field of the other form would be ignored whatever it says.
  const bool staged = form == "staged";
  for (const char* key : staged ? std::array{"num_streams", "launches"} : std::array{"stages", "barriers"}) {
    if (root.has(key)) {
      user_error("{}: field '{}' belongs to {} schedules and this one is {} (it would be ignored); "
                 "remove it or regenerate the file with ios-optimize",
                 path, key, staged ? "streamed" : "staged", form);
    }
  }
  validate_schedule(schedule, graph, path);
  return schedule;
}

std::string_view strategy_name(Strategy strategy) {
  return strategy == Strategy::kMerge ? "merge" : "concurrent";
}

std::string_view form_description(const Schedule& schedule) {
  if (!schedule.is_staged()) return "streamed";
  return schedule.staged().barriers == Barriers::kStages ? "staged" : "staged without stage barriers";
}

std::string_view barriers_name(Barriers barriers) {
  return barriers == Barriers::kDependencies ? "dependencies" : "stages";
}

}  // namespace ios::sched
