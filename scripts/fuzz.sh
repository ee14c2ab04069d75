#!/usr/bin/env bash
# Builds the libFuzzer targets with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer (no CUDA, no tests) into build-fuzz/, then runs
# each target for SECONDS (default 60) on its committed seed corpus
# (test/fuzz/corpus/TARGET) and dictionary (test/fuzz/*.dict).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]    TARGET: onnx_import schedule npy device_profile
#                                            profile_db schedule_fields einsum_import
#
# New inputs go to build-fuzz/corpus/TARGET (kept between runs); a crash,
# leak, UB report, timeout (60 s: generous, for shared machines) or run over 2 GiB is written to
# build-fuzz/findings/ and makes the script exit 1. Needs the generated test
# models (scripts/make-models.sh): schedule_fuzzer reads inception_like.onnx.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(onnx_import schedule npy device_profile profile_db schedule_fields einsum_import)
cxx=${IOS_FUZZ_CXX:-clang++-14}
command -v "$cxx" >/dev/null || { echo "fuzz: $cxx not found (apt-get install clang-14)"; exit 2; }

cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$cxx" \
  -DIOS_FUZZ=ON -DIOS_ENABLE_CUDA=OFF -DIOS_BUILD_TESTS=OFF >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target "${targets[@]/%/_fuzzer}"

declare -A max_len=([onnx_import]=65536 [schedule]=65536 [npy]=4096 [device_profile]=4096
  [profile_db]=16384 [schedule_fields]=65536 [einsum_import]=256)
status=0
mkdir -p build-fuzz/findings
for t in "${targets[@]}"; do
  mkdir -p "build-fuzz/corpus/$t"
  log="build-fuzz/findings/$t.log"
  echo "fuzz: $t for $seconds s"
  rc=0
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ASAN_OPTIONS=detect_leaks=1 \
    "build-fuzz/test/fuzz/${t}_fuzzer" -max_total_time="$seconds" -timeout=60 -rss_limit_mb=2048 \
    -max_len="${max_len[$t]}" -dict="test/fuzz/$t.dict" -print_final_stats=1 \
    -artifact_prefix="build-fuzz/findings/$t-" "build-fuzz/corpus/$t" "test/fuzz/corpus/$t" \
    >"$log" 2>&1 || rc=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  if [ "$rc" = 0 ]; then
    echo "fuzz: $t: $runs executions in $seconds s, no findings"
  else
    echo "fuzz: $t: FINDING after $runs executions (exit $rc); see $log and build-fuzz/findings/"
    grep -m3 -E 'ERROR|runtime error|SUMMARY' "$log" || true
    status=1
  fi
done
exit $status
