// Operator merge: padding geometry, legality on a real unit graph, and the
// placement of weights in the merged kernel.
#include <catch2/catch.hpp>

#include <memory>

#include "sched/fused_epilogue.h"
#include "sched/merge.h"
#include "sched/merge_geometry.h"
#include "sched/unit_graph.h"

using namespace ios::sched;
using ios::ir::ConvAttrs;

namespace {

// A convolution on an H x W input with kernel k, pads {top, left, bottom,
// right}, stride, dilation; the output size follows from them.
ConvGeometry conv(ios::ir::Dims k, ios::ir::Dims pads, int64_t stride = 1, int64_t dilation = 1,
                  int64_t h = 17, int64_t w = 17) {
  ConvGeometry g;
  g.conv.kernel = k;
  g.conv.pads = pads;
  g.conv.stride = {stride, stride};
  g.conv.dilation = {dilation, dilation};
  g.input_spatial = {h, w};
  g.output_spatial = {conv_output_size(h, k[0], stride, dilation, pads[0], pads[2]),
                      conv_output_size(w, k[1], stride, dilation, pads[1], pads[3])};
  return g;
}

}  // namespace

TEST_CASE("merge geometry: 1x1 with 3x3", "[merge]") {
  const auto r = merge_geometry({conv({1, 1}, {0, 0, 0, 0}), conv({3, 3}, {1, 1, 1, 1})});
  REQUIRE(r.merged.has_value());
  CHECK(r.merged->conv.kernel == ios::ir::Dims{3, 3});
  CHECK(r.merged->conv.pads == ios::ir::Dims{1, 1, 1, 1});
  CHECK(r.merged->kernel_offsets[0] == ios::ir::Dims{1, 1});
  CHECK(r.merged->kernel_offsets[1] == ios::ir::Dims{0, 0});
}

TEST_CASE("merge geometry: 1x3, 3x1 and 3x3", "[merge]") {
  const auto r = merge_geometry(
      {conv({1, 3}, {0, 1, 0, 1}), conv({3, 1}, {1, 0, 1, 0}), conv({3, 3}, {1, 1, 1, 1})});
  REQUIRE(r.merged.has_value());
  CHECK(r.merged->conv.kernel == ios::ir::Dims{3, 3});
  CHECK(r.merged->conv.pads == ios::ir::Dims{1, 1, 1, 1});
  CHECK(r.merged->kernel_offsets[0] == ios::ir::Dims{1, 0});
  CHECK(r.merged->kernel_offsets[1] == ios::ir::Dims{0, 1});
  CHECK(r.merged->kernel_offsets[2] == ios::ir::Dims{0, 0});
}

TEST_CASE("merge geometry: strides, dilation and larger kernels", "[merge]") {
  // 5x5 / 3x3 / 1x1 "same" convolutions with stride 2.
  auto r = merge_geometry({conv({5, 5}, {2, 2, 2, 2}, 2), conv({3, 3}, {1, 1, 1, 1}, 2),
                           conv({1, 1}, {0, 0, 0, 0}, 2)});
  REQUIRE(r.merged.has_value());
  CHECK(r.merged->conv.kernel == ios::ir::Dims{5, 5});
  CHECK(r.merged->conv.pads == ios::ir::Dims{2, 2, 2, 2});
  CHECK(r.merged->conv.stride == ios::ir::Dims{2, 2});
  CHECK(r.merged->kernel_offsets[1] == ios::ir::Dims{1, 1});
  CHECK(r.merged->kernel_offsets[2] == ios::ir::Dims{2, 2});
  // Dilation 2: the 1x1 sits one kernel step (two input rows) in.
  r = merge_geometry({conv({3, 3}, {2, 2, 2, 2}, 1, 2), conv({1, 1}, {0, 0, 0, 0}, 1, 2)});
  REQUIRE(r.merged.has_value());
  CHECK(r.merged->conv.pads == ios::ir::Dims{2, 2, 2, 2});
  CHECK(r.merged->conv.dilation == ios::ir::Dims{2, 2});
  // Valid (unpadded) 3x3 with 1x1: offsets line up only with zero-padded
  // outputs of different size, rejected.
  r = merge_geometry({conv({3, 3}, {0, 0, 0, 0}), conv({1, 1}, {0, 0, 0, 0})});
  CHECK_FALSE(r.merged.has_value());
  CHECK_THAT(r.reason, Catch::Contains("maps"));
}

