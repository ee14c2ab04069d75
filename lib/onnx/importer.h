// ONNX import: the only entry point into ios that reads ONNX.
//
// import_model() reads a .onnx file and returns a static-shape ir::Graph:
//  1. parse the protobuf (errors name the file: missing, not ONNX, truncated);
//  2. reject unsupported operators early (the message lists supported ones)
//     and graphs with a cycle; sort the nodes topologically;
//  3. run ONNX's checker;
//  4. make every graph input static (ImportOptions; a symbolic dimension
//     without an override is an error that says to pass --batch N);
//  5. run ONNX's shape inference and fold the shape arithmetic, until no more
//     folds (constant_folding.h);
//  6. translate to the IR (graph_builder.h), dropping Identity/Dropout;
//  7. run ios's own shape inference and cross-check it against ONNX's for
//     every tensor; run the IR passes (ir/passes.h: BatchNorm into Conv, Pad
//     into Conv/pooling, nested Concats flattened); cross-check again.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace ios::onnx {

// How the graph inputs get their static shapes (docs/cli.md, "Batch"):
//  - `batch` fills dim 0 of every graph input whose dim 0 is symbolic. A
//    static dim 0 is the model's own: when no input's dim 0 is symbolic and
//    the first input's differs from `batch`, the import is refused, unless
//    `rewrite_batch`, which sets dim 0 of every graph input to `batch`.
//  - `input_shapes` gives an input its whole shape (wins over batch).
//  - `recorded_inputs` are the shapes a schedule file recorded (named by
//    `recorded_source`): symbolic dimensions take the recorded values, static
//    ones must agree (dim 0 may differ only with `rewrite_batch`), and every
//    graph input must be recorded.
struct ImportOptions {
  std::optional<int64_t> batch;
  bool rewrite_batch = false;
  std::map<std::string, ir::Shape> input_shapes;
  std::vector<std::pair<std::string, ir::Shape>> recorded_inputs;
  std::string recorded_source;
};

struct ImportedModel {
  ir::Graph graph;
  std::string path, sha256;  // sha256 of the file's bytes, lower-case hex
  int64_t batch = 1;         // `batch` when given, else dim 0 of the first graph input
  std::vector<std::pair<std::string, ir::Shape>> inputs;  // graph inputs, static shapes
};

// Throws UserError (one line naming the file, and the node or tensor where
// relevant, with what to do) for every problem with the file or options.
ImportedModel import_model(const std::string& path, const ImportOptions& options = {});

// The same for a model already in memory (the fuzz targets); `path` names it
// in messages and its folder is where external data is looked up.
ImportedModel import_model_from_bytes(const std::string& bytes, const std::string& path,
                                      const ImportOptions& options = {});

}  // namespace ios::onnx
