#include "cost/device_profile.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/file_io.h"
#include "cost/shipped_profiles.h"

namespace ios::cost {
namespace {

using nlohmann::json;

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
      user_error("device profile {}: field '{}' must be a non-empty string", source_, field);
    }
    return value.get<std::string>();
  }

  std::string optional_string(const std::string& field) {
    used_.insert(field);
    auto it = object_.find(field);
    if (it == object_.end()) return {};
    if (!it->is_string())
      user_error("device profile {}: field '{}' must be a string", source_, field);
    return it->get<std::string>();
  }

  // A number in [min, max]; `min_exclusive` rejects min itself.
  double number(const std::string& field, double min, bool min_exclusive, double max) {
    const json& value = require(field);
    if (!value.is_number()) {
      user_error("device profile {}: field '{}' must be a number, got {}", source_, field,
                 value.dump());
    }
    const double x = value.get<double>();
    if (x < 0.0) user_error("device profile {}: field '{}' is negative ({})", source_, field, x);
    if (x < min || (min_exclusive && x == min) || x > max) {
      user_error("device profile {}: field '{}' = {} is out of range {}{}, {}]", source_, field, x,
                 min_exclusive ? "(" : "[", min, max);
    }
    return x;
  }

  int64_t integer(const std::string& field, int64_t min) {
    const json& value = require(field);
    if (!value.is_number_integer()) {
      user_error("device profile {}: field '{}' must be an integer, got {}", source_, field,
                 value.dump());
    }
    const auto x = value.get<int64_t>();
    if (x < 0) user_error("device profile {}: field '{}' is negative ({})", source_, field, x);
    if (x < min)
      user_error("device profile {}: field '{}' must be >= {}, got {}", source_, field, min, x);
    return x;
  }

  void reject_unknown() const {
    for (const auto& [key, value] : object_.items()) {
      if (!used_.count(key)) {
        user_error("device profile {}: unknown field '{}' (known fields: {})", source_, key,
                   fmt::join(used_, ", "));
      }
    }
  }

 private:
  const json& object_;
  const std::string& source_;
  std::set<std::string> used_;
};

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

}  // namespace

std::vector<std::string> shipped_device_profiles() {
  std::vector<std::string> names;
  for (const auto& [name, text] : detail::shipped_profile_texts()) names.emplace_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

DeviceProfile parse_device_profile(std::string_view json_text, const std::string& source) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for 1e999
    user_error("device profile {}: not valid JSON ({})", source, e.what());
  }
  if (!root.is_object())
    user_error("device profile {}: the top level must be a JSON object", source);

  constexpr double kHuge = 1e12;
  FieldReader r(root, source);
  DeviceProfile p;
  p.name = r.string("name");
  p.description = r.optional_string("description");
  p.sm_count = r.integer("sm_count", 1);
  p.peak_fp32_tflops = r.number("peak_fp32_tflops", 0.0, true, kHuge);
  p.peak_tf32_tflops = r.number("peak_tf32_tflops", 0.0, false, kHuge);
  p.mem_bandwidth_gbs = r.number("mem_bandwidth_gbs", 0.0, true, kHuge);
  p.launch_overhead_us = r.number("launch_overhead_us", 0.0, false, kHuge);
  p.event_sync_overhead_us = r.number("event_sync_overhead_us", 0.0, false, kHuge);
  p.host_launch_us = r.number("host_launch_us", 0.0, false, kHuge);
  p.max_concurrent_kernels = r.integer("max_concurrent_kernels", 1);
  p.compute_efficiency = r.number("compute_efficiency", 0.0, true, 1.0);
  p.tensor_core_efficiency = r.number("tensor_core_efficiency", 0.0, false, 1.0);
  p.memory_efficiency = r.number("memory_efficiency", 0.0, true, 1.0);
  p.blocks_per_sm = r.integer("blocks_per_sm", 1);
  p.outputs_per_block = r.integer("outputs_per_block", 1);
  p.split_k_length = r.integer("split_k_length", 1);
  p.concurrency_interference = r.number("concurrency_interference", 0.0, false, 10.0);
  r.reject_unknown();
  if (p.peak_tf32_tflops > 0.0 && p.tensor_core_efficiency == 0.0) {
    user_error(
        "device profile {}: field 'tensor_core_efficiency' must be > 0 when "
        "'peak_tf32_tflops' is > 0",
        source);
  }
  return p;
}

std::string device_profile_json(const DeviceProfile& p) {
  nlohmann::ordered_json doc;
  doc["name"] = p.name;
  if (!p.description.empty()) doc["description"] = p.description;
  doc["sm_count"] = p.sm_count;
  doc["peak_fp32_tflops"] = p.peak_fp32_tflops;
  doc["peak_tf32_tflops"] = p.peak_tf32_tflops;
  doc["mem_bandwidth_gbs"] = p.mem_bandwidth_gbs;
  doc["launch_overhead_us"] = p.launch_overhead_us;
  doc["event_sync_overhead_us"] = p.event_sync_overhead_us;
  doc["host_launch_us"] = p.host_launch_us;
  doc["max_concurrent_kernels"] = p.max_concurrent_kernels;
  doc["compute_efficiency"] = p.compute_efficiency;
  doc["tensor_core_efficiency"] = p.tensor_core_efficiency;
  doc["memory_efficiency"] = p.memory_efficiency;
  doc["blocks_per_sm"] = p.blocks_per_sm;
  doc["outputs_per_block"] = p.outputs_per_block;
  doc["split_k_length"] = p.split_k_length;
  doc["concurrency_interference"] = p.concurrency_interference;
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
