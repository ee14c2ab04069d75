#include "cost/device_profile.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "core/error.h"
#include "core/file_io.h"
#include "cost/shipped_profiles.h"

namespace ios::cost {
namespace {

using nlohmann::json;

// What a mistyped value was, for a message: its JSON type, or for a scalar a
// short excerpt. Never the whole value: a deeply nested or huge one would
// make the message (and dump()'s recursion) unbounded.
std::string describe(const json& value) {
  switch (value.type()) {
    case json::value_t::string:
      return "the string " + quoted_excerpt(value.get_ref<const std::string&>());
    case json::value_t::array:
      return "an array";
    case json::value_t::object:
      return "an object";
    case json::value_t::null:
      return "null";
    default:  // boolean or number: a few characters
      return value.dump();
  }
}

// Reads fields off one JSON object, remembering which were used so that
// unknown (typically misspelled) fields can be reported.
class FieldReader {
 public:
  FieldReader(const json& object, const std::string& source) : object_(object), source_(source) {}

  const json& require(const std::string& field) {
    used_.insert(field);
    auto it = object_.find(field);
    if (it == object_.end()) {
      user_error("device profile {}: missing field '{}' (see docs/cost-model.md)", source_, field);
    }
    return *it;
  }

  std::string string(const std::string& field) {
    const json& value = require(field);
    if (!value.is_string() || value.get<std::string>().empty()) {
      user_error("device profile {}: field '{}' must be a non-empty string, got {}", source_, field,
                 describe(value));
    }
    return value.get<std::string>();
  }

  std::string optional_string(const std::string& field) {
    used_.insert(field);
    auto it = object_.find(field);
    if (it == object_.end()) return {};
    if (!it->is_string()) {
      user_error("device profile {}: field '{}' must be a string, got {}", source_, field,
                 describe(*it));
    }
    return it->get<std::string>();
  }

  // A number; its range is checked by validate_device_profile().
  double number(const std::string& field) {
    const json& value = require(field);
    if (!value.is_number()) {
      user_error("device profile {}: field '{}' must be a number, got {}", source_, field,
                 describe(value));
    }
    return value.get<double>();
  }

  // A number that may be absent (fields added after profiles were first
  // written): nullopt then.
  std::optional<double> maybe_number(const std::string& field) {
    if (object_.find(field) == object_.end()) {
      used_.insert(field);
      return std::nullopt;
    }
    return number(field);
  }

  // A number that may be absent: `absent` then.
  double optional_number(const std::string& field, double absent) {
    if (object_.find(field) == object_.end()) {
      used_.insert(field);
      return absent;
    }
    return number(field);
  }

  bool optional_bool(const std::string& field, bool absent) {
    used_.insert(field);
    auto it = object_.find(field);
    if (it == object_.end()) return absent;
    if (!it->is_boolean()) {
      user_error("device profile {}: field '{}' must be true or false, got {}", source_, field,
                 describe(*it));
    }
    return it->get<bool>();
  }

  // An integer that may be absent: `absent` then.
  int64_t optional_integer(const std::string& field, int64_t absent) {
    if (object_.find(field) == object_.end()) {
      used_.insert(field);
      return absent;
    }
    return integer(field);
  }

  int64_t integer(const std::string& field) {
    const json& value = require(field);
    if (!value.is_number_integer()) {
      user_error("device profile {}: field '{}' must be an integer, got {}", source_, field,
                 describe(value));
    }
    const FieldRange& range = device_profile_range(field);
    // Above int64's range it would wrap when read as int64.
    if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(range.max)) {
      user_error("device profile {}: field '{}' = {} is out of range [{}, {}]", source_, field,
                 value.get<uint64_t>(), range.min, range.max);
    }
    return value.get<int64_t>();
  }

  void reject_unknown() const {
    for (const auto& [key, value] : object_.items()) {
      if (!used_.count(key)) {
        user_error("device profile {}: unknown field {} (known fields: {})", source_,
                   quoted_excerpt(key), fmt::join(used_, ", "));
      }
    }
  }

