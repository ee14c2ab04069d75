#!/usr/bin/env python3
"""Small models whose names are hostile to the files ios writes from them
(test/cli/hostile_outputs.sh): output names that map to one file name in an
--output-dir, and tensor names that Graphviz cannot take as they are (a NUL,
more than its 16,384-character limit).

    make_hostile_output_models.py OUT_DIR
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def conv(name_in, name_out, seed, channels=3):
    w = np.random.default_rng(seed).standard_normal((channels, channels, 1, 1)).astype(np.float32)
    weight = numpy_helper.from_array(w, f"w{seed}")
    return helper.make_node("Conv", [name_in, weight.name], [name_out], name=f"conv{seed}"), weight


def model(nodes_and_weights, outputs, path):
    nodes = [n for n, _ in nodes_and_weights]
    weights = [w for _, w in nodes_and_weights]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    ys = [helper.make_tensor_value_info(o, TensorProto.FLOAT, [1, 3, 8, 8]) for o in outputs]
    graph = helper.make_graph(nodes, "hostile_names", [x], ys, weights)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, path)


def main():
    out = sys.argv[1]
    # Three outputs whose names all become "y_0" as file names.
    model([conv("x", "y/0", 1), conv("x", "y_0", 2), conv("x", "y:0", 3)], ["y/0", "y_0", "y:0"],
          f"{out}/colliding_outputs.onnx")
    # An intermediate tensor whose name holds a NUL and control characters.
    model([conv("x", "a\0b\x01\x1b[31m", 4), conv("a\0b\x01\x1b[31m", "y", 5)], ["y"],
          f"{out}/nul_name.onnx")
    # An intermediate tensor named by 20,000 characters.
    long_name = "t" * 20000
    model([conv("x", long_name, 6), conv(long_name, "y", 7)], ["y"], f"{out}/long_name.onnx")


if __name__ == "__main__":
    main()