TEST_CASE("merge geometry: rejects pads that do not line up", "[merge]") {
  // Same output size, but the 3x3 pads 2 rows on top and none below: its
  // kernel would have to sit one row higher than centred.
  auto r = merge_geometry({conv({3, 3}, {2, 1, 0, 1}), conv({1, 1}, {0, 0, 0, 0})});
  CHECK_FALSE(r.merged.has_value());
  CHECK_THAT(r.reason, Catch::Contains("rows") && Catch::Contains("pad begin"));
  // Different strides or dilations never merge.
  r = merge_geometry({conv({3, 3}, {1, 1, 1, 1}, 1), conv({3, 3}, {1, 1, 1, 1}, 2)});
  CHECK_FALSE(r.merged.has_value());
  r = merge_geometry({conv({3, 3}, {2, 2, 2, 2}, 1, 2), conv({3, 3}, {1, 1, 1, 1}, 1, 1)});
  CHECK_FALSE(r.merged.has_value());
  // Grouped convolutions never merge.
  ConvGeometry grouped = conv({3, 3}, {1, 1, 1, 1});
  grouped.conv.group = 2;
  r = merge_geometry({grouped, conv({3, 3}, {1, 1, 1, 1})});
  CHECK_FALSE(r.merged.has_value());
  CHECK_THAT(r.reason, Catch::Contains("group"));
}

TEST_CASE("merge geometry: the merged formula reproduces each member's rows", "[merge]") {
  // For every accepted case, output row i of the merged conv reads input
  // row i*stride - P + t*d at merged kernel row t; the member's kernel row t'
  // = t - o must read the member's own row i*stride - p + t'*d.
  const std::vector<std::vector<ConvGeometry>> cases = {
      {conv({1, 1}, {0, 0, 0, 0}), conv({3, 3}, {1, 1, 1, 1})},
      {conv({1, 3}, {0, 1, 0, 1}), conv({3, 1}, {1, 0, 1, 0}), conv({3, 3}, {1, 1, 1, 1})},
      {conv({5, 5}, {2, 2, 2, 2}, 2, 1, 9, 9), conv({1, 1}, {0, 0, 0, 0}, 2, 1, 9, 9)},
      {conv({3, 3}, {3, 3, 3, 3}, 1, 3), conv({1, 1}, {0, 0, 0, 0}, 1, 3)},
  };
  for (const auto& members : cases) {
    const auto r = merge_geometry(members);
    REQUIRE(r.merged.has_value());
    const ConvAttrs& m = r.merged->conv;
    for (size_t k = 0; k < members.size(); ++k) {
      for (int axis = 0; axis < 2; ++axis) {
        const ConvAttrs& c = members[k].conv;
        const int64_t o = r.merged->kernel_offsets[k][axis];
        REQUIRE(o >= 0);
        REQUIRE(o + c.kernel[axis] <= m.kernel[axis]);
        CHECK(conv_output_size(members[k].input_spatial[axis], m.kernel[axis], m.stride[axis],
                               m.dilation[axis], m.pads[axis],
                               m.pads[axis + 2]) == members[k].output_spatial[axis]);
        for (int64_t i = 0; i < members[k].output_spatial[axis]; ++i) {
          for (int64_t t = 0; t < c.kernel[axis]; ++t) {
            const int64_t merged_row = i * m.stride[axis] - m.pads[axis] + (t + o) * m.dilation[axis];
            const int64_t member_row = i * c.stride[axis] - c.pads[axis] + t * c.dilation[axis];
            CHECK(merged_row == member_row);
          }
        }
      }
    }
  }
}

