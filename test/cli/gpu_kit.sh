#!/usr/bin/env bash
# The GPU kit without a GPU: scripts/gpu/prepare.sh --dry-run builds a small
# kit (calibrated skeletons, accuracy data, schedules and their variants, the
# archive that travels), scripts/gpu/first-run.sh --dry-run unpacks it and
# runs every phase with the CPU and sim backends standing in for CUDA (the
# accuracy peers on the CPU). Checked here: what comes back (at most 8
# plain files, each under 16 MiB, named in [A-Za-z0-9._-]), that the GPU
# cases are reported as skipped and never as passed, that a phase that hangs
# is stopped at its cap with the results before it kept, and that a kill in
# the middle leaves what the finished phases packed.
source "$(dirname "$0")/common.bash"
src=${IOS_SOURCE_DIR:?set by ctest}
export IOS_BUILD_DIR
IOS_BUILD_DIR=$(cd "$IOS_BIN/.." && pwd)
pack="$WORK/pack"

# check_out NAME DIR: the rules of what comes back from the GPU machine.
check_out() {
  local name=$1 dir=$2 n
  n=$(find "$dir" -mindepth 1 | wc -l)
  [ "$n" -ge 1 ] && [ "$n" -le 8 ] || fail "$name: $n entries in OUT, expected 1 to 8: $(ls "$dir")"
  if find "$dir" -mindepth 1 ! -type f | grep -q .; then fail "$name: OUT holds something other than plain files"; fi
  if find "$dir" -mindepth 1 -size +16M | grep -q .; then fail "$name: a file over 16 MiB"; fi
  if ls "$dir" | grep -v -x -E '[A-Za-z0-9._-]+' | grep -q .; then fail "$name: a name outside [A-Za-z0-9._-]"; fi
  ok
}

expect_ok "prepare --dry-run" -- "$src/scripts/gpu/prepare.sh" --dry-run --pack "$pack"
grep -q 'limit 48 MiB' "$WORK/stdout" || fail "prepare does not report what travels: $(cat "$WORK/stdout")"
[ -s "$pack.tar.xz" ] && xz -t "$pack.tar.xz" || fail "prepare wrote no archive $pack.tar.xz"
# The rebuilt models keep the export's scales (checked by prepare; reported).
grep -q 'worst rms ratio to the export' "$WORK/stdout" || fail "prepare does not report the calibration: $(cat "$WORK/stdout")"
# The test set's accuracy data: an exact input and the float64 truth.
ls "$pack"/accuracy/squeezenet1_1-bdyn/input-*.npy "$pack"/accuracy/squeezenet1_1-bdyn/truth-*.npy >/dev/null ||
  fail "prepare: no accuracy data for squeezenet1_1-bdyn"
# The variants: fp16, bf16, and batch 16, as ios-optimize wrote them.
for v in fp16 bf16 b16-tf32 b16-fp16; do
  [ "$(ls "$pack"/variants/h100/squeezenet1_1-bdyn/$v/*.json | wc -l)" = 3 ] || fail "prepare: variant $v lacks its 3 schedules"
