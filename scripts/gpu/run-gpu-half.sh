#!/usr/bin/env bash
# The GPU half of the verification, in steps that each fit one command on a
# lent GPU machine (10 minutes a command, 30 minutes a session, 64 MiB carried,
# no Debian libraries, PyTorch 2.x there). Results go to one folder.
#
# Here (no GPU needed):
#   scripts/build.sh && scripts/gpu/pack.sh
#   scripts/gpu/run-gpu-half.sh --dry-run          # what can run without a GPU, and the plan
# There, one command per line, each carrying .devpack (OUT: the results folder).
# Every step first exports the models it needs if they are missing (a fresh
# machine has none; make-models' stamp makes a repeat free):
#   scripts/gpu/run-gpu-half.sh tests    OUT engine    # every GPU test case but the model test, one process each
#   scripts/gpu/run-gpu-half.sh tests    OUT MODEL     # the model test for one model (inception_v3, squeezenet1_1,
#                                                      #   randwire, nasnet_a_large, resnet50, ...), ~3-8 min
#   scripts/gpu/run-gpu-half.sh measured OUT MODEL     # --cost measured, cold then warm profile database
#   scripts/gpu/run-gpu-half.sh bench    OUT MODEL     # bench/harness on the GPU with the PyTorch peers
# A 30-minute session fits: tests engine, tests inception_v3, measured
# inception_v3 and squeezenet1_1, bench inception_v3. The measured runs use the
# test-size RandWire (64x64) and NASNet-A (99x99); full-size ones ask for over
# 100,000 stages and need longer than one command.
# Each step appends to OUT/summary.txt; logs are OUT/<step>-*.log. A step
# exits non-zero when anything in it failed, and goes on with the rest first.
set -uo pipefail
cd "$(dirname "$0")/../.."
step=${1:-}
out=${2:-gpu-results}
what=${3:-}
models_dir=onnx_models/generated
py=${IOS_PYTHON:-python3}
[ "$step" = --dry-run ] || mkdir -p "$out"
summary="$out/summary.txt"
failures=0

note() { echo "$*" | tee -a "$summary"; }
timed() {  # timed LOG CMD...: runs CMD, log to LOG, prints "rc seconds"
  local log=$1 t0 rc ms
  shift
  t0=$(date +%s%N)
  "$@" >"$log" 2>&1
  rc=$?
  ms=$((($(date +%s%N) - t0) / 1000000))
  printf '%s %d.%03d\n' "$rc" $((ms / 1000)) $((ms % 1000))
}

if [ "$step" != --dry-run ]; then
  [ -f .devpack/env.sh ] || { echo "run-gpu-half: .devpack/env.sh missing: carry .devpack (scripts/gpu/pack.sh)" >&2; exit 2; }
  # shellcheck disable=SC1091
  source .devpack/env.sh
  export IOS_MODELS_DIR="$PWD/$models_dir" IOS_REQUIRE_GPU=1
  note "== $step on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1), $(date -u +%Y-%m-%dT%H:%MZ)"
fi

# The models every step needs: the test set of scripts/make-models.sh, exported
# with the machine's PyTorch when missing.
ensure_models() {
  [ -f "$models_dir/.stamp" ] && return 0
  IOS_PYTHON=$py scripts/make-models.sh >"$out/models.log" 2>&1 ||
    { note "models: export FAILED (see models.log)"; exit 1; }
  note "models: exported with torch $($py -c 'import torch; print(torch.__version__)')"
}