namespace {

using namespace ios::ir;

// X [1, 4, 8, 8] read by convolutions given as (kernel, pads, stride,
// epilogue ops); a second input Y read by one more 1x1 conv.
struct ConvGraph {
  Graph graph;
  std::vector<TensorId> outputs;
};

TensorId add_const(Graph& g, const std::string& name, Shape shape, float base) {
  Tensor t;
  t.name = name;
  t.shape = shape;
  auto data = std::make_shared<std::vector<float>>(static_cast<size_t>(num_elements(shape)));
  for (size_t i = 0; i < data->size(); ++i) (*data)[i] = base + static_cast<float>(i);
  t.data = data;
  return g.add_tensor(t);
}

TensorId add_conv(Graph& g, TensorId x, const std::string& name, int64_t out_c, ios::ir::Dims k,
                  ios::ir::Dims pads, int64_t stride, bool bias, float base,
                  const std::vector<OpKind>& epilogue, float clip_max = 6.0f) {
  const Shape in = g.tensor(x).shape;  // a copy: add_tensor may move tensors
  Node conv;
  conv.name = name;
  conv.op = OpKind::kConv;
  ConvAttrs a;
  a.kernel = k;
  a.pads = pads;
  a.stride = {stride, stride};
  conv.attrs = a;
  conv.inputs = {x, add_const(g, name + ".w", {out_c, in[1], k[0], k[1]}, base)};
  if (bias) conv.inputs.push_back(add_const(g, name + ".b", {out_c}, base * 10));
  Tensor out;
  out.name = name + ".out";
  out.shape = {in[0], out_c, conv_output_size(in[2], k[0], stride, 1, pads[0], pads[2]),
               conv_output_size(in[3], k[1], stride, 1, pads[1], pads[3])};
  TensorId y = g.add_tensor(out);
  conv.outputs = {y};
  g.add_node(conv);
  for (size_t i = 0; i < epilogue.size(); ++i) {
    Node e;
    e.name = name + ".act" + std::to_string(i);
    e.op = epilogue[i];
    if (e.op == OpKind::kClip) e.attrs = ClipAttrs{0.0f, clip_max};
    e.inputs = {y};
    Tensor t;
    t.name = e.name + ".out";
    t.shape = g.tensor(y).shape;
    y = g.add_tensor(t);
    e.outputs = {y};
    g.add_node(e);
  }
  return y;
}

}  // namespace

