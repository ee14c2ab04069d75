// Reading an ONNX file as the importer does, for the code in lib/onnx that
// needs the protobuf itself (onnx/typed_export.h). Internal to lib/onnx.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

namespace ios::onnx {

// The model at `path`, parsed and checked as import_model parses it, with
// its external data loaded (so every weight is in the protobuf).
::onnx::ModelProto read_model_proto(const std::string& path);

}  // namespace ios::onnx
