# Hostile device profiles (--device-profile) and profile databases
# (--calibrate): each gets exit 2 and one line naming the file and the field
# or row (exit 0 where the input is legitimate) within 10 s and, outside
# sanitizer builds, 2 GiB of address space. --calibrate never changes its
# input database. The inputs are generated here, into $WORK.
source "$(dirname "$0")/common.bash"
PY=/usr/bin/python3
M="$BAD/tiny_conv.onnx"
[ -f "$M" ] || { echo "FAIL: $M missing: run scripts/make-models.sh"; exit 1; }


# profile NAME PYTHON: writes $WORK/NAME.json, the h100 profile changed by
# the Python statements PYTHON (on the dict p).
profile() {
  $PY - "${IOS_SOURCE_DIR:?set by ctest}/device_profiles/h100.json" "$WORK/$1.json" "$2" <<'PYEOF'
import json, sys
p = json.load(open(sys.argv[1]))
exec(sys.argv[3])
open(sys.argv[2], "w").write(p if isinstance(p, str) else json.dumps(p))
PYEOF
}
# both NAME CODE PATTERN: ios-optimize and ios-run --backend sim with the
# profile $WORK/NAME.json end with CODE and (for 2) one line matching PATTERN.
both() {
  local name=$1 code=$2 pattern=${3:-}
  if [ "$code" = 0 ]; then
    expect_ok "$name (ios-optimize)" -- limited "$OPT" "$M" --cost simulated --device-profile "$WORK/$name.json" -o "$WORK/$name.schedule.json" --quiet
    expect_ok "$name (ios-run)" -- limited "$RUN" "$M" "$WORK/tiny.json" --backend sim --device-profile "$WORK/$name.json" --iterations 1 --warmup 0 --quiet
  else
    expect_error "$name (ios-optimize)" "$code" "$name\.json.*$pattern" -- limited "$OPT" "$M" --cost simulated --device-profile "$WORK/$name.json" -o "$WORK/$name.schedule.json"
    expect_error "$name (ios-run)" "$code" "$name\.json.*$pattern" -- limited "$RUN" "$M" "$WORK/tiny.json" --backend sim --device-profile "$WORK/$name.json"
  fi
}
# short NAME: the last error message is at most 700 bytes (the longest
# legitimate one lists the 26 known fields, about 630 bytes).
short() {
  local size; size=$(wc -c <"$WORK/stderr")
  if [ "$size" -le 700 ]; then ok; else fail "$1: the message is $size bytes"; fi
}
expect_ok "tiny schedule" -- "$OPT" "$M" --cost simulated -o "$WORK/tiny.json" --quiet

# 1. A mistyped field nested 100,000 levels deep crashed while its message
# was built; at 20,000 levels the message was 40 KB.
profile deep100000 'p = json.dumps(p).replace("\"sm_count\": 132", "\"sm_count\": " + "[" * 100000 + "]" * 100000)'
both deep100000 2 "nested deeper than 32 levels"
profile deep20000 'p = json.dumps(p).replace("\"sm_count\": 132", "\"sm_count\": " + "[" * 20000 + "]" * 20000)'
both deep20000 2 "nested deeper than 32 levels"
short "20,000 levels"
profile deep_object '
d = 1
for i in range(40): d = {"k": d}
p["description"] = d'
both deep_object 2 "nested deeper than 32 levels"
# Within the depth limit: named by its JSON type, not dumped.
profile nested30 'p["sm_count"] = json.loads("[" * 30 + "]" * 30)'
both nested30 2 "'sm_count' must be an integer, got an array"
profile long_string 'p["peak_fp32_tflops"] = "\n" + "x" * 500000'
both long_string 2 "'peak_fp32_tflops' must be a number, got the string '\\\\x0axxx.*\\.\\.\\.'"
short "a long string value"
profile long_key 'p["k" * 500000] = 1'
both long_key 2 "unknown field 'kkkk.*\\.\\.\\."
short "a long unknown field"
profile not_json_long 'p = "{\"name\": \"" + "y" * 500000'
both not_json_long 2 "not valid JSON"
short "an unterminated long string"