TEST_CASE("check_merge: legality on a unit graph and weight placement", "[merge]") {
  Graph g;
  Tensor xt;
  xt.name = "X";
  xt.shape = {1, 4, 8, 8};
  const TensorId x = g.add_tensor(xt);
  Tensor yt = xt;
  yt.name = "Y";
  const TensorId y = g.add_tensor(yt);
  g.inputs() = {x, y};
  const std::vector<OpKind> relu = {OpKind::kRelu};
  std::vector<TensorId> outs;
  outs.push_back(add_conv(g, x, "a1x1", 2, {1, 1}, {0, 0, 0, 0}, 1, true, 1.0f, relu));
  outs.push_back(add_conv(g, x, "b3x3", 3, {3, 3}, {1, 1, 1, 1}, 1, false, 100.0f, relu));
  outs.push_back(add_conv(g, x, "c1x3", 1, {1, 3}, {0, 1, 0, 1}, 1, true, 1000.0f, relu));
  outs.push_back(add_conv(g, x, "d_s2", 2, {3, 3}, {1, 1, 1, 1}, 2, true, 1.0f, relu));
  outs.push_back(add_conv(g, x, "e_clip", 2, {1, 1}, {0, 0, 0, 0}, 1, true, 1.0f, {OpKind::kClip}));
  outs.push_back(add_conv(g, y, "f_other", 2, {1, 1}, {0, 0, 0, 0}, 1, true, 1.0f, relu));
  outs.push_back(add_conv(g, x, "g_clip4", 2, {1, 1}, {0, 0, 0, 0}, 1, true, 1.0f, {OpKind::kClip}, 4.0f));
  outs.push_back(add_conv(g, x, "h_clip", 2, {3, 3}, {1, 1, 1, 1}, 1, true, 1.0f, {OpKind::kClip}));
  g.outputs() = outs;
  const UnitGraph units = UnitGraph::form(g);
  auto unit_of = [&](const std::string& conv_name) {
    for (UnitId u = 0; u < units.size(); ++u) {
      if (units.unit(u).anchor != kNone && g.node(units.unit(u).anchor).name == conv_name) return u;
    }
    FAIL("no unit for " << conv_name);
    return UnitId{-1};
  };
  const UnitId a = unit_of("a1x1"), b = unit_of("b3x3"), c = unit_of("c1x3"), d = unit_of("d_s2"),
               e = unit_of("e_clip"), f = unit_of("f_other"), gc = unit_of("g_clip4"), h = unit_of("h_clip");

  CHECK(same_epilogue(g, units.unit(a), units.unit(b)));
  CHECK_FALSE(same_epilogue(g, units.unit(a), units.unit(e)));
  CHECK_FALSE(same_epilogue(g, units.unit(e), units.unit(gc)));  // Clip max 6 vs 4
  CHECK(same_epilogue(g, units.unit(e), units.unit(h)));

  MergeCheck ok = check_merge(units, {a, b, c});
  REQUIRE(ok.spec.has_value());
  const MergeSpec& spec = *ok.spec;
  CHECK(spec.input == x);
  CHECK(spec.in_channels == 4);
  CHECK(spec.out_channels == 6);
  CHECK(spec.conv.kernel == ios::ir::Dims{3, 3});
  CHECK(spec.conv.pads == ios::ir::Dims{1, 1, 1, 1});
  REQUIRE(spec.members.size() == 3);
  CHECK(spec.members[0].channel_offset == 0);
  CHECK(spec.members[1].channel_offset == 2);
  CHECK(spec.members[2].channel_offset == 5);
  CHECK(spec.members[0].kernel_offset == ios::ir::Dims{1, 1});
  CHECK(spec.members[2].kernel_offset == ios::ir::Dims{1, 0});

  CHECK_FALSE(check_merge(units, {a}).spec.has_value());
  CHECK_THAT(check_merge(units, {a, d}).reason, Catch::Contains("stride"));
  CHECK_THAT(check_merge(units, {a, e}).reason, Catch::Contains("differ"));
  CHECK_THAT(check_merge(units, {a, f}).reason, Catch::Contains("different tensors"));
  CHECK_FALSE(check_merge(units, {e, gc}).spec.has_value());
  CHECK(check_merge(units, {e, h}).spec.has_value());

  // Weights: member k's weight (o, ci, i, j) lands at (offset + o, ci, oh + i, ow + j).
  const MergedWeights w = assemble_merged_weights(units, spec);
  REQUIRE(w.weight.size() == 6u * 4 * 3 * 3);
  REQUIRE(w.bias.size() == 6u);
  auto at = [&](int64_t o, int64_t ci, int64_t i, int64_t j) {
    return w.weight[static_cast<size_t>(((o * 4 + ci) * 3 + i) * 3 + j)];
  };
  // a1x1: weights base 1 + index over [2, 4, 1, 1]; centred.
  CHECK(at(0, 0, 1, 1) == 1.0f);
  CHECK(at(1, 3, 1, 1) == 1.0f + 7);
  CHECK(at(0, 0, 0, 0) == 0.0f);
  // b3x3: base 100, [3, 4, 3, 3] copied whole at channels 2..4.
  CHECK(at(2, 0, 0, 0) == 100.0f);
  CHECK(at(4, 3, 2, 2) == 100.0f + 3 * 4 * 9 - 1);
  // c1x3: base 1000, [1, 4, 1, 3] at row 1.
  CHECK(at(5, 2, 1, 0) == 1000.0f + 2 * 3);
  CHECK(at(5, 2, 0, 0) == 0.0f);
  CHECK(at(5, 2, 2, 2) == 0.0f);
  // Biases: a has 10 + i, b has none (zeros), c has 10000.
  CHECK(w.bias == std::vector<float>{10.0f, 11.0f, 0.0f, 0.0f, 0.0f, 10000.0f});
}

namespace {

// y = MatMul(x, w) (+ Add(bias, y) as PyTorch 1.13 exports nn.Linear, bias first).
TensorId add_matmul(Graph& g, TensorId x, TensorId w, const std::string& name,
                    const Shape& out_shape, TensorId bias = kNone) {
  Tensor out;
  out.name = name + ".mm";
  out.shape = out_shape;
  const TensorId y = g.add_tensor(out);
  g.add_node({name, OpKind::kMatMul, {x, w}, {y}, {}});
  if (bias == kNone) return y;
  Tensor sum = out;
  sum.name = name + ".out";
  const TensorId s = g.add_tensor(sum);
  g.add_node({name + ".bias", OpKind::kAdd, {bias, y}, {s}, {}});
  return s;
}

TensorId add_input(Graph& g, const std::string& name, Shape shape) {
  Tensor t;
  t.name = name;
  t.shape = std::move(shape);
  const TensorId id = g.add_tensor(t);
  g.inputs().push_back(id);
  return id;
}

}  // namespace

