# Option handling: parser errors in the documented form with the closest
# option, options that would do nothing, -v's effective values, schedule
# labels in comparisons, and --check's statistics and warning.
source "$(dirname "$0")/common.bash"
model="$BAD/two_branch.onnx"
[ -f "$model" ] || { echo "FAIL: $model missing: run scripts/setup.sh"; exit 1; }

# Parser errors: one line "PROGRAM: error: ...", exit 2, the closest option.
expect_error "typo suggests the option" 2 "^ios-optimize: error: unknown option '--schedular'; did you mean '--scheduler'\?" -- "$OPT" "$model" --schedular ios
expect_error "prefix suggests the option" 2 "^ios-optimize: error: unknown option '--sched'; did you mean '--scheduler'\?" -- "$OPT" "$model" --sched ios
expect_error "ios-run typo" 2 "^ios-run: error: unknown option '--itrations'; did you mean '--iterations'\?" -- "$RUN" "$model" --itrations 3
expect_error "nothing close" 2 "^ios-run: error: unknown option '--zzzzzzzz' \(see ios-run --help\)$" -- "$RUN" "$model" --zzzzzzzz
expect_error "extra argument" 2 "^ios-optimize: error: unexpected argument 'b\.onnx'" -- "$OPT" "$model" b.onnx
expect_error "bad value" 2 "^ios-optimize: error: --cost: sometimes" -- "$OPT" "$model" --cost sometimes
expect_error "ios-run without a model" 2 "^ios-run: error: no model given" -- "$RUN"
expect_error "ios-optimize without a model" 2 "^ios-optimize: error: no model given" -- "$OPT"

# Options that would do nothing: exit 2 naming both sides.
expect_ok "schedule" -- "$OPT" "$model" -o "$WORK/s.json" --quiet
for opt in "--check" "--export-times $WORK/t.json" "--output-dir $WORK/out" "--iterations 5" "--trace $WORK/t.trace" \
           "--warmup 1" "--reference $WORK/r.npy" "--seed 3" "--rtol 1e-3"; do
  name=${opt%% *}
  # shellcheck disable=SC2086
  expect_error "$name with --dry-run" 2 "^ios-run: error: $name has no effect with --dry-run" -- "$RUN" "$model" "$WORK/s.json" --dry-run $opt
done
[ ! -e "$WORK/t.json" ] && [ ! -e "$WORK/out" ] && ok || fail "a refused --dry-run wrote its outputs"
expect_error "--analyze -o" 2 "^ios-optimize: error: --output has no effect with --analyze" -- "$OPT" "$model" --analyze -o "$WORK/a.json"
[ ! -e "$WORK/a.json" ] && ok || fail "--analyze -o wrote a file"
expect_error "--rtol without --check" 2 "--rtol has no effect without --check" -- "$RUN" "$model" --backend cpu --rtol 1e-3
expect_error "--precision on the CPU" 2 "--precision has no effect with --backend cpu" -- "$RUN" "$model" --backend cpu --precision fp32
expect_error "--threads on CUDA" 2 "--threads has no effect with --backend cuda" -- "$RUN" "$model" --threads 2
# The convolutions' kernels: the CUDA backend's and a measured search's only;
# the plan cache only with the graph-API kernels; two names only.
expect_error "--conv-kernels on the CPU" 2 "--conv-kernels has no effect with --backend cpu" -- "$RUN" "$model" --backend cpu --conv-kernels graph
expect_error "--conv-kernels with --dry-run" 2 "--conv-kernels has no effect with --dry-run" -- "$RUN" "$model" --dry-run --conv-kernels graph
expect_error "--plan-cache without graph kernels" 2 "^ios-run: error: --plan-cache has no effect without --conv-kernels graph" -- "$RUN" "$model" --plan-cache "$WORK/p.sqlite"
[ ! -e "$WORK/p.sqlite" ] && ok || fail "a refused --plan-cache created its file"
expect_error "--conv-kernels bad value" 2 "^ios-run: error: --conv-kernels: cudnn" -- "$RUN" "$model" --conv-kernels cudnn
expect_error "--conv-kernels simulated" 2 "^ios-optimize: error: --conv-kernels has no effect with --cost simulated" -- "$OPT" "$model" --cost simulated --conv-kernels graph
expect_error "--profile-db with simulated costs" 2 "--profile-db has no effect with --cost simulated" -- "$OPT" "$model" --cost simulated --profile-db "$WORK/p.db"
expect_error "-v with --quiet" 2 "^ios-optimize: error: --verbose has no effect with --quiet" -- "$OPT" "$model" -v -q
expect_error "ios-run -v with --quiet" 2 "^ios-run: error: --verbose has no effect with --quiet" -- "$RUN" "$model" --dry-run -q -v
expect_error "--device-profile with everything measured" 2 "--device-profile has no effect with --cost measured --profile-budget all" -- "$OPT" "$model" --cost measured --profile-budget all --device-profile h200
expect_error "--device-profile, measured, not searching" 2 "--device-profile has no effect with --cost measured and --scheduler greedy" -- "$OPT" "$model" --cost measured --scheduler greedy --device-profile h200
# --profile-budget: refused where nothing is measured, and its form checked
# before anything else (even with no GPU to use it).
expect_error "--profile-budget with simulated costs" 2 "--profile-budget has no effect with --cost simulated" -- "$OPT" "$model" --cost simulated --profile-budget 100
expect_error "--profile-budget, not searching" 2 "--profile-budget has no effect with --scheduler sequential" -- "$OPT" "$model" --scheduler sequential --profile-budget 100
for bad in 0 -5 1.5 abc 10x s ""; do
  expect_error "--profile-budget '$bad'" 2 "^ios-optimize: error: --profile-budget .*: expected a number of stages \(e\.g\. 20000\), seconds of measuring \(e\.g\. 300s\) or all$" -- "$OPT" "$model" --profile-budget "$bad" -o "$WORK/pb.json"
