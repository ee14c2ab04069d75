# ios-optimize --memory-limit is monotone (docs/schedulers.md, "Memory"): at
# ten limits spread evenly from the sequential schedule's peak to the
# unconstrained IOS schedule's, the predicted latency never rises as the
# limit loosens, and every schedule keeps within its limit. NASNet-A is the
# model whose 0.75 limit once fell back to the sequential schedule while a
# tighter one found a schedule 2.4x faster; Inception V3 is a quick second.
# IOS_MONOTONE_MODELS (file stems of the models folder, space-separated)
# runs others: the acceptance sweep adds randwire-bdyn-64x64 and
# retinanet_resnet50_fpn-128x128.
source "$(dirname "$0")/common.bash"
PY=/usr/bin/python3
models=${IOS_MONOTONE_MODELS:-"nasnet_a_large-bdyn-99x99 inception_v3-bdyn"}

field() { $PY -c 'import json, sys; d = json.load(open(sys.argv[1]))
for k in sys.argv[2:]: d = d[k]
print(d)' "$@"; }

for stem in $models; do
  model="$IOS_MODELS_DIR/$stem.onnx"
  expect_ok "$stem sequential" -- "$OPT" "$model" --batch 1 -q -s sequential -o "$WORK/seq.json" || continue
  expect_ok "$stem ios" -- "$OPT" "$model" --batch 1 -q -o "$WORK/ios.json" || continue
  low=$(field "$WORK/seq.json" memory peak_bytes)
  high=$(field "$WORK/ios.json" memory peak_bytes)
  previous=""
  for k in 0 1 2 3 4 5 6 7 8 9; do
    limit=$((low + (high - low) * k / 9))
    expect_ok "$stem under $limit" -- "$OPT" "$model" --batch 1 -q --memory-limit "$limit" -o "$WORK/lim.json" || continue
    ms=$(field "$WORK/lim.json" predicted_latency_ms)
    peak=$(field "$WORK/lim.json" memory peak_bytes)
    [ "$peak" -le "$limit" ] && ok || fail "$stem: peak $peak over the limit $limit"
    if [ -n "$previous" ]; then
      awk -v a="$ms" -v b="$previous" 'BEGIN { exit !(a <= b * (1 + 1e-9)) }' && ok ||
        fail "$stem: $ms ms under $limit bytes, slower than $previous ms under the tighter $previous_limit"
    fi
    previous=$ms
    previous_limit=$limit
  done
  # The loosest limit is the unconstrained peak: the unconstrained schedule.
  awk -v a="$ms" -v b="$(field "$WORK/ios.json" predicted_latency_ms)" 'BEGIN { exit !(a <= b * (1 + 1e-9)) }' && ok ||
    fail "$stem: $ms ms at the unconstrained peak, slower than the unconstrained schedule"
done
finish
