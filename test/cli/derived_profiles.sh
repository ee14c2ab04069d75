# The shipped a100, h100 and h200 profiles are what bench/published/derive.py
# makes of their spec sheets and the fitted v100 (docs/cost-model.md,
# "Derived profiles"); a refit of the v100 that is not carried over fails
# here, as does a k80 that no longer shares the v100's coupled knobs. The
# fit's penalty pairs are those of Table 3's rows.
source "$(dirname "$0")/common.bash"
: "${IOS_SOURCE_DIR:?set by ctest}"
PY=/usr/bin/python3
if $PY "$IOS_SOURCE_DIR/bench/published/derive.py" --check >"$WORK/derive.txt" 2>&1; then
  ok
else
  fail "the derived profiles are stale: $(cat "$WORK/derive.txt")"
fi
# A stale copy is caught: one knob of a derived profile changed.
mkdir -p "$WORK/profiles"
cp "$IOS_SOURCE_DIR"/device_profiles/*.json "$WORK/profiles/"
$PY -c 'import json, sys; p = json.load(open(sys.argv[1])); p["cache_contention"] += 0.1; json.dump(p, open(sys.argv[1], "w"), indent=2)' \
  "$WORK/profiles/h100.json"
if $PY "$IOS_SOURCE_DIR/bench/published/derive.py" --check --profiles "$WORK/profiles" >"$WORK/derive.txt" 2>&1; then
  fail "derive.py --check accepts an h100 whose cache contention is not the v100's"
else
  grep -q "h100.json" "$WORK/derive.txt" && ok || fail "derive.py --check does not name the stale file: $(cat "$WORK/derive.txt")"
fi
# Table 3's penalty pairs: the specialised cell of each row against the others.
pairs=$(cd "$IOS_SOURCE_DIR/bench/published" && $PY -c '
import fit
rows = [r for r in fit.load_rows() if r["half"] in ("fit", "validation", "duplicate")]
print(" ".join(sorted(a["id"] + ">" + b["id"] for a, b in fit.penalty_pairs(rows))))')
[ "$(echo "$pairs" | wc -w)" = 8 ] && ok || fail "Table 3 has 8 penalties, fit.py pairs: $pairs"
echo "$pairs" | grep -q "ios-t3-v100-optv100>ios-t3-v100-optk80" && ok || fail "the V100 row's penalty is missing: $pairs"
# Figure 10's structure in the fit's objective: (stages, 1x3 + 3x1 merges)
# of the last block at batch 1 and 32, against 2 / none and 4 / some.
misses=$(cd "$IOS_SOURCE_DIR/bench/published" && $PY -c '
import fit
print(fit.structure_misses({1: (2, 0), 32: (4, 2)}),
      fit.structure_misses({1: (3, 0), 32: (4, 1)}),
      fit.structure_misses({1: (2, 1), 32: (2, 0)}))')
[ "$misses" = "0 1 3" ] && ok || fail "Figure 10 misses counted as $misses, not 0 1 3"
# The shipped k80 takes from the v100 what the fit couples (fit.couple_k80):
# a refit of the v100 that is not carried over to the k80 fails here, and
# so does a k80 whose coupled knob was edited by hand.
coupled='import fit, sys; print(" ".join(fit.uncoupled_k80_knobs(fit.load_profiles(sys.argv[1]))) or "coupled")'
out=$(cd "$IOS_SOURCE_DIR/bench/published" && $PY -c "$coupled" "$IOS_SOURCE_DIR/device_profiles")
[ "$out" = coupled ] && ok || fail "the shipped k80 differs from the v100 in coupled knobs: $out"
$PY -c 'import json, sys; p = json.load(open(sys.argv[1])); p["host_launch_us"] *= 2; json.dump(p, open(sys.argv[1], "w"), indent=2)' \
  "$WORK/profiles/k80.json"
out=$(cd "$IOS_SOURCE_DIR/bench/published" && $PY -c "$coupled" "$WORK/profiles")
[ "$out" = host_launch_us ] && ok || fail "a k80 with its own host call is not caught: $out"
finish