TEST_CASE("check_merge: matrix products sharing their input (Q, K, V projections)", "[merge]") {
  Graph g;
  const TensorId x = add_input(g, "X", {2, 5, 16});
  const TensorId other = add_input(g, "Other", {2, 5, 16});
  const TensorId rhs = add_input(g, "Rhs", {16, 8});  // an activation used as weights
  const TensorId vec = add_input(g, "Vec", {16});
  const TensorId img = add_input(g, "Img", {1, 4, 8, 8});
  std::vector<TensorId> outs;
  outs.push_back(add_matmul(g, x, add_const(g, "q.w", {16, 16}, 1.0f), "q", {2, 5, 16},
                            add_const(g, "q.b", {16}, 0.5f)));
  outs.push_back(add_matmul(g, x, add_const(g, "k.w", {16, 16}, 1000.0f), "k", {2, 5, 16},
                            add_const(g, "k.b", {16}, 2.0f)));
  outs.push_back(add_matmul(g, x, add_const(g, "v.w", {16, 8}, 5000.0f), "v", {2, 5, 8},
                            add_const(g, "v.b", {8}, 3.0f)));
  outs.push_back(add_matmul(g, x, add_const(g, "plain.w", {16, 4}, 1.0f), "plain",
                            {2, 5, 4}));  // no bias: still legal
  outs.push_back(add_matmul(g, other, add_const(g, "o.w", {16, 8}, 1.0f), "o", {2, 5, 8}));
  outs.push_back(add_matmul(g, x, rhs, "act", {2, 5, 8}));
  outs.push_back(add_matmul(g, x, add_const(g, "b3.w", {2, 16, 8}, 1.0f), "b3", {2, 5, 8}));
  outs.push_back(add_matmul(g, vec, add_const(g, "r1.w", {16, 8}, 1.0f), "r1", {8}));
  outs.push_back(add_matmul(g, vec, add_const(g, "r2.w", {16, 8}, 1.0f), "r2", {8}));
  outs.push_back(add_conv(g, img, "conv", 2, {1, 1}, {0, 0, 0, 0}, 1, true, 1.0f, {}));
  g.outputs() = outs;
  const UnitGraph units = UnitGraph::form(g);
  auto unit_of = [&](const std::string& node_name) {
    for (UnitId u = 0; u < units.size(); ++u) {
      if (units.unit(u).anchor != kNone && g.node(units.unit(u).anchor).name == node_name) return u;
    }
    FAIL("no unit for " << node_name);
    return UnitId{-1};
  };
  const UnitId q = unit_of("q"), k = unit_of("k"), v = unit_of("v"), plain = unit_of("plain"),
               o = unit_of("o"), act = unit_of("act"), b3 = unit_of("b3"), r1 = unit_of("r1"),
               r2 = unit_of("r2"), conv = unit_of("conv");
  // The bias Add is each projection's epilogue, in its unit.
  REQUIRE(units.unit(q).kind == UnitKind::kMatMul);
  REQUIRE(units.unit(q).nodes.size() == 2);

  const MergeCheck ok = check_merge(units, {q, k, v});
  INFO(ok.reason);
  REQUIRE(ok.spec.has_value());
  const MergeSpec& spec = *ok.spec;
  CHECK(spec.kind == MergeKind::kMatMul);
  CHECK(spec.input == x);
  CHECK(spec.in_channels == 16);
  CHECK(spec.out_channels == 40);
  CHECK(spec.rows == 10);
  REQUIRE(spec.members.size() == 3);
  CHECK(spec.members[0].channel_offset == 0);
  CHECK(spec.members[1].channel_offset == 16);
  CHECK(spec.members[2].channel_offset == 32);
  CHECK(spec.members[2].out_channels == 8);
  CHECK(spec.output_shape({2, 5, 16}) == Shape{2, 5, 40});
  // Epilogues may differ: a member without a bias merges with ones with.
  CHECK(check_merge(units, {q, plain}).spec.has_value());

  CHECK_THAT(check_merge(units, {q, o}).reason, Catch::Contains("different tensors"));
  CHECK_THAT(check_merge(units, {q, act}).reason, Catch::Contains("not constant"));
  CHECK_THAT(check_merge(units, {q, b3}).reason, Catch::Contains("no broadcast batch"));
  CHECK_THAT(check_merge(units, {r1, r2}).reason, Catch::Contains("1-D input"));
  CHECK_THAT(check_merge(units, {q, conv}).reason, Catch::Contains("convolution and unit"));
  CHECK_THAT(check_merge(units, {conv, q}).reason, Catch::Contains("convolution and unit"));
  CHECK_THAT(check_merge(units, {q, q}).reason, Catch::Contains("twice"));

  // Weights [K, 40]: member m's (r, c) at (r, offset_m + c); no bias for MatMul members.
  const MergedWeights w = assemble_merged_weights(units, spec);
  REQUIRE(w.weight.size() == 16u * 40);
  CHECK(w.weight[0] == 1.0f);                        // q.w(0, 0)
  CHECK(w.weight[3 * 40 + 5] == 1.0f + 3 * 16 + 5);  // q.w(3, 5)
  CHECK(w.weight[2 * 40 + 16 + 7] == 1000.0f + 2 * 16 + 7);
  CHECK(w.weight[15 * 40 + 32 + 7] == 5000.0f + 15 * 8 + 7);
  CHECK(w.bias == std::vector<float>(40, 0.0f));
}

