# ios-optimize --threads: the IOS search's blocks in parallel. The schedule is
# the same with any number of threads (each block's search is independent of
# the others'), with the default time limit and without one.
source "$(dirname "$0")/common.bash"
same_schedule() {  # NAME A B: byte for byte but the creation time
  cmp -s <(grep -v '"created"' "$2") <(grep -v '"created"' "$3") && ok || fail "$1: the schedules differ"
}
for model in randwire-bdyn-64x64 inception_v3-bdyn; do
  m="$IOS_MODELS_DIR/$model.onnx"
  for threads in 1 3; do
    expect_ok "$model, $threads threads" -- "$OPT" "$m" --batch 1 --cost simulated --threads "$threads" \
      -o "$WORK/$model-$threads.json"
    expect_ok "$model, $threads threads, no limit" -- "$OPT" "$m" --batch 1 --cost simulated --threads "$threads" \
      --time-limit 0 -o "$WORK/$model-$threads-unlimited.json"
  done
  same_schedule "$model: 1 and 3 threads" "$WORK/$model-1.json" "$WORK/$model-3.json"
  same_schedule "$model: 1 and 3 threads, no limit" "$WORK/$model-1-unlimited.json" "$WORK/$model-3-unlimited.json"
  same_schedule "$model: limit and no limit" "$WORK/$model-1.json" "$WORK/$model-1-unlimited.json"
done
expect_error "negative threads" 2 'threads' -- "$OPT" "$IOS_MODELS_DIR/squeezenet1_1-bdyn.onnx" --batch 1 \
  --threads -1 -o "$WORK/x.json"
finish