 private:
  const json& object_;
  const std::string& source_;
  std::set<std::string> used_;
};

void check_range(const std::string& source, std::string_view field, double x) {
  const FieldRange& r = device_profile_range(field);
  // NaN cannot come from JSON, but a profile built in code (calibration) is
  // checked here too: every comparison with NaN is false, so test for it.
  if (std::isnan(x)) user_error("device profile {}: field '{}' is not a number", source, field);
  if (x < 0.0) user_error("device profile {}: field '{}' is negative ({})", source, field, x);
  if (r.zero_allowed && x == 0.0) return;
  if (x < r.min || x > r.max) {
    user_error("device profile {}: field '{}' = {} is out of range {}[{}, {}] (docs/cost-model.md)",
               source, field, x, r.zero_allowed ? "0 or " : "", r.min, r.max);
  }
}

// A parser message, at most ~200 characters: it quotes the last token.
std::string excerpt_of_what(std::string_view what) {
  constexpr size_t kMax = 200;
  if (what.size() <= kMax) return std::string(what);
  return std::string(what.substr(0, kMax)) + "...";
}

bool has_control_characters(std::string_view text) {
  return std::any_of(text.begin(), text.end(),
                     [](unsigned char c) { return c < 0x20 || c == 0x7f; });
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

}  // namespace

const std::vector<FieldRange>& device_profile_ranges() {
  // Plausible GPU magnitudes with wide margins: today's devices sit well
  // inside every range. Peaks in TFLOP/s, bandwidth in GB/s, overheads in us.
  static const std::vector<FieldRange> ranges = {
      {"sm_count", 1, 10000, false, true},
      {"peak_fp32_tflops", 0.01, 10000, false, false},
      {"peak_tf32_tflops", 0.01, 100000, true, false},
      {"peak_fp16_tflops", 0.01, 100000, true, false},
      {"peak_bf16_tflops", 0.01, 100000, true, false},
      {"mem_bandwidth_gbs", 1, 100000, false, false},
      {"launch_overhead_us", 0, 1000, false, false},
      {"event_sync_overhead_us", 0, 1000, false, false},
      {"host_launch_us", 0, 1000, false, false},
      {"host_sync_us", 0, 1000, false, false},
      {"max_concurrent_kernels", 1, 4096, false, true},
      {"compute_efficiency", 0.01, 1, false, false},
      {"tensor_core_efficiency", 0.01, 1, true, false},
      {"memory_efficiency", 0.01, 1, false, false},
      {"blocks_per_sm", 1, 64, false, true},
      {"outputs_per_block", 1, 1 << 20, false, true},
      {"max_outputs_per_block", 1, 1 << 20, true, true},
      {"split_k_length", 1, 1 << 20, false, true},
      {"concurrency_interference", 0, 10, false, false},
      {"l2_cache_mb", 0.01, 10000, true, false},
      {"cache_contention", 0, 10, false, false},
      {"winograd_speedup", 1, 4, false, false},
      {"asymmetric_conv_efficiency", 0.05, 1, false, false},
  };
  return ranges;
}

const FieldRange& device_profile_range(std::string_view field) {
  for (const FieldRange& r : device_profile_ranges()) {
    if (r.field == field) return r;
  }
  internal_error("no range for device profile field '{}'", field);
}

std::string quoted_excerpt(std::string_view text, size_t max_chars) {
  std::string out = "'";
  size_t shown = 0;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    // Cut only before the first byte of a character, never inside UTF-8.
    if (shown >= max_chars && (c & 0xc0) != 0x80) {
      out += "...";
      break;
    }
    if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      if (c == '\\' || c == '\'') out += '\\';
      out += ch;
    }
    if ((c & 0xc0) != 0x80) ++shown;
  }
  return out + "'";
}