TEST_CASE("check_merge: Gemm with transB on a 2-D input", "[merge]") {
  Graph g;
  const TensorId x = add_input(g, "X", {4, 6});
  auto gemm = [&](const std::string& name, int64_t n, float base, GemmAttrs attrs, bool c) {
    Tensor out;
    out.name = name + ".out";
    out.shape = {4, n};
    const TensorId y = g.add_tensor(out);
    Node node{name, OpKind::kGemm, {x, add_const(g, name + ".w", {n, 6}, base)}, {y}, attrs};
    if (c) node.inputs.push_back(add_const(g, name + ".c", {n}, base * 10));
    g.add_node(node);
    return y;
  };
  GemmAttrs t;
  t.trans_b = true;
  GemmAttrs half = t;
  half.alpha = 0.5f;
  g.outputs() = {gemm("a", 3, 1.0f, t, true), gemm("b", 2, 100.0f, t, false),
                 gemm("h", 2, 1.0f, half, true)};
  const UnitGraph units = UnitGraph::form(g);
  REQUIRE(units.size() == 3);
  const MergeCheck ok = check_merge(units, {0, 1});
  INFO(ok.reason);
  REQUIRE(ok.spec.has_value());
  CHECK(ok.spec->out_channels == 5);
  CHECK(ok.spec->rows == 4);
  const MergedWeights w = assemble_merged_weights(units, *ok.spec);
  // a.w is [3, 6] (transB): merged (r, c) = a.w(c, r).
  CHECK(w.weight[2 * 5 + 1] == 1.0f + 1 * 6 + 2);
  CHECK(w.weight[4 * 5 + 3 + 1] == 100.0f + 1 * 6 + 4);
  CHECK(w.bias == std::vector<float>{10.0f, 11.0f, 12.0f, 0.0f, 0.0f});
  CHECK_THAT(check_merge(units, {0, 2}).reason, Catch::Contains("alpha"));
}

TEST_CASE("check_merge: transposed convolutions form conv units but never merge", "[merge]") {
  Graph g;
  Tensor xt;
  xt.name = "X";
  xt.shape = {1, 4, 8, 8};
  const TensorId x = g.add_tensor(xt);
  g.inputs() = {x};
  // Two 2x up-samplings of X (U-Net's decoder) and a 1x1 convolution of X.
  std::vector<TensorId> outs;
  for (const char* name : {"up_a", "up_b"}) {
    Node up;
    up.name = name;
    up.op = OpKind::kConvTranspose;
    ios::ir::ConvTransposeAttrs a;
    a.kernel = {2, 2};
    a.stride = {2, 2};
    up.attrs = a;
    up.inputs = {x, add_const(g, std::string(name) + ".w", {4, 3, 2, 2}, 1.0f)};
    Tensor out;
    out.name = std::string(name) + ".out";
    out.shape = {1, 3, 16, 16};
    up.outputs = {g.add_tensor(out)};
    outs.push_back(up.outputs[0]);
    g.add_node(up);
  }
  outs.push_back(add_conv(g, x, "c1x1", 2, {1, 1}, {0, 0, 0, 0}, 1, true, 1.0f, {}));
  g.outputs() = outs;
  const UnitGraph units = UnitGraph::form(g);
  REQUIRE(units.size() == 3);
  for (UnitId u = 0; u < 3; ++u) CHECK(units.unit(u).kind == UnitKind::kConv);
  const MergeCheck two_ups = check_merge(units, {0, 1});
  CHECK_FALSE(two_ups.spec.has_value());
  CHECK(two_ups.reason.find("is a conv unit, not a convolution") != std::string::npos);
  CHECK_FALSE(check_merge(units, {0, 2}).spec.has_value());
}
