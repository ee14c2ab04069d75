# Batch and input shapes through both programs (docs/cli.md, "Batch and input
# shapes"): a model whose inputs have unrelated static dim 0 round-trips, a
# static batch is refused a different --batch unless --rewrite-batch, and
# ios-run refuses a schedule whose recorded shapes the model contradicts.
source "$(dirname "$0")/common.bash"
PY=/usr/bin/python3

# y = x @ w: x is 3x5 (static) or Nx5 (symbolic), w is 5x4 (static, dim 0 is no batch).
$PY - "$WORK" <<'PYEOF'
import sys
import numpy as np
from onnx import helper, TensorProto, save
out = sys.argv[1]
for name, rows in (("matmul_static", 3), ("matmul_symbolic", "N")):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, 5])
    w = helper.make_tensor_value_info("w", TensorProto.FLOAT, [5, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, 4])
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul")], name, [x, w], [y])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), f"{out}/{name}.onnx")
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3])
graph = helper.make_graph([helper.make_node("Add", ["x", "x"], ["s"], name="add"),
                           helper.make_node("Relu", ["s"], ["z"], name="relu")], "add_static", [x], [z])
save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), f"{out}/add_static.onnx")
rng = np.random.default_rng(7)
for rows in (3, 2):
    xv = rng.standard_normal((rows, 5)).astype(np.float32)
    wv = rng.standard_normal((5, 4)).astype(np.float32)
    np.save(f"{out}/x{rows}.npy", xv)
    np.save(f"{out}/w{rows}.npy", wv)
    np.save(f"{out}/y{rows}.npy", (xv.astype(np.float64) @ wv.astype(np.float64)).astype(np.float32))
PYEOF

static="$WORK/matmul_static.onnx"
expect_ok "static two-input model: optimize" -- "$OPT" "$static" -o "$WORK/static.json" --quiet
grep -q '"batch": 3' "$WORK/static.json" && ok || fail "schedule does not record batch 3: $(head -c 600 "$WORK/static.json")"
expect_ok "static two-input model: run and check" -- "$RUN" "$static" "$WORK/static.json" --backend cpu \
  --input "x=$WORK/x3.npy" --input "w=$WORK/w3.npy" --reference "y=$WORK/y3.npy" --iterations 1
grep -q "PASSED" "$WORK/stdout" && ok || fail "no PASSED check: $(cat "$WORK/stdout")"

symbolic="$WORK/matmul_symbolic.onnx"
expect_ok "symbolic batch: optimize --batch 2" -- "$OPT" "$symbolic" --batch 2 -o "$WORK/sym.json" --quiet
expect_ok "symbolic batch: run reproduces the recorded shapes" -- "$RUN" "$symbolic" "$WORK/sym.json" \
  --backend cpu --input "x=$WORK/x2.npy" --input "w=$WORK/w2.npy" --reference "y=$WORK/y2.npy" --iterations 1
grep -q "PASSED" "$WORK/stdout" && ok || fail "no PASSED check: $(cat "$WORK/stdout")"

# A static batch and a different --batch: refused, or rewritten on request.
expect_error "static batch, other --batch" 2 "matmul_static\.onnx.*batch is static.*--rewrite-batch" -- \
  "$OPT" "$static" --batch 4 -o "$WORK/never.json"
[ ! -e "$WORK/never.json" ] && ok || fail "a refused optimization wrote a schedule"
expect_ok "--rewrite-batch" -- "$OPT" "$WORK/add_static.onnx" --batch 4 --rewrite-batch -o "$WORK/add4.json" --quiet
grep -q '"batch": 4' "$WORK/add4.json" && ok || fail "rewritten schedule does not record batch 4"
expect_error "rewritten schedule without --rewrite-batch" 2 "add4\.json.*add_static\.onnx.*--rewrite-batch" -- \
  "$RUN" "$WORK/add_static.onnx" "$WORK/add4.json" --dry-run
expect_ok "rewritten schedule with --rewrite-batch" -- "$RUN" "$WORK/add_static.onnx" "$WORK/add4.json" \
  --rewrite-batch --dry-run

# A schedule whose recorded shape contradicts a static dimension of the model.
$PY - "$WORK/static.json" "$WORK/contradicted.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["model"]["inputs"][1]["shape"] = [6, 4]
json.dump(d, open(sys.argv[2], "w"))
PYEOF
expect_error "recorded shape contradicts the model" 2 "contradicted\.json.*'w'.*6x4.*5x4" -- \
  "$RUN" "$static" "$WORK/contradicted.json" --dry-run
finish
