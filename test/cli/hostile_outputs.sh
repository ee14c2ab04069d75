# Hostile outputs: no run of either program loses a file it did not create in
# that run, or one of its own outputs to another; bad output paths fail before
# any work; Graphviz is bounded and never costs the schedule; names that are
# hostile to files (onnx_models/make_hostile_output_models.py) are written
# safely. Each refusal is exit 2 with one line, within 10 s and 2 GiB.
source "$(dirname "$0")/common.bash"
PY=/usr/bin/python3
$PY "$IOS_SOURCE_DIR/onnx_models/make_hostile_output_models.py" "$WORK" || { echo "FAIL: model generation"; exit 1; }
cp "$BAD/tiny_conv.onnx" "$WORK/m.onnx"
model="$WORK/m.onnx"
cd "$WORK"

opt() { limited "$OPT" "$model" --cost simulated --scheduler greedy "$@"; }
run() { limited "$RUN" "$model" "$WORK/s.json" --backend sim "$@"; }
sum() { sha256sum "$1" | cut -c1-64; }
check() {  # check NAME CONDITION...
  local name=$1; shift
  if "$@"; then ok; else fail "$name"; fi
}
is_kind() {  # is_kind FORMAT FILE: a JSON file whose "format" (or otherData.format) is FORMAT
  $PY - "$1" "$2" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[2]))
sys.exit(sys.argv[1] not in (d.get("format"), d.get("otherData", {}).get("format")))
PYEOF
}
expect_ok "a schedule to start from" -- opt -o s.json --quiet
schedule_sum=$(sum s.json)

