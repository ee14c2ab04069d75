# Hostile variants of the windows over one and three spatial axes (audio
# N,C,L and video N,C,T,H,W), written with ONNX's Python helpers: zero and
# negative strides, output padding not smaller than the stride, huge
# dilations and kernels, parameters of the wrong length, and 3-D shapes
# whose element counts overflow. Each is refused by ios-optimize in one line
# naming the file and the node (or the input), with exit 2.
source "$(dirname "$0")/common.bash"
PY=/usr/bin/python3
$PY - "$WORK" <<'PY' || { fail "could not write the hostile models"; finish; exit 1; }
import sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

work = sys.argv[1]
def save(name, node, x_shape, inits=()):
    g = helper.make_graph([node], name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * len(x_shape))],
                          [numpy_helper.from_array(v, k) for k, v in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, f"{work}/{name}.onnx")
w3 = np.ones((4, 3, 3, 3, 3), np.float32)
save("conv3d_zero_stride", helper.make_node("Conv", ["x", "w"], ["y"], name="c3", strides=[0, 1, 1]),
     [1, 3, 4, 8, 8], [("w", w3)])
save("conv1d_negative_stride", helper.make_node("Conv", ["x", "w"], ["y"], name="c1", strides=[-2]),
     [1, 3, 16], [("w", np.ones((4, 3, 3), np.float32))])
save("conv3d_overflow", helper.make_node("Conv", ["x", "w"], ["y"], name="c3"), [1, 3, 1 << 21, 1 << 21, 1 << 21],
     [("w", w3)])
save("pool3d_huge_dilation", helper.make_node("MaxPool", ["x"], ["y"], name="p3", kernel_shape=[3, 3, 3],
                                              dilations=[1, 1 << 20, 1]), [1, 3, 4, 8, 8])
save("pool1d_dilation_over_bound", helper.make_node("MaxPool", ["x"], ["y"], name="p1", kernel_shape=[3],
                                                    dilations=[(1 << 20) + 1]), [1, 3, 16])
save("pool_four_spatial_axes", helper.make_node("MaxPool", ["x"], ["y"], name="p4", kernel_shape=[2, 2, 2, 2]),
     [1, 3, 4, 4, 4, 4])
save("conv_transpose3d_output_padding",
     helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="t3", strides=[1, 2, 2], output_padding=[0, 2, 0]),
     [1, 4, 2, 3, 3], [("w", np.ones((4, 2, 3, 3, 3), np.float32))])
save("conv_transpose1d_huge",
     helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="t1", strides=[1 << 20], dilations=[1 << 20]),
     [1, 4, 64], [("w", np.ones((4, 2, 3), np.float32))])
save("batch_norm3d_wrong_length", helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], name="bn"),
     [1, 3, 2, 4, 4], [(n, np.ones(4, np.float32)) for n in "sbmv"])
save("prelu3d_wrong_slope", helper.make_node("PRelu", ["x", "s"], ["y"], name="pr"), [1, 3, 2, 4, 4],
     [("s", np.ones((4, 1, 1, 1), np.float32))])
save("resize3d_overflow", helper.make_node("Resize", ["x", "", "scales"], ["y"], name="r3", mode="linear"),
     [1, 3, 4, 8, 8], [("scales", np.array([1, 1, 1e6, 1e6, 1e6], np.float32))])
PY
refused() {  # NAME PATTERN
  expect_error "$1" 2 "^ios-optimize: error: .*$1\\.onnx: .*$2" -- "$OPT" "$WORK/$1.onnx" -o "$WORK/out.json"
  [ ! -e "$WORK/out.json" ] || { fail "$1: wrote a schedule"; rm -f "$WORK/out.json"; }
}
refused conv3d_zero_stride "node 'c3' \\(Conv\\): attribute 'strides' has the value 0; strides must be from 1 to 2\\^20"
refused conv1d_negative_stride "node 'c1' \\(Conv\\): attribute 'strides' has the value -2"
refused conv3d_overflow "graph input 'x' has shape 1x3x2097152x2097152x2097152, more than 2\\^34 elements"
refused pool3d_huge_dilation "node 'p3' \\(MaxPool\\)"
refused pool1d_dilation_over_bound "node 'p1' \\(MaxPool\\): attribute 'dilations' has the value 1048577"
refused pool_four_spatial_axes "node 'p4' \\(MaxPool\\): input has shape 1x3x4x4x4x4; MaxPool takes 1-D \\(N,C,L\\), 2-D \\(N,C,H,W\\) or 3-D"
refused conv_transpose3d_output_padding "node 't3' \\(ConvTranspose\\): output_padding \\[0, 2, 0\\] must be at least 0 and smaller than the stride"
refused conv_transpose1d_huge "node 't1' \\(ConvTranspose\\).*more than 2\\^24"
refused batch_norm3d_wrong_length "node 'bn' \\(BatchNormalization\\).*parameter 1 must have shape 3"
refused prelu3d_wrong_slope "node 'pr' \\(PRelu\\): the slope has shape 4x1x1x1"
refused resize3d_overflow "node 'r3' \\(Resize\\): its output 'y' has shape 1x3x4000000x8000000x8000000, more than 2\\^34 elements"
finish