done
grep -q '"fp16"' "$pack/variants/h100/squeezenet1_1-bdyn/fp16/ios.json" || fail "the fp16 variant's schedule does not record fp16"
[ "$(wc -l <"$pack/models/manifest.tsv")" -ge 2 ] || fail "prepare: the manifest lists $(wc -l <"$pack/models/manifest.tsv") models"
[ "$(ls "$pack"/schedules/h100/*/*.json | wc -l)" = 16 ] || fail "prepare: expected 8 schedules of 2 models"
for f in "$pack"/bin/*; do
  readelf -d "$f" | grep -q "RUNPATH.*\$ORIGIN/../lib\|RPATH.*\$ORIGIN/../lib" || fail "$(basename "$f") has no \$ORIGIN/../lib RPATH"
done
ok

# A skeleton is small and rebuilds into exactly the canonical model.
skel="$pack/models/bench/googlenet-bdyn.onnx"
[ "$(stat -c %s "$skel")" -lt 1000000 ] || fail "the googlenet skeleton is $(stat -c %s "$skel") bytes"
"$IOS_BUILD_DIR/tools/ios-model-weights" fill "$skel" "$WORK/g1.onnx" 2>/dev/null
"$IOS_BUILD_DIR/tools/ios-model-weights" fill "$skel" "$WORK/g2.onnx" 2>/dev/null
want=$(awk -F'\t' '$1 == "bench/googlenet-bdyn.onnx" {print $2}' "$pack/models/manifest.tsv")
[ "$(sha256sum <"$WORK/g1.onnx" | cut -c1-64)" = "$want" ] && cmp -s "$WORK/g1.onnx" "$WORK/g2.onnx" ||
  fail "fill does not rebuild the manifest's model byte for byte"
expect_error "fill of a non-model" 2 "not an ONNX model" -- "$IOS_BUILD_DIR/tools/ios-model-weights" fill "$src/README.md" "$WORK/x.onnx"
[ ! -e "$WORK/x.onnx" ] || fail "a failed fill left an output file"

# A typed (float16) model travels as a skeleton too: small, rebuilt with
# 16-bit weights of the same size.
typed=$(ls "$src"/onnx_models/generated/*.fp16.onnx 2>/dev/null | head -1)
[ -n "$typed" ] || fail "no typed fp16 model in onnx_models/generated (scripts/make-models.sh makes them)"
"$IOS_BUILD_DIR/tools/ios-model-weights" strip "$typed" "$WORK/t.skel.onnx" 2>/dev/null
"$IOS_BUILD_DIR/tools/ios-model-weights" fill "$WORK/t.skel.onnx" "$WORK/t.onnx" 2>/dev/null
[ "$(stat -c %s "$WORK/t.skel.onnx")" -lt $(( $(stat -c %s "$typed") / 20 )) ] ||
  fail "the skeleton of $(basename "$typed") is $(stat -c %s "$WORK/t.skel.onnx") bytes of $(stat -c %s "$typed")"
/usr/bin/python3 - "$typed" "$WORK/t.onnx" <<'PY' || fail "the rebuilt typed model's weights differ in type or size"
import sys, onnx
a, b = (onnx.load(f) for f in sys.argv[1:3])
ia = {t.name: t for t in a.graph.initializer}
half = 0
for t in b.graph.initializer:
    s = ia[t.name]
    assert t.data_type == s.data_type and list(t.dims) == list(s.dims), t.name
    if t.data_type == onnx.TensorProto.FLOAT16 and len(t.raw_data) > 2048:
        half += 1
        assert len(t.raw_data) == len(s.raw_data) or len(s.raw_data) == 0, t.name
assert half > 0, "no float16 weight was rebuilt"
PY
ok

# The whole dry run, from the archive alone (as the GPU machine gets it).
out="$WORK/out"
rc=0
mkdir -p "$WORK/travel"
cp "$pack.tar.xz" "$WORK/travel/kit.tar.xz"
IOS_KIT_WORK="$WORK/kw1" "$src/scripts/gpu/first-run.sh" --dry-run --pack "$WORK/travel/kit" "$out" >"$WORK/run1.log" 2>&1 || rc=$?
[ -f "$WORK/travel/kit/kit.env" ] || fail "first-run did not unpack the archive"
[ "$rc" = 0 ] || fail "first-run --dry-run exit $rc: $(tail -20 "$WORK/run1.log")"
check_out "dry run" "$out"
for f in summary.txt env.txt tests.tsv timings.json bench.md results.tgz; do
  [ -s "$out/$f" ] || fail "dry run: $f missing or empty"
done
for phase in preflight smoke correctness timing compile models; do
  grep -q "^== $phase " "$out/summary.txt" || fail "dry run: phase $phase missing from summary.txt"
done
grep -q '^== done .*verdict: passed' "$out/summary.txt" || fail "dry run: no passing verdict: $(tail -3 "$out/summary.txt")"
grep -q $'\tskipped (no GPU)\t' "$out/tests.tsv" || fail "dry run: no GPU case reported as skipped"
if awk -F'\t' '$3 == "passed"' "$out/tests.tsv" | grep -q -F "the operator suite on the CUDA backend"; then
  fail "dry run: a GPU case is reported as passed"
fi
grep -q $'^smoke\t.*\tpassed\t' "$out/tests.tsv" || fail "dry run: the smoke run did not pass"
grep -q $'^correctness\tmodel squeezenet1_1 (cpu stand-in, 8 schedules)\tpassed' "$out/tests.tsv" ||
  fail "dry run: the model stand-in did not check 8 schedules: $(grep model "$out/tests.tsv")"
/usr/bin/python3 - "$out/timings.json" <<'PY' || fail "dry run: timings.json lacks the sim timings of every schedule"
import json, sys
doc = json.load(open(sys.argv[1]))
rows = doc["networks"]["googlenet-bdyn"]["schedules"]
assert len(rows) == 8, rows.keys()
for label, row in rows.items():
    assert row["predicted_ms_h100"] > 0, label
    assert row["graph"]["gpu_compute"]["median_ms"] > 0 and row["graph"]["backend"] == "sim", label
    assert row["plain"]["gpu_compute"]["median_ms"] > 0, label
PY
tar -tzf "$out/results.tgz" | grep -q 'results/logs/smoke.log' || fail "dry run: results.tgz lacks the logs"
# The accuracy rule's path on the CPU: the peers made, ios judged by the rule.
grep -q $'^correctness\taccuracy peers (cpu, fp32,bf16)\tpassed' "$out/tests.tsv" ||
  fail "dry run: the accuracy peers did not pass: $(grep accuracy "$out/tests.tsv")"
grep -q $'^correctness\taccuracy rule squeezenet1_1 (cpu stand-in, fp32)\tpassed' "$out/tests.tsv" ||
  fail "dry run: the accuracy rule's stand-in did not pass: $(grep accuracy "$out/tests.tsv")"
# The variants and the repeated calls were timed (by the sim backend).
grep -q $'^timing\tios-run squeezenet1_1-bdyn fp16 graph\tpassed' "$out/tests.tsv" &&
  grep -q $'^timing\tios-run squeezenet1_1-bdyn b16-tf32 graph\tpassed' "$out/tests.tsv" ||
  fail "dry run: the variants were not timed: $(grep timing "$out/tests.tsv")"
[ "$(grep -c $'^timing\tios-run [a-z0-9_-]* repeat [123] graph\tpassed' "$out/tests.tsv")" = 3 ] ||
  fail "dry run: expected three repeated calls: $(grep repeat "$out/tests.tsv")"
ok

# The model test the kit runs per model is a case the test program has (a
# renamed case would otherwise run once for every model and select nothing).
model_test=$(sed -n 's/^model_test="\(.*\)"$/\1/p' "$src/scripts/gpu/first-run.sh")
[ -n "$model_test" ] && "$IOS_BUILD_DIR/test/ios_gpu_tests" --list-test-names-only 2>/dev/null | sed 's/^ *//' |
  grep -qxF "$model_test" || fail "first-run.sh's model_test '$model_test' is no case of ios_gpu_tests"
