// Builds small ONNX models in C++ for the importer tests, so that every
// bad-input and folding case is self-contained (no generated files needed).
#pragma once

#ifndef ONNX_NAMESPACE
#define ONNX_NAMESPACE onnx
#endif
#ifndef ONNX_ML
#define ONNX_ML 1
#endif
#include <onnx/onnx_pb.h>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace ios::test {

// A per-process scratch folder for model files, removed at exit.
inline std::filesystem::path scratch_dir() {
  struct Scratch {
    std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("ios_onnx_tests_" + std::to_string(::getpid()));
    ~Scratch() {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  };
  static const Scratch scratch;
  std::filesystem::create_directories(scratch.dir);
  return scratch.dir;
}

inline void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

inline std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 13) {
    model.set_ir_version(7);
    model.set_producer_name("ios-tests");
    auto* imp = model.add_opset_import();
    imp->set_domain("");
    imp->set_version(opset);
    model.mutable_graph()->set_name("test");
  }

  // dims < 0 become symbolic dimensions named `symbol`.
  void input(const std::string& name, const std::vector<int64_t>& dims, const std::string& symbol = "batch") {
    auto* v = model.mutable_graph()->add_input();
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(::onnx::TensorProto::FLOAT);
    auto* shape = t->mutable_shape();
    for (int64_t d : dims) {
      if (d < 0) shape->add_dim()->set_dim_param(symbol);
      else shape->add_dim()->set_dim_value(d);
    }
  }

  // The checker wants a shape on main-graph outputs: `rank` unknown dims.
  void output(const std::string& name, int rank) {
    auto* v = model.mutable_graph()->add_output();
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(::onnx::TensorProto::FLOAT);
    auto* shape = t->mutable_shape();
    for (int d = 0; d < rank; ++d) shape->add_dim();
  }

  void weight(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& values,
              bool raw = true) {
    auto* t = model.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    if (raw) {
      t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
    } else {
      for (float v : values) t->add_float_data(v);
    }
  }

  void int_weight(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int64_t>& values) {
    auto* t = model.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::INT64);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t v : values) t->add_int64_data(v);
  }

  // A weight filled with a deterministic ramp (values are irrelevant to most tests).
  void ramp_weight(const std::string& name, const std::vector<int64_t>& dims, float scale = 0.01f) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::vector<float> values(static_cast<size_t>(n));
    for (size_t i = 0; i < values.size(); ++i) values[i] = scale * static_cast<float>(static_cast<int64_t>(i % 17) - 8);
    weight(name, dims, values);
  }

  ::onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs, const std::string& name = "") {
    auto* n = model.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? outputs.at(0) + "_node" : name);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return *n;
  }

  static void ints(::onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& values) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INTS);
    for (int64_t v : values) a->add_ints(v);
  }
  static void integer(::onnx::NodeProto& n, const std::string& name, int64_t value) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INT);
    a->set_i(value);
  }
  static void real(::onnx::NodeProto& n, const std::string& name, float value) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::FLOAT);
    a->set_f(value);
  }
  static void text(::onnx::NodeProto& n, const std::string& name, const std::string& value) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::STRING);
    a->set_s(value);
  }
  // A Constant node holding an int64 tensor.
  void int_constant(const std::string& output, const std::vector<int64_t>& dims, const std::vector<int64_t>& values) {
    auto& n = node("Constant", {}, {output});
    auto* a = n.add_attribute();
    a->set_name("value");
    a->set_type(::onnx::AttributeProto::TENSOR);
    auto* t = a->mutable_t();
    t->set_data_type(::onnx::TensorProto::INT64);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t v : values) t->add_int64_data(v);
  }

  std::string bytes() const { return model.SerializeAsString(); }

  // Writes the model to the scratch folder; returns its path.
  std::string save(const std::string& file_name) const {
    const auto path = scratch_dir() / file_name;
    write_bytes(path, bytes());
    return path.string();
  }

  ::onnx::ModelProto model;
};

}  // namespace ios::test
