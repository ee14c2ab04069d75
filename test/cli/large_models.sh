# Scaling: a 10,000-node convolution chain, a 300,000-node element-wise
# chain and 20,000 Gathers of an activation (each imported with a fresh tensor
# name) summed by Adds (onnx_models/make_large_models.py) import, form units
# and schedule in under 10 s each on the development machine. The limit here is 30 s
# (IOS_LARGE_MODEL_LIMIT_S), for a machine shared with a parallel ctest.
source "$(dirname "$0")/common.bash"
PY=/usr/bin/python3
limit=${IOS_LARGE_MODEL_LIMIT_S:-30}
$PY "$IOS_SOURCE_DIR/onnx_models/make_large_models.py" "$WORK" conv:10000 eltwise:300000 gather:20000 >/dev/null || { echo "FAIL: model generation"; exit 1; }

for m in conv_chain_10000 eltwise_chain_300000 gather_chain_20000; do
  start=$(date +%s.%N)
  # The Gathers are 20,000 branches side by side: the importer's cost is what
  # this model measures, so it is scheduled sequentially (the IOS search on
  # blocks that wide takes its full per-block bound, docs/unit-formation.md).
  scheduler=ios
  [ "$m" = gather_chain_20000 ] && scheduler=sequential
  expect_ok "$m" -- timeout -s KILL 120 "$OPT" "$WORK/$m.onnx" --cost simulated --scheduler "$scheduler" -o "$WORK/$m.json"
  seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  echo "$m: import + schedule in $seconds s"
  if awk -v s="$seconds" -v l="$limit" 'BEGIN { exit !(s < l) }'; then ok; else fail "$m took $seconds s (limit $limit s)"; fi
  expect_ok "$m schedule is valid" -- timeout -s KILL 120 "$RUN" "$WORK/$m.onnx" "$WORK/$m.json" --dry-run
done
finish
