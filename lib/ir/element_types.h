// The element type of every tensor (ir/element_type.h), from the types a
// model declares: what the importer runs last, and what precision conversion
// (ir/half_conversion.h) runs again after it has placed its Casts.
#pragma once

#include <string>
#include <unordered_map>

#include "ir/graph.h"

namespace ios::ir {

// Types every tensor of `graph`:
//  - a graph input: its type in `declared` (by name), else float32;
//  - a node's outputs: a Cast's target, else the type of the node's first
//    input that is not a constant (the ONNX operators ios runs read and
//    write one type; a node of constants only is float32);
//  - a weight: the type of the nodes that read it, its values rounded to it
//    (a weight read at two types is copied per type).
// Throws UserError naming `source`, the weight and its node when a weight
// holds a finite value beyond the largest of its new type (float16: 65504).
void assign_element_types(Graph& graph,
                          const std::unordered_map<std::string, ElementType>& declared,
                          const std::string& source);

// How many tensors of each type `graph` has, by ElementType.
struct TypeCounts {
  int64_t of[kNumElementTypes] = {};
  bool any_half() const {
    for (const ElementTypeInfo& t : kElementTypes) {
      if (is_half(t.type) && of[static_cast<int>(t.type)] > 0) return true;
    }
    return false;
  }
};
TypeCounts count_types(const Graph& graph);

}  // namespace ios::ir
