#!/usr/bin/env bash
# Proves that a change kept every schedule ios-optimize writes, and the CPU
# outputs of a few of them, identical: runs two builds' programs on the same
# models and compares the results.
#
#   scripts/compare-schedules.sh BASE_BIN_DIR NEW_BIN_DIR [WORKDIR]
#
# BASE_BIN_DIR and NEW_BIN_DIR each hold ios-optimize and ios-run (a build's
# apps/ folder, or a copy of one made before a change). For every model, every
# scheduler and every precision, both sides run
#   ios-optimize MODEL --batch 1 --cost simulated --device-profile h100
#                --scheduler S [--precision P] [--threads 1 --time-limit 0]
# (the searching schedulers single-threaded and without a time limit, so
# that the search is deterministic), and the two schedule files are compared
# as JSON with the fields that name the writing time left out ("created",
# and the format "version", which a change may raise). Then, for the models
# of CPU_MODELS, the ios and lios schedules at each precision are run on
# the CPU backend (ios-run --backend cpu --output-dir, fixed seed) and every
# output .npy is compared byte for byte.
#
# Precisions: the default (tf32 for a float32 model) and, for float32 models,
# fp16 and bf16 (converted by ios); a typed file (*.fp16.onnx, *.bf16.onnx)
# is scheduled at its own precision only.
#
# Environment:
#   MODELS       space-separated .onnx paths (default: the representative set
#                below, which covers every family of onnx_models/generated:
#                the IOS paper's networks, torchvision classifiers, detectors,
#                segmentation, transformers, video and audio models, opset-17
#                exports, symbolic batches, typed 16-bit files; ALL=1: every
#                model of onnx_models/generated)
#   SCHEDULERS   default: sequential greedy ios dos lios nimble
#   PRECISIONS   default: "default fp16 bf16"
#   CPU_MODELS   models whose outputs are compared (default: three small ones)
#   TIMEOUT      seconds one ios-optimize may take (default 600)
# Exit codes: 0 identical, 1 something differs, is missing or timed out,
# 2 usage error.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ $# -lt 2 || $# -gt 3 ]]; then
    echo "usage: $0 BASE_BIN_DIR NEW_BIN_DIR [WORKDIR]" >&2
    exit 2
fi
base=$1
new=$2
for side in "$base" "$new"; do
    [[ -x $side/ios-optimize && -x $side/ios-run ]] ||
        { echo "$0: $side holds no ios-optimize and ios-run" >&2; exit 2; }