ok

# Nothing is put on LD_LIBRARY_PATH there (PyTorch keeps its own libraries).
! grep -q 'LD_LIBRARY_PATH=' "$src/scripts/gpu/first-run.sh" || fail "first-run.sh sets LD_LIBRARY_PATH"

# A phase that hangs is stopped at its cap; what came before is returned and
# the phases after it still run. The same run has a test program that runs
# nothing and exits 0: that is a failure, never a pass.
out2="$WORK/out2"
cp -a "$pack" "$WORK/pack2"
printf '#!/bin/sh\nexit 0\n' >"$WORK/pack2/bin/ios_gpu_tests"
rc=0
IOS_KIT_WORK="$WORK/kw2" IOS_KIT_HANG=timing IOS_KIT_CAP_TIMING=6 \
  "$src/scripts/gpu/first-run.sh" --dry-run --pack "$WORK/pack2" "$out2" >"$WORK/run2.log" 2>&1 || rc=$?
check_out "hang" "$out2"
[ "$rc" = 1 ] || fail "a test program that runs nothing: exit $rc, expected 1"
grep -q $'^correctness\tios_gpu_tests \[host\] cases\tFAILED' "$out2/tests.tsv" ||
  fail "a test program that runs nothing was not reported as failed: $(grep ios_gpu_tests "$out2/tests.tsv")"
