# The same models written at opset 13 (IR 7), 18 and 21 (IR 10) by
# onnx_models/make_opset_models.py: every newer form imports, schedules with
# every scheduler and runs on the CPU backend with outputs identical, bit for
# bit, to the opset-13 model's (same weights, same seeded inputs).
source "$(dirname "$0")/common.bash"
PY=/usr/bin/python3

"$PY" "$IOS_SOURCE_DIR/onnx_models/make_opset_models.py" "$WORK/models" >/dev/null || fail "make_opset_models.py failed"
for case in cnn reduce; do
  for scheduler in sequential greedy ios lios nimble; do
    for opset in 13 18 21; do
      model="$WORK/models/$case-opset$opset.onnx"
      dir="$WORK/$case-$scheduler-$opset"
      expect_ok "$case opset $opset: optimize with $scheduler" -- \
        "$OPT" "$model" --scheduler "$scheduler" -o "$dir.json" --quiet || continue
      expect_ok "$case opset $opset: run $scheduler on the CPU" -- \
        "$RUN" "$model" "$dir.json" --backend cpu --iterations 1 --warmup 0 --seed 3 --output-dir "$dir"
    done
    for opset in 18 21; do
      if cmp -s "$WORK/$case-$scheduler-13/output.npy" "$WORK/$case-$scheduler-$opset/output.npy"; then
        ok
      else
        fail "$case with $scheduler: opset $opset output differs from opset 13's"
      fi
    done
  done
done
finish
