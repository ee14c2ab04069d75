// A device profile: the few numbers the simulated cost model knows about a
// GPU. Spec-sheet peaks plus efficiency knobs, read from a small JSON file.
// The profiles in device_profiles/*.json are compiled into the library, so
// `--device h100` works without the source tree; a path to a JSON file with
// the same fields works too. Every field is documented in docs/cost-model.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/element_type.h"

namespace ios::cost {

struct DeviceProfile {
  std::string name;         // "h100"; used as the device name of schedules
  std::string description;  // optional free text
  int64_t sm_count = 0;
  double peak_fp32_tflops = 0.0;
  double peak_tf32_tflops = 0.0;  // 0: the device has no TF32 tensor cores
  // Dense tensor-core peaks of float16 and bfloat16 products (fp32
  // accumulation). Optional: absent, twice peak_tf32_tflops (the ratio of
  // every NVIDIA part with both); 0: no tensor cores for that type (its
  // products run at the FP32 rate). tensor_core_peak_tflops() resolves them.
  std::optional<double> peak_fp16_tflops;
  std::optional<double> peak_bf16_tflops;
  double mem_bandwidth_gbs = 0.0;
  double launch_overhead_us = 0.0;      // fixed cost of each kernel on its stream
  double event_sync_overhead_us = 0.0;  // latency of one cross-stream event wait
  double host_launch_us = 0.0;          // host time of one CUDA call (plain launches only)
  // Optional (0: none): how long after the device finished a host
  // synchronization returns (--launch synced: the IOS paper's engine
  // synchronizes the device after each stage).
  double host_sync_us = 0.0;
  int64_t max_concurrent_kernels = 0;   // kernels resident at once across streams
  // Efficiency knobs (docs/cost-model.md, "Knobs").
  double compute_efficiency = 0.0;        // of peak FP32, reached by a kernel filling the device
  double tensor_core_efficiency = 0.0;    // of peak TF32 (and FP16, BF16), same
  double memory_efficiency = 0.0;         // of peak bandwidth, same
  int64_t blocks_per_sm = 0;              // resident thread blocks per SM to fill it
  int64_t outputs_per_block = 0;          // output elements one thread block computes
  // Optional (0: outputs_per_block, one tile size): the largest tile a
  // library picks for a large kernel. Tiles double from outputs_per_block up
  // to this while the kernel still fills at least one wave with them.
  int64_t max_outputs_per_block = 0;
  int64_t split_k_length = 0;             // reduction chunk when libraries split K
  double concurrency_interference = 0.0;  // slowdown while kernels share the device
  // Contention for the last-level cache (optional fields; 0: none): while
  // kernels share the device, their DRAM traffic grows by cache_contention
  // times the fraction of the L2 their combined working sets fill (at most 1).
  double l2_cache_mb = 0.0;
  double cache_contention = 0.0;
  // Thread blocks run in whole waves (optional; false: fractional blocks,
  // spread evenly): a partly filled last wave takes a whole wave's time and
  // leaves its idle slots to concurrent kernels.
  bool whole_waves = false;
  // Per-shape kernel efficiency (optional; 1: none): 3x3 stride-1
  // convolutions run this much faster than their multiply-adds at
  // compute_efficiency (Winograd), and 1xk / kx1 ones reach this fraction of
  // the efficiency of square ones.
  double winograd_speedup = 1.0;
  double asymmetric_conv_efficiency = 1.0;
};

// The accepted values of a numeric field. One definition, shared by the
// parser and by calibration (which fits knobs inside these ranges), so that a
// fitted profile always loads. The ranges are physically plausible magnitudes:
// within them every profile simulates every model to a finite, positive
// latency (tiny but positive efficiencies or peaks would make kernels take
// "infinitely" long). docs/cost-model.md lists them.
struct FieldRange {
  std::string_view field;
  double min = 0.0;
  double max = 0.0;
  bool zero_allowed = false;  // 0 is accepted besides [min, max] (no tensor cores)
  bool integer = false;
};
const std::vector<FieldRange>& device_profile_ranges();
const FieldRange& device_profile_range(std::string_view field);

// The dense tensor-core peak, TFLOP/s, of products whose tensors are
// float16 (peak_fp16_tflops) or bfloat16 (peak_bf16_tflops), with the
// fallback of an absent field: twice peak_tf32_tflops. 0: none. For float32
// it is peak_tf32_tflops.
double tensor_core_peak_tflops(const DeviceProfile& profile, ir::ElementType type);

// Longest accepted `name` and `description`, in bytes.
inline constexpr size_t kMaxProfileNameBytes = 128;
inline constexpr size_t kMaxProfileDescriptionBytes = 1024;

// Deepest JSON nesting parse_device_profile accepts (a profile is one flat
// object); deeper input is refused while parsing, before anything recurses.
inline constexpr int kMaxProfileJsonDepth = 32;

// `text` for a one-line message: quoted, control characters and quotes
// escaped, at most about `max_chars` characters of it (then "...").
std::string quoted_excerpt(std::string_view text, size_t max_chars = 60);

// Checks every field of `profile` against its range (and the names against
// their limits) like parse_device_profile; UserError naming `source` and the
// field.
void validate_device_profile(const DeviceProfile& profile, const std::string& source);

// Names of the profiles compiled into the library, sorted ("a100", "h100", ...).
std::vector<std::string> shipped_device_profiles();

// Parses and validates a profile. `source` names the file in error messages.
// Missing, mistyped, negative or out-of-range fields and unknown fields are
// UserErrors naming `source` and the field.
DeviceProfile parse_device_profile(std::string_view json_text, const std::string& source);

// The profile as JSON text that parse_device_profile() reads back.
std::string device_profile_json(const DeviceProfile& profile);

// A shipped name ("h100", case-insensitive) or a path to a JSON file (anything
// containing '/' or ending in ".json", or an existing file). An unknown name
// is a UserError listing the shipped names.
DeviceProfile load_device_profile(const std::string& name_or_path);

}  // namespace ios::cost
