# ios-optimize imports the torchvision CNNs and writes schedules that
# ios-run --dry-run accepts, for every scheduler.
source "$(dirname "$0")/common.bash"
for name in inception_v3 squeezenet1_1 resnet50 mobilenet_v2 densenet121 googlenet \
            randwire-bdyn-64x64 nasnet_a_large-bdyn-99x99; do
  model="$IOS_MODELS_DIR/$name.onnx"
  case $name in *-bdyn-*) ;; *) model="$IOS_MODELS_DIR/$name-bdyn.onnx" ;; esac
  [ -f "$model" ] || { fail "$model missing: run scripts/setup.sh"; continue; }
  for scheduler in sequential greedy ios dos lios nimble; do
    out="$WORK/$name.$scheduler.json"
    expect_ok "$name $scheduler" -- "$OPT" "$model" --batch 1 --scheduler "$scheduler" -o "$out" --quiet || continue
    expect_ok "$name $scheduler dry-run" -- "$RUN" "$model" "$out" --dry-run || continue
    grep -q "schedule(s) valid" "$WORK/stdout" || fail "$name $scheduler: dry-run printed no verdict"
  done
done
# Inception V3's last block is the IOS paper's: 11 units, width 6.
expect_ok "inception analyze" -- "$OPT" "$IOS_MODELS_DIR/inception_v3-bdyn.onnx" --batch 1 --analyze
last=$(grep -E '^ +[0-9]+ ' "$WORK/stdout" | awk '$2 == 11 && $3 == 6' | tail -1)
[ -n "$last" ] && ok || fail "no block with n = 11 and width 6 in --analyze: $(cat "$WORK/stdout")"
finish
