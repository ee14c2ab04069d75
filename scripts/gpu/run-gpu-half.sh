#!/usr/bin/env bash
# The GPU half of the verification, in steps that each fit one command on a
# lent GPU machine (10 minutes a command, 30 minutes a session, 64 MiB carried,
# no Debian libraries, PyTorch 2.x there). Results go to one folder.
#
# Here (no GPU needed):
#   scripts/build.sh && scripts/gpu/pack.sh
#   scripts/gpu/run-gpu-half.sh --dry-run          # what can run without a GPU, and the plan
# There, one command per step, carrying .devpack (OUT: the results folder):
#   scripts/gpu/run-gpu-half.sh models   OUT      # export the models with the machine's PyTorch   (~3 min)
#   scripts/gpu/run-gpu-half.sh tests    OUT      # every GPU test case, each in its own process   (~5 min)
#   scripts/gpu/run-gpu-half.sh measured OUT      # --cost measured, cold and warm profile database (~5 min)
#   scripts/gpu/run-gpu-half.sh bench    OUT [MODELS]   # bench/harness on the GPU, PyTorch peers    (~8 min a model)
# Each step appends to OUT/summary.txt; logs are OUT/<step>-*.log. A step
# exits non-zero when anything in it failed, and goes on with the rest first.
set -uo pipefail
cd "$(dirname "$0")/../.."
step=${1:-}
out=${2:-gpu-results}
models_dir=onnx_models/generated
py=${IOS_PYTHON:-python3}
mkdir -p "$out"
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

# The models the GPU tests and the measured optimizations use: the test set
# (reduced RandWire and NASNet-A inputs, as in scripts/make-models.sh) plus
# full-size RandWire and NASNet-A for the measured optimizations.
step_models() {
  IOS_PYTHON=$py scripts/make-models.sh >"$out/models.log" 2>&1 || { note "models: export FAILED (see models.log)"; failures=1; }
  $py onnx_models/export_models.py --dynamic-batch --out-dir "$models_dir/full" \
    --models randwire,nasnet_a_large >>"$out/models.log" 2>&1 || { note "models: full-size export FAILED"; failures=1; }
  note "models: $(ls "$models_dir" "$models_dir/full" | grep -c '\.onnx$') files; torch $($py -c 'import torch; print(torch.__version__)')"
}

# Every GPU test case in its own process (a sticky device fault in one cannot
# mask the others); the model test once per model.
step_tests() {
  local names
  names=$(ios_gpu_tests --list-test-names-only 2>/dev/null | grep -v '^$' | grep -v 'test cases\|^All available' | sed 's/^ *//')
  printf 'test\tresult\tseconds\n' >"$out/gpu-tests.tsv"
  while IFS= read -r name; do
    [ -n "$name" ] || continue
    if [[ "$name" == "every scheduler's schedule on every shipped model"* ]]; then
      for m in inception_v3 squeezenet1_1 randwire nasnet_a_large resnet50 mobilenet_v2 densenet121 googlenet; do
        read -r rc s < <(IOS_GPU_TEST_MODELS=$m timed "$out/tests-model-$m.log" timeout 540 ios_gpu_tests "$name")
        printf '%s [%s]\t%s\t%s\n' "$name" "$m" "$([ "$rc" = 0 ] && echo passed || echo "FAILED ($rc)")" "$s" >>"$out/gpu-tests.tsv"
        [ "$rc" = 0 ] || failures=1
      done
      continue
    fi
    local log="$out/tests-$(echo "$name" | tr -c 'A-Za-z0-9' '_' | cut -c1-60).log"
    read -r rc s < <(timed "$log" timeout 300 ios_gpu_tests "$name")
    printf '%s\t%s\t%s\n' "$name" "$([ "$rc" = 0 ] && echo passed || echo "FAILED ($rc)")" "$s" >>"$out/gpu-tests.tsv"
    [ "$rc" = 0 ] || failures=1
  done <<<"$names"
  note "tests: $(grep -c passed "$out/gpu-tests.tsv") passed, $(grep -c FAILED "$out/gpu-tests.tsv") failed (gpu-tests.tsv)"
}

# IOS with measured stage latencies: cold (empty profile database) then warm.
step_measured() {
  local db="$out/profile.sqlite"
  printf 'model\tbatch\tdatabase\tseconds\tsummary\n' >"$out/measured.tsv"
  for spec in inception_v3-bdyn.onnx squeezenet1_1-bdyn.onnx full/randwire-bdyn.onnx full/nasnet_a_large-bdyn.onnx; do
    local model="$models_dir/$spec" name
    name=$(basename "$spec" .onnx)
    [ -f "$model" ] || { note "measured: $model missing"; failures=1; continue; }
    for state in cold warm; do
      [ "$state" = cold ] && rm -f "$db"
      read -r rc s < <(timed "$out/measured-$name-$state.log" timeout 280 \
        ios-optimize "$model" --batch 1 --cost measured --profile-db "$db" -o "$out/$name.ios.json")
      printf '%s\t1\t%s\t%s\t%s\n' "$name" "$state" "$s" \
        "$(grep -E '^(Measurement|Latency) ' "$out/measured-$name-$state.log" | tr '\n' ' ')" >>"$out/measured.tsv"
      [ "$rc" = 0 ] || { note "measured: $name $state FAILED ($rc)"; failures=1; }
    done
  done
  note "measured: see measured.tsv"
}

step_bench() {
  local models=${1:-inception_v3,squeezenet1_1,randwire,nasnet_a_large}
  $py bench/harness/run_benchmarks.py --bin-dir .devpack/bin --models "$models" --batches 1 \
    --out "$out/benchmarks.md" --charts-dir "$out/charts" --work-dir "$out/work" >"$out/bench.log" 2>&1 ||
    { note "bench: FAILED (see bench.log)"; failures=1; }
  note "bench: $models -> benchmarks.md"
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
  tree=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
  echo "dry run: tracked tree $((tree / 1048576)) MiB + .devpack $(du -sm .devpack | cut -f1) MiB (limit 64 MiB)"
  echo "dry run: then on the GPU machine, carrying .devpack: models, tests, measured, bench (see the header)"
}

case "$step" in
  --dry-run) dry_run ;;
  models) step_models ;;
  tests) step_tests ;;
  measured) step_measured ;;
  bench) step_bench "${3:-}" ;;
  *) echo "usage: $0 --dry-run | models|tests|measured|bench OUT [MODELS]" >&2; exit 2 ;;
esac
exit $failures