# 2. Positive but tiny (denormal) efficiencies and peaks made the simulator
# report a deadlock (exit 1); every knob has a documented range now.
profile compute_efficiency_denormal 'p["compute_efficiency"] = 1e-310'
both compute_efficiency_denormal 2 "'compute_efficiency' = 1e-310 is out of range \[0.01, 1\]"
profile bandwidth_denormal 'p["mem_bandwidth_gbs"] = 5e-324'
both bandwidth_denormal 2 "'mem_bandwidth_gbs' = 5e-324 is out of range"
profile peak_tiny 'p["peak_fp32_tflops"] = 1e-300'
both peak_tiny 2 "'peak_fp32_tflops' = 1e-300 is out of range"
profile tf32_tiny 'p["peak_tf32_tflops"] = 1e-300'
both tf32_tiny 2 "'peak_tf32_tflops' = 1e-300 is out of range 0 or"
profile fp16_tiny 'p["peak_fp16_tflops"] = 1e-300'
both fp16_tiny 2 "'peak_fp16_tflops' = 1e-300 is out of range 0 or"
profile fp16_huge 'p["peak_fp16_tflops"] = 1e300'
both fp16_huge 2 "'peak_fp16_tflops' = 1e\+300 is out of range 0 or \[0.01, 100000\]"
profile bf16_negative 'p["peak_bf16_tflops"] = -5'
both bf16_negative 2 "'peak_bf16_tflops' is negative"
profile memory_efficiency_tiny 'p["memory_efficiency"] = 1e-300'
both memory_efficiency_tiny 2 "'memory_efficiency' = 1e-300 is out of range"
profile launch_huge 'p["launch_overhead_us"] = 1e300'
both launch_huge 2 "'launch_overhead_us' = 1e\+300 is out of range \[0, 1000\]"
profile sm_count_huge 'p["sm_count"] = 18446744073709551615'
both sm_count_huge 2 "'sm_count' = 18446744073709551615 is out of range"
profile blocks_huge 'p["blocks_per_sm"] = 1000000'
both blocks_huge 2 "'blocks_per_sm' = 1000000 is out of range \[1, 64\]"
profile name_newline 'p["name"] = "evil\nname"'
both name_newline 2 "'name' contains control characters \('evil\\\\x0aname'\)"
profile tiles_inverted 'p["outputs_per_block"] = 4096; p["max_outputs_per_block"] = 1024'
both tiles_inverted 2 "'max_outputs_per_block' \(1024\) must be at least 'outputs_per_block' \(4096\)"
# The corners of the ranges are legitimate and simulate to a finite, positive
# latency, on a small model and on one with concurrent branches.
corners='lo = dict(sm_count=1, peak_fp32_tflops=0.01, peak_tf32_tflops=0.01, mem_bandwidth_gbs=1,
          peak_fp16_tflops=0.01, peak_bf16_tflops=0.01,
          launch_overhead_us=0, event_sync_overhead_us=0, host_launch_us=0, host_sync_us=0,
          max_concurrent_kernels=1, compute_efficiency=0.01, tensor_core_efficiency=0.01,
          memory_efficiency=0.01, blocks_per_sm=1, outputs_per_block=1, max_outputs_per_block=1,
          split_k_length=1, concurrency_interference=0)
hi = dict(sm_count=10000, peak_fp32_tflops=10000, peak_tf32_tflops=100000,
          peak_fp16_tflops=100000, peak_bf16_tflops=100000,
          mem_bandwidth_gbs=100000, launch_overhead_us=1000, event_sync_overhead_us=1000,
          host_launch_us=1000, host_sync_us=1000, max_concurrent_kernels=4096, compute_efficiency=1,
          tensor_core_efficiency=1, memory_efficiency=1, blocks_per_sm=64,
          outputs_per_block=1048576, max_outputs_per_block=1048576, split_k_length=1048576,
          concurrency_interference=10)'
profile corner_low "$corners
p.update(lo)"
profile corner_high "$corners
p.update(hi)"
profile corner_mixed "$corners
p.update(hi); p.update({k: lo[k] for k in ('compute_efficiency', 'memory_efficiency', 'launch_overhead_us', 'event_sync_overhead_us', 'host_launch_us', 'host_sync_us')})"
for corner in corner_low corner_high corner_mixed; do
  both "$corner" 0
  for model in tiny_conv inception_like; do
    for precision in fp32 tf32; do
      out="$WORK/$corner.$model.$precision.json"
      # FP32 plans as the IOS paper's engine runs (host synchronizations), TF32 with a CUDA graph.
      launch=graph; [ "$precision" = fp32 ] && launch=synced
      expect_ok "$corner on $model ($precision)" -- limited "$OPT" "$BAD/$model.onnx" --cost simulated --device-profile "$WORK/$corner.json" --precision "$precision" --launch "$launch" -o "$out" --quiet
      $PY -c "
