// Readers for ONNX node attributes with defaults, and node naming for
// messages. Internal to lib/onnx.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ios::onnx {

const ::onnx::AttributeProto* find_attribute(const ::onnx::NodeProto& node, const std::string& name);

int64_t attr_int(const ::onnx::NodeProto& node, const std::string& name, int64_t fallback);
float attr_float(const ::onnx::NodeProto& node, const std::string& name, float fallback);
std::string attr_string(const ::onnx::NodeProto& node, const std::string& name,
                        const std::string& fallback);
std::optional<std::vector<int64_t>> attr_ints(const ::onnx::NodeProto& node, const std::string& name);
std::optional<std::vector<float>> attr_floats(const ::onnx::NodeProto& node, const std::string& name);

// "'conv1' (Conv)", or the first output's name when the node has none.
std::string node_label(const ::onnx::NodeProto& node);

// Input `index` of the node, or "" when absent (optional inputs may be
// omitted or given as the empty name).
std::string input_or_empty(const ::onnx::NodeProto& node, int index);

}  // namespace ios::onnx
