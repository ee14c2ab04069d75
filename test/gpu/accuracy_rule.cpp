#include "accuracy_rule.h"

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "test_paths.h"

namespace ios::gputest {

const char* rule_name(RulePrecision p) {
  switch (p) {
    case RulePrecision::kFp32: return "fp32";
    case RulePrecision::kTf32: return "tf32";
    case RulePrecision::kFp16: return "fp16";
    case RulePrecision::kBf16: return "bf16";
  }
  return "?";
}

double half_ulp(RulePrecision p) {
  // Half a unit in the last place relative to 1: 24, 11, 11 and 8 significant
  // bits (TF32 keeps float16's 10 stored mantissa bits).
  switch (p) {
    case RulePrecision::kFp32: return std::ldexp(1.0, -24);
    case RulePrecision::kTf32: return std::ldexp(1.0, -11);
    case RulePrecision::kFp16: return std::ldexp(1.0, -11);
    case RulePrecision::kBf16: return std::ldexp(1.0, -8);
  }
  return 0.0;
}

std::string RuleVerdict::report() const {
  return fmt::format("rms error {:.3g} (limit 2 x peer {:.3g} + floor {:.3g} = {:.3g}), max error {:.3g} "
                     "(limit 4 x peer {:.3g} + floor = {:.3g}){}",
                     rms, peer_rms, floor, 2.0 * peer_rms + floor, max, peer_max, 4.0 * peer_max + floor,
                     finite ? "" : ", NOT FINITE");
}

namespace {

struct Errors {
  double rms = 0.0, max = 0.0;
  bool finite = true;
};

Errors errors(const float* actual, const exec::HostTensor& truth) {
  Errors e;
  double sum = 0.0;
  for (size_t i = 0; i < truth.data.size(); ++i) {
    if (!std::isfinite(actual[i])) e.finite = false;
    const double d = std::fabs(static_cast<double>(actual[i]) - static_cast<double>(truth.data[i]));
    sum += d * d;
    e.max = std::max(e.max, d);
  }
  e.rms = truth.data.empty() ? 0.0 : std::sqrt(sum / static_cast<double>(truth.data.size()));
  if (!e.finite) e.rms = e.max = INFINITY;
  return e;
}

}  // namespace

RuleVerdict judge(const exec::HostTensor& actual, const exec::HostTensor& truth, const exec::HostTensor& peer,
                  RulePrecision precision, int64_t samples) {
  REQUIRE(samples >= 1);
  const size_t sample_size = truth.data.size();
  REQUIRE(actual.data.size() == sample_size * static_cast<size_t>(samples));
  REQUIRE((peer.data.size() == sample_size || peer.data.size() == actual.data.size()));
  RuleVerdict v;
  double largest = 0.0;
  for (float t : truth.data) largest = std::max(largest, static_cast<double>(std::fabs(t)));
  v.floor = half_ulp(precision) * largest;
  const int64_t peer_samples = sample_size == 0 ? 1 : static_cast<int64_t>(peer.data.size() / sample_size);
  for (int64_t s = 0; s < peer_samples; ++s) {
    const Errors p = errors(peer.data.data() + static_cast<size_t>(s) * sample_size, truth);
    v.peer_rms = std::max(v.peer_rms, p.rms);
    v.peer_max = std::max(v.peer_max, p.max);
  }
  for (int64_t s = 0; s < samples; ++s) {
    const Errors e = errors(actual.data.data() + static_cast<size_t>(s) * truth.data.size(), truth);
    v.finite = v.finite && e.finite;
    v.rms = std::max(v.rms, e.rms);
    v.max = std::max(v.max, e.max);
  }
  return v;
}

std::string file_safe(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    const bool keep = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
                      c == '_' || c == '-';
    if (!keep) c = '_';
  }
  return out;
}

std::optional<AccuracyData> read_accuracy_data(const std::filesystem::path& folder, const ir::Graph& graph,
                                               std::string& why, const std::vector<int64_t>& batches) {
  AccuracyData data;
  auto need = [&](const std::filesystem::path& file) {
    if (std::filesystem::is_regular_file(file)) return true;
    why = fmt::format("{} is missing (scripts/gpu/accuracy.py makes it)", file.string());
    return false;
  };
  for (ir::TensorId t : graph.inputs()) {
    const std::string& name = graph.tensor(t).name;
    const auto file = folder / ("input-" + file_safe(name) + ".npy");
    if (!need(file)) return std::nullopt;
    data.inputs[name] = exec::read_npy(file);
  }
  for (ir::TensorId t : graph.outputs()) {
    const std::string& name = graph.tensor(t).name;
    const auto file = folder / ("truth-" + file_safe(name) + ".npy");
    if (!need(file)) return std::nullopt;
    data.truth[name] = exec::read_npy(file);
  }
  std::vector<int64_t> all_batches = {1};
  all_batches.insert(all_batches.end(), batches.begin(), batches.end());
  for (int64_t batch : all_batches) {
    const std::string tag = batch == 1 ? "" : fmt::format("-b{}", batch);
    for (RulePrecision p : {RulePrecision::kFp32, RulePrecision::kTf32, RulePrecision::kFp16, RulePrecision::kBf16}) {
      std::map<std::string, exec::HostTensor> peer;
      for (ir::TensorId t : graph.outputs()) {
        const std::string& name = graph.tensor(t).name;
        const auto file = folder / (std::string("peer-") + rule_name(p) + tag + "-" + file_safe(name) + ".npy");
        if (std::filesystem::is_regular_file(file)) peer[name] = exec::read_npy(file);
      }
      if (peer.size() == graph.outputs().size()) data.peers[batch][p] = std::move(peer);
    }
  }
  return data;
}

std::filesystem::path accuracy_dir() {
  if (const char* dir = std::getenv("IOS_ACCURACY_DIR"); dir != nullptr && *dir != '\0') return dir;
  return test::models_dir() / "accuracy";
}

}  // namespace ios::gputest
