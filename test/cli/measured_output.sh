# With --cost measured the summary has a Measurement line too (it once went
# to stdout behind the schedule): -o - keeps stdout for the schedule alone.
# Measuring needs a GPU: without one this test exits 77, which ctest reports
# as skipped (SKIP_RETURN_CODE), never as passed.
source "$(dirname "$0")/common.bash"
PY=/usr/bin/python3
if ! { command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q "^GPU"; }; then
  echo "skipped: --cost measured -o - needs a GPU (nvidia-smi lists none)"
  exit 77
fi
cp "$BAD/tiny_conv.onnx" "$WORK/m.onnx"
model="$WORK/m.onnx"
is_schedule() { $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d.get("format") != "ios-schedule")' "$1"; }
check() {  # check NAME CONDITION...
  local name=$1; shift
  if "$@"; then ok; else fail "$name"; fi
}

rc=0; "$OPT" "$model" --cost measured --profile-db "$WORK/p.sqlite" -o - >"$WORK/measured.json" 2>"$WORK/stderr" || rc=$?
check "--cost measured -o - exits 0 (stderr: $(head -c 300 "$WORK/stderr"))" [ "$rc" = 0 ]
check "--cost measured -o - writes only the schedule to stdout" is_schedule "$WORK/measured.json"
check "--cost measured -o - puts the Measurement line on stderr" grep -q "^Measurement" "$WORK/stderr"
finish