void validate_device_profile(const DeviceProfile& p, const std::string& source) {
  auto check_text = [&](std::string_view field, const std::string& text, size_t limit) {
    if (text.size() > limit) {
      user_error("device profile {}: field '{}' is {} bytes long, at most {} are accepted", source,
                 field, text.size(), limit);
    }
    if (has_control_characters(text)) {
      user_error("device profile {}: field '{}' contains control characters ({})", source, field,
                 quoted_excerpt(text));
    }
  };
  if (p.name.empty())
    user_error("device profile {}: field 'name' must be a non-empty string", source);
  check_text("name", p.name, kMaxProfileNameBytes);
  check_text("description", p.description, kMaxProfileDescriptionBytes);
  check_range(source, "sm_count", static_cast<double>(p.sm_count));
  check_range(source, "peak_fp32_tflops", p.peak_fp32_tflops);
  check_range(source, "peak_tf32_tflops", p.peak_tf32_tflops);
  if (p.peak_fp16_tflops) check_range(source, "peak_fp16_tflops", *p.peak_fp16_tflops);
  if (p.peak_bf16_tflops) check_range(source, "peak_bf16_tflops", *p.peak_bf16_tflops);
  check_range(source, "mem_bandwidth_gbs", p.mem_bandwidth_gbs);
  check_range(source, "launch_overhead_us", p.launch_overhead_us);
  check_range(source, "event_sync_overhead_us", p.event_sync_overhead_us);
  check_range(source, "host_launch_us", p.host_launch_us);
  check_range(source, "host_sync_us", p.host_sync_us);
  check_range(source, "max_concurrent_kernels", static_cast<double>(p.max_concurrent_kernels));
  check_range(source, "compute_efficiency", p.compute_efficiency);
  check_range(source, "tensor_core_efficiency", p.tensor_core_efficiency);
  check_range(source, "memory_efficiency", p.memory_efficiency);
  check_range(source, "blocks_per_sm", static_cast<double>(p.blocks_per_sm));
  check_range(source, "outputs_per_block", static_cast<double>(p.outputs_per_block));
  check_range(source, "max_outputs_per_block", static_cast<double>(p.max_outputs_per_block));
  check_range(source, "split_k_length", static_cast<double>(p.split_k_length));
  check_range(source, "concurrency_interference", p.concurrency_interference);
  check_range(source, "l2_cache_mb", p.l2_cache_mb);
  check_range(source, "cache_contention", p.cache_contention);
  check_range(source, "winograd_speedup", p.winograd_speedup);
  check_range(source, "asymmetric_conv_efficiency", p.asymmetric_conv_efficiency);
  if (p.cache_contention > 0.0 && p.l2_cache_mb == 0.0) {
    user_error("device profile {}: field 'l2_cache_mb' must be > 0 when 'cache_contention' is > 0",
               source);
  }
  if (p.max_outputs_per_block != 0 && p.max_outputs_per_block < p.outputs_per_block) {
    user_error(
        "device profile {}: field 'max_outputs_per_block' ({}) must be at least "
        "'outputs_per_block' ({}), or 0 for one tile size",
        source, p.max_outputs_per_block, p.outputs_per_block);
  }
  if (p.peak_tf32_tflops > 0.0 && p.tensor_core_efficiency == 0.0) {
    user_error(
        "device profile {}: field 'tensor_core_efficiency' must be > 0 when "
        "'peak_tf32_tflops' is > 0",
        source);
  }
  // An absent 16-bit peak is twice the TF32 one, so only a given one can
  // ask for tensor cores here.
  for (const auto& [field, peak] : {std::pair{"peak_fp16_tflops", p.peak_fp16_tflops},
                                    std::pair{"peak_bf16_tflops", p.peak_bf16_tflops}}) {
    if (peak && *peak > 0.0 && p.tensor_core_efficiency == 0.0) {
      user_error("device profile {}: field 'tensor_core_efficiency' must be > 0 when '{}' is > 0",
                 source, field);
    }
  }
}

double tensor_core_peak_tflops(const DeviceProfile& p, ir::ElementType type) {
  switch (type) {
    case ir::ElementType::kFloat16:
      return p.peak_fp16_tflops.value_or(2.0 * p.peak_tf32_tflops);
    case ir::ElementType::kBFloat16:
      return p.peak_bf16_tflops.value_or(2.0 * p.peak_tf32_tflops);
    case ir::ElementType::kFloat32:
      break;
  }
  return p.peak_tf32_tflops;
}

std::vector<std::string> shipped_device_profiles() {
  std::vector<std::string> names;
  for (const auto& [name, text] : detail::shipped_profile_texts()) names.emplace_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

DeviceProfile parse_device_profile(std::string_view json_text, const std::string& source) {
  // The depth limit applies while parsing: a value nested 100,000 levels deep
  // is refused before anything walks it recursively.
  const json::parser_callback_t limit_depth = [&source](int depth, json::parse_event_t event,
                                                        json&) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= kMaxProfileJsonDepth) {
      user_error(
          "device profile {}: JSON nested deeper than {} levels (a profile is one flat "
          "object of numbers and strings)",
          source, kMaxProfileJsonDepth);
    }
    return true;
  };
  // nlohmann's lexer takes a NUL byte for the end of the input: "{...}\0x"
  // would parse as the object alone.
  if (const size_t nul = json_text.find('\0'); nul != std::string_view::npos) {
    user_error("device profile {}: not valid JSON (a NUL byte at byte {})", source, nul);
  }
  json root;
  try {
    root = json::parse(json_text, limit_depth);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for 1e999
    // The parser quotes the last token read, which may be a megabyte-long string.
    user_error("device profile {}: not valid JSON ({})", source, excerpt_of_what(e.what()));
  }
  if (!root.is_object())
    user_error("device profile {}: the top level must be a JSON object", source);

  FieldReader r(root, source);
  DeviceProfile p;
  p.name = r.string("name");
  p.description = r.optional_string("description");
  p.sm_count = r.integer("sm_count");
  p.peak_fp32_tflops = r.number("peak_fp32_tflops");
  p.peak_tf32_tflops = r.number("peak_tf32_tflops");
  p.peak_fp16_tflops = r.maybe_number("peak_fp16_tflops");
  p.peak_bf16_tflops = r.maybe_number("peak_bf16_tflops");
  p.mem_bandwidth_gbs = r.number("mem_bandwidth_gbs");
  p.launch_overhead_us = r.number("launch_overhead_us");
  p.event_sync_overhead_us = r.number("event_sync_overhead_us");
  p.host_launch_us = r.number("host_launch_us");
  p.host_sync_us = r.optional_number("host_sync_us", 0.0);
  p.max_concurrent_kernels = r.integer("max_concurrent_kernels");
  p.compute_efficiency = r.number("compute_efficiency");
  p.tensor_core_efficiency = r.number("tensor_core_efficiency");
  p.memory_efficiency = r.number("memory_efficiency");
  p.blocks_per_sm = r.integer("blocks_per_sm");
  p.outputs_per_block = r.integer("outputs_per_block");
  p.max_outputs_per_block = r.optional_integer("max_outputs_per_block", 0);
  p.split_k_length = r.integer("split_k_length");
  p.concurrency_interference = r.number("concurrency_interference");
  p.l2_cache_mb = r.optional_number("l2_cache_mb", 0.0);
  p.cache_contention = r.optional_number("cache_contention", 0.0);
  p.whole_waves = r.optional_bool("whole_waves", false);
  p.winograd_speedup = r.optional_number("winograd_speedup", 1.0);
  p.asymmetric_conv_efficiency = r.optional_number("asymmetric_conv_efficiency", 1.0);
  r.reject_unknown();
  validate_device_profile(p, source);
  return p;
}