done
[ ! -e "$WORK/pb.json" ] && ok || fail "a refused --profile-budget wrote a schedule"
for good in 100 300s 2.5s all; do
  expect_ok "--profile-budget $good (no GPU: predicted)" -- "$OPT" "$model" --profile-budget "$good" -o "$WORK/pb.json" --quiet
done
# Measured costs need a GPU whatever the budget: exit 3 here, naming the fix.
if ! nvidia-smi >/dev/null 2>&1; then
  expect_error "--cost measured --profile-budget without a GPU" 3 "--cost measured needs a CUDA device" -- "$OPT" "$model" --cost measured --profile-budget 500 --device-profile h200
fi

# -v prints the values in effect, not the "use the default" markers.
expect_ok "ios-run -v" -- "$RUN" "$model" "$WORK/s.json" --backend cpu -v
grep -q "effective options: .*batch=1 " "$WORK/stderr" || fail "ios-run -v: no effective batch: $(grep effective "$WORK/stderr")"
grep -q "warmup=1 iterations=5 .*rtol=0.0001 atol=1e-05" "$WORK/stderr" || fail "ios-run -v: no effective counts/tolerances: $(grep effective "$WORK/stderr")"
grep -qE "(=-1|batch=0)( |$)" "$WORK/stderr" && fail "ios-run -v still prints placeholders: $(grep effective "$WORK/stderr")" || ok
expect_ok "ios-optimize -v" -- "$OPT" "$BAD/symbolic_batch.onnx" --batch 3 -o "$WORK/v.json" -v
grep -q "effective options: .*batch=3 rewrite-batch=false output=$WORK/v.json " "$WORK/stderr" || fail "ios-optimize -v: $(grep effective "$WORK/stderr")"

# Labels: two files named s.json in different folders, and NAME=FILE.
mkdir -p "$WORK/a" "$WORK/b"
expect_ok "schedule a" -- "$OPT" "$model" -o "$WORK/a/s.json" --quiet
expect_ok "schedule b" -- "$OPT" "$model" -o "$WORK/b/s.json" --scheduler greedy --quiet
expect_ok "same file names" -- "$RUN" "$model" "$WORK/a/s.json" "$WORK/b/s.json" --backend cpu --iterations 2
grep -qE "^a/s\.json +[0-9]" "$WORK/stdout" && grep -qE "^b/s\.json +[0-9]" "$WORK/stdout" && ok ||
  fail "labels of a/s.json and b/s.json are not unique: $(tail -4 "$WORK/stdout")"
expect_ok "NAME=FILE" -- "$RUN" "$model" "ios=$WORK/a/s.json" "greedy=$WORK/b/s.json" --backend cpu --iterations 2
grep -qE "^ios +[0-9]" "$WORK/stdout" && grep -qE "^greedy +[0-9]" "$WORK/stdout" && ok ||
  fail "NAME=FILE labels not used: $(tail -4 "$WORK/stdout")"
expect_ok "NAME=FILE dry-run" -- "$RUN" "$model" "ios=$WORK/a/s.json" --dry-run
grep -q "^=== ios (" "$WORK/stdout" && ok || fail "--dry-run does not show the label: $(head -2 "$WORK/stdout")"
expect_error "repeated NAME" 2 "label 'x' is given twice" -- "$RUN" "$model" "x=$WORK/a/s.json" "x=$WORK/b/s.json" --dry-run
expect_error "empty NAME" 2 "'=.*s\.json'.*NAME=FILE" -- "$RUN" "$model" "=$WORK/a/s.json" --dry-run

# --check: statistics of both sides per output; a warning when atol is above
# every expected value (the check then proves nothing).
expect_ok "check" -- "$RUN" "$model" "$WORK/a/s.json" --backend cpu --check --iterations 1
grep -qE "^  actual +min -?[0-9.e+-]+ max [0-9.e+-]+ mean [0-9.e+-]+ std [0-9.e+-]+" "$WORK/stdout" &&
  grep -qE "^  expected min -?[0-9.e+-]+ max" "$WORK/stdout" && ok || fail "--check prints no statistics: $(cat "$WORK/stdout")"
grep -q "below atol" "$WORK/stderr" && fail "warning without cause: $(cat "$WORK/stderr")" || ok
max=$(grep -m1 -E "^  expected min" "$WORK/stdout" | awk '{print $5}')
expect_ok "check with a huge atol" -- "$RUN" "$model" "$WORK/a/s.json" --backend cpu --check --iterations 1 --atol 1000
grep -q "every expected value is below atol 1000 in magnitude (largest $max)" "$WORK/stderr" && ok ||
  fail "no all-below-atol warning (max $max): $(cat "$WORK/stderr")"
finish
