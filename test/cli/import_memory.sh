# The importer holds a model's weights once: the file is parsed from the disk
# (never its bytes and the parsed model together) and each weight leaves the
# protobuf once the IR holds it. ios-optimize's peak memory on a model of 96
# MiB of weights stays within 1.25x the file plus 48 MiB (the process and the
# ONNX library); holding the weights three times, as reading the file into
# memory first did, is 3x.
source "$(dirname "$0")/common.bash"
PY=/usr/bin/python3
$PY "$IOS_SOURCE_DIR/onnx_models/make_large_models.py" "$WORK" heavy:24 >/dev/null ||
  { echo "FAIL: model generation"; exit 1; }
model="$WORK/heavy_chain_24.onnx"
size_kb=$(( $(stat -c %s "$model") / 1024 ))

# peak_kb COMMAND...: the command's maximum resident set (KiB); it must exit 0.
peak_kb() {
  $PY -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True, close_fds=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$@"
}
limit_kb=$(( size_kb * 5 / 4 + 48 * 1024 ))
for scheduler in greedy ios; do
  peak=$(peak_kb "$OPT" "$model" --scheduler "$scheduler" --cost simulated -o "$WORK/$scheduler.json") ||
    { fail "$scheduler: ios-optimize failed"; continue; }
  if [ "$peak" -le "$limit_kb" ]; then ok; else
    fail "$scheduler: peak $((peak / 1024)) MiB for a $((size_kb / 1024)) MiB model (limit $((limit_kb / 1024)) MiB)"
  fi
done
# The same model through a pipe is read into memory first (it can be read
# only once): it still imports, within the old bound of three copies.
peak=$(peak_kb "$OPT" <(cat "$model") --scheduler greedy --cost simulated -o "$WORK/pipe.json") ||
  fail "a model through a pipe did not import"
[ "${peak:-0}" -le $(( size_kb * 3 + 64 * 1024 )) ] && ok || fail "pipe: peak $((peak / 1024)) MiB"
cmp -s <(grep -v '"created"' "$WORK/greedy.json" | grep -v '"path"') \
       <(grep -v '"created"' "$WORK/pipe.json" | grep -v '"path"') && ok ||
  fail "the schedule from a pipe differs from the file's"
finish