std::string device_profile_json(const DeviceProfile& p) {
  nlohmann::ordered_json doc;
  doc["name"] = p.name;
  if (!p.description.empty()) doc["description"] = p.description;
  doc["sm_count"] = p.sm_count;
  doc["peak_fp32_tflops"] = p.peak_fp32_tflops;
  doc["peak_tf32_tflops"] = p.peak_tf32_tflops;
  if (p.peak_fp16_tflops) doc["peak_fp16_tflops"] = *p.peak_fp16_tflops;
  if (p.peak_bf16_tflops) doc["peak_bf16_tflops"] = *p.peak_bf16_tflops;
  doc["mem_bandwidth_gbs"] = p.mem_bandwidth_gbs;
  doc["launch_overhead_us"] = p.launch_overhead_us;
  doc["event_sync_overhead_us"] = p.event_sync_overhead_us;
  doc["host_launch_us"] = p.host_launch_us;
  doc["host_sync_us"] = p.host_sync_us;
  doc["max_concurrent_kernels"] = p.max_concurrent_kernels;
  doc["compute_efficiency"] = p.compute_efficiency;
  doc["tensor_core_efficiency"] = p.tensor_core_efficiency;
  doc["memory_efficiency"] = p.memory_efficiency;
  doc["blocks_per_sm"] = p.blocks_per_sm;
  doc["outputs_per_block"] = p.outputs_per_block;
  doc["max_outputs_per_block"] = p.max_outputs_per_block;
  doc["split_k_length"] = p.split_k_length;
  doc["concurrency_interference"] = p.concurrency_interference;
  doc["l2_cache_mb"] = p.l2_cache_mb;
  doc["cache_contention"] = p.cache_contention;
  doc["whole_waves"] = p.whole_waves;
  doc["winograd_speedup"] = p.winograd_speedup;
  doc["asymmetric_conv_efficiency"] = p.asymmetric_conv_efficiency;
  return doc.dump(2) + "\n";
}

DeviceProfile load_device_profile(const std::string& name_or_path) {
  namespace fs = std::filesystem;
  const bool looks_like_path = name_or_path.find('/') != std::string::npos ||
                               (name_or_path.size() > 5 && name_or_path.ends_with(".json"));
  if (!looks_like_path) {
    const std::string wanted = lower(name_or_path);
    for (const auto& [name, text] : detail::shipped_profile_texts()) {
      if (wanted == name) return parse_device_profile(text, fmt::format("'{}' (shipped)", name));
    }
    std::error_code ec;
    if (!fs::is_regular_file(name_or_path, ec)) {
      user_error(
          "unknown device profile '{}': shipped profiles are {}; or give the path of a "
          "JSON profile (docs/cost-model.md)",
          name_or_path, fmt::join(shipped_device_profiles(), ", "));
    }
  }
  // A profile is a few hundred bytes; the limit keeps an endless file such as
  // /dev/zero from being read until memory runs out.
  constexpr uint64_t kMaxProfileBytes = uint64_t{1} << 20;
  return parse_device_profile(read_file_limited(name_or_path, kMaxProfileBytes, "device profile"),
                              name_or_path);
}

}  // namespace ios::cost
