# Outputs never destroy anything: the model, an existing file of another
# kind, a device, a FIFO or a symbolic link; "-" is standard output; stale
# temporary files of killed runs are cleaned up.
source "$(dirname "$0")/common.bash"
PY=/usr/bin/python3
cp "$BAD/tiny_conv.onnx" "$WORK/m.onnx"
model="$WORK/m.onnx"
sum() { sha256sum "$1" | cut -c1-64; }
model_sum=$(sum "$model")
opt() { "$OPT" "$model" --cost simulated --scheduler greedy "$@"; }
is_schedule() { $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d.get("format") != "ios-schedule")' "$1"; }
check() {  # check NAME CONDITION...
  local name=$1; shift
  if "$@"; then ok; else fail "$name"; fi
}

# The model is never replaced; files of another kind only with --force.
expect_error "-o the model" 2 "-o .*m\.onnx is the input model; writing it would destroy it" -- opt -o "$model"
expect_error "-o the model, even with --force" 2 "-o .*m\.onnx is the input model" -- opt -o "$model" --force
expect_error "--report-json the model" 2 "--report-json .*m\.onnx is the input model" -- opt --report-json "$model"
ln "$model" "$WORK/hardlink.onnx"
expect_error "-o a hard link to the model" 2 "is the input model" -- opt -o "$WORK/hardlink.onnx"
check "the model is intact" [ "$(sum "$model")" = "$model_sum" ]
echo "notes" >"$WORK/notes.txt"
expect_error "-o an existing non-schedule" 2 "notes\.txt: the file exists and is not an ios schedule.*--force" -- opt -o "$WORK/notes.txt"
check "the existing file is intact" [ "$(cat "$WORK/notes.txt")" = notes ]
expect_ok "-o a new file" -- opt -o "$WORK/s.json"
expect_ok "-o an existing schedule" -- opt -o "$WORK/s.json"
expect_error "--report-json an existing schedule" 2 "s\.json: the file exists and is not an ios-optimize report" -- opt -o "$WORK/t.json" --report-json "$WORK/s.json"
expect_ok "--report-json a new file" -- opt -o "$WORK/t.json" --report-json "$WORK/r.json"
expect_ok "--report-json an existing report" -- opt -o "$WORK/t.json" --report-json "$WORK/r.json"
expect_error "-o and --report-json the same file" 2 "both name" -- opt -o "$WORK/t.json" --report-json "$WORK/t.json"
cp "$model" "$WORK/victim.onnx"
expect_ok "--force overwrites a file of another kind" -- opt -o "$WORK/victim.onnx" --force
check "forced output is a schedule" is_schedule "$WORK/victim.onnx"
expect_error "-o empty string" 2 "needs a file name or -" -- opt -o ""
expect_error "--report-json empty string" 2 "needs a file name or -" -- opt --report-json ""

# Standard output.
rc=0; opt -o - >"$WORK/stdout.json" 2>"$WORK/stderr" || rc=$?
check "-o - exits 0" [ "$rc" = 0 ]
check "-o - writes the schedule to stdout" is_schedule "$WORK/stdout.json"
check "-o - puts the summary on stderr" grep -q "ios-optimize summary" "$WORK/stderr"
rc=0; opt -o "$WORK/u.json" --report-json - >"$WORK/report.json" 2>/dev/null || rc=$?
check "--report-json - writes the report to stdout" $PY -c 'import json,sys; assert json.load(open(sys.argv[1]))["format"] == "ios-optimize-report"' "$WORK/report.json"
rc=0; opt -o /dev/stdout >"$WORK/devstdout.json" 2>/dev/null || rc=$?
check "-o /dev/stdout writes to stdout" is_schedule "$WORK/devstdout.json"
expect_error "-o - and --report-json - together" 2 "both name" -- opt -o - --report-json -
# Every line of text goes to one stream: stderr as soon as any file goes to
# stdout, so stdout holds that file and nothing else.
rc=0; opt -o "$WORK/v.json" --dot - >"$WORK/stdout.dot" 2>"$WORK/stderr" || rc=$?
check "--dot - writes only the picture to stdout" [ "$(head -1 "$WORK/stdout.dot")" = "// ios schedule picture" ]
check "--dot - ends with the picture" [ "$(tail -1 "$WORK/stdout.dot")" = "}" ]
check "--dot - puts the summary on stderr" grep -q "ios-optimize summary" "$WORK/stderr"
# (--cost measured -o -, which needs a GPU: measured_output.sh.)

# Devices are written in place, never replaced.
# (--quiet: the error comes after the work, whose log line would precede it.)
expect_error "-o /dev/full" 2 "/dev/full.*No space left on device" -- opt -o /dev/full --quiet
check "/dev/full is still a device" [ -c /dev/full ]
expect_ok "-o /dev/null" -- opt -o /dev/null
check "/dev/null is still a device" [ -c /dev/null ]

# FIFOs: written when read, refused (not waited on) when nobody reads.
mkfifo "$WORK/fifo"
cat "$WORK/fifo" >"$WORK/from_fifo.json" &
reader=$!
for _ in 1 2 3 4 5 6 7 8 9 10; do [ -e /proc/$reader ] && break; sleep 0.1; done
sleep 0.5
expect_ok "-o a FIFO with a reader" -- opt -o "$WORK/fifo"
wait "$reader"
check "the FIFO reader got the schedule" is_schedule "$WORK/from_fifo.json"
check "the FIFO is still a FIFO" [ -p "$WORK/fifo" ]
expect_error "-o a FIFO without a reader" 2 "fifo.*no process is reading" -- timeout -s KILL 10 "$OPT" "$model" --cost simulated -o "$WORK/fifo" --quiet

# Symbolic links are followed, not replaced.
echo '{"format": "ios-schedule"}' >"$WORK/target.json"
ln -s target.json "$WORK/link.json"
expect_ok "-o a symbolic link" -- opt -o "$WORK/link.json"
check "the link is still a link" [ -L "$WORK/link.json" ]
check "the link's target was written" grep -q '"stages"' "$WORK/target.json"
ln -s missing.json "$WORK/dangling.json"
expect_error "-o a dangling symbolic link" 2 "dangling\.json.*symbolic link to a missing file" -- opt -o "$WORK/dangling.json"
mkdir "$WORK/folder.json"
expect_error "-o a folder" 2 "folder\.json.*is a folder" -- opt -o "$WORK/folder.json"

# Stale temporary files: ours of dead processes go, everything else stays.
dead=4194000
while kill -0 "$dead" 2>/dev/null; do dead=$((dead - 1)); done
touch "$WORK/s.json.tmp-$dead-0" "$WORK/s.json.tmp-$$-0" "$WORK/s.json.tmp-notes"
expect_ok "write beside stale temporary files" -- opt -o "$WORK/s.json"
check "a dead run's temporary file is removed" [ ! -e "$WORK/s.json.tmp-$dead-0" ]
check "a live process's temporary file stays" [ -e "$WORK/s.json.tmp-$$-0" ]
check "a file of another naming stays" [ -e "$WORK/s.json.tmp-notes" ]
check "no temporary file of this run is left" [ -z "$(find "$WORK" -name 's.json.tmp-*' ! -name "s.json.tmp-$$-0" ! -name s.json.tmp-notes)" ]

# ios-run never writes over its inputs.
expect_error "ios-run --export-times the model" 2 "--export-times .*m\.onnx is the input model" -- "$RUN" "$model" "$WORK/s.json" --backend cpu --iterations 1 --export-times "$model"
check "the model is still intact" [ "$(sum "$model")" = "$model_sum" ]
finish