# 1. Two outputs of one run naming one file: refused before any work, and
#    the file that was there is untouched.
expect_error "-o X --html X" 2 "-o and --html both name s\.json" -- opt -o s.json --html s.json
expect_error "-o X --dot X" 2 "-o and --dot both name s\.json" -- opt -o s.json --dot s.json
expect_error "--report-json X --dot X" 2 "--report-json and --dot both name r\.json" -- opt -o t.json --report-json r.json --dot r.json
expect_error "-o X --html ./X (another spelling)" 2 "both name" -- opt -o s.json --html ./sub/../s.json
ln -s s.json s-link.json
expect_error "-o X --dot LINK-TO-X" 2 "both name" -- opt -o s.json --dot s-link.json
check "the schedule survived every refusal" [ "$(sum s.json)" = "$schedule_sum" ]
check "no schedule of a refused run exists" [ ! -e t.json ]
check "no report of a refused run exists" [ ! -e r.json ]
expect_error "ios-run --trace X --export-times X" 2 "--export-times and --trace both name t\.json" -- run --trace t.json --export-times t.json
expect_error "ios-run --trace X --dot X" 2 "--trace and --dot both name t\.json" -- run --trace t.json --dot t.json
expect_error "ios-run --dot the schedule" 2 "--dot .*s\.json is the schedule file" -- run --dot s.json
check "the schedule survived ios-run's refusals" [ "$(sum s.json)" = "$schedule_sum" ]
# Every pair of outputs of each program, on a file that exists (a schedule)
# and must survive.
optimize_outputs=(-o --report-json --dot --html)
for ((i = 0; i < ${#optimize_outputs[@]}; i++)); do
  for ((j = i + 1; j < ${#optimize_outputs[@]}; j++)); do
    a=${optimize_outputs[i]} b=${optimize_outputs[j]}
    other=(); [ "$a" != -o ] && other=(-o w.json)
    expect_error "ios-optimize $a X $b X" 2 "$a and $b both name pair\.out" -- opt "${other[@]}" "$a" pair.out "$b" pair.out
  done
done
run_outputs=(--export-times --trace --dot)
for ((i = 0; i < ${#run_outputs[@]}; i++)); do
  for ((j = i + 1; j < ${#run_outputs[@]}; j++)); do
    a=${run_outputs[i]} b=${run_outputs[j]}
    expect_error "ios-run $a X $b X" 2 "$a and $b both name pair\.out" -- run "$a" pair.out "$b" pair.out
  done
done
check "no refused pair wrote anything" [ ! -e pair.out ]
check "no refused pair wrote a schedule" [ ! -e w.json ]
# An output tensor's file against another output of the same run.
mkdir -p outs
expect_error "--output-dir file and --export-times" 2 "--export-times and --output-dir both name outs/output\.npy" -- limited "$RUN" "$model" --backend cpu --iterations 1 --output-dir outs --export-times outs/output.npy
# Inputs other than the model and the schedules.
cp "$IOS_SOURCE_DIR/device_profiles/h100.json" profile.json
profile_sum=$(sum profile.json)
expect_error "-o the device profile" 2 "-o profile\.json is the device profile" -- opt --device-profile profile.json -o profile.json
expect_error "ios-run --trace the device profile" 2 "--trace profile\.json is the device profile" -- run --device-profile profile.json --trace profile.json
check "the device profile is intact" [ "$(sum profile.json)" = "$profile_sum" ]
$PY -c 'import numpy; numpy.save("x.npy", numpy.zeros((1, 3, 8, 8), numpy.float32))'
x_sum=$(sum x.npy)
expect_error "--output-dir over the --input file" 2 "is the --input file" -- limited "$RUN" "$model" --backend cpu --iterations 1 --input x.npy --export-times x.npy
check "the input tensor is intact" [ "$(sum x.npy)" = "$x_sum" ]

# 2. An existing file that ios did not write is replaced only with --force;
#    ios's own outputs are replaced run after run.
echo "my notes" >notes.txt
for option in --dot --html; do
  expect_error "$option an existing text file" 2 "$option notes\.txt: the file exists and is not .*--force" -- opt -o s.json "$option" notes.txt
done
expect_error "ios-run --trace an existing text file" 2 "--trace notes\.txt: the file exists and is not an ios trace" -- run --trace notes.txt
expect_error "ios-run --export-times an existing text file" 2 "--export-times notes\.txt: the file exists" -- run --export-times notes.txt
expect_error "ios-run --dot an existing text file" 2 "--dot notes\.txt: the file exists" -- run --dot notes.txt
expect_error "--calibrate -o an existing text file" 2 "-o notes\.txt: the file exists and is not a device profile" -- limited "$OPT" "$model" --calibrate db.sqlite -o notes.txt
expect_error "--calibrate -o the database" 2 "-o db\.sqlite is the profile database" -- limited "$OPT" "$model" --calibrate db.sqlite -o db.sqlite
check "the text file is untouched" [ "$(cat notes.txt)" = "my notes" ]
for round in 1 2; do
  expect_ok "every ios-optimize output, round $round" -- opt -o s.json --report-json r.json --dot p.dot --html p.html --quiet
  expect_ok "an SVG picture, round $round" -- opt -o s.json --dot p.svg --quiet
  expect_ok "every ios-run output, round $round" -- run --trace t.json --export-times e.json --dot q.dot --quiet
done
check "the trace is marked as ios's" is_kind ios-trace t.json
check "the timings are marked as ios's" is_kind ios-times e.json
check "the DOT picture is marked as ios's" grep -q "^// ios schedule picture" p.dot
check "the SVG picture is marked as ios's" grep -q "<!-- ios schedule picture -->" p.svg
check "the page is marked as ios's" grep -q '<meta name="generator" content="ios">' p.html
expect_ok "--force replaces a file of another kind" -- opt -o s.json --dot notes.txt --force --quiet
check "the forced output is a picture" grep -q "digraph schedule" notes.txt

# 3. Bad output paths are found before the search, and nothing is created.
mkdir folder.dot
ln -s missing.svg dangling.svg
for bad in folder.dot dangling.svg new/dir/; do
  expect_error "--dot $bad" 2 "--dot.* (folder|missing file|names a folder)" -- opt -o u.json --dot "$bad"
done
check "no schedule was written by the refused runs" [ ! -e u.json ]
check "the refused folder path created nothing" [ ! -e new ]
echo "a file" >plain
expect_error "-o under a file" 2 "'.*plain' is a file, not a folder" -- opt -o plain/s.json
expect_ok "--dot in a new folder is created at write time" -- opt -o u.json --dot pictures/new/u.dot --quiet
check "the new folder holds the picture" [ -s pictures/new/u.dot ]
# A FIFO nobody reads fails the picture, after the schedule is written.
rm -f u.json
mkfifo picture.fifo
expect_error "--dot a FIFO without a reader" 2 "picture\.fifo.*no process is reading.*schedule was written to u\.json" -- opt -o u.json --dot picture.fifo --quiet
check "the schedule was written before the picture failed" is_kind ios-schedule u.json

# 4. Graphviz is bounded: a model too large to lay out is refused before the
#    search; a dot that hangs or fails costs the picture, never the schedule.
$PY "$IOS_SOURCE_DIR/onnx_models/make_large_models.py" "$WORK" conv:4500 >/dev/null
expect_error "--dot x.svg of 4,500 units" 2 "--dot x\.svg: the model has 4500 units, more than the 4000" -- limited "$OPT" conv_chain_4500.onnx --cost simulated --scheduler sequential -o big.json --dot x.svg
check "the over-large SVG was refused before any work" [ ! -e big.json ]
mkdir fake-bin
printf '#!/bin/sh\nsleep 30\n' >fake-bin/dot
printf '#!/bin/sh\necho "Error: syntax error in line 3" >&2\nexit 1\n' >fake-bin/dot-fails
chmod +x fake-bin/dot fake-bin/dot-fails
rm -f u.json
start=$(date +%s)
expect_error "dot that hangs" 2 "u\.svg: Graphviz's dot did not finish within 1 s.*schedule was written to u\.json" -- env PATH="$WORK/fake-bin:$PATH" IOS_DOT_TIME_LIMIT_S=1 "$OPT" "$model" --cost simulated -o u.json --dot u.svg --quiet
check "dot was stopped at its time limit" [ $(( $(date +%s) - start )) -lt 10 ]
check "the schedule was written before dot hung" is_kind ios-schedule u.json
check "the hung picture left no file" [ ! -e u.svg ]
mv fake-bin/dot-fails fake-bin/dot
expect_error "dot that fails" 2 "u\.svg: Graphviz's dot failed \(exit 1: Error: syntax error in line 3" -- env PATH="$WORK/fake-bin:$PATH" "$OPT" "$model" --cost simulated -o u.json --dot u.svg --quiet
expect_ok "--html when dot fails: the page, without its picture" -- env PATH="$WORK/fake-bin:$PATH" "$OPT" "$model" --cost simulated -o u.json --html u.html --quiet
check "the page says why it has no picture" grep -q "No picture: .*dot failed" u.html

# 5. Names hostile to pictures and files.
for m in nul_name long_name; do
  expect_ok "$m: schedule and SVG" -- limited "$OPT" "$m.onnx" --cost simulated -o "$m.json" --dot "$m.svg" --html "$m.html" --quiet
  check "$m: the SVG was drawn" grep -q "</svg>" "$m.svg"
done
check "a NUL is shown, not embedded" grep -q 'a\\x00b\\x01\\x1b\[31m' nul_name.svg
check "a long name is shortened" grep -q "t\{200\}\.\.\. (20000 bytes)" long_name.svg
expect_ok "outputs whose names map to one file name" -- limited "$RUN" colliding_outputs.onnx --backend cpu --iterations 1 --warmup 0 --output-dir out
check "three outputs, three files" [ "$(ls out | sort | tr '\n' ' ')" = "y_0-2.npy y_0-3.npy y_0.npy " ]
check "the renamed outputs are named on stderr" grep -q "output 'y:0' written to out/y_0-3.npy" stderr
cp out/y_0.npy first.npy
expect_ok "an output folder of an earlier run is replaced" -- limited "$RUN" colliding_outputs.onnx --backend cpu --iterations 1 --warmup 0 --output-dir out
check "the replaced output is the same tensor" cmp -s out/y_0.npy first.npy
echo "not an array" >out/y_0-2.npy
expect_error "--output-dir over a file ios did not write" 2 "--output-dir out/y_0-2\.npy: the file exists and is not a \.npy file" -- limited "$RUN" colliding_outputs.onnx --backend cpu --iterations 1 --output-dir out
expect_error "--output-dir a file" 2 "--output-dir plain: is a file, not a folder" -- limited "$RUN" colliding_outputs.onnx --backend cpu --iterations 1 --output-dir plain

# 6. Messages: empty paths are errors, not silently ignored.
expect_error "-o ''" 2 "^ios-optimize: error: --output needs a file name or -" -- opt -o ""
expect_error "--dot ''" 2 "^ios-optimize: error: --dot needs a file name" -- opt --dot ""
expect_error "ios-run --trace ''" 2 "^ios-run: error: --trace needs a file name" -- run --trace ""
expect_error "ios-run --output-dir ''" 2 "^ios-run: error: --output-dir needs a folder name" -- limited "$RUN" "$model" --backend cpu --output-dir ""
# A full disk names the file asked for, never a temporary one, and leaves no
# debris (needs a small tmpfs: root, and a mount the sandbox allows).
mkdir full
if mount -t tmpfs -o size=16k tmpfs full 2>/dev/null; then
  dd if=/dev/zero of=full/fill bs=4k count=8 2>/dev/null || true
  expect_error "a full disk" 2 "^ios-optimize: error: cannot write full/s\.json: No space left on device$" -- opt -o full/s.json --quiet
  check "a full disk leaves no temporary file" [ -z "$(ls full | grep -v '^fill$')" ]
  umount full
else
  echo "not run: a full disk (cannot mount a tmpfs here)"
fi

# 7. Many schedules: labels are told apart in linear time.
many=()
for _ in $(seq 1 20000); do many+=(s.json); done
start=$(date +%s)
rc=0; timeout -s KILL 60 "$RUN" "$model" "${many[@]}" --dry-run >many.out 2>&1 || rc=$?
check "20,000 schedule arguments: exit 0 (got $rc)" [ "$rc" = 0 ]
seconds=$(( $(date +%s) - start ))
echo "20,000 schedules validated in $seconds s"
check "20,000 schedule arguments within 30 s (took $seconds s)" [ "$seconds" -lt 30 ]
check "the repeated file is labelled #20000" grep -q "s.json #20000" many.out
finish
