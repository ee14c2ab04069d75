# GELU: PyTorch's exports of nn.GELU() and nn.GELU(approximate='tanh') at
# opsets 13 and 17 (element-wise chains that the importer fuses into one Gelu
# node) and ONNX Gelu of opset 20, after a Linear. ios-optimize schedules each
# model with every scheduler, the Gelu is the MatMul unit's epilogue, and
# ios-run --backend cpu matches PyTorch's float64 run of the same module on
# the same input. An unknown `approximate` is a one-line input error.
source "$(dirname "$0")/common.bash"
PY=/usr/bin/python3
$PY - "$WORK" <<'PY' >"$WORK/export.log" 2>&1 || { fail "could not export the GELU models: $(tail -c 600 "$WORK/export.log")"; finish; exit 1; }
import sys, warnings
import numpy as np
import torch
import onnx
from onnx import helper, numpy_helper, TensorProto

warnings.filterwarnings("ignore")
work = sys.argv[1]
torch.manual_seed(3)
x = torch.empty(2, 5, 16).uniform_(-3, 3)
np.save(f"{work}/x.npy", x.numpy())
for approximate in ("none", "tanh"):
    model = torch.nn.Sequential(torch.nn.Linear(16, 24), torch.nn.GELU(approximate=approximate),
                                torch.nn.Linear(24, 8)).eval()
    for opset in (13, 17):
        torch.onnx.export(model, x, f"{work}/gelu_{approximate}_{opset}.onnx", opset_version=opset,
                          input_names=["x"], output_names=["y"])
    with torch.no_grad():
        np.save(f"{work}/y_{approximate}.npy", model.double()(x.double()).numpy())

# ONNX Gelu (opset 20) on [2, 5, 16], with its float64 truth from torch.
def gelu20(name, approximate):
    node = helper.make_node("Gelu", ["x"], ["y"], name="act", approximate=approximate)
    graph = helper.make_graph([node], "gelu20", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5, 16])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 9
    onnx.save(model, f"{work}/{name}.onnx")
for approximate in ("none", "tanh"):
    gelu20(f"gelu20_{approximate}", approximate)
    y = torch.nn.functional.gelu(x.double(), approximate=approximate)
    np.save(f"{work}/y20_{approximate}.npy", y.numpy())
gelu20("gelu20_cubic", "cubic")
PY
for approximate in none tanh; do
  for opset in 13 17; do
    model="$WORK/gelu_${approximate}_${opset}.onnx"
    for scheduler in sequential greedy ios ios-parallel ios-merge dos lios nimble; do
      out="$WORK/gelu.$approximate.$opset.$scheduler.json"
      expect_ok "gelu $approximate opset $opset $scheduler" -- "$OPT" "$model" --scheduler "$scheduler" \
        --cost simulated -o "$out" --quiet || continue
      expect_ok "gelu $approximate opset $opset $scheduler cpu" -- "$RUN" "$model" "$out" --backend cpu \
        --input "x=$WORK/x.npy" --reference "y=$WORK/y_$approximate.npy" --rtol 1e-5 --atol 1e-5 \
        --iterations 1 --warmup 0 --quiet
    done
    # Two Linear layers (MatMul + bias Add each) and the GELU chain make two
    # units: the first MatMul's unit fuses its bias and the whole GELU.
    expect_ok "gelu $approximate opset $opset units" -- "$OPT" "$model" --analyze
    grep -qE "^total +2 " "$WORK/stdout" && grep -q " 2 matmul " "$WORK/stdout" && ok ||
      fail "gelu $approximate opset $opset: expected 2 matmul units: $(cat "$WORK/stdout")"
  done
  model="$WORK/gelu20_$approximate.onnx"
  out="$WORK/gelu20.$approximate.json"
  expect_ok "gelu opset 20 $approximate" -- "$OPT" "$model" --cost simulated -o "$out" --quiet &&
    expect_ok "gelu opset 20 $approximate cpu" -- "$RUN" "$model" "$out" --backend cpu --input "x=$WORK/x.npy" \
      --reference "y=$WORK/y20_$approximate.npy" --rtol 1e-5 --atol 1e-5 --iterations 1 --warmup 0 --quiet
  expect_ok "gelu opset 20 $approximate units" -- "$OPT" "$model" --analyze
  grep -qE "^total +1 " "$WORK/stdout" && ok || fail "gelu opset 20 $approximate: expected 1 unit: $(cat "$WORK/stdout")"
done
expect_error "gelu approximate cubic" 2 "node 'act'.*approximate 'cubic' is not supported" -- \
  "$OPT" "$WORK/gelu20_cubic.onnx" --cost simulated -o "$WORK/cubic.json"
[ ! -e "$WORK/cubic.json" ] && ok || fail "gelu approximate cubic: wrote a schedule"
finish
