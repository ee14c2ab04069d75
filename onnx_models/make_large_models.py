#!/usr/bin/python3
"""Write long-chain ONNX models for ios's scaling tests (onnx helper API, no torch).

    /usr/bin/python3 onnx_models/make_large_models.py OUT_DIR [KIND:NODES ...]

KIND is conv, eltwise, gather, fanout or heavy; the default is conv:10000 eltwise:300000.
  conv_chain_N.onnx     input 1x8x8x8 -> N Conv 1x1 (8 -> 8 channels, one shared
                        weight) -> output 1x8x8x8: N schedule units in one chain
  eltwise_chain_N.onnx  input 1x8x4x4 -> N nodes alternating Relu and Sigmoid ->
                        output: element-wise work that unit formation fuses
  gather_chain_N.onnx   input 1x8x4 -> N Gathers of one constant scalar index
                        each (x[:, k]: imported as Slice + Reshape, each with a
                        fresh tensor name) summed by a chain of N - 1 Adds ->
                        output 1x4
  fanout_N.onnx         input 1x32x8x8 -> N parallel Conv 3x3 (32 -> 32 channels,
                        pad 1, one shared weight) of the input -> Concat ->
                        output 1x(32N)x8x8: one block of width N (split into
                        parts by unit formation), the IOS search's worst case
  heavy_chain_N.onnx    input 1x1024x2x2 -> N Conv 1x1 (1024 -> 1024 channels),
                        each with its own 4 MiB weight: N x 4 MiB of weights for
                        the importer's memory test
Import, unit formation, blocks and the cost model must stay near-linear in
the node count (docs/testing.md has the timings).  Output is deterministic.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13
IR_VERSION = 7


def model(name, nodes, inits, shape, out_shape=None):
    g = helper.make_graph(nodes, name,
                          [helper.make_tensor_value_info("input", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, out_shape or shape)],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)],
                          producer_name="ios onnx_models/make_large_models.py", producer_version="1")
    m.ir_version = IR_VERSION
    return m


def names(n):
    return ["input"] + [f"t{k}" for k in range(1, n)] + ["output"]


def conv_chain(n):
    w = numpy_helper.from_array((np.eye(8, dtype=np.float32) * 0.5).reshape(8, 8, 1, 1), "w")
    t = names(n)
    nodes = [helper.make_node("Conv", [t[k], "w"], [t[k + 1]], name=f"conv{k}", kernel_shape=[1, 1])
             for k in range(n)]
    return model(f"conv_chain_{n}", nodes, [w], [1, 8, 8, 8])


def eltwise_chain(n):
    t = names(n)
    nodes = [helper.make_node("Relu" if k % 2 == 0 else "Sigmoid", [t[k]], [t[k + 1]], name=f"e{k}")
             for k in range(n)]
    return model(f"eltwise_chain_{n}", nodes, [], [1, 8, 4, 4])


def gather_chain(n):
    inits = [numpy_helper.from_array(np.asarray(k, dtype=np.int64), f"k{k}") for k in range(8)]
    nodes = [helper.make_node("Gather", ["input", f"k{k % 8}"], [f"g{k}"], name=f"g{k}", axis=1)
             for k in range(n)]
    total = "g0"
    for k in range(1, n):
        out = "output" if k == n - 1 else f"s{k}"
        nodes.append(helper.make_node("Add", [total, f"g{k}"], [out], name=f"a{k}"))
        total = out
    if n == 1:
        nodes.append(helper.make_node("Identity", ["g0"], ["output"], name="id"))
    return model(f"gather_chain_{n}", nodes, inits, [1, 8, 4], [1, 4])


def fanout(n):
    w = numpy_helper.from_array(np.full((32, 32, 3, 3), 1.0 / 288.0, dtype=np.float32), "w")
    nodes = [helper.make_node("Conv", ["input", "w"], [f"c{k}"], name=f"conv{k}", kernel_shape=[3, 3],
                              pads=[1, 1, 1, 1])
             for k in range(n)]
    nodes.append(helper.make_node("Concat", [f"c{k}" for k in range(n)], ["output"], name="concat", axis=1))
    return model(f"fanout_{n}", nodes, [w], [1, 32, 8, 8], [1, 32 * n, 8, 8])


def heavy_chain(n):
    rng = np.random.default_rng(0)
    t = names(n)
    inits = [numpy_helper.from_array(rng.standard_normal((1024, 1024, 1, 1), dtype=np.float32) / 32.0, f"w{k}")
             for k in range(n)]
    nodes = [helper.make_node("Conv", [t[k], f"w{k}"], [t[k + 1]], name=f"conv{k}", kernel_shape=[1, 1])
             for k in range(n)]
    return model(f"heavy_chain_{n}", nodes, inits, [1, 1024, 2, 2])


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) == 2 else 2
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    makers = {"conv": conv_chain, "eltwise": eltwise_chain, "gather": gather_chain, "fanout": fanout,
              "heavy": heavy_chain}
    for spec in argv[2:] or ["conv:10000", "eltwise:300000"]:
        kind, _, count = spec.partition(":")
        if kind not in makers or not count.isdigit() or int(count) < 1:
            print(f"make_large_models.py: '{spec}' is not KIND:NODES (KIND: conv, eltwise, gather, fanout, heavy)",
                  file=sys.stderr)
            return 2
        m = makers[kind](int(count))
        path = os.path.join(out, f"{kind}_{count}.onnx" if kind == "fanout" else f"{kind}_chain_{count}.onnx")
        with open(path + ".tmp", "wb") as f:
            f.write(m.SerializeToString())
        os.replace(path + ".tmp", path)
        print(f"{path}  {os.path.getsize(path)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