import json, math, sys
ms = json.load(open(sys.argv[1]))['predicted_latency_ms']
sys.exit(0 if math.isfinite(ms) and ms > 0 else 1)" "$out" && ok || fail "$corner on $model ($precision): predicted latency not finite and positive"
      expect_ok "$corner on $model ($precision), ios-run" -- limited "$RUN" "$BAD/$model.onnx" "$out" --backend sim --device-profile "$WORK/$corner.json" --launch "$launch" --iterations 1 --warmup 0 --quiet
    done
  done
done
# The shipped profiles are inside the ranges.
for shipped in a100 h100 h200 v100 k80; do
  expect_ok "shipped profile $shipped" -- limited "$OPT" "$M" --cost simulated --device-profile "$shipped" -o "$WORK/$shipped.json" --quiet
done

# 3. --calibrate reads its database read-only: afterwards the file is
# byte-identical, nothing was created beside it, and its journal mode is as
# it was. db NAME [wal|delete] PYTHON: $WORK/db/NAME.sqlite with the ios
# schema (as ProfileDb creates it) and the rows PYTHON inserts through c.
mkdir -p "$WORK/db"
db() {
  $PY - "$WORK/db/$1.sqlite" "$2" "$3" <<'PYEOF'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("PRAGMA journal_mode = " + sys.argv[2])
c.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
c.execute("CREATE TABLE stage_latency ( device TEXT NOT NULL, driver TEXT NOT NULL,"
          " cudnn TEXT NOT NULL, precision TEXT NOT NULL, batch INTEGER NOT NULL,"
          " launch TEXT NOT NULL, signature TEXT NOT NULL, latency_ms REAL NOT NULL,"
          " repetitions INTEGER NOT NULL, measured_at INTEGER NOT NULL,"
          " PRIMARY KEY (device, driver, cudnn, precision, batch, launch, signature)) WITHOUT ROWID")
c.execute("INSERT INTO schema_version VALUES (2)")
def row(latency, signature="sequential|conv{...}", device="Test GPU"):
    for precision in ("fp32", "tf32"):
        c.execute("INSERT INTO stage_latency VALUES (?, '1.0', '9.0', ?, 1, 'graph', ?, ?, 100, 0)",
                  (device, precision, signature, latency))
exec(sys.argv[3])
c.commit()
c.close()
PYEOF
}
# calibrate NAME CODE PATTERN: --calibrate $WORK/db/NAME.sqlite ends with CODE
# and one line matching PATTERN; the database and its folder are unchanged.
calibrate() {
  local name=$1 code=$2 pattern=$3 file="$WORK/db/$1.sqlite"
  local before listing
  before=$(sha256sum "$file" | cut -d' ' -f1)
  listing=$(ls -a "$WORK/db")
  expect_error "calibrate $name" "$code" "$name\.sqlite.*$pattern" -- limited "$OPT" "$M" --batch 1 --calibrate "$file" -o "$WORK/$name.profile.json"
  [ "$(sha256sum "$file" | cut -d' ' -f1)" = "$before" ] && ok || fail "calibrate $name changed the database"
  [ "$(ls -a "$WORK/db")" = "$listing" ] && ok || fail "calibrate $name created files beside the database: $(ls -a "$WORK/db" | tr '\n' ' ')"
  [ ! -e "$WORK/$name.profile.json" ] && ok || fail "calibrate $name wrote a profile"
}
: >"$WORK/db/empty.sqlite"
calibrate empty 2 "empty file, not an ios profile database"
[ ! -s "$WORK/db/empty.sqlite" ] && ok || fail "calibrate wrote into an empty file"
printf 'name,latency\nconv,0.1\n' >"$WORK/db/text.sqlite"
calibrate text 2 "not an SQLite file, so not an ios profile database"
$PY -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('CREATE TABLE users (name TEXT)'); c.commit()" "$WORK/db/foreign.sqlite"
calibrate foreign 2 "not an ios profile database \(it has a table 'users'\)"
$PY -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('CREATE TABLE schema_version (version INTEGER NOT NULL)'); c.commit()" "$WORK/db/half.sqlite"
calibrate half 2 "not an ios profile database \(no table 'stage_latency'"
# A version 1 database (stages measured before the L2 flush and the launch
# mode in the key) is refused, not read.
db version1 wal 'row(0.05); c.execute("UPDATE schema_version SET version = 1")'
calibrate version1 2 "schema version 1 \(this ios uses 3; its measurements are not comparable\); delete the file"
# Legitimate databases of other stages: refused for want of data, untouched,
# in either journal mode (the rollback-journal one is not switched to WAL).
db others_wal wal 'row(0.05); row(0.0, "merge|zero-copy")'
calibrate others_wal 2 "none of .*tiny_conv\.onnx's stages at batch 1"
# SQLite opens a WAL when byte 19 of the header (the write version) is 2,
# whatever byte 18 says: with 1 there, a check of both bytes took mode=ro,
# which left -wal and -shm files beside the database (seen in the folder
# of a profile_db_fuzzer run).
db wal_read_version wal 'row(0.05)'
printf '\001' | dd of="$WORK/db/wal_read_version.sqlite" bs=1 seek=18 conv=notrunc status=none
calibrate wal_read_version 2 "none of .*tiny_conv\.onnx's stages at batch 1"
db others_delete delete 'row(0.05)'
calibrate others_delete 2 "none of .*tiny_conv\.onnx's stages at batch 1"
$PY -c "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute('PRAGMA journal_mode').fetchone()[0])" "$WORK/db/others_delete.sqlite" | grep -qx delete && ok || fail "calibrate switched the journal mode"
# Latencies that are not measurements: the row is named.
db latency_huge wal 'row(1e300)'
calibrate latency_huge 2 "row of device 'Test GPU', batch 1, signature 'sequential\|conv\{\.\.\.\}' has latency_ms 1e\+300, not a measured latency in \[0, 10000\] ms"
db latency_inf wal 'row(float("inf"))'
calibrate latency_inf 2 "latency_ms inf, not a measured latency"
db latency_negative wal 'row(-2.5)'
calibrate latency_negative 2 "latency_ms -2.5, not a measured latency"
db latency_text delete 'row("fast")'
calibrate latency_text 2 "latency_ms that is not a number"
db latency_long_signature wal 'row(1e300, signature="s" * 100000)'
calibrate latency_long_signature 2 "signature 'sss.*\.\.\.' has latency_ms"
short "a row with a long signature"
# A value no ios database holds is not allocated.
db huge_value wal 'row(0.1, signature="s" * 3000000)'
calibrate huge_value 2 "a value larger than 1048576 bytes"
# A database locked by another process: reported after a short wait.
db locked delete 'row(0.05)'
$PY - "$WORK/db/locked.sqlite" "$WORK/locked.ready" <<'PYEOF' &
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN EXCLUSIVE")
c.execute("INSERT INTO stage_latency VALUES ('x', '1', '1', 'fp32', 1, 'graph', 'sig', 1.0, 1, 0)")
open(sys.argv[2], "w").close()
time.sleep(30)
PYEOF
holder=$!
for _ in $(seq 100); do [ -e "$WORK/locked.ready" ] && break; sleep 0.1; done
start=$(date +%s)
expect_error "calibrate locked" 2 "locked\.sqlite: locked by another process.*retry when it has finished" -- limited "$OPT" "$M" --batch 1 --calibrate "$WORK/db/locked.sqlite" -o "$WORK/locked.profile.json"
[ $(($(date +%s) - start)) -le 6 ] && ok || fail "calibrate on a locked database took $(($(date +%s) - start)) s"
kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null
# A WAL database that another process is writing is read as committed.
db writing wal 'row(0.05)'
$PY - "$WORK/db/writing.sqlite" "$WORK/writing.ready" <<'PYEOF' &
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN IMMEDIATE")
c.execute("INSERT INTO stage_latency VALUES ('x', '1', '1', 'fp32', 1, 'graph', 'sig', 1e300, 1, 0)")
open(sys.argv[2], "w").close()
time.sleep(30)
PYEOF
holder=$!
for _ in $(seq 100); do [ -e "$WORK/writing.ready" ] && break; sleep 0.1; done
expect_error "calibrate while another process writes" 2 "writing\.sqlite.*none of .*stages at batch 1" -- limited "$OPT" "$M" --batch 1 --calibrate "$WORK/db/writing.sqlite" -o "$WORK/writing.profile.json"
kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null
# Over the size calibration reads (a sparse file: no disk space used).
db big wal 'row(0.05)'
truncate -s 1100M "$WORK/db/big.sqlite"
expect_error "calibrate a database over 1 GiB" 2 "big\.sqlite: 1153433600 bytes, larger than the 1 GiB calibration reads" -- limited "$OPT" "$M" --batch 1 --calibrate "$WORK/db/big.sqlite" -o "$WORK/big.profile.json"
[ "$(stat -c %s "$WORK/db/big.sqlite")" = 1153433600 ] && ok || fail "calibrate changed the size of the large database"
rm -f "$WORK/db/big.sqlite"
finish
