# ios-optimize --form (docs/schedulers.md, "Form"): a staged schedule run with
# its stage barriers or with only its true dependencies.
#  - best is never predicted slower than staged, and keeps staged on a tie;
#  - the file records the choice ("barriers": "dependencies") and ios-run's
#    simulator reproduces the prediction of either form;
#  - the relaxed plan computes the same outputs as the sequential schedule;
#  - --form is refused where it cannot apply, before any work.
source "$(dirname "$0")/common.bash"
PY=/usr/bin/python3
randwire="$IOS_MODELS_DIR/randwire-bdyn-64x64.onnx"
squeeze="$IOS_MODELS_DIR/squeezenet1_1-bdyn.onnx"

report_field() { $PY -c 'import json, sys; d = json.load(open(sys.argv[1]))
for k in sys.argv[2:]: d = d[k]
print(d)' "$@"; }
barriers_of() { $PY -c 'import json, sys; print(json.load(open(sys.argv[1])).get("barriers", "stages"))' "$1"; }
# ios-run --backend sim's mean for one schedule, in ms.
sim_mean() { "$RUN" "$1" "$2" --batch 1 --backend sim 2>/dev/null | awk -v f="$(basename "$2")" '$1 == f { print $2 }'; }
same_ms() {
  if awk -v a="$2" -v b="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-4 * b) }'; then ok; else fail "$1: $2 ms vs $3 ms"; fi
}

# --- refusals -----------------------------------------------------------------
expect_error "form with a streamed scheduler" 2 '^ios-optimize: error: --form streamed: lios writes a streamed schedule already' -- \
  "$OPT" "$squeeze" --batch 1 --scheduler lios --form streamed -o "$WORK/x.json"
expect_error "unknown form" 2 'form' -- "$OPT" "$squeeze" --batch 1 --form relaxed -o "$WORK/x.json"
[ ! -e "$WORK/x.json" ] && ok || fail "a refused --form left a schedule"

# --- randwire: best drops the barriers, and says so ---------------------------
expect_ok "randwire staged" -- "$OPT" "$randwire" --batch 1 --cost simulated -o "$WORK/staged.json"
expect_ok "randwire best" -- "$OPT" "$randwire" --batch 1 --cost simulated --form best -o "$WORK/best.json" \
  --report-json "$WORK/best.report"
staged_ms=$(report_field "$WORK/best.report" form staged_predicted_ms)
streamed_ms=$(report_field "$WORK/best.report" form streamed_predicted_ms)
best_ms=$(report_field "$WORK/best.report" predicted_latency_ms)
awk -v b="$best_ms" -v s="$staged_ms" 'BEGIN { exit !(b <= s) }' && ok || fail "best $best_ms ms > staged $staged_ms ms"
chosen=$(report_field "$WORK/best.report" form chosen)
if awk -v a="$streamed_ms" -v s="$staged_ms" 'BEGIN { exit !(a < s) }'; then
  [ "$chosen" = streamed ] && ok || fail "streamed is faster ($streamed_ms < $staged_ms ms) but $chosen was chosen"
  [ "$(barriers_of "$WORK/best.json")" = dependencies ] && ok || fail "the best schedule keeps its barriers"
else
  [ "$chosen" = staged ] && ok || fail "staged is no slower but $chosen was chosen"
fi
[ "$(barriers_of "$WORK/staged.json")" = stages ] && ok || fail "the default form wrote barriers"
same_ms "the staged form's prediction is the default schedule's" "$staged_ms" \
  "$(report_field "$WORK/staged.json" predicted_latency_ms)"
grep -q '^Form .*streamed .* ms (dependency waits only), staged .* ms (stage barriers)' "$WORK/stdout" && ok ||
  fail "the summary has no Form line: $(cat "$WORK/stdout")"

# The simulator in ios-run reproduces both predictions from the files.
expect_ok "randwire streamed" -- "$OPT" "$randwire" --batch 1 --cost simulated --form streamed -o "$WORK/streamed.json"
same_ms "ios-run sim, streamed form" "$(sim_mean "$randwire" "$WORK/streamed.json")" "$streamed_ms"
same_ms "ios-run sim, staged form" "$(sim_mean "$randwire" "$WORK/staged.json")" "$staged_ms"

# The relaxed plan computes what the sequential schedule computes.
expect_ok "randwire streamed form on the CPU" -- "$RUN" "$randwire" "$WORK/streamed.json" --batch 1 --backend cpu \
  --check --iterations 1 --warmup 0
grep -q "vs sequential, output .*: PASSED" "$WORK/stdout" && ok || fail "--check did not pass: $(cat "$WORK/stdout")"

# --- squeezenet: no gain from relaxing, so best keeps the staged form ---------
expect_ok "squeezenet best" -- "$OPT" "$squeeze" --batch 1 --cost simulated --form best -o "$WORK/sq.json" \
  --report-json "$WORK/sq.report"
sq_staged=$(report_field "$WORK/sq.report" form staged_predicted_ms)
sq_streamed=$(report_field "$WORK/sq.report" form streamed_predicted_ms)
if awk -v a="$sq_streamed" -v s="$sq_staged" 'BEGIN { exit !(a >= s) }'; then
  [ "$(barriers_of "$WORK/sq.json")" = stages ] && ok || fail "best dropped barriers without a gain"
fi
finish
