#!/usr/bin/env bash
# The whole GPU check in one command, for a lent H100/H200 machine (15
# minutes of device time in all, the start included; one command of at most
# 10 minutes): it stops itself after about 420 s.
#
#   here:  scripts/build.sh && scripts/gpu/prepare.sh        # the kit, .devpack/ and .devpack.tar.xz
#   there: scripts/gpu/first-run.sh "$OUT"                   # carrying .devpack.tar.xz only
#   here:  scripts/gpu/first-run.sh --dry-run OUT            # the same phases on the CPU and sim backends
#
# The kit travels as the archive .devpack.tar.xz (PACK.tar.xz for --pack
# PACK); when PACK/kit.env is missing the archive is unpacked into PACK first.
#
# Phases, in order, each with its own cap (the smaller of its cap and the
# time left; IOS_KIT_CAP_<PHASE> overrides one, in seconds):
#   preflight    GPU, driver and library versions (env.txt), the wheels'
#                cuDNN and cuBLAS linked into the kit, the models rebuilt
#                from their skeletons and checked by SHA-256; the machine's
#                runtime (gVisor or Firecracker: ncu and compute-sanitizer
#                work only on the latter)
#   smoke        SqueezeNet's IOS schedule, ios-run --check; if it fails the
#                op tests run for a minute and the script stops there
#   correctness  the accuracy peers (scripts/gpu/accuracy.py peers: each test
#                model in PyTorch at fp32, tf32, fp16 and bf16 on the GPU)
#                start first; in parallel: every GPU test case but the model
#                test in a process of its own, compute-sanitizer memcheck of
#                the op tests, and torch.compile warming its cache; then the
#                model test of the four IOS paper networks (a process each,
#                judged by the accuracy rule against the peers); last, alone
#                on the GPU, the cases that read device-wide figures
#   timing       serially, on a quiet GPU, in this order (what does not fit
#                is reported "not run (time)"): the measured IOS searches of
#                SqueezeNet and Inception V3 (cold, then warm profile
#                database); every scheduler's schedule of each benchmark
#                network with CUDA graphs; the variants (fp16 and bf16 at
#                batch 1, TF32 and fp16 at batch 16); PyTorch eager and CUDA
#                graph on the same networks at those precisions and batches,
#                a share of the time per network; one network's sequential
#                and IOS schedules in three more ios-run calls (run-to-run
#                spread); the per-layer comparison with PyTorch at TF32 and
#                fp16; plain launches of every schedule
#   compile      torch.compile (reduce-overhead) on Inception V3 and SqueezeNet
#   models       the model test of the other models, with the time left
# After every phase the results are packed into OUT (at most 8 files, each
# under 16 MiB, no folders): summary.txt (printed last too), env.txt,
# tests.tsv, timings.json, bench.md, profile.sqlite, results.tgz (logs,
# schedules, reports, raw timings). A kill at any point leaves what the
# phases before it packed.
#
# A rerun (the time left after a fix: a command of a minute or three) selects
# what each phase runs; unset, a phase runs everything. Each is a list of
# words separated by spaces or commas, or "none":
#   IOS_KIT_PHASES     the phases after preflight (default: all of them)
#   IOS_KIT_TESTS      an extended regular expression: the GPU test cases run
#                      in the correctness phase (default: every case)
#   IOS_KIT_MODELS     the models whose model test runs (correctness and models
#                      phases together; default: the four networks, then the rest)
#   IOS_KIT_MEASURED   the measured searches (default: squeezenet1_1 inception_v3)
#   IOS_KIT_NETWORKS   the networks ios-run times (default: every benchmark network)
#   IOS_KIT_LAUNCHES   their launch modes (default: graph plain)
#   IOS_KIT_PEERS      the networks PyTorch runs (default: the four)
#   IOS_KIT_COMPILE    the networks torch.compile runs (default: squeezenet1_1 inception_v3)
#   IOS_KIT_VARIANTS   the variants timed (default: fp16 bf16 b16-tf32 b16-fp16)
#   IOS_KIT_CONV_GRAPH the precisions whose schedules are timed again with
#                      ios-run --conv-kernels graph, cuDNN's graph-API plans
#                      (default: tf32 fp16; "none" for none)
#   IOS_KIT_REPEATS    how many more ios-run calls of one network (default: 3)
#   IOS_KIT_LAYERS     the precisions of the per-layer table (default: tf32 fp16;
#                      a dry run: tf32)
#
# Exit status: 0 when everything that ran passed, 1 when something failed,
# 2 on a usage error or a kit that is missing or broken.
set -uo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD

dry_run=0
out=""
pack=${IOS_KIT_PACK:-.devpack}
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry_run=1 ;;
    --pack) pack=${2:?--pack needs a folder}; shift ;;
    -*) echo "first-run: unknown option $1" >&2; exit 2 ;;
    *) [ -z "$out" ] || { echo "first-run: one OUT folder only" >&2; exit 2; }; out=$1 ;;
  esac
  shift
done
[ -n "$out" ] || { echo "usage: $0 [--dry-run] [--pack DIR] OUT" >&2; exit 2; }
unpack_start=$(date +%s)
if [ ! -f "$pack/kit.env" ] && [ -f "$pack.tar.xz" ]; then
  # What traveled: the archive prepare.sh wrote (the kit folder's contents).
  # (Python's lzma where the machine has no xz.)
  if command -v xz >/dev/null; then unxz=(xz -d -T0); else unxz=("${IOS_PYTHON:-python3}" -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.stdin.buffer), sys.stdout.buffer)'); fi
  mkdir -p "$pack" && "${unxz[@]}" <"$pack.tar.xz" | tar -C "$pack" -xf - ||
    { echo "first-run: $pack.tar.xz does not unpack" >&2; exit 2; }
fi
[ -f "$pack/kit.env" ] || { echo "first-run: no kit in $pack (nor $pack.tar.xz): run scripts/gpu/prepare.sh here first and carry its archive" >&2; exit 2; }
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
pack=$(cd "$pack" && pwd)

