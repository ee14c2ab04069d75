// The GPU's accuracy rule (docs/testing.md, "The GPU's accuracy rule"): an
// output of ios is judged against a float64 truth of the very model file it
// ran, by comparison with an independent run of the same file at the same
// precision on the same GPU (scripts/gpu/onnx_torch.py, a PyTorch evaluator
// of ONNX graphs):
//
//   rms error <= 2 x the peer's rms error + floor
//   max error <= 4 x the peer's max error + floor
//   floor = half a unit in the last place of the precision at max |truth|
//
// The data are files the GPU kit makes (scripts/gpu/accuracy.py): per model
// stem a folder with input-<name>.npy, truth-<output>.npy (made here) and
// peer-<precision>-<output>.npy (made on the GPU before the model test).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "exec/npy.h"
#include "ir/graph.h"

namespace ios::gputest {

// The precisions the rule knows: the peer's file prefix and the floor's unit.
enum class RulePrecision { kFp32, kTf32, kFp16, kBf16 };
const char* rule_name(RulePrecision p);  // "fp32", "tf32", "fp16", "bf16"
double half_ulp(RulePrecision p);        // 2^-24, 2^-11, 2^-11, 2^-8

struct RuleVerdict {
  double rms = 0.0, max = 0.0;            // ios's errors against the truth
  double peer_rms = 0.0, peer_max = 0.0;  // the peer's
  double floor = 0.0;
  bool finite = true;  // ios's output has no inf or NaN
  bool passed() const { return finite && rms <= 2.0 * peer_rms + floor && max <= 4.0 * peer_max + floor; }
  std::string report() const;  // one line: both errors, both limits
};

// Judges `actual` (one output) against `truth` and `peer`; sizes must agree.
// `samples` > 1: actual holds that many copies of the batch-1 output (the
// input repeated along the batch), each judged against the same truth; the
// verdict is the worst sample's. The peer holds one sample (a batch-1 run) or
// as many as `actual` (a run at the same batch, whose kernels and rounding
// are those of that batch); its errors are then its worst sample's.
RuleVerdict judge(const exec::HostTensor& actual, const exec::HostTensor& truth, const exec::HostTensor& peer,
                  RulePrecision precision, int64_t samples = 1);

// A file name as the kit writes tensor names: every character outside
// [A-Za-z0-9._-] becomes '_'.
std::string file_safe(const std::string& name);

// One model's data: inputs by graph input name, truths by output name, and
// the peers found, by batch (1: peer-<precision>-<output>.npy, N > 1:
// peer-<precision>-b<N>-<output>.npy), then precision, then output name.
using PeerOutputs = std::map<RulePrecision, std::map<std::string, exec::HostTensor>>;
struct AccuracyData {
  std::map<std::string, exec::HostTensor> inputs;
  std::map<std::string, exec::HostTensor> truth;
  std::map<int64_t, PeerOutputs> peers;
};

// Reads `folder` for `graph` (imported at batch 1), with the peers at batch 1
// and at each of `batches`; nullopt when the folder or a file an input or
// output needs is missing (`why` says which). A peer is kept for a batch and
// precision where every output has one.
std::optional<AccuracyData> read_accuracy_data(const std::filesystem::path& folder, const ir::Graph& graph,
                                               std::string& why, const std::vector<int64_t>& batches = {8});

// The kit's accuracy folder: $IOS_ACCURACY_DIR, else <models dir>/accuracy.
std::filesystem::path accuracy_dir();

}  // namespace ios::gputest