# A Catch2 test spec that matches exactly one test name (',' and '[' are
# spec syntax).
catch_spec() { printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/,/\\,/g' -e 's/\[/\\[/g' -e 's/\]/\\]/g'; }

run_case() {  # run_case LABEL LOG TIMEOUT SPEC [ENV=...]: one test case, one process
  local label=$1 log=$2 limit=$3 spec=$4 rc s
  shift 4
  read -r rc s < <(timed "$log" env "$@" timeout "$limit" ios_gpu_tests -w NoTests "$spec")
  printf '%s\t%s\t%s\n' "$label" "$([ "$rc" = 0 ] && echo passed || echo "FAILED ($rc)")" "$s" >>"$out/gpu-tests.tsv"
  [ "$rc" = 0 ] || failures=1
}

# `engine`: every GPU test case but the model test, each in its own process
# (a sticky device fault in one cannot mask the others). MODEL: the model
# test for that model.
step_tests() {
  local model_test="every scheduler's schedule on every shipped model matches the CPU executor"
  [ -f "$out/gpu-tests.tsv" ] || printf 'test\tresult\tseconds\n' >"$out/gpu-tests.tsv"
  if [ "$what" = engine ]; then
    while IFS= read -r name; do
      [ -n "$name" ] && [ "$name" != "$model_test" ] || continue
      run_case "$name" "$out/tests-$(echo "$name" | tr -c 'A-Za-z0-9' '_' | cut -c1-60).log" 300 "$(catch_spec "$name")"
    done < <(ios_gpu_tests --list-test-names-only | sed 's/^ *//' | grep -v '^$')
  else
    [ -n "$what" ] || { echo "tests: name 'engine' or a model" >&2; exit 2; }
    run_case "$model_test [$what]" "$out/tests-model-$what.log" 560 "$(catch_spec "$model_test")" IOS_GPU_TEST_MODELS="$what"
  fi
  note "tests $what: $(grep -c passed "$out/gpu-tests.tsv") passed, $(grep -c FAILED "$out/gpu-tests.tsv") failed so far (gpu-tests.tsv)"
}

# IOS with measured stage latencies: cold (empty profile database) then warm.
step_measured() {
  local db="$out/profile-$what.sqlite" model
  model=$(ls "$models_dir/$what"-bdyn*.onnx 2>/dev/null | head -1)
  [ -n "$model" ] || { note "measured: no model $what in $models_dir"; exit 2; }
  [ -f "$out/measured.tsv" ] || printf 'model\tbatch\tdatabase\tseconds\tsummary\n' >"$out/measured.tsv"
  rm -f "$db"
  for state in cold warm; do
    read -r rc s < <(timed "$out/measured-$what-$state.log" timeout 270 \
      ios-optimize "$model" --batch 1 --cost measured --profile-db "$db" -o "$out/$what.ios.json")
    printf '%s\t1\t%s\t%s\t%s\n' "$what" "$state" "$s" \
      "$(grep -E '^(Measurement|Budget|Latency) ' "$out/measured-$what-$state.log" | tr '\n' ' ')" >>"$out/measured.tsv"
    [ "$rc" = 0 ] || { note "measured: $what $state FAILED ($rc)"; failures=1; }
  done
  note "measured $what: see measured.tsv"
}

step_bench() {
  $py bench/harness/run_benchmarks.py --bin-dir .devpack/bin --models "$what" --batches 1 \
    --out "$out/benchmarks-$what.md" --charts-dir "$out/charts-$what" --work-dir "$out/work-$what" \
    >"$out/bench-$what.log" 2>&1 || { note "bench: $what FAILED (see bench-$what.log)"; failures=1; }
  note "bench: $what -> benchmarks-$what.md"
}

dry_run() {
  # Everything that can be checked without a GPU: the pack fits, the test
  # binary lists its cases and reports its GPU tests as skipped here.
  scripts/gpu/pack.sh || exit 1
  local n
  n=$(build/test/ios_gpu_tests --list-test-names-only | grep -c '^[^ ]')
  echo "dry run: ios_gpu_tests lists $n test cases; step 'tests' runs each in its own process"
  IOS_MODELS_DIR="$PWD/$models_dir" build/test/ios_gpu_tests >/dev/null 2>&1
  local rc=$?
  echo "dry run: ios_gpu_tests without a GPU exits $rc (77 = skipped, host tests passed)"
  [ "$rc" = 77 ] || exit 1
  IOS_REQUIRE_GPU=1 build/test/ios_gpu_tests >/dev/null 2>&1 && { echo "dry run: IOS_REQUIRE_GPU=1 did not fail" >&2; exit 1; }
  echo "dry run: IOS_REQUIRE_GPU=1 without a GPU fails, as it must"
  local tree
  tree=$(git ls-files -z | xargs -0 stat -c %s 2>/dev/null | awk '{ t += $1 } END { print t }')
  echo "dry run: tracked tree $((tree / 1048576)) MiB + .devpack $(du -sm .devpack | cut -f1) MiB (limit 64 MiB)"
  local spec tmp_list
  tmp_list=$(mktemp)
  trap 'rm -f "$tmp_list"' EXIT
  spec=$(catch_spec "merged, concurrent and streamed schedules match the reference")
  # (Catch2's listing exits with the number of test cases it listed.)
  build/test/ios_gpu_tests -w NoTests --list-test-names-only "$spec" >"$tmp_list" 2>&1
  [ "$(grep -c . "$tmp_list")" = 1 ] && grep -q '^merged, concurrent' "$tmp_list" ||
    { echo "dry run: a test name with a comma does not select exactly its test case" >&2; exit 1; }
  echo "dry run: test names with ',' select exactly their test case"
  echo "dry run: then on the GPU machine, carrying .devpack: tests engine, tests MODEL, measured MODEL, bench MODEL (see the header)"
}

case "$step" in
  --dry-run) dry_run ;;
  tests) ensure_models; step_tests ;;
  measured) ensure_models; step_measured ;;
  bench) ensure_models; step_bench ;;
  *) echo "usage: $0 --dry-run | tests OUT engine|MODEL | measured OUT MODEL | bench OUT MODEL" >&2; exit 2 ;;
esac
exit $failures
