# Resize as torchvision's segmentation heads export it, in models written with
# ONNX's Python helpers: Conv -> Resize -> Conv, for bilinear half_pixel x2
# (scales), bilinear pytorch_half_pixel to a given size (sizes), nearest x2,
# and opset 9's Upsample. ios-optimize schedules each and ios-run --backend cpu
# matches ONNX Runtime (tools/ort_run.js) within float32 rounding. Forms ios
# does not run exit 2 with one line naming the node.
source "$(dirname "$0")/common.bash"
PY=/usr/bin/python3
: "${IOS_SOURCE_DIR:?set by ctest}"
$PY - "$WORK" <<'PY' || { fail "could not write the Resize models"; finish; exit 1; }
import sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

work = sys.argv[1]
rng = np.random.default_rng(13)
x = rng.uniform(-1, 1, (1, 3, 7, 9)).astype(np.float32)
w1 = rng.uniform(-0.5, 0.5, (8, 3, 3, 3)).astype(np.float32)
b1 = rng.uniform(-0.5, 0.5, (8,)).astype(np.float32)
w2 = rng.uniform(-0.5, 0.5, (4, 8, 1, 1)).astype(np.float32)
np.save(f"{work}/x.npy", x)

def save(name, resize, extra, opset=13):
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        resize,
        helper.make_node("Conv", ["r", "w2"], ["y"]),
    ]
    inits = [numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"))] + extra
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 7, 9])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * 4)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, f"{work}/{name}.onnx")

scales = lambda *s: numpy_helper.from_array(np.array(s, np.float32), "scales")
sizes = lambda *s: numpy_helper.from_array(np.array(s, np.int64), "sizes")
save("linear_x2", helper.make_node("Resize", ["c1", "", "scales"], ["r"], name="up", mode="linear",
                                   coordinate_transformation_mode="half_pixel"), [scales(1, 1, 2, 2)])
save("linear_sizes", helper.make_node("Resize", ["c1", "", "", "sizes"], ["r"], name="up", mode="linear",
                                      coordinate_transformation_mode="pytorch_half_pixel"), [sizes(1, 8, 16, 13)])
save("linear_align", helper.make_node("Resize", ["c1", "", "", "sizes"], ["r"], name="up", mode="linear",
                                      coordinate_transformation_mode="align_corners"), [sizes(1, 8, 5, 20)])
save("nearest_x2", helper.make_node("Resize", ["c1", "", "scales"], ["r"], name="up", mode="nearest",
                                    coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
     [scales(1, 1, 2, 2)])
save("upsample9", helper.make_node("Upsample", ["c1", "scales"], ["r"], name="up", mode="linear"),
     [scales(1, 1, 2, 3)], opset=9)
# Forms ios refuses.
save("bad_cubic", helper.make_node("Resize", ["c1", "", "scales"], ["r"], name="up", mode="cubic"),
     [scales(1, 1, 2, 2)])
save("bad_crop", helper.make_node("Resize", ["c1", "", "scales"], ["r"], name="up", mode="linear",
                                  coordinate_transformation_mode="tf_crop_and_resize"), [scales(1, 1, 2, 2)])
save("bad_channels", helper.make_node("Resize", ["c1", "", "scales"], ["r"], name="up", mode="nearest"),
     [scales(1, 2, 2, 2)])
PY
for name in linear_x2 linear_sizes linear_align nearest_x2 upsample9; do
  model="$WORK/$name.onnx"
  if ! node "$IOS_SOURCE_DIR/tools/ort_run.js" "$model" "$WORK/x.npy" "$WORK/$name.ort.npy" 2>"$WORK/ort.err"; then
    fail "$name: ONNX Runtime failed: $(cat "$WORK/ort.err")"; continue
  fi
  for scheduler in sequential ios; do
    out="$WORK/$name.$scheduler.json"
    expect_ok "$name $scheduler" -- "$OPT" "$model" --scheduler "$scheduler" --cost simulated -o "$out" --quiet ||
      continue
    expect_ok "$name $scheduler cpu" -- "$RUN" "$model" "$out" --backend cpu --input "x=$WORK/x.npy" \
      --reference "y=$WORK/$name.ort.npy" --rtol 1e-5 --atol 1e-6 --iterations 1 --warmup 0 --quiet
  done
done
expect_error "mode cubic" 2 "node 'up' \(Resize\).*mode 'cubic' is not supported" -- "$OPT" "$WORK/bad_cubic.onnx"
expect_error "tf_crop_and_resize" 2 "node 'up' \(Resize\).*'tf_crop_and_resize' is not supported" -- \
  "$OPT" "$WORK/bad_crop.onnx"
expect_error "channel scale" 2 "node 'up' \(Resize\).*resizes the batch or channel axis" -- \
  "$OPT" "$WORK/bad_channels.onnx"
finish
