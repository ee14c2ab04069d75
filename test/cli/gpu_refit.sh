#!/usr/bin/env bash
# scripts/gpu/refit.py on a small piece of the 2026-11-28 H200 kit run
# (test/cli/gpu_refit/: SqueezeNet's measured stages, 121 rows of Inception
# V3's from the 2026-11-27 run, and both networks' graph-mode timings): the
# fit from SqueezeNet validated on Inception V3's eight schedules, the fit
# from both models and two databases, the gate, and the kit's errors.
source "$(dirname "$0")/common.bash"
: "${IOS_SOURCE_DIR:?set by ctest}"
PY=/usr/bin/python3
REFIT="$IOS_SOURCE_DIR/scripts/gpu/refit.py"
FIX="$IOS_SOURCE_DIR/test/cli/gpu_refit"
common=(--models "$IOS_MODELS_DIR" --bin "$IOS_BIN" --work "$WORK/work")
for m in squeezenet1_1-bdyn inception_v3-bdyn; do
  [ -f "$IOS_MODELS_DIR/$m.onnx" ] || { echo "SKIP: $m.onnx is missing (scripts/make-models.sh)"; exit 0; }
done
before=$(cd "$FIX" && find . -type f -exec sha256sum {} + | sort)

# 1. Fitted to SqueezeNet's stages, validated on Inception V3's schedules.
if expect_ok "refit squeezenet, validate inception" -- $PY "$REFIT" "$FIX/kit" --device h200 \
  --fit squeezenet1_1 --validate inception_v3 --out "$WORK/a.json" "${common[@]}"; then
  out=$(cat "$WORK/stdout")
  grep -qE '^Fitted to +squeezenet1_1-bdyn \([1-9][0-9]* stages\)' <<<"$out" && ok || fail "no fitted stages: $out"
  grep -qE '^Stage error +mean .*% -> .*%' <<<"$out" && ok || fail "no stage error: $out"
  grep -qE '^Fit error +median [0-9.]+%, max [0-9.]+% over 8 graph-mode schedules of squeezenet1_1-bdyn' <<<"$out" &&
    ok || fail "no fit error over SqueezeNet's 8 schedules: $out"
  grep -qE '^Validation error median [0-9.]+%, max [0-9.]+% over 8 graph-mode schedules of inception_v3-bdyn' <<<"$out" &&
    ok || fail "no validation error over Inception V3's 8 schedules: $out"
  [ "$(grep -cE '^inception_v3-bdyn +[a-z-]+ +validation ' <<<"$out")" = 8 ] && ok || fail "not 8 validation rows: $out"
  grep -qE '^Gate +validation median .* passed' <<<"$out" && ok || fail "no passing gate: $out"
  # A valid profile: named, and accepted by the programs.
  [ "$($PY -c 'import json, sys; print(json.load(open(sys.argv[1]))["name"])' "$WORK/a.json")" = h200-refit ] &&
    ok || fail "the profile is not named h200-refit: $(head -c 300 "$WORK/a.json")"
  expect_ok "the refit profile loads" -- "$OPT" "$IOS_MODELS_DIR/squeezenet1_1-bdyn.onnx" --batch 1 --cost simulated \
    --device-profile "$WORK/a.json" --scheduler sequential -o "$WORK/seq.json" --quiet
fi

# 2. Both models from two databases; RandWire is not in this kit run: said,
# and the gate is not applied.
if expect_ok "refit from two databases" -- $PY "$REFIT" "$FIX/kit" --device h200 --db "$FIX/earlier.sqlite" \
  --validate randwire --out "$WORK/b.json" "${common[@]}"; then
  out=$(cat "$WORK/stdout")
  grep -qE '^Fitted to +squeezenet1_1-bdyn \([1-9][0-9]* stages\), inception_v3-bdyn \([1-9][0-9]* stages\)' <<<"$out" &&
    ok || fail "not fitted to both models: $out"
  grep -qE '^Fit error +median [0-9.]+%, max [0-9.]+% over 16 graph-mode schedules' <<<"$out" && ok || fail "no fit error over 16: $out"
  grep -q 'randwire: no graph-mode timings in this kit run' <<<"$out" && ok || fail "RandWire's absence not said: $out"
  grep -qE '^Gate +not applied' <<<"$out" && ok || fail "the gate without validation data: $out"
fi

# 3. Inception V3's stages not in the kit's database: said, and it is held out.
if expect_ok "refit without inception's stages" -- $PY "$REFIT" "$FIX/kit" --device h200 --validate randwire \
  --out "$WORK/c.json" "${common[@]}"; then
  out=$(cat "$WORK/stdout")
  grep -q 'inception_v3-bdyn: none of its stages is in' <<<"$out" && ok || fail "Inception's missing stages not said: $out"
  grep -qE '^Held out error +median .* over 8 graph-mode schedules of inception_v3-bdyn' <<<"$out" && ok ||
    fail "Inception not held out: $out"
fi

# 4. The gate: a median error over it fails (exit 1), --no-gate reports.
rc=0
$PY "$REFIT" "$FIX/kit" --device h200 --fit squeezenet1_1 --validate inception_v3 --gate 0.001 \
  --out "$WORK/d.json" "${common[@]}" >"$WORK/gate.txt" 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -qE '^Gate .* FAILED' "$WORK/gate.txt" && ok || fail "gate 0.1%: exit $rc: $(tail -3 "$WORK/gate.txt")"
expect_ok "--no-gate" -- $PY "$REFIT" "$FIX/kit" --device h200 --fit squeezenet1_1 --validate inception_v3 --gate 0.001 \
  --no-gate --out "$WORK/d.json" "${common[@]}" && grep -q 'reported only' "$WORK/stdout" && ok || fail "--no-gate: $(tail -3 "$WORK/stdout")"

# 5. Input errors: exit 2 with one line naming the problem.
expect_error "another GPU's profile" 2 "the kit ran on NVIDIA H200, not on a GPU of the 'h100' profile" -- \
  $PY "$REFIT" "$FIX/kit" --device h100 --out "$WORK/e.json" "${common[@]}"
mkdir -p "$WORK/empty"
expect_error "not a kit" 2 "neither results.tgz nor results/times/" -- $PY "$REFIT" "$WORK/empty" --device h200 \
  --out "$WORK/e.json" "${common[@]}"
expect_error "an --out that is not a profile" 2 "the file exists and is not a device profile" -- \
  $PY "$REFIT" "$FIX/kit" --device h200 --out "$IOS_SOURCE_DIR/README.md" "${common[@]}"

# The fixture is only read.
[ "$(cd "$FIX" && find . -type f -exec sha256sum {} + | sort)" = "$before" ] && ok || fail "the fixture changed"
finish
