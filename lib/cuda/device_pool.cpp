#include "cuda/device_pool.h"

#include "cuda/check.h"
#include "cuda/launch.h"

namespace ios::cuda {

char* DevicePool::arena(int64_t bytes) {
  const auto capacity = static_cast<int64_t>(arena_.bytes());
  const int64_t wanted = grown_capacity(capacity, std::max<int64_t>(bytes, 1));
  if (wanted != capacity) {
    arena_.reset();
    arena_ = DeviceBuffer(static_cast<size_t>(wanted));
    ++stats_.arena_allocations;
  }
  return static_cast<char*>(arena_.get());
}

std::vector<const void*> DevicePool::weights(const std::vector<Constant>& constants, cudaStream_t stream) {
  std::vector<WeightResidency::Key> keys;
  keys.reserve(constants.size());
  for (const Constant& c : constants) keys.push_back(c.data);
  const int64_t resident_bytes = residency_.used_bytes();
  const WeightResidency::Placement placement = residency_.place(keys);
  const BufferGrowth growth =
      weight_buffer_growth(static_cast<int64_t>(weights_.bytes()), resident_bytes, placement);
  if (growth.grow_to > 0) {
    // A larger buffer; what stays resident moves along (same offsets).
    DeviceBuffer grown(static_cast<size_t>(growth.grow_to));
    if (growth.copy_bytes > 0) {
      IOS_CUDA_CALL(cudaMemcpyAsync(grown.get(), weights_.get(), static_cast<size_t>(growth.copy_bytes),
                                    cudaMemcpyDeviceToDevice, stream));
    }
    weights_ = std::move(grown);  // frees the old buffer (cudaFree waits for the copy)
    ++stats_.weight_allocations;
  }
  std::vector<const void*> pointers(constants.size());
  char* base = static_cast<char*>(weights_.get());
  for (size_t c = 0; c < constants.size(); ++c) {
    char* at = base + placement.offsets[c];
    pointers[c] = at;
    if (!placement.upload[c]) {
      ++stats_.weights_reused;
      continue;
    }
    // Residency reserves float32 sizes; a 16-bit constant uses half of its room.
    const size_t bytes = upload_constant(at, constants[c], stream);
    ++stats_.weights_uploaded;
    stats_.weight_bytes_uploaded += static_cast<int64_t>(bytes);
  }
  return pointers;
}

}  // namespace ios::cuda
