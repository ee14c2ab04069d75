# The default search's time, the cut of bench/search_time.py that ctest runs
# (docs/benchmarks.md, "Search time"): on RetinaNet and SSDlite, at their
# default precision and with --precision fp16, the whole ios-optimize
# process (--threads 1, median of 3) takes at most 8x the greedy one's in
# the same run, no block's search stops at the time limit, the predicted
# latency is within 0.5% of bench/search_time_baseline.json's or better, and
# the search's own memory is at most 300 MB. The search took 16x and 150x
# greedy's time on these models before free units joined their chains and
# stages of equal cost classes were costed once; the ratio, not seconds,
# is what a shared machine can check.
source "$(dirname "$0")/common.bash"
/usr/bin/python3 "$IOS_SOURCE_DIR/bench/search_time.py" --bin-dir "$IOS_BIN" --models-dir "$IOS_MODELS_DIR" \
  --models retinanet_resnet50_fpn-128x128,ssdlite320_mobilenet_v3_large --runs 3 --check --max-ratio 8 \
  >"$WORK/table.md" 2>"$WORK/stderr" && ok || fail "search time: $(grep FAIL "$WORK/stderr") $(cat "$WORK/table.md")"
finish
