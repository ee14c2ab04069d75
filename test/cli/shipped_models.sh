# ios-optimize imports the torchvision CNNs and writes schedules that
# ios-run --dry-run accepts, for every scheduler, and whose reported
# predictions are the simulated latencies of their plans.
source "$(dirname "$0")/common.bash"
for name in inception_v3 squeezenet1_1 resnet50 mobilenet_v2 densenet121 googlenet \
            randwire-bdyn-64x64 nasnet_a_large-bdyn-99x99; do
  model="$IOS_MODELS_DIR/$name.onnx"
  case $name in *-bdyn-*) ;; *) model="$IOS_MODELS_DIR/$name-bdyn.onnx" ;; esac
  [ -f "$model" ] || { fail "$model missing: run scripts/setup.sh"; continue; }
  written=()
  for scheduler in sequential greedy ios dos lios nimble; do
    out="$WORK/$name.$scheduler.json"
    expect_ok "$name $scheduler" -- "$OPT" "$model" --batch 1 --scheduler "$scheduler" --cost simulated \
      -o "$out" --report-json "$out.report" --quiet || continue
    expect_ok "$name $scheduler dry-run" -- "$RUN" "$model" "$out" --dry-run || continue
    grep -q "schedule(s) valid" "$WORK/stdout" || fail "$name $scheduler: dry-run printed no verdict"
    written+=("$out")
  done
  # Every scheduler's reported prediction is the simulated latency of its
  # lowered plan: ios-run --backend sim simulates the same plans.
  expect_ok "$name sim" -- "$RUN" "$model" "${written[@]}" --backend sim --export-times "$WORK/$name.times.json" --quiet || continue
  python3 - "$WORK/$name.times.json" <<'PY' && ok || fail "$name: summary predictions differ from the simulated plans"
import json, sys
for run in json.load(open(sys.argv[1]))["runs"]:
    reported = json.load(open(run["schedule_file"] + ".report"))["predicted_latency_ms"]
    simulated = run["summary"]["mean_ms"]
    if abs(reported - simulated) > 1e-9 * max(reported, 1e-12):
        sys.exit(f"{run['name']}: reported {reported} ms, simulated {simulated} ms")
PY
done
# Inception V3's last block is the IOS paper's: 11 units, width 6.
expect_ok "inception analyze" -- "$OPT" "$IOS_MODELS_DIR/inception_v3-bdyn.onnx" --batch 1 --analyze
last=$(grep -E '^ +[0-9]+ ' "$WORK/stdout" | awk '$2 == 11 && $3 == 6' | tail -1)
[ -n "$last" ] && ok || fail "no block with n = 11 and width 6 in --analyze: $(cat "$WORK/stdout")"
finish