start=$unpack_start
budget=${IOS_KIT_BUDGET:-420}
deadline=$((start + budget))
reserve=8  # seconds kept for the last packing
if [ -n "${IOS_KIT_WORK:-}" ]; then
  work=$IOS_KIT_WORK
else
  # Our own scratch folder (the rebuilt models: gigabytes) goes at the end;
  # what matters is packed into OUT by then.
  work=$(mktemp -d /tmp/ios-kit.XXXXXX)
  trap 'rm -rf "$work"' EXIT
fi
results="$work/results"
mkdir -p "$results/logs" "$results/times" "$results/traces" "$results/schedules" "$results/reports" "$work/models"
bin="$pack/bin"
export PATH="$bin:$PATH"
export IOS_MODELS_DIR="$work/models/test"
# The accuracy rule's data: inputs and truths from the kit, peers made here.
export IOS_ACCURACY_DIR="$work/accuracy"
# On the GPU machine a test program that finds no usable GPU fails instead of
# reporting its GPU cases as skipped.
[ "$dry_run" = 1 ] || export IOS_REQUIRE_GPU=1
py=${IOS_PYTHON:-python3}
[ "$dry_run" = 1 ] && py=${IOS_PYTHON:-/usr/bin/python3}
failures=0

declare -A cap=([preflight]=45 [smoke]=30 [correctness]=120 [timing]=190 [compile]=30 [models]=80)
for phase in "${!cap[@]}"; do
  var="IOS_KIT_CAP_${phase^^}"
  [ -n "${!var:-}" ] && cap[$phase]=${!var}
done

# words NAME DEFAULT: the selection NAME as space-separated words.
words() {
  local value=${!1-$2}
  [ "$value" = none ] && value=""
  echo "$value" | tr ',' ' '
}
selected() { [ "$1" = preflight ] || [[ " $(words IOS_KIT_PHASES "preflight smoke correctness timing compile models") " == *" $1 "* ]]; }
now() { date +%s; }
left() { echo $((deadline - reserve - $(now))); }
note() { echo "$*" >>"$results/summary.txt"; echo "$*" >&2; }
elapsed() { echo "$(($(now) - start)) s"; }

# phase_begin NAME: sets phase_end to the smaller of the cap and the time left.
phase_begin() {
  phase=$1
  local l
  if ! selected "$phase"; then
    note "== $phase: not selected (IOS_KIT_PHASES)"
    phase_end=$(now)
    return 1
  fi
  l=$(left)
  phase_end=$(($(now) + (cap[$phase] < l ? cap[$phase] : l)))
  note "== $phase (at $(elapsed); cap ${cap[$phase]} s, $((phase_end - $(now))) s granted)"
}
phase_left() { echo $((phase_end - $(now))); }

# capped LOG CMD...: runs CMD with what is left of the phase (at least 1 s),
# its output in LOG (line-buffered, so a killed run keeps what it printed).
# Sets rc and secs. rc 124: stopped at the cap.
capped() {
  local log=$1 t0 limit
  shift
  limit=$(phase_left)
  [ "$limit" -ge 1 ] || limit=1
  t0=$(date +%s%N)
  timeout -k 5 "$limit" stdbuf -oL -eL "$@" >"$log" 2>&1
  rc=$?
  [ "$rc" = 137 ] && rc=124
  secs=$(awk -v ns=$(($(date +%s%N) - t0)) 'BEGIN { printf "%.1f", ns / 1e9 }')
}

# The hang the kit's own test injects into one phase (IOS_KIT_HANG=PHASE).
maybe_hang() {
  if [ "${IOS_KIT_HANG:-}" = "$phase" ]; then
    capped "$results/logs/$phase-hang.log" sleep 100000
    note "$phase: injected hang stopped after ${secs} s (rc $rc)"
  fi
}

# record PHASE NAME RESULT SECONDS [DETAIL]
record() {
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "${5:-}" >>"$results/tests.tsv"
  case "$3" in FAILED*) failures=1 ;; esac
}

# publish FILE NAME: FILE into OUT as NAME, written beside it and renamed
# over it, so that a kill leaves the previous complete copy.
publish() {
  [ -f "$1" ] && cp "$1" "$out/$2.partial" && mv "$out/$2.partial" "$out/$2"
}