grep -q 'timing: injected hang stopped after' "$out2/summary.txt" || fail "hang: the injected hang was not stopped: $(cat "$out2/summary.txt")"
hang_s=$(sed -n 's/.*injected hang stopped after \([0-9.]*\) s.*/\1/p' "$out2/summary.txt" | cut -d. -f1)
[ -n "$hang_s" ] && [ "$hang_s" -le 12 ] || fail "hang: the 6 s cap held for ${hang_s:-?} s"
grep -q $'^correctness\t' "$out2/tests.tsv" && grep -q '^== models ' "$out2/summary.txt" ||
  fail "hang: earlier results or later phases missing"
grep -q $'^timing\t.*not run (time)' "$out2/tests.tsv" || fail "hang: the timing steps left are not reported as not run (time)"
ok

# A rerun selects what it runs: one network in one launch mode, nothing else.
out4="$WORK/out4"
rc=0
IOS_KIT_WORK="$WORK/kw4" IOS_KIT_PHASES=smoke,timing IOS_KIT_NETWORKS=googlenet IOS_KIT_LAUNCHES=graph \
  IOS_KIT_MEASURED=none IOS_KIT_PEERS=none IOS_KIT_VARIANTS=none IOS_KIT_REPEATS=0 IOS_KIT_LAYERS=none \
  "$src/scripts/gpu/first-run.sh" --dry-run --pack "$pack" "$out4" \
  >"$WORK/run4.log" 2>&1 || rc=$?
[ "$rc" = 0 ] || fail "selection: exit $rc: $(tail -5 "$WORK/run4.log")"
[ "$(grep -c $'^timing\t' "$out4/tests.tsv")" = 1 ] && grep -q $'^timing\tios-run googlenet-bdyn graph\tpassed' "$out4/tests.tsv" ||
  fail "selection: expected exactly the googlenet graph run: $(grep timing "$out4/tests.tsv")"
grep -q $'^correctness\t' "$out4/tests.tsv" && fail "selection: the correctness phase ran"
grep -q '^== correctness: not selected' "$out4/summary.txt" || fail "selection: the summary does not say correctness was not selected"
ok

# Killed in the middle of a phase: the phases before it are in OUT.
out3="$WORK/out3"
IOS_KIT_WORK="$WORK/kw3" IOS_KIT_HANG=timing IOS_KIT_CAP_TIMING=600 \
  setsid "$src/scripts/gpu/first-run.sh" --dry-run --pack "$pack" "$out3" >"$WORK/run3.log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  grep -q '^== timing ' "$WORK/kw3/results/summary.txt" 2>/dev/null && break
  sleep 0.2
done
sleep 1
kill -KILL -- "-$pid" 2>/dev/null
wait "$pid" 2>/dev/null
check_out "kill" "$out3"
grep -q $'^correctness\t' "$out3/tests.tsv" 2>/dev/null || fail "kill: the correctness results were not kept"
[ -s "$out3/results.tgz" ] || fail "kill: results.tgz missing"
ok

finish
