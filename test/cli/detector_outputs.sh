# A detector exported up to its raw head outputs (SSDlite320-MobileNetV3:
# cls_logits and bbox_regression, scripts/make-models.sh) through both
# programs: ios-optimize schedules it, ios-run --backend cpu checks each
# output against the sequential schedule and against its float64 truth
# (--reference NAME=file per output) and writes each output with
# --output-dir; a reference without a name, or naming no output, is a
# one-line input error that lists the outputs.
source "$(dirname "$0")/common.bash"
stem="$IOS_MODELS_DIR/ssdlite320_mobilenet_v3_large"
model="$stem.onnx"
for f in "$model" "$stem.input.npy" "$stem.truth.cls_logits.npy" "$stem.truth.bbox_regression.npy"; do
  [ -f "$f" ] || { fail "$f is missing: run scripts/setup.sh (scripts/make-models.sh exports it)"; finish; exit 1; }
done
cd "$WORK"

expect_ok "ios-optimize schedules the detector" -- "$OPT" "$model" -o ios.json --quiet
expect_ok "ios-run checks both outputs against their truths and writes them" -- "$RUN" "$model" ios.json \
  --backend cpu --input "input=$stem.input.npy" --reference "cls_logits=$stem.truth.cls_logits.npy" \
  --reference "bbox_regression=$stem.truth.bbox_regression.npy" --rtol 1e-3 --atol 1e-4 --output-dir out \
  --iterations 1 --warmup 0 --quiet
for name in cls_logits bbox_regression; do
  if ! grep -q "check ios.json vs .*truth.$name.npy, output '$name': PASSED" "$WORK/stdout"; then
    fail "no passing check of '$name' against its truth: $(head -c 600 "$WORK/stdout")"
  fi
  # The written output has the truth's shape (the .npy header's shape field).
  want=$(head -c 128 "$stem.truth.$name.npy" | tr -d '\0' | grep -ao "'shape': ([0-9, ]*)")
  got=$(head -c 128 "out/$name.npy" 2>/dev/null | tr -d '\0' | grep -ao "'shape': ([0-9, ]*)")
  if [ -z "$want" ] || [ "$want" != "$got" ]; then fail "out/$name.npy: shape '$got', expected '$want'"; else ok; fi
done

expect_error "a reference without a name" 2 "the model has 2 of these; write NAME=file\.npy \(names: cls_logits, bbox_regression\)" -- \
  "$RUN" "$model" ios.json --backend cpu --reference "$stem.truth.cls_logits.npy" --iterations 1 --warmup 0 --quiet
expect_error "a reference naming no output" 2 "the model has no 'scores' \(names: cls_logits, bbox_regression\)" -- \
  "$RUN" "$model" ios.json --backend cpu --reference "scores=$stem.truth.cls_logits.npy" --iterations 1 --warmup 0 --quiet
finish
