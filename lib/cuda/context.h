// Device state of one engine (or of the measured cost model): the device,
// a pool of non-blocking streams with one cuDNN handle and one workspace per
// stream (cuDNN's and cuBLASLt's: one stream runs one operation at a time),
// a cuBLASLt handle, and scratch memory for algorithm search.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cuda/engine.h"
#include "cuda/resources.h"

namespace ios::cost {
class PlanCache;  // cost/plan_cache.h
}

namespace ios::cuda {

struct ConvPlanChoice;  // cudnn_graph.h

// Selects and checks the device (throws NoDeviceError) and describes it.
DeviceSummary init_device(int ordinal);
// Identifies the device for caches: name, compute capability and UUID.
std::string device_key(int ordinal);

class Context {
 public:
  Context(int ordinal, ir::MathMode math, size_t workspace_limit,
          exec::ConvKernels conv_kernels = exec::ConvKernels::kLegacy);
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  int ordinal() const { return ordinal_; }
  const DeviceSummary& device() const { return device_; }
  const std::string& key() const { return key_; }
  ir::MathMode math() const { return math_; }
  size_t workspace_limit() const { return workspace_limit_; }
  exec::ConvKernels conv_kernels() const { return conv_kernels_; }
  // The graph-API plans chosen on this context's device, by ConvGraphSpec
  // key and workspace limit: plans are built for this context's handles and
  // live as long as they do.
  std::map<std::string, std::shared_ptr<const ConvPlanChoice>>& conv_plans() { return conv_plans_; }
  // The persistent plan cache (--plan-cache), if any: choices found there
  // are built without timing, new ones stored.
  void set_plan_cache(std::shared_ptr<cost::PlanCache> cache) { plan_cache_ = std::move(cache); }
  cost::PlanCache* plan_cache() const { return plan_cache_.get(); }
  // cuBLAS(Lt)'s version, "13.1.0" (the plan cache's key).
  std::string cublas_version() const;

  // Streams [0, n) exist afterwards (each with its cuDNN handle).
  void ensure_streams(int n);
  int num_streams() const { return static_cast<int>(streams_.size()); }
  cudaStream_t stream(int i) const { return streams_.at(static_cast<size_t>(i)).get(); }
  cudnnHandle_t cudnn(int i) const { return handles_.at(static_cast<size_t>(i)).get(); }
  // One cuBLASLt handle for all streams (cublasLtMatmul takes the stream per
  // call), created on first use.
  cublasLtHandle_t cublaslt();

  // Per-stream cuDNN workspace; growing it invalidates captured graphs that
  // use the old one, so engines size it before capturing.
  void ensure_workspace(int i, size_t bytes);
  void* workspace(int i) const { return workspaces_.at(static_cast<size_t>(i)).get(); }
  size_t workspace_bytes(int i) const { return workspaces_.at(static_cast<size_t>(i)).bytes(); }
  size_t total_workspace_bytes() const;

  // Scratch buffer `slot` of at least `bytes` (zero-filled when it grows):
  // inputs and outputs for algorithm search.
  void* scratch(int slot, size_t bytes);
  void release_scratch();

 private:
  int ordinal_ = 0;
  ir::MathMode math_ = ir::MathMode::kTf32;
  size_t workspace_limit_ = 0;
  exec::ConvKernels conv_kernels_ = exec::ConvKernels::kLegacy;
  std::shared_ptr<cost::PlanCache> plan_cache_;
  DeviceSummary device_;
  std::string key_;
  std::vector<Stream> streams_;
  std::vector<CudnnHandle> handles_;
  CublasLtHandle cublaslt_;
  std::vector<DeviceBuffer> workspaces_;
  std::vector<DeviceBuffer> scratch_;
  // Last: destroyed before the handles its plans were built for.
  std::map<std::string, std::shared_ptr<const ConvPlanChoice>> conv_plans_;
};

}  // namespace ios::cuda
