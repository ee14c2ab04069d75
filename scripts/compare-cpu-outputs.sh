#!/usr/bin/env bash
# Proves that a change kept the CPU executor's outputs bit-identical: every
# model in onnx_models/generated, scheduled by every scheduler (simulated cost,
# batch 1, fixed seed), is run once on the CPU backend and each output .npy is
# compared byte for byte (cmp) with the other side's.
#
#   scripts/compare-cpu-outputs.sh BEFORE AFTER [WORKDIR]
#
# BEFORE and AFTER are each a build folder (holding apps/ios-optimize and
# apps/ios-run) or an output folder this script wrote earlier (WORKDIR/NAME,
# kept so that a build can be compared with outputs saved before a change).
# Outputs are written under WORKDIR (default: a temporary folder, removed
# afterwards) as WORKDIR/before|after/MODEL/SCHEDULER/*.npy.
# Environment: MODELS (space-separated .onnx paths, default every model in
# onnx_models/generated), SCHEDULERS (default: sequential greedy ios
# ios-parallel ios-merge dos lios nimble).
# Exit codes: 0 identical, 1 some output differs or is missing, 2 usage error.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ $# -lt 2 || $# -gt 3 ]]; then
    echo "usage: $0 BEFORE AFTER [WORKDIR] (build folders or saved output folders)" >&2
    exit 2
fi
before=$1
after=$2
if [[ $# -eq 3 ]]; then
    work=$3
    mkdir -p "$work"
else
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
fi
read -r -a schedulers <<<"${SCHEDULERS:-sequential greedy ios ios-parallel ios-merge dos lios nimble}"
if [[ -n ${MODELS:-} ]]; then
    read -r -a models <<<"$MODELS"
else
    models=()
    for m in onnx_models/generated/*.onnx; do
        # The typed half-precision copies (convert_half.py) are not float32 models.
        case "$m" in *.fp16.onnx | *.bf16.onnx) ;; *) models+=("$m") ;; esac
    done
fi
[[ -e ${models[0]} ]] || { echo "$0: no models in onnx_models/generated (run onnx_models/export_models.py)" >&2; exit 2; }

# run_side SIDE SOURCE: leaves the outputs in $work/SIDE (or points at SOURCE
# when it is a saved output folder).
side_dir() {
    local source=$1 name=$2
    if [[ -x $source/apps/ios-run && -x $source/apps/ios-optimize ]]; then
        echo "$work/$name"
    elif [[ -d $source ]]; then
        echo "$source"
    else
        echo "$0: $source is neither a build folder (apps/ios-run) nor an output folder" >&2
        exit 2
    fi
}

run_side() {
    local build=$1 out=$2
    [[ -x $build/apps/ios-run ]] || return 0
    local model name sched dir
    for model in "${models[@]}"; do
        name=$(basename "$model" .onnx)
        for sched in "${schedulers[@]}"; do
            dir=$out/$name/$sched
            rm -rf "$dir"
            mkdir -p "$dir"
            "$build/apps/ios-optimize" "$model" --quiet --cost simulated --device-profile h100 \
                --batch 1 --scheduler "$sched" -o "$dir.schedule.json"
            "$build/apps/ios-run" "$model" "$dir.schedule.json" --quiet --backend cpu --threads 2 \
                --iterations 1 --warmup 0 --seed 0 --output-dir "$dir" >/dev/null
            echo "$build: $name $sched" >&2
        done
    done
}

before_out=$(side_dir "$before" before)
after_out=$(side_dir "$after" after)
run_side "$before" "$before_out"
run_side "$after" "$after_out"

pairs=0
files=0
failed=0
for model in "${models[@]}"; do
    name=$(basename "$model" .onnx)
    for sched in "${schedulers[@]}"; do
        a=$before_out/$name/$sched
        b=$after_out/$name/$sched
        shopt -s nullglob
        outs=("$a"/*.npy)
        shopt -u nullglob
        if [[ ${#outs[@]} -eq 0 ]]; then
            echo "MISSING $name $sched: no outputs in $a" >&2
            failed=$((failed + 1))
            continue
        fi
        ok=1
        for f in "${outs[@]}"; do
            files=$((files + 1))
            if ! cmp -s "$f" "$b/$(basename "$f")"; then
                echo "DIFFERS $name $sched $(basename "$f")" >&2
                ok=0
            fi
        done
        if [[ $(ls "$b" | grep -c '\.npy$') -ne ${#outs[@]} ]]; then
            echo "DIFFERS $name $sched: another number of outputs" >&2
            ok=0
        fi
        pairs=$((pairs + 1))
        [[ $ok -eq 1 ]] || failed=$((failed + 1))
    done
done
echo "compared ${#models[@]} models x ${#schedulers[@]} schedulers: $pairs runs, $files output files, $failed differing"
[[ $failed -eq 0 ]]
