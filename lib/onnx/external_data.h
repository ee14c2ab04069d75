// Tensor data kept in files beside the model (ONNX "external data").
//
// ios resolves it itself, before ONNX's checker sees the model: the checker
// would stat() any location a file names, absolute or relative to the working
// folder, and answer differently when the file exists. Here a location must
// be a relative path inside the model's folder; anything else is refused
// before the file system is touched.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>

namespace ios::onnx {

// All external data a model may load together (the weights of the largest
// CNNs ios targets are well under 1 GiB).
inline constexpr uint64_t kMaxExternalDataBytes = uint64_t{4} << 30;

// Replaces every external reference of the model's initializers and
// Constant-node tensors by the data it names (raw_data), read from the file
// `location` in the folder of `model_path`, from `offset` for `length` bytes
// (to the end of the file when no length is given). Throws UserError naming
// the model and the tensor for an absolute location, one with "..", one that
// leads out of the folder through a symbolic link, a missing or non-regular
// file, a range outside the file, or more than kMaxExternalDataBytes in all.
void load_external_data(::onnx::ModelProto& model, const std::string& model_path);

}  // namespace ios::onnx
