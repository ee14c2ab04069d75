# ios-optimize's memory (docs/schedulers.md, "Memory"): every schedule's peak
# device memory in the summary, --report-json, --html and the schedule file;
# --memory-limit and --max-streams.
#  - bad limits and --max-streams 0 are one-line errors, exit 2, before any
#    work (no file written);
#  - a limit between the sequential and the unconstrained peak is kept, and
#    the schedule is predicted no slower than the sequential one;
#  - without a limit the schedule is the one ios found before, plus "memory".
source "$(dirname "$0")/common.bash"
PY=/usr/bin/python3
inception="$IOS_MODELS_DIR/inception_v3-bdyn.onnx"
squeeze="$IOS_MODELS_DIR/squeezenet1_1-bdyn.onnx"

field() { $PY -c 'import json, sys; d = json.load(open(sys.argv[1]))
for k in sys.argv[2:]: d = d[int(k)] if isinstance(d, list) else d[k]
print(d)' "$@"; }

# --- refusals, before any work ---------------------------------------------------
for bad in -1 -5MiB nan NaN inf 0 0GiB 12XB "12 MB" 1e9 MiB; do
  expect_error "--memory-limit '$bad'" 2 "^ios-optimize: error: --memory-limit '$bad'" -- \
    "$OPT" "$squeeze" --batch 1 --memory-limit="$bad" -o "$WORK/x.json"
done
expect_error "empty --memory-limit" 2 "^ios-optimize: error: --memory-limit is empty" -- \
  "$OPT" "$squeeze" --batch 1 --memory-limit "" -o "$WORK/x.json"
expect_error "limit below the weights" 2 "^ios-optimize: error: --memory-limit 1.0 MiB .* is below what the model's weights, inputs and outputs alone take" -- \
  "$OPT" "$squeeze" --batch 1 --memory-limit 1MiB -o "$WORK/x.json"
expect_error "--max-streams 0" 2 "max-streams" -- "$OPT" "$squeeze" --batch 1 --max-streams 0 -o "$WORK/x.json"
expect_error "--max-streams -1" 2 "max-streams" -- "$OPT" "$squeeze" --batch 1 --max-streams -1 -o "$WORK/x.json"
expect_error "--max-streams with greedy" 2 "^ios-optimize: error: --max-streams: the greedy scheduler has no stream bound" -- \
  "$OPT" "$squeeze" --batch 1 --scheduler greedy --max-streams 2 -o "$WORK/x.json"
expect_error "--memory-limit with --analyze" 2 "analyze" -- \
  "$OPT" "$squeeze" --batch 1 --analyze --memory-limit 1GiB
[ ! -e "$WORK/x.json" ] && ok || fail "a refused limit left a schedule"

# --- the peak, everywhere it is shown ----------------------------------------------
expect_ok "ios" -- "$OPT" "$inception" --batch 1 -o "$WORK/ios.json" --report-json "$WORK/ios.report.json"
grep -q '^Memory           peak .*activations .*weights .*workspaces .*(predicted)' "$WORK/stdout" && ok ||
  fail "no Memory line in the summary: $(cat "$WORK/stdout")"
peak=$(field "$WORK/ios.json" memory peak_bytes)
[ "$peak" = "$(field "$WORK/ios.report.json" memory peak_bytes)" ] && ok || fail "report and schedule peaks differ"
[ "$(field "$WORK/ios.json" memory workspaces)" = predicted ] && ok || fail "workspaces not marked predicted"
expect_ok "sequential" -- "$OPT" "$inception" --batch 1 -s sequential -o "$WORK/seq.json"
seq_peak=$(field "$WORK/seq.json" memory peak_bytes)
seq_ms=$(field "$WORK/seq.json" predicted_latency_ms)
[ "$seq_peak" -lt "$peak" ] && ok || fail "inception: sequential peak $seq_peak not below ios's $peak"

# --- limits between sequential and unconstrained ----------------------------------------
for scheduler in ios dos; do
  for limit in "$seq_peak" $(( (seq_peak + peak) / 2 )) $(( peak - 1 )); do
    expect_ok "$scheduler within $limit" -- "$OPT" "$inception" --batch 1 -s $scheduler --memory-limit "$limit" \
      -o "$WORK/lim.json" --report-json "$WORK/lim.report.json"
    got=$(field "$WORK/lim.json" memory peak_bytes)
    ms=$(field "$WORK/lim.json" predicted_latency_ms)
    [ "$got" -le "$limit" ] && ok || fail "$scheduler: peak $got over the limit $limit"
    [ "$(field "$WORK/lim.json" memory limit_bytes)" = "$limit" ] && ok || fail "$scheduler: limit not recorded"
    awk -v a="$ms" -v b="$seq_ms" 'BEGIN { exit !(a <= b * (1 + 1e-9)) }' && ok ||
      fail "$scheduler under $limit: $ms ms, slower than sequential $seq_ms ms"
    grep -q '"note"' "$WORK/lim.report.json" && ok || fail "$scheduler: the report says not how the limit was met"
  done
done
expect_error "below every peak" 2 "^ios-optimize: error: --memory-limit .* is below the smallest peak ios found for ios: .*the sequential schedule" -- \
  "$OPT" "$inception" --batch 1 -q --memory-limit $(( seq_peak - 1024 * 1024 )) -o "$WORK/x.json"

# --- a limit that binds nothing, and no limit, change nothing -------------------------
expect_ok "ios, generous limit" -- "$OPT" "$inception" --batch 1 --memory-limit 4GiB -o "$WORK/big.json"
strip() { $PY -c 'import json, sys; d = json.load(open(sys.argv[1]))
for k in ("created", "memory"): d.pop(k, None)
print(json.dumps(d, sort_keys=True))' "$1"; }
[ "$(strip "$WORK/big.json")" = "$(strip "$WORK/ios.json")" ] && ok || fail "a limit that binds nothing changed the schedule"

# --- --max-streams: the smaller of it and s wins ------------------------------------------
expect_ok "ios --max-streams 2" -- "$OPT" "$inception" --batch 1 --max-streams 2 -o "$WORK/two.json"
[ "$(field "$WORK/two.json" scheduler params s)" = 2 ] && ok || fail "--max-streams 2 did not lower s"
widest=$($PY -c 'import json, sys; print(max(len(s["groups"]) for s in json.load(open(sys.argv[1]))["stages"]))' "$WORK/two.json")
[ "$widest" -le 2 ] && ok || fail "--max-streams 2: a stage of $widest groups"
expect_ok "ios s=1 --max-streams 4" -- "$OPT" "$inception" --batch 1 -p s=1 --max-streams 4 -o "$WORK/one.json"
[ "$(field "$WORK/one.json" scheduler params s)" = 1 ] && ok || fail "s=1 should win over --max-streams 4"
expect_ok "lios --max-streams 2" -- "$OPT" "$inception" --batch 1 -s lios --max-streams 2 -o "$WORK/lios.json"
[ "$(field "$WORK/lios.json" num_streams)" -le 2 ] && ok || fail "lios --max-streams 2: more streams"

# --- the html page shows it too; an older file (no memory) still runs ---------------------
if command -v dot >/dev/null; then
  expect_ok "html" -- "$OPT" "$squeeze" --batch 1 -o "$WORK/sq.json" --html "$WORK/sq.html"
  grep -q "Memory" "$WORK/sq.html" && ok || fail "no Memory row in the html page"
fi
expect_ok "squeezenet" -- "$OPT" "$squeeze" --batch 1 -o "$WORK/sq.json"
$PY -c 'import json, sys; d = json.load(open(sys.argv[1])); d.pop("memory"); json.dump(d, open(sys.argv[2], "w"))' \
  "$WORK/sq.json" "$WORK/old.json"
expect_ok "an older schedule file" -- "$RUN" "$squeeze" "$WORK/old.json" --batch 1 --backend cpu --iterations 1 --warmup 0

# --- ios-run: the arena the CPU backend allocated is the one the file records --------------
expect_ok "ios-run table" -- "$RUN" "$squeeze" "$WORK/sq.json" "$WORK/old.json" --batch 1 --backend cpu \
  --iterations 1 --warmup 0 --export-times "$WORK/times.json"
grep -q "Arena (MiB)  Peak (MiB)" "$WORK/stdout" && ok || fail "no memory columns in ios-run's table: $(cat "$WORK/stdout")"
[ "$(field "$WORK/times.json" runs 0 allocated_activation_bytes)" = "$(field "$WORK/sq.json" memory arena_bytes)" ] && ok ||
  fail "the CPU backend allocated another arena than the schedule file records"
[ "$(field "$WORK/times.json" runs 0 schedule_peak_bytes)" = "$(field "$WORK/sq.json" memory peak_bytes)" ] && ok ||
  fail "the table's peak is not the file's"
$PY -c 'import json, sys; sys.exit("schedule_peak_bytes" in json.load(open(sys.argv[1]))["runs"][1])' "$WORK/times.json" && ok ||
  fail "an older file without memory got a peak"

finish