done
if [[ $# -eq 3 ]]; then
    work=$3
    mkdir -p "$work"
else
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
fi
G=onnx_models/generated
read -r -a schedulers <<<"${SCHEDULERS:-sequential greedy ios dos lios nimble}"
read -r -a precisions <<<"${PRECISIONS:-default fp16 bf16}"
timeout_s=${TIMEOUT:-600}
if [[ -n ${MODELS:-} ]]; then
    read -r -a models <<<"$MODELS"
elif [[ ${ALL:-0} == 1 ]]; then
    models=("$G"/*.onnx)
else
    models=("$G/squeezenet1_1-64x64.onnx" "$G/squeezenet1_1-bdyn.onnx" "$G/inception_v3-75x75.onnx"
            "$G/randwire-64x64.onnx" "$G/resnet50-bdyn.onnx" "$G/mobilenet_v2-bdyn.onnx"
            "$G/googlenet-bdyn.onnx" "$G/densenet121-bdyn.onnx" "$G/convnext_tiny-64x64-op17.onnx"
            "$G/vit_style.onnx" "$G/swin_t-112x112.onnx" "$G/ssdlite320_mobilenet_v3_large.onnx"
            "$G/fcn_resnet50-128x128-op17.onnx" "$G/r2plus1d_18-4x28x28.onnx" "$G/audio_cnn.onnx"
            "$G/hrnet_style.onnx" "$G/squeezenet1_1-64x64.fp16.onnx" "$G/vit_style.bf16.onnx"
            "$G/inception_v3-75x75.bf16.onnx")
fi
read -r -a cpu_models <<<"${CPU_MODELS:-$G/squeezenet1_1-64x64.onnx $G/audio_cnn.onnx $G/vit_style.onnx}"
[[ -e ${models[0]} ]] || { echo "$0: ${models[0]} is missing (run onnx_models/export_models.py)" >&2; exit 2; }

searching() { [[ $1 == ios* || $1 == dos ]]; }
typed() { [[ $1 == *.fp16.onnx || $1 == *.bf16.onnx ]]; }

# optimize SIDE BIN MODEL SCHEDULER PRECISION: writes $work/SIDE/NAME/SCHED.PREC.json
optimize() {
    local side=$1 bin=$2 model=$3 sched=$4 prec=$5
    local out=$work/$side/$(basename "$model" .onnx)/$sched.$prec.json
    mkdir -p "$(dirname "$out")"
    local args=("$model" --quiet --batch 1 --cost simulated --device-profile h100 --scheduler "$sched" -o "$out")
    [[ $prec == default ]] || args+=(--precision "$prec")
    searching "$sched" && args+=(--threads 1 --time-limit 0)
    local rc=0
    timeout "$timeout_s" "$bin/ios-optimize" "${args[@]}" 2>"$out.err" || rc=$?
    echo "$rc" >"$out.rc"
}

# The schedule without the fields that name when it was written.
normalized() {
    python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
d.pop("created", None)
d.pop("version", None)
print(json.dumps(d, sort_keys=True, indent=1))' "$1"
}

runs=0
failed=0
started=$SECONDS
for model in "${models[@]}"; do
    name=$(basename "$model" .onnx)
    for prec in "${precisions[@]}"; do
        if typed "$model" && [[ $prec != default ]]; then continue; fi
        for sched in "${schedulers[@]}"; do
            optimize base "$base" "$model" "$sched" "$prec"
            optimize new "$new" "$model" "$sched" "$prec"
            a=$work/base/$name/$sched.$prec.json
            b=$work/new/$name/$sched.$prec.json
            runs=$((runs + 1))
            if [[ $(cat "$a.rc") != "$(cat "$b.rc")" ]]; then
                echo "DIFFERS $name $sched $prec: exit $(cat "$a.rc") before, $(cat "$b.rc") after" >&2
                failed=$((failed + 1))
            elif [[ $(cat "$a.rc") != 0 ]]; then
                # Both refused (or timed out): the messages must agree.
                if [[ $(cat "$a.rc") == 124 ]]; then
                    echo "TIMEOUT $name $sched $prec (both sides, $timeout_s s)" >&2
                    failed=$((failed + 1))
                elif ! cmp -s "$a.err" "$b.err"; then
                    echo "DIFFERS $name $sched $prec: both exit $(cat "$a.rc"), messages differ" >&2
                    failed=$((failed + 1))
                fi
            elif ! diff -q <(normalized "$a") <(normalized "$b") >/dev/null; then
                echo "DIFFERS $name $sched $prec: schedule files" >&2
                diff <(normalized "$a") <(normalized "$b") | head -20 >&2 || true
                failed=$((failed + 1))
            fi
        done
        echo "$name $prec: ${#schedulers[@]} schedulers compared ($((SECONDS - started)) s)" >&2
    done
done

# CPU outputs of the ios and lios schedules.
outputs=0
for model in "${cpu_models[@]}"; do
    name=$(basename "$model" .onnx)
    for prec in "${precisions[@]}"; do
        if typed "$model" && [[ $prec != default ]]; then continue; fi
        for sched in ios lios; do
            for side in base new; do
                bin=$base
                [[ $side == new ]] && bin=$new
                sch=$work/$side/$name/$sched.$prec.json
                [[ -f $sch ]] || optimize "$side" "$bin" "$model" "$sched" "$prec"
                dir=$work/$side/$name/$sched.$prec.out
                rm -rf "$dir"
                mkdir -p "$dir"
                "$bin/ios-run" "$model" "$sch" --quiet --backend cpu --threads 2 --iterations 1 --warmup 0 \
                    --seed 0 --output-dir "$dir" >/dev/null 2>"$dir.err" || echo "ios-run failed: $side $name $sched $prec" >"$dir/FAILED"
            done
            a=$work/base/$name/$sched.$prec.out
            b=$work/new/$name/$sched.$prec.out
            shopt -s nullglob
            files=("$a"/*.npy)
            shopt -u nullglob
            if [[ ${#files[@]} -eq 0 || -e $a/FAILED || -e $b/FAILED ]]; then
                echo "MISSING $name $sched $prec: no outputs ($a, $b)" >&2
                failed=$((failed + 1))
                continue
            fi
            for f in "${files[@]}"; do
                outputs=$((outputs + 1))
                cmp -s "$f" "$b/$(basename "$f")" ||
                    { echo "DIFFERS $name $sched $prec: output $(basename "$f")" >&2; failed=$((failed + 1)); }
            done
            [[ $(ls "$b" | grep -c '\.npy$') -eq ${#files[@]} ]] ||
                { echo "DIFFERS $name $sched $prec: another number of outputs" >&2; failed=$((failed + 1)); }
        done
    done
done
echo "compared ${#models[@]} models x ${#schedulers[@]} schedulers x ${#precisions[@]} precisions:" \
     "$runs schedule pairs, $outputs CPU output files, $failed differing, $((SECONDS - started)) s"
[[ $failed -eq 0 ]]
