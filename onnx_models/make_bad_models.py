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
Broken files:
  cycle.onnx           Add and Relu consuming each other's outputs (saved unchecked)
  truncated.onnx       the first half of tiny_conv.onnx's bytes
  not_onnx.onnx        plain text

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
    save("inception_like.onnx", inception_like().SerializeToString())
    save("cycle.onnx", cycle().SerializeToString())
    save("truncated.onnx", good[: len(good) // 2])
    save("not_onnx.onnx", b"this is not an ONNX model, just plain text\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