# Packs everything done so far into OUT, under fixed names only.
pack_results() {
  local f
  publish "$work/profile.sqlite" profile.sqlite
  timeout 20 "$py" "$repo/scripts/gpu/collect.py" "$work" "$out" "$pack" >>"$results/logs/collect.log" 2>&1 ||
    echo "collect.py failed (see logs/collect.log)" >>"$results/summary.txt"
  # Logs are cut to their last 256 KiB so that the archive stays far under 16 MiB.
  for f in "$results"/logs/*.log; do
    [ -f "$f" ] || continue
    if [ "$(stat -c %s "$f")" -gt 262144 ]; then
      tail -c 262144 "$f" >"$f.cut" && mv "$f.cut" "$f"
    fi
  done
  tar -czf "$work/results.tgz" -C "$work" results 2>/dev/null && publish "$work/results.tgz" results.tgz
  for f in summary.txt env.txt tests.tsv; do publish "$results/$f" "$f"; done
}

finish() {
  local verdict=passed
  [ "$failures" = 0 ] || verdict=FAILED
  note "== done at $(elapsed): $(grep -c $'\tpassed' "$results/tests.tsv" 2>/dev/null) passed, $(grep -c $'\tFAILED' "$results/tests.tsv" 2>/dev/null) failed, $(grep -c $'\tskipped' "$results/tests.tsv" 2>/dev/null) skipped, $(grep -c $'\tnot run' "$results/tests.tsv" 2>/dev/null) not run; verdict: $verdict"
  pack_results
  echo "----- summary.txt"
  cat "$out/summary.txt"
  echo "----- tests.tsv (failed and not run)"
  grep -v -E $'\t(passed|skipped)\t' "$out/tests.tsv" | cut -c1-300 | head -40
  [ -f "$out/bench.md" ] && { echo "----- bench.md"; head -c 6000 "$out/bench.md"; }
  exit "$failures"
}

printf 'phase\ttest\tresult\tseconds\tdetail\n' >"$results/tests.tsv"
: >"$results/summary.txt"
source "$pack/kit.env"
note "ios GPU kit: $( [ "$dry_run" = 1 ] && echo "DRY RUN (CPU and sim backends stand in for CUDA)" || echo "GPU run" ), kit commit $commit prepared $prepared, started $(date -u +%Y-%m-%dT%H:%M:%SZ), budget ${budget} s"

# ----------------------------------------------------------------- preflight
phase_begin preflight
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(uname -srm), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
  echo "kit: $(tr '\n' ' ' <"$pack/kit.env")"
  # gVisor's kernel says so in dmesg and /proc/version; Firecracker is a
  # virtual machine with its own kernel (ncu and compute-sanitizer need it).
  if dmesg 2>/dev/null | grep -qi gvisor || grep -qi gvisor /proc/version 2>/dev/null; then
    echo "runtime: gVisor ($(uname -r))"
  elif grep -qi -E 'firecracker' /proc/cmdline /sys/class/dmi/id/product_name 2>/dev/null; then
    echo "runtime: Firecracker ($(uname -r))"
  else
    echo "runtime: $(systemd-detect-virt 2>/dev/null || echo unknown) ($(uname -r); $(tr '\0' ' ' </proc/cmdline 2>/dev/null | cut -c1-120))"
  fi
} >"$results/env.txt"
if [ "$dry_run" = 1 ]; then
  echo "gpu: none (dry run)" >>"$results/env.txt"
else
  {
    echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total,pstate,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.limit,persistence_mode,compute_mode,temperature.gpu --format=csv,noheader 2>&1 | head -1)"
    echo "nvcc: $(nvcc --version 2>/dev/null | tail -1)"
  } >>"$results/env.txt"
  # cuDNN, cuBLAS and NVRTC from the wheels (namespace packages: found
  # through nvidia.__path__, never by searching the disk), linked into the
  # kit's lib/ where the programs' RPATH finds them.
  "$py" - "$pack/lib" >>"$results/env.txt" 2>&1 <<'PY'
import importlib.metadata as md, os, re, sys
lib = sys.argv[1]
for dist in ("nvidia-cudnn-cu13", "nvidia-cublas", "nvidia-cublas-cu13", "nvidia-cuda-nvrtc", "nvidia-nvjitlink",
             "nvidia-cuda-runtime", "torch", "torchvision", "onnx", "numpy", "triton"):
    try:
        print(f"wheel {dist}: {md.version(dist)}")
    except md.PackageNotFoundError:
        pass
try:
    import nvidia
    roots = list(nvidia.__path__)
except ImportError:
    roots = []
pattern = re.compile(r"lib(cudnn[a-z_]*|cublas|cublasLt|nvrtc|nvrtc-builtins|nvJitLink)\.so(\.[0-9]+)*$")
linked = 0
for root in roots:
    for folder, _, files in os.walk(root):
        for f in files:
            if pattern.match(f) and not os.path.exists(os.path.join(lib, f)):
                os.symlink(os.path.join(folder, f), os.path.join(lib, f))
                linked += 1
print(f"wheel libraries linked into the kit: {linked}")
PY
  built=${cudnn_built_against:-0.0.0}
  have=$(sed -n 's/^wheel nvidia-cudnn-cu13: //p' "$results/env.txt")
  echo "cudnn: wheel ${have:-missing}, kit built against $built" >>"$results/env.txt"
  # cuDNN keeps its API within a major version but promises nothing for a
  # library older than the headers: such a machine is refused, unless
  # IOS_KIT_OLDER_CUDNN=proceed asks to go on anyway (then every result is
  # marked with both versions).
  if [ -z "$have" ] || [ "${have%%.*}" != "${built%%.*}" ]; then
    note "preflight: FAILED: the GPU machine's cuDNN (${have:-none}) is not of the kit's major version ($built)"
    record preflight cudnn-version "FAILED" 0 "cuDNN ${have:-none}, built against $built"
    finish
  elif [ "$(printf '%s\n%s\n' "$built" "$have" | sort -V | head -1)" != "$built" ]; then
    if [ "${IOS_KIT_OLDER_CUDNN:-}" = proceed ]; then
      note "preflight: WARNING: cuDNN $have is older than the $built the kit was built against; going on as IOS_KIT_OLDER_CUDNN=proceed asks"
      record preflight cudnn-version "passed (older, by request)" 0 "cuDNN $have < $built"
    else
      note "preflight: FAILED: the GPU machine's cuDNN ($have) is older than the $built the kit was built against (IOS_KIT_OLDER_CUDNN=proceed goes on anyway)"
      record preflight cudnn-version "FAILED" 0 "cuDNN $have < $built"
      finish
    fi
  else
    record preflight cudnn-version passed 0 "cuDNN $have, built against $built"
  fi
fi
{
  echo "ios-run --version: $(ios-run --version 2>&1 | tr '\n' ' ')"
  for p in "$bin"/*; do
    echo "needed by $(basename "$p"): $(readelf -d "$p" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
    echo "ldd $(basename "$p"): $(ldd "$p" 2>&1 | awk '{print $1, $3}' | tr '\n' ' ')"
  done
} >>"$results/env.txt"
if ldd "$bin"/* 2>&1 | grep -q 'not found'; then
  note "preflight: FAILED: libraries not found: $(ldd "$bin"/* 2>&1 | grep 'not found' | awk '{print $1}' | sort -u | tr '\n' ' ')"
  record preflight libraries FAILED 0 "see env.txt"
  finish
fi
# The models, rebuilt from their skeletons, byte-identical to the files the
# prepared schedules were made for.
capped "$results/logs/models-fill.log" bash -c '
  while IFS=$'"'"'\t'"'"' read -r rel hash; do
    mkdir -p "'"$work"'/models/$(dirname "$rel")"
    printf "%s\t%s\n" "$rel" "$hash"
  done <"'"$pack"'/models/manifest.tsv" | xargs -P "$(nproc)" -d "\n" -I{} bash -c '"'"'
    rel=$(printf "%s" "{}" | cut -f1); hash=$(printf "%s" "{}" | cut -f2)
    ios-model-weights fill "'"$pack"'/models/$rel" "'"$work"'/models/$rel" 2>/dev/null || { echo "fill failed: $rel"; exit 255; }
    got=$(sha256sum "'"$work"'/models/$rel" | cut -c1-64)
    [ "$got" = "$hash" ] || { echo "hash mismatch: $rel ($got, expected $hash)"; exit 255; }
    echo "ok $rel"'"'"''
if [ "$rc" = 0 ]; then
  record preflight models passed "$secs" "$(grep -c '^ok ' "$results/logs/models-fill.log") models rebuilt, SHA-256 as prepared"
else
  record preflight models "FAILED (rc $rc)" "$secs" "$(grep -v '^ok ' "$results/logs/models-fill.log" | head -3 | tr '\n' ' ')"
  note "preflight: FAILED: the models could not be rebuilt (logs/models-fill.log)"
  finish
fi
rm -rf "$work/accuracy"
cp -r "$pack/accuracy" "$work/accuracy" 2>/dev/null || mkdir -p "$work/accuracy"
# The prepared schedules go back with the results (a few hundred KiB), so
# that scripts/gpu/refit.py re-predicts the very files that were timed.
mkdir -p "$results/prepared"
cp -r "$pack/schedules" "$results/prepared/" 2>/dev/null
[ -d "$pack/variants" ] && cp -r "$pack/variants" "$results/prepared/"
maybe_hang
note "preflight: done at $(elapsed)"
pack_results

# --------------------------------------------------------------------- smoke
profile=h100
if [ "$dry_run" = 0 ] && nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | grep -qi h200; then profile=h200; fi
# (kit.env's profiles: the ones the schedules were prepared for.)
case " $profiles " in *" $profile "*) ;; *) profile=${profiles%% *} ;; esac
echo "$profile" >"$work/profile"
backend=cuda
[ "$dry_run" = 1 ] && backend=cpu
if phase_begin smoke; then
smoke_model=$(ls "$work"/models/bench/squeezenet1_1*.onnx | head -1)
smoke_schedule="$pack/schedules/$profile/$(basename "$smoke_model" .onnx)/ios.json"
capped "$results/logs/smoke.log" ios-run "$smoke_model" "$smoke_schedule" --backend "$backend" --check --iterations 20 --warmup 5
if [ "$rc" = 0 ]; then
  record smoke "ios-run --check squeezenet1_1 ($backend)" passed "$secs"
else
  record smoke "ios-run --check squeezenet1_1 ($backend)" "FAILED (rc $rc)" "$secs" "$(tail -2 "$results/logs/smoke.log" | tr '\n' ' ' | cut -c1-200)"
  note "smoke: FAILED; running the op tests for a minute, then stopping (logs/smoke.log)"
  phase_end=$(($(now) + 60 < deadline - reserve ? $(now) + 60 : deadline - reserve))
  capped "$results/logs/smoke-op-tests.log" ios_gpu_tests -w NoTests "[ops]"
  record smoke "ios_gpu_tests [ops]" "$([ "$rc" = 0 ] && echo passed || echo "FAILED (rc $rc)")" "$secs"
  finish
fi
maybe_hang
note "smoke: done at $(elapsed)"
pack_results
fi

# --------------------------------------------------------------- correctness
catch_spec() { printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/,/\\,/g' -e 's/\[/\\[/g' -e 's/\]/\\]/g'; }
model_test="every scheduler's schedule on every shipped model meets the accuracy rule"
bench_names="inception_v3 squeezenet1_1 randwire nasnet_a_large"
jobs_max=$(( $(nproc) > 2 ? $(nproc) / 2 : 1 ))
# One test case in one process: passed only when Catch2 says every case ran
# and passed (a binary that fails to load, or selects nothing, fails).
# The model test also prints its passing checks (-s: each schedule's
# comparison report), so that a run stopped at the cap shows how far it got.
gpu_case() {  # gpu_case PHASE LABEL LOG SPEC [ENV=...]
  local phase_name=$1 label=$2 log=$3 spec=$4 result verbose=()
  shift 4
  [ "$spec" = "$(catch_spec "$model_test")" ] && verbose=(-s)
  capped "$log" env "$@" ios_gpu_tests -w NoTests "${verbose[@]}" "$spec"
  # Catch2 ends with "All tests passed (N assertions in M test cases)", or,
  # for cases without assertions, "test cases: M | M passed".
  if [ "$rc" = 0 ] && grep -q -E '^(All tests passed|test cases: *([1-9][0-9]*) \| \2 passed)' "$log"; then
    result=passed
  elif [ "$rc" = 77 ]; then
    result="skipped (no GPU)"
  elif [ "$rc" = 124 ]; then
    result="FAILED (stopped at the cap)"
  else
    result="FAILED (rc $rc)"
  fi
  # The first failure: its line and what Catch2 says under it.
  record "$phase_name" "$label" "$result" "$secs" "$(grep -m1 -A8 -E ': FAILED:$' "$log" | tr -s ' \n\t' ' ' | cut -c1-300)"
}
if phase_begin correctness; then
# The accuracy rule's peers first, in the background: each test model in
# PyTorch at every precision on the GPU (in a dry run on the CPU at fp32 and
# bf16, its CPU types); the model tests wait for them.
peer_precisions=fp32,tf32,fp16,bf16
peer_device=cuda
[ "$dry_run" = 1 ] && { peer_precisions=fp32,bf16; peer_device=cpu; }
peer_only=$(words IOS_KIT_MODELS "" | tr ' ' ',')
( capped "$results/logs/accuracy-peers.log" "$py" "$repo/scripts/gpu/accuracy.py" peers "$work/accuracy" \
    "$work/models/test" --precisions "$peer_precisions" --device "$peer_device" --only "$peer_only"
  record correctness "accuracy peers ($peer_device, $peer_precisions)" "$([ "$rc" = 0 ] && echo passed || echo "FAILED (rc $rc)")" \
    "$secs" "$(grep -c ': [0-9.]* s$' "$results/logs/accuracy-peers.log") runs; $(grep -v ': [0-9.]* s$' "$results/logs/accuracy-peers.log" | head -2 | tr '\n' ' ' | cut -c1-200)" ) &
peers_pid=$!
# Cases that read device-wide figures run last, alone on the GPU.
alone_cases="seen by the driver"
if ! names=$(ios_gpu_tests --list-test-names-only 2>"$results/logs/list.log") || [ -z "$(echo "$names" | grep -v '^ *$')" ]; then
  # Catch2's listing exits with the number of cases it listed.
  if [ -z "$(echo "$names" | grep -v '^ *$')" ]; then
    record correctness "ios_gpu_tests --list-test-names-only" "FAILED (no test cases)" 0 "$(head -2 "$results/logs/list.log" | tr '\n' ' ')"
    names=""
  fi
fi
i=0
deferred=()
if [ "$dry_run" = 1 ]; then
  # Without a GPU the test program runs its [host] cases and exits 77: the
  # GPU cases are reported as skipped, never as passed.
  jobs_max=2
  # (The [host] cases look for the whole test set where make-models.sh
  # writes it, which a dry run's small kit does not hold.)
  capped "$results/logs/gpu-tests-host.log" env -u IOS_MODELS_DIR ios_gpu_tests
  record correctness "ios_gpu_tests [host] cases" "$([ "$rc" = 77 ] && echo passed || echo "FAILED (rc $rc)")" "$secs"
  while IFS= read -r name; do
    name=$(echo "$name" | sed 's/^ *//')
    [ -n "$name" ] && record correctness "$name" "skipped (no GPU)" 0
  done < <(ios_gpu_tests --list-test-names-only "[gpu]" 2>/dev/null)
  names=""
fi
while IFS= read -r name; do
  name=$(echo "$name" | sed 's/^ *//')
  [ -n "$name" ] && [ "$name" != "$model_test" ] || continue
  [ -z "${IOS_KIT_TESTS:-}" ] || echo "$name" | grep -q -E -- "$IOS_KIT_TESTS" || continue
  if [[ "$name" == *"$alone_cases"* ]]; then deferred+=("$name"); continue; fi
  i=$((i + 1))
  # Each subshell appends its row to tests.tsv; failures are read back from there.
  gpu_case correctness "$name" "$results/logs/case-$i.log" "$(catch_spec "$name")" &
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do sleep 0.2; done
done <<<"$names"
# compute-sanitizer memcheck of the op tests; some machines refuse it: then
# it is "unavailable", not failed.
(
  sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
  if [ -n "${IOS_KIT_TESTS:-}" ] && ! echo "compute-sanitizer memcheck" | grep -q -E -- "$IOS_KIT_TESTS"; then
    :
  elif [ "$dry_run" = 1 ] || [ -z "$sanitizer" ]; then
    record correctness "compute-sanitizer memcheck [ops]" "not run" 0 "unavailable$([ "$dry_run" = 1 ] && echo " (dry run)")"
  else
    capped "$results/logs/memcheck.log" "$sanitizer" --tool memcheck --error-exitcode 99 --print-limit 20 ios_gpu_tests -w NoTests "[ops]"
    summary=$(grep -m1 'ERROR SUMMARY' "$results/logs/memcheck.log")
    # Memcheck's own verdict: an error summary of 0 (a failing test case is
    # the op tests' verdict, recorded by their own rows, not memcheck's).
    if [ "$rc" != 99 ] && [ "$rc" != 124 ] && echo "$summary" | grep -q 'ERROR SUMMARY: 0 errors'; then
      record correctness "compute-sanitizer memcheck [ops]" passed "$secs" "$summary (the op tests exited $rc)"
    elif [ "$rc" = 124 ] && grep -q -E '^========= (Invalid|Program hit|Uninitialized|Leaked)' "$results/logs/memcheck.log"; then
      record correctness "compute-sanitizer memcheck [ops]" "FAILED (errors before the cap)" "$secs" \
        "$(grep -m1 -E '^========= (Invalid|Program hit|Uninitialized|Leaked)' "$results/logs/memcheck.log" | cut -c1-160)"
    elif [ "$rc" = 124 ]; then
      record correctness "compute-sanitizer memcheck [ops]" "not run (time)" "$secs" "stopped at the cap with no error reported so far"
    elif [ -z "$summary" ] || grep -q -i 'not supported' "$results/logs/memcheck.log"; then
      record correctness "compute-sanitizer memcheck [ops]" "not run" "$secs" "unavailable: $(grep -m1 -i -E 'error|not supported' "$results/logs/memcheck.log" | cut -c1-160)"
    else
      record correctness "compute-sanitizer memcheck [ops]" "FAILED (rc $rc)" "$secs" "$summary"
    fi
  fi
) &
# torch.compile fills its cache now (CPU work), so that the compile phase
# times replays rather than compilation.
if [ "$dry_run" = 0 ] && selected compile && [ -n "$(words IOS_KIT_COMPILE "squeezenet1_1 inception_v3")" ]; then
  ( capped "$results/logs/compile-warm.log" "$py" bench/harness/peers.py --models inception_v3,squeezenet1_1 \
      --models-dir "$work/models/bench" --modes compile_reduce_overhead --iterations 1 --warmup 1 \
      --no-calibrate --out "$work/compile-warm.json" --models "$(words IOS_KIT_COMPILE "squeezenet1_1 inception_v3" | tr ' ' ',')" ) &
fi
# The model tests judge against the peers: wait for them.
wait "$peers_pid"
for m in $(words IOS_KIT_MODELS "$bench_names"); do
  [[ " $bench_names " == *" $m "* ]] || continue  # the others are the models phase's
  if [ "$dry_run" = 1 ]; then
    # The CPU stands in: every scheduler's schedule, checked against the
    # sequential one on the CPU backend.
    for model in "$work"/models/test/"$m"*.onnx; do
      [ -f "$model" ] || continue
      prepared=("$pack/schedules/$profile/$(basename "$model" .onnx)"/*.json)
      [ -f "${prepared[0]}" ] || prepared=()
      ( capped "$results/logs/model-$m.log" ios-run "$model" "${prepared[@]}" --backend cpu --batch 1 --check \
          --iterations 1 --warmup 0
        record correctness "model $m (cpu stand-in, ${#prepared[@]} schedules)" "$([ "$rc" = 0 ] && echo passed || echo "FAILED (rc $rc)")" "$secs"
        # The accuracy rule's path on the CPU: ios's float32 outputs on the
        # kit's input against the float64 truth, with the CPU peer at fp32.
        stem=$(basename "$model" .onnx)
        inputs=()
        for f in "$work/accuracy/$stem"/input-*.npy; do [ -f "$f" ] && inputs+=(--input "$f"); done
        capped "$results/logs/accuracy-$m.log" bash -c '"$@" && "'"$py"'" "'"$repo"'/scripts/gpu/accuracy.py" judge \
            "'"$work/accuracy/$stem"'" "'"$work/accuracy/$stem"'/ios-cpu" --precision fp32' _ \
          ios-run "$model" "${prepared[0]}" --backend cpu --batch 1 --iterations 1 --warmup 0 "${inputs[@]}" \
          --output-dir "$work/accuracy/$stem/ios-cpu"
        record correctness "accuracy rule $m (cpu stand-in, fp32)" "$([ "$rc" = 0 ] && echo passed || echo "FAILED (rc $rc)")" "$secs" \
          "$(tail -1 "$results/logs/accuracy-$m.log" | cut -c1-200)" ) &
    done
  else
    ( gpu_case correctness "$model_test [$m]" "$results/logs/model-$m.log" "$(catch_spec "$model_test")" IOS_GPU_TEST_MODELS="$m" ) &
  fi
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do sleep 0.2; done
done
maybe_hang
wait
for name in "${deferred[@]}"; do
  i=$((i + 1))
  gpu_case correctness "$name (alone)" "$results/logs/case-$i.log" "$(catch_spec "$name")"
done
# The subshells' failures are in their rows.
grep -q $'\tFAILED' "$results/tests.tsv" && failures=1
note "correctness: $(awk -F'\t' '$1=="correctness" && $3=="passed"' "$results/tests.tsv" | wc -l) passed, $(awk -F'\t' '$1=="correctness" && $3 ~ /^FAILED/' "$results/tests.tsv" | wc -l) failed, $(awk -F'\t' '$1=="correctness" && $3 ~ /^(skipped|not run)/' "$results/tests.tsv" | wc -l) skipped or not run, at $(elapsed)"
pack_results
fi

# -------------------------------------------------------------------- timing
if phase_begin timing; then
maybe_hang
# The measured IOS search (cold: an empty profile database, then warm), each
# search held to its own share of the phase.
measured_search() {  # measured_search MODEL STATE MAX_SECONDS
  local m=$1 state=$2 most=$3 model saved_end=$phase_end
  model=$(ls "$work"/models/bench/"$m"*.onnx 2>/dev/null | head -1)
  if [ -z "$model" ]; then record timing "measured search $m $state" "not run" 0 "not in this kit"; return; fi
  if [ "$(phase_left)" -lt 10 ]; then record timing "measured search $m $state" "not run (time)" 0; return; fi
  cost=(--cost measured --profile-db "$work/profile.sqlite" --profile-budget 400)
  [ "$dry_run" = 1 ] && cost=(--cost simulated --device-profile "$profile")
  [ $(($(now) + most)) -lt "$phase_end" ] && phase_end=$(($(now) + most))
  capped "$results/logs/measured-$m-$state.log" ios-optimize "$model" --batch 1 "${cost[@]}" --time-limit 30 \
    -o "$results/schedules/$m.measured-$state.json" --report-json "$results/reports/$m.measured-$state.json"
  phase_end=$saved_end
  record timing "measured search $m $state" "$([ "$rc" = 0 ] && echo passed || echo "FAILED (rc $rc)")" "$secs" \
    "$(grep -m1 -E '^(Measure|Latency)' "$results/logs/measured-$m-$state.log" | cut -c1-160)"
}
measured=$(words IOS_KIT_MEASURED "squeezenet1_1 inception_v3")
# Both measured searches first: a few seconds each on the last H200 run.
if [[ " $measured " == *" squeezenet1_1 "* ]]; then
  measured_search squeezenet1_1 cold 25
  measured_search squeezenet1_1 warm 10
fi
if [[ " $measured " == *" inception_v3 "* ]]; then
  measured_search inception_v3 cold 35
  measured_search inception_v3 warm 10
fi
# Options every time_schedules call adds (the graph-API variant below sets them).
run_args=()
# time_schedules NAME MODEL LAUNCH SECONDS EXPORT_STEM LABEL=FILE...: one
# ios-run timing the schedules interleaved (the first is the comparison's
# baseline), held to SECONDS of the phase, its timings in
# times/EXPORT_STEM.json and its trace in traces/EXPORT_STEM.json.
time_schedules() {
  local name=$1 model=$2 launch=$3 most=$4 stem=$5 saved_end=$phase_end timing_args=(--iterations 100 --warmup 20)
  shift 5
  if [ "$(phase_left)" -lt 8 ]; then record timing "ios-run $name" "not run (time)" 0; return; fi
  [ "$dry_run" = 1 ] && timing_args=()
  [ $(($(now) + most)) -lt "$phase_end" ] && phase_end=$(($(now) + most))
  capped "$results/logs/run-$stem.log" ios-run "$model" "$@" --backend "$([ "$dry_run" = 1 ] && echo sim || echo cuda)" \
    --launch "$launch" "${timing_args[@]}" "${run_args[@]}" --export-times "$results/times/$stem.json" --trace "$results/traces/$stem.json"
  phase_end=$saved_end
  record timing "ios-run $name" "$([ "$rc" = 0 ] && echo passed || echo "FAILED (rc $rc)")" "$secs" \
    "$(grep -m1 '^Fastest' "$results/logs/run-$stem.log" | cut -c1-160)"
}
# labelled DIR: every schedule of DIR as LABEL=FILE, sequential first.
labelled() {
  local s
  echo "sequential=$1/sequential.json"
  for s in "$1"/*.json; do [ "$(basename "$s" .json)" = sequential ] || echo "$(basename "$s" .json)=$s"; done
}
selected_network() {  # selected_network NAME: in IOS_KIT_NETWORKS (all when unset)
  [ -z "${IOS_KIT_NETWORKS+set}" ] || [[ " $(words IOS_KIT_NETWORKS "") " == *" ${1%%-*} "* ]]
}
launches=$(words IOS_KIT_LAUNCHES "graph plain")
# every_network LAUNCH SECONDS: every scheduler's schedule of each selected
# network in LAUNCH mode, at most SECONDS each (so that one slow network
# cannot take the others' time); nothing when IOS_KIT_LAUNCHES leaves it out.
every_network() {
  local dir name schedules
  [[ " $launches " == *" $1 "* ]] || return 0
  for dir in "$pack"/schedules/"$profile"/*/; do
    name=$(basename "$dir")
    selected_network "$name" || continue
    mapfile -t schedules < <(labelled "${dir%/}")
    time_schedules "$name $1" "$work/models/bench/$name.onnx" "$1" "$2" "$name-$1" "${schedules[@]}"
  done
}
# 1. With CUDA graphs.
every_network graph 40
# 2. The variants: fp16 and bf16 at batch 1, TF32 and fp16 at batch 16, with
# CUDA graphs (one precision per ios-run: a schedule file fixes its own).
for dir in "$pack"/variants/"$profile"/*/*/; do
  [ -d "$dir" ] || continue
  variant=$(basename "$dir")
  name=$(basename "$(dirname "$dir")")
  selected_network "$name" || continue
  [[ " $(words IOS_KIT_VARIANTS "fp16 bf16 b16-tf32 b16-fp16") " == *" $variant "* ]] || continue
  mapfile -t schedules < <(labelled "${dir%/}")
  time_schedules "$name $variant graph" "$work/models/bench/$name.onnx" graph 25 "$name-$variant-graph" "${schedules[@]}"
done
# 2b. The same schedules with cuDNN's graph-API kernels (ios-run
# --conv-kernels graph: plans from heuristics A, B and the fallback list,
# timed, the fastest kept; the legacy call where none builds), TF32 from the
# schedules of 1 and fp16 from its variant, on the same machine as their
# legacy timings above (compare medians, not single runs). The log (-v)
# names the layers no plan runs.
conv_graph=$(words IOS_KIT_CONV_GRAPH "tf32 fp16")
if [ "$conv_graph" != none ] && [ "$dry_run" != 1 ]; then
  run_args=(--conv-kernels graph -v)
  for dir in "$pack"/schedules/"$profile"/*/; do
    name=$(basename "$dir")
    selected_network "$name" || continue
    if [[ " $conv_graph " == *" tf32 "* ]]; then
      mapfile -t schedules < <(labelled "${dir%/}")
      time_schedules "$name graph conv-graph" "$work/models/bench/$name.onnx" graph 30 "$name-graph-convgraph" \
        "${schedules[@]}"
    fi
    if [[ " $conv_graph " == *" fp16 "* ]] && [ -d "$pack/variants/$profile/$name/fp16" ]; then
      mapfile -t schedules < <(labelled "$pack/variants/$profile/$name/fp16")
      time_schedules "$name fp16 graph conv-graph" "$work/models/bench/$name.onnx" graph 30 \
        "$name-fp16-graph-convgraph" "${schedules[@]}"
    fi
  done
  run_args=()
fi
# 3. PyTorch eager and CUDA graph on the same networks, timed as ios-run
# times them: TF32, fp16 and bf16 at batch 1, TF32 and fp16 at batch 16 (the
# variants' pairs), every network's CUDA-graph row at TF32 batch 1 first, a
# share of the time per network so that a slow one cannot take the others'.
peers=$(words IOS_KIT_PEERS "inception_v3 squeezenet1_1 randwire nasnet_a_large")
if [ -z "$peers" ]; then
  :
elif [ "$(phase_left)" -ge 15 ]; then
  if [ "$dry_run" = 1 ]; then
    capped "$results/logs/peers.log" "$py" bench/harness/peers.py --cpu-smoke --models squeezenet1_1 \
      --models-dir "$work/models/bench" --precision tf32,bf16 --no-calibrate --out "$results/times/peers.json"
  else
    n=$(echo $peers | wc -w)
    share=$(( ($(phase_left) - 45) / n ))
    [ "$share" -gt 25 ] && share=25
    [ "$share" -lt 8 ] && share=8
    capped "$results/logs/peers.log" "$py" bench/harness/peers.py --models "$(echo $peers | tr ' ' ',')" \
      --models-dir "$work/models/bench" --modes cuda_graph,eager --combos tf32:1,fp16:1,bf16:1,tf32:16,fp16:16 \
      --iterations 100 --warmup 20 --no-calibrate --network-timeout "$share" --out "$results/times/peers.json"
  fi
  record timing "PyTorch peers" "$([ "$rc" = 0 ] && echo passed || echo "FAILED (rc $rc)")" "$secs"
else
  record timing "PyTorch peers" "not run (time)" 0
fi
# 4. The run-to-run spread: one network's sequential and IOS schedules in
# three more ios-run calls (a process each, as a user would run them).
repeat_net=$(ls -d "$pack"/schedules/"$profile"/inception_v3*/ "$pack"/schedules/"$profile"/*/ 2>/dev/null | head -1)
if [ -n "$repeat_net" ] && [ "$(words IOS_KIT_REPEATS 3)" -gt 0 ] 2>/dev/null; then
  name=$(basename "$repeat_net")
  if selected_network "$name"; then
    for k in $(seq 1 "$(words IOS_KIT_REPEATS 3)"); do
      time_schedules "$name repeat $k graph" "$work/models/bench/$name.onnx" graph 15 "$name-repeat$k-graph" \
        "sequential=${repeat_net}sequential.json" "ios=${repeat_net}ios.json"
    done
  fi
fi
# 5. Per layer: every convolution and matrix product of each network at TF32
# and fp16, PyTorch's same layer with its fused epilogue (bench/harness/
# layers.py, CUDA graph, cudnn.benchmark) beside ios's per-launch time from
# the trace of its sequential schedule (three samples: the schedule thrice).
for dir in "$pack"/schedules/"$profile"/*/; do
  name=$(basename "$dir")
  selected_network "$name" || continue
  for prec in $(words IOS_KIT_LAYERS "$([ "$dry_run" = 1 ] && echo tf32 || echo "tf32 fp16")"); do
    if [ "$(phase_left)" -lt 20 ]; then record timing "layers $name $prec" "not run (time)" 0; continue; fi
    seq="${dir}sequential.json"
    [ "$prec" = fp16 ] && seq="$pack/variants/$profile/$name/fp16/sequential.json"
    [ -f "$seq" ] || { record timing "layers $name $prec" "not run" 0 "no $prec schedule in this kit"; continue; }
    saved_end=$phase_end
    [ $(($(now) + 30)) -lt "$phase_end" ] && phase_end=$(($(now) + 30))
    smoke=()
    [ "$dry_run" = 1 ] && smoke=(--cpu-smoke)
    capped "$results/logs/layers-$name-$prec.log" bash -c '"$@"' _ "$py" bench/harness/layers.py torch \
      "$work/models/bench/$name.onnx" --precision "$prec" --batch 1 --timeout "$(( $(phase_left) > 5 ? $(phase_left) - 5 : 1 ))" \
      "${smoke[@]}" --out "$results/times/layers-$name-$prec.json"
    torch_rc=$rc
    capped "$results/logs/layers-ios-$name-$prec.log" ios-run "$work/models/bench/$name.onnx" t1="$seq" t2="$seq" t3="$seq" \
      --backend "$([ "$dry_run" = 1 ] && echo sim || echo cuda)" --iterations 10 --warmup 5 \
      --trace "$results/traces/$name-$prec-layers.json"
    phase_end=$saved_end
    record timing "layers $name $prec" "$([ "$torch_rc" = 0 ] && [ "$rc" = 0 ] && echo passed || echo "FAILED (rc $torch_rc, $rc)")" "$secs"
  done
done
# 6. Plain launches of every scheduler's schedule.
every_network plain 30
note "timing: done at $(elapsed)"
pack_results
fi

# ------------------------------------------------------------------- compile
if phase_begin compile; then
maybe_hang
compile=$(words IOS_KIT_COMPILE "squeezenet1_1 inception_v3")
if [ -z "$compile" ]; then
  :
elif [ "$dry_run" = 1 ]; then
  record compile "torch.compile reduce-overhead" "not run" 0 "dry run: needs a GPU"
elif [ "$(phase_left)" -ge 15 ]; then
  capped "$results/logs/compile.log" "$py" bench/harness/peers.py --models "$(echo $compile | tr ' ' ',')" \
    --models-dir "$work/models/bench" --modes compile_reduce_overhead --batches 1 --iterations 100 --warmup 20 \
    --no-calibrate --mode-timeout "$(phase_left)" --out "$results/times/peers-compile.json"
  record compile "torch.compile reduce-overhead" "$([ "$rc" = 0 ] && echo passed || echo "FAILED (rc $rc)")" "$secs"
else
  record compile "torch.compile reduce-overhead" "not run (time)" 0
fi
pack_results
fi

# -------------------------------------------------------------------- models
if phase_begin models; then
maybe_hang
others=$(ls "$work"/models/test/*.onnx 2>/dev/null | xargs -r -n1 basename | grep -v -E '\.(fp16|bf16)\.onnx$' | sed -E 's/(-b[0-9]+|-bdyn)?(-[0-9]+(x[0-9]+)*)?(-op[0-9]+)?\.onnx$//' |
  sort -u | grep -v -x -E "$(echo $bench_names | tr ' ' '|')")
if [ -n "${IOS_KIT_MODELS+set}" ]; then
  # A selection: the models the correctness phase did not take.
  others=$(for m in $(words IOS_KIT_MODELS ""); do [[ " $bench_names " == *" $m "* ]] || echo "$m"; done)
fi
for m in $others; do
  if [ "$(phase_left)" -lt 10 ]; then record models "$model_test [$m]" "not run (time)" 0; continue; fi
  if [ "$dry_run" = 1 ]; then
    model=$(ls "$work"/models/test/"$m"*.onnx | head -1)
    ( capped "$results/logs/model-$m.log" ios-run "$model" --backend cpu --batch 1 --check --iterations 1 --warmup 0
      record models "model $m (cpu stand-in)" "$([ "$rc" = 0 ] && echo passed || echo "FAILED (rc $rc)")" "$secs" ) &
  else
    ( gpu_case models "$model_test [$m]" "$results/logs/model-$m.log" "$(catch_spec "$model_test")" IOS_GPU_TEST_MODELS="$m" ) &
  fi
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do sleep 0.2; done
done
wait
fi
grep -q $'\tFAILED' "$results/tests.tsv" && failures=1
finish
