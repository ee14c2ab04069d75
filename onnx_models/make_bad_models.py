#!/usr/bin/python3
"""Write small hand-made ONNX files for ios's tests (onnx helper API, no torch).

    /usr/bin/python3 onnx_models/make_bad_models.py OUT_DIR

Valid models (opset 13, IR 7, float32, pass onnx.checker):
  tiny_conv.onnx       input 1x3x8x8 -> Conv 3x3 (4 ch, pad 1) -> Relu -> output 1x4x8x8
  symbolic_batch.onnx  same as tiny_conv but the batch dim is symbolic "N"
  two_branch.onnx      input 1x4x8x8 -> {Conv 1x1 pad 0, Conv 3x3 pad 1} (8 ch each,
                       stride 1) -> Relu each -> Concat -> output 1x16x8x8
  inception_like.onnx  input 1x8x8x8, Inception-E style block, every Conv followed by Relu:
                         b1: 1x1(8)
                         b2: 1x1(8) -> {1x3(8), 3x1(8)} -> Concat          (16)
                         b3: 1x1(8) -> 3x3(8) -> {1x3(8), 3x1(8)} -> Concat (16)
                         b4: AveragePool 3x3/1 pad 1 -> 1x1(8)
                       -> Concat(b1, b2, b3, b4) -> output 1x48x8x8 (nested concats)
  unsupported_op.onnx  tiny_conv plus a LpNormalization node named "weird_node"
                       (valid ONNX, but not an op ios supports)
  window_attention.onnx  input 1x4x4x4 -> InstanceNormalization -> tokens 1x4x16 ->
                       Einsum scores + a mask that Range/Mod/Equal/Not/Where/ScatterND
                       compute from constants -> Softmax -> Einsum -> output 1x4x4x4
                       (the forms Swin, MaxViT and FCOS export; a fuzzing seed)
Broken files:
  cycle.onnx           Add and Relu consuming each other's outputs (saved unchecked)
  truncated.onnx       the first half of tiny_conv.onnx's bytes
  not_onnx.onnx        plain text
Hostile files (hostile/): each once crashed, hung, overflowed or exhausted memory;
ios must answer each with exit 2 and one line (or 0 where marked legitimate):
  slice_negative_step_empty.onnx  Slice with step -1 over an empty constant, feeding a
                                  Reshape target (crashed libonnx's data propagation)
  pads_short_data.onnx            a Pad whose 'pads' initializer declares 8 values but
                                  holds 4 bytes, feeding Pad -> Relu -> Slice
  matmul_huge_weight.onnx         a MatMul weight declared [1, 2^62+1] with 4 bytes of
                                  data (count * sizeof(float) wrapped)
  where_huge_fold.onnx            Where broadcasting three small constants to 2^36 values
  gather_huge_fold.onnx           Gather of 2^21 indices on the middle axis of a
                                  2^10 x 2 x 2^10 constant (2^41 values)
  neg_int64_min.onnx              Neg of INT64_MIN in the shape arithmetic
  cast_inf.onnx                   Cast of float inf to int64 in the shape arithmetic
  empty_huge_dims.onnx            an empty constant of shape [0, 2^40, 2^40] (its other
                                  dimensions overflow when multiplied) -> Flatten
  transpose_repeated_axis.onnx    Transpose with perm [0, 0] on a constant
  external_absolute.onnx          a weight whose external data location is /etc/passwd
  external_dotdot.onnx            a weight whose location is ../../../../etc/passwd
  external_beside.onnx            legitimate: tiny_conv with its weights in
                                  external_beside.weights next to it (exit 0)
  empty.npy                       an empty float32 array, shape (0,)

Output is deterministic (fixed RandomState, fixed producer), so the files
are byte-identical from run to run.  Graph input is "input", output "output".
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13
IR_VERSION = 7  # what torch 1.13 writes; readable by onnx >= 1.7


class Builder:
    """Tiny graph builder: conv() / relu() / concat() return output names."""

    def __init__(self, seed):
        self.rng = np.random.RandomState(seed)
        self.nodes, self.inits, self.count = [], [], {}

    def name(self, prefix):
        self.count[prefix] = self.count.get(prefix, 0) + 1
        return f"{prefix}_{self.count[prefix]}"

    def conv(self, x, cin, cout, k, pads, stride=(1, 1), name=None):
        name = name or self.name("conv")
        w = (self.rng.randn(cout, cin, k[0], k[1]) / np.sqrt(cin * k[0] * k[1])).astype(np.float32)
        b = (0.1 * self.rng.randn(cout)).astype(np.float32)
        self.inits += [numpy_helper.from_array(w, name + ".weight"), numpy_helper.from_array(b, name + ".bias")]
        out = name + "_out"
        self.nodes.append(helper.make_node("Conv", [x, name + ".weight", name + ".bias"], [out], name=name,
                                           kernel_shape=list(k), pads=list(pads), strides=list(stride)))
        return out

    def op(self, op_type, inputs, out=None, name=None, **attrs):
        name = name or self.name(op_type.lower())
        out = out or name + "_out"
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=name, **attrs))
        return out

    def conv_relu(self, x, cin, cout, k, pads, out=None):
        return self.op("Relu", [self.conv(x, cin, cout, k, pads)], out=out)

    def model(self, graph_name, inp_shape, out_name, out_shape, check=True):
        g = helper.make_graph(
            self.nodes, graph_name,
            [helper.make_tensor_value_info("input", TensorProto.FLOAT, inp_shape)],
            [helper.make_tensor_value_info(out_name, TensorProto.FLOAT, out_shape)],
            initializer=self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="ios onnx_models/make_bad_models.py", producer_version="1")
        m.ir_version = IR_VERSION
        if check:
            onnx.checker.check_model(m)
        return m


def tiny_conv(batch=1):
    b = Builder(1)
    b.conv_relu("input", 3, 4, (3, 3), (1, 1, 1, 1), out="output")
    return b.model("tiny_conv", [batch, 3, 8, 8], "output", [batch, 4, 8, 8])


def unsupported_op():
    b = Builder(1)
    y = b.conv_relu("input", 3, 4, (3, 3), (1, 1, 1, 1))
    b.op("LpNormalization", [y], out="output", name="weird_node", axis=1, p=2)
    return b.model("unsupported_op", [1, 3, 8, 8], "output", [1, 4, 8, 8])


def window_attention():
    def scalar(name, v):
        return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.array(v, np.int64)))
    nodes = [
        helper.make_node("InstanceNormalization", ["input", "scale", "bias"], ["normed"], epsilon=1e-5),
        helper.make_node("Reshape", ["normed", "tokens_shape"], ["tokens"]),
        helper.make_node("Einsum", ["tokens", "tokens"], ["scores"], equation="bcq,bck->bqk"),
        scalar("start", 0), scalar("limit", 16), scalar("delta", 1),
        helper.make_node("Range", ["start", "limit", "delta"], ["positions"]),
        helper.make_node("Mod", ["positions", "four"], ["column"]),
        helper.make_node("Equal", ["column", "zero"], ["first"]),
        helper.make_node("Not", ["first"], ["later"]),
        helper.make_node("Where", ["later", "no_penalty", "penalty"], ["row_mask"]),
        helper.make_node("ScatterND", ["row_mask", "masked_index", "masked_value"], ["mask"]),
        helper.make_node("Add", ["scores", "mask"], ["biased"]),
        helper.make_node("Softmax", ["biased"], ["weights"], axis=-1),
        helper.make_node("Einsum", ["weights", "tokens"], ["mixed"], equation="bqk,bck->bcq"),
        helper.make_node("Reshape", ["mixed", "image_shape"], ["output"]),
    ]
    inits = [numpy_helper.from_array(v, n) for n, v in [
        ("scale", np.array([1.0, 0.5, 2.0, 1.0], np.float32)),
        ("bias", np.array([0.0, 0.1, 0.0, -0.1], np.float32)),
        ("tokens_shape", np.array([1, 4, 16], np.int64)),
        ("image_shape", np.array([1, 4, 4, 4], np.int64)),
        ("four", np.array(4, np.int64)), ("zero", np.array(0, np.int64)),
        ("no_penalty", np.array(0.0, np.float32)), ("penalty", np.array(-1.0, np.float32)),
        ("masked_index", np.array([[0]], np.int64)), ("masked_value", np.array([-2.0], np.float32))]]
    g = helper.make_graph(nodes, "window_attention",
                          [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 4, 4, 4])],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 4, 4, 4])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=7)
    onnx.checker.check_model(m)
    return m


def two_branch():
    b = Builder(2)
    a = b.conv_relu("input", 4, 8, (1, 1), (0, 0, 0, 0))
    c = b.conv_relu("input", 4, 8, (3, 3), (1, 1, 1, 1))
    b.op("Concat", [a, c], out="output", axis=1)
    return b.model("two_branch", [1, 4, 8, 8], "output", [1, 16, 8, 8])


def inception_like():
    c = 8
    b = Builder(3)
    b1 = b.conv_relu("input", c, c, (1, 1), (0, 0, 0, 0))
    t = b.conv_relu("input", c, c, (1, 1), (0, 0, 0, 0))
    b2 = b.op("Concat", [b.conv_relu(t, c, c, (1, 3), (0, 1, 0, 1)),
                         b.conv_relu(t, c, c, (3, 1), (1, 0, 1, 0))], axis=1)
    t = b.conv_relu("input", c, c, (1, 1), (0, 0, 0, 0))
    t = b.conv_relu(t, c, c, (3, 3), (1, 1, 1, 1))
    b3 = b.op("Concat", [b.conv_relu(t, c, c, (1, 3), (0, 1, 0, 1)),
                         b.conv_relu(t, c, c, (3, 1), (1, 0, 1, 0))], axis=1)
    p = b.op("AveragePool", ["input"], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1],
             count_include_pad=1)
    b4 = b.conv_relu(p, c, c, (1, 1), (0, 0, 0, 0))
    b.op("Concat", [b1, b2, b3, b4], out="output", axis=1)
    return b.model("inception_like", [1, c, 8, 8], "output", [1, 6 * c, 8, 8])


def cycle():
    b = Builder(4)
    # t1 = Add(input, t2); t2 = Relu(t1): each consumes the other's output.
    b.op("Add", ["input", "t2"], out="t1", name="add_in_cycle")
    b.op("Relu", ["t1"], out="t2", name="relu_in_cycle")
    b.op("Identity", ["t1"], out="output", name="out")
    return b.model("cycle", [1, 3, 8, 8], "output", [1, 3, 8, 8], check=False)


# --- hostile files --------------------------------------------------------

INT64_MIN = -(2 ** 63)


def const(name, values, dtype=np.int64):
    return helper.make_node("Constant", [], [name], name=name + "_node",
                            value=numpy_helper.from_array(np.array(values, dtype=dtype), name + "_value"))


def reshape_model(graph_name, shape_nodes, shape_out, inits=()):
    """input 1x3x8x8 -> Reshape(input, shape_out) -> Relu -> output; shape_out is
    computed by shape_nodes (the shape arithmetic under test)."""
    nodes = list(shape_nodes) + [
        helper.make_node("Reshape", ["input", shape_out], ["r"], name="reshape"),
        helper.make_node("Relu", ["r"], ["output"], name="relu")]
    g = helper.make_graph(nodes, graph_name,
                          [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["d0", "d1", "d2", "d3"])],
                          initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)],
                          producer_name="ios onnx_models/make_bad_models.py", producer_version="1")
    m.ir_version = IR_VERSION
    return m


def slice_negative_step_empty():
    nodes = [const("empty", np.zeros([0], np.int64)), const("starts", [-1]),
             const("ends", [-(2 ** 63) + 1]), const("axes", [0]), const("steps", [-1]),
             helper.make_node("Slice", ["empty", "starts", "ends", "axes", "steps"], ["sliced"], name="slice"),
             const("dims", [1, 3, 8, 8]),
             helper.make_node("Concat", ["sliced", "dims"], ["shape"], name="concat", axis=0)]
    return reshape_model("slice_negative_step_empty", nodes, "shape")


def pads_short_data():
    pads = TensorProto(name="pads", data_type=TensorProto.INT64, dims=[8], raw_data=b"\x01\x00\x00\x00")
    nodes = [helper.make_node("Pad", ["input", "pads"], ["padded"], name="pad"),
             helper.make_node("Relu", ["padded"], ["act"], name="relu0"),
             const("starts", [0]), const("ends", [1]), const("axes", [0]),
             helper.make_node("Slice", ["act", "starts", "ends", "axes"], ["output"], name="slice")]
    g = helper.make_graph(nodes, "pads_short_data",
                          [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["d0", "d1", "d2", "d3"])],
                          initializer=[pads])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
    m.ir_version = IR_VERSION
    return m


def matmul_huge_weight():
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1, 2 ** 62 + 1], raw_data=b"\0\0\0\0")
    nodes = [const("flat", [1, 192]),
             helper.make_node("Reshape", ["input", "flat"], ["x2"], name="flatten"),
             helper.make_node("MatMul", ["x2", "w"], ["output"], name="matmul")]
    g = helper.make_graph(nodes, "matmul_huge_weight",
                          [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["d0", "d1", "d2", "d3"])],
                          initializer=[w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
    m.ir_version = IR_VERSION
    return m


def where_huge_fold():
    n = 2 ** 12
    nodes = [const("c", np.ones([n, 1, 1], np.bool_), np.bool_), const("x", np.ones([1, n, 1], np.int64)),
             const("y", np.ones([1, 1, n], np.int64)),
             helper.make_node("Where", ["c", "x", "y"], ["big"], name="where"),
             helper.make_node("Shape", ["big"], ["shape"], name="shape")]
    return reshape_model("where_huge_fold", nodes, "shape")


def gather_huge_fold():
    n = 2 ** 21
    nodes = [const("row", [2 ** 10, 2, 2 ** 10]),
             helper.make_node("ConstantOfShape", ["row"], ["data"], name="data",
                              value=numpy_helper.from_array(np.array([1], np.int64))),
             const("count", [n]),
             helper.make_node("ConstantOfShape", ["count"], ["indices"], name="indices",
                              value=numpy_helper.from_array(np.array([0], np.int64))),
             helper.make_node("Gather", ["data", "indices"], ["big"], name="gather", axis=1),
             helper.make_node("Shape", ["big"], ["shape"], name="shape")]
    return reshape_model("gather_huge_fold", nodes, "shape")


def neg_int64_min():
    nodes = [const("m", [INT64_MIN]), helper.make_node("Neg", ["m"], ["neg"], name="neg"),
             const("dims", [1, 3, 8, 8]),
             helper.make_node("Concat", ["dims", "neg"], ["shape"], name="concat", axis=0)]
    return reshape_model("neg_int64_min", nodes, "shape")


def cast_inf():
    nodes = [const("inf", [np.inf, 1.0, 3.0, 64.0], np.float32),
             helper.make_node("Cast", ["inf"], ["shape"], name="cast", to=TensorProto.INT64)]
    return reshape_model("cast_inf", nodes, "shape")


def empty_huge_dims():
    nodes = [const("dims", [0, 2 ** 40, 2 ** 40]),
             helper.make_node("ConstantOfShape", ["dims"], ["empty"], name="empty",
                              value=numpy_helper.from_array(np.array([0], np.int64))),
             helper.make_node("Flatten", ["empty"], ["flat"], name="flatten", axis=2),
             helper.make_node("Shape", ["flat"], ["shape"], name="shape")]
    return reshape_model("empty_huge_dims", nodes, "shape")


def transpose_repeated_axis():
    nodes = [const("m", np.arange(6, dtype=np.int64).reshape(2, 3)),
             helper.make_node("Transpose", ["m"], ["t"], name="transpose", perm=[0, 0]),
             helper.make_node("Shape", ["t"], ["shape"], name="shape")]
    return reshape_model("transpose_repeated_axis", nodes, "shape")


def external(model, location, offset=None, length=None):
    """Moves the first Conv weight of `model` into external data at `location`."""
    w = model.graph.initializer[0]
    w.ClearField("raw_data")
    w.ClearField("float_data")
    w.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", offset), ("length", length)):
        if value is not None:
            entry = w.external_data.add()
            entry.key, entry.value = key, str(value)
    return model


def write_hostile(out, save):
    os.makedirs(os.path.join(out, "hostile"), exist_ok=True)
    for make in (slice_negative_step_empty, pads_short_data, matmul_huge_weight, where_huge_fold,
                 gather_huge_fold, neg_int64_min, cast_inf, empty_huge_dims, transpose_repeated_axis):
        save(os.path.join("hostile", make.__name__ + ".onnx"), make().SerializeToString())
    save("hostile/external_absolute.onnx", external(tiny_conv(), "/etc/passwd").SerializeToString())
    save("hostile/external_dotdot.onnx", external(tiny_conv(), "../../../../etc/passwd").SerializeToString())
    # Legitimate external data: the weights after a 16-byte header, by offset and length.
    m = tiny_conv()
    weights = numpy_helper.to_array(m.graph.initializer[0]).tobytes()
    save("hostile/external_beside.weights", b"ios-test-header!" + weights)
    save("hostile/external_beside.onnx",
         external(m, "external_beside.weights", 16, len(weights)).SerializeToString())
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (0,), }"
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"  # data 64-byte aligned
    save("hostile/empty.npy", b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode())


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) == 2 else 2
    out = argv[1]
    os.makedirs(out, exist_ok=True)

    def save(name, data):
        path = os.path.join(out, name)
        with open(path + ".tmp", "wb") as f:
            f.write(data)
        os.replace(path + ".tmp", path)
        print(f"{path}  {len(data)} bytes")

    good = tiny_conv().SerializeToString()
    save("tiny_conv.onnx", good)
    sym = tiny_conv(batch="N")
    save("symbolic_batch.onnx", sym.SerializeToString())
    save("unsupported_op.onnx", unsupported_op().SerializeToString())
    save("two_branch.onnx", two_branch().SerializeToString())
    save("window_attention.onnx", window_attention().SerializeToString())
    save("inception_like.onnx", inception_like().SerializeToString())
    save("cycle.onnx", cycle().SerializeToString())
    save("truncated.onnx", good[: len(good) // 2])
    save("not_onnx.onnx", b"this is not an ONNX model, just plain text\n")
    write_hostile(out, save)
    write_hostile_messages(out, save)
    return 0



# --- hostile files, second round: honest messages and memory ----------------
# Each gave a misleading message (a garbage shape "more than 2^34 elements", no
# file name) or an internal error (bad_alloc); test/cli/hostile_messages.sh
# expects exit 2 and one line naming the file and the node:
#   resize_negative_scales.onnx  Resize with scales [1, 1, -2, 2]
#   resize_nan_scales.onnx       Resize with a NaN scale
#   resize_inf_scales.onnx       Resize with an infinite scale
#   resize_negative_sizes.onnx   Resize with sizes [1, 3, -16, 16]
#   split_negative.onnx          Split with sizes [-1, 4] on the channel axis
#   pad_negative_beyond.onnx     Pad removing 10 rows of an 8-row input
#   transpose_short_perm.onnx    Transpose with perm [0, 1, 2] on a 4-D activation
#   weight_type_17.onnx          a weight of element type 17 (float8)
#   resize_huge.onnx             legitimate: Resize to 1x3x12000x12000 (1.6 GiB of
#                                activations), refused for memory under 2 GiB

def one_node_model(graph_name, nodes, inits=(), out_rank=4):
    g = helper.make_graph(nodes, graph_name,
                          [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT,
                                                         [f"d{i}" for i in range(out_rank)])],
                          initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)],
                          producer_name="ios onnx_models/make_bad_models.py", producer_version="1")
    m.ir_version = IR_VERSION
    return m


def resize_model(graph_name, scales=None, sizes=None):
    inits = [numpy_helper.from_array(np.array([], np.float32), "roi"),
             numpy_helper.from_array(np.array(scales if scales is not None else [], np.float32), "scales")]
    inputs = ["input", "roi", "scales"]
    if sizes is not None:
        inits.append(numpy_helper.from_array(np.array(sizes, np.int64), "sizes"))
        inputs.append("sizes")
    node = helper.make_node("Resize", inputs, ["output"], name="resize", mode="nearest")
    return one_node_model(graph_name, [node], inits)


def write_hostile_messages(out, save):
    models = {
        "resize_negative_scales": resize_model("resize_negative_scales", scales=[1, 1, -2, 2]),
        "resize_nan_scales": resize_model("resize_nan_scales", scales=[1, 1, float("nan"), 2]),
        "resize_inf_scales": resize_model("resize_inf_scales", scales=[1, 1, float("inf"), 2]),
        "resize_negative_sizes": resize_model("resize_negative_sizes", sizes=[1, 3, -16, 16]),
        "resize_huge": resize_model("resize_huge", sizes=[1, 3, 12000, 12000]),
        "split_negative": one_node_model(
            "split_negative", [helper.make_node("Split", ["input", "split"], ["output", "rest"], name="split", axis=1)],
            [numpy_helper.from_array(np.array([-1, 4], np.int64), "split")]),
        "pad_negative_beyond": one_node_model(
            "pad_negative_beyond", [helper.make_node("Pad", ["input", "pads"], ["output"], name="pad")],
            [numpy_helper.from_array(np.array([0, 0, -10, 0, 0, 0, 0, 0], np.int64), "pads")]),
        "transpose_short_perm": one_node_model(
            "transpose_short_perm",
            [helper.make_node("Transpose", ["input"], ["t"], name="transpose", perm=[0, 1, 2]),
             helper.make_node("Relu", ["t"], ["output"], name="relu")], out_rank=3),
        "weight_type_17": one_node_model(
            "weight_type_17", [helper.make_node("Add", ["input", "w"], ["output"], name="add")],
            [TensorProto(name="w", data_type=17, dims=[1], raw_data=b"\0")]),
    }
    for name, model in models.items():
        save(os.path.join("hostile", name + ".onnx"), model.SerializeToString())


if __name__ == "__main__":
    sys.exit(main(sys.argv))
