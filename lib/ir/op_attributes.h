// The attribute parsers of the operator table (ir/op_info.cpp): each reads
// one operator's attributes through an AttributeReader and returns them
// normalized (axes >= 0, pads resolved, slice bounds clamped...), failing
// with a message naming the node when ios does not support what it reads.
#pragma once

#include <vector>

#include "ir/op_info.h"

namespace ios::ir::attrs {

using Shapes = std::vector<Shape>;

Attrs conv(const AttributeReader& r, const Shapes& in);
Attrs max_pool(const AttributeReader& r, const Shapes& in);
Attrs average_pool(const AttributeReader& r, const Shapes& in);
Attrs global_pool(const AttributeReader& r, const Shapes& in);
Attrs clip(const AttributeReader& r, const Shapes& in);
Attrs hard_sigmoid(const AttributeReader& r, const Shapes& in);
Attrs concat(const AttributeReader& r, const Shapes& in);
Attrs softmax(const AttributeReader& r, const Shapes& in);
Attrs flatten(const AttributeReader& r, const Shapes& in);
Attrs split(const AttributeReader& r, const Shapes& in);
Attrs slice(const AttributeReader& r, const Shapes& in);
Attrs reduce_mean(const AttributeReader& r, const Shapes& in);
Attrs reshape(const AttributeReader& r, const Shapes& in);
Attrs transpose(const AttributeReader& r, const Shapes& in);
Attrs gemm(const AttributeReader& r, const Shapes& in);
Attrs pad(const AttributeReader& r, const Shapes& in);
Attrs batch_norm(const AttributeReader& r, const Shapes& in);
// Pow has no attributes; this refuses an exponent computed at run time.
Attrs pow_exponent(const AttributeReader& r, const Shapes& in);
Attrs resize(const AttributeReader& r, const Shapes& in);  // Resize 10+, Upsample 7-9
// LayerNormalization 17+: constant Scale and B that broadcast to the
// normalized dims (ir/layer_norm.h), statistics in float32 (stash_type 1).
Attrs layer_norm(const AttributeReader& r, const Shapes& in);
Attrs gelu(const AttributeReader& r, const Shapes& in);    // approximate: "none" or "tanh"

// Fails when an output other than the first is used: ios computes only the
// first output of `r`'s operator.
void only_first_output(const AttributeReader& r);

}  // namespace ios::ir::attrs
