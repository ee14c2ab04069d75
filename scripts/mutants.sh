#!/usr/bin/env bash
# Mutation check: plausible one-line bugs, each applied to the source in
# turn, must be caught by the tests of the module they break.
#
# For each mutant: the file is saved, the line changed (an exact text that
# must occur once), the module's test program rebuilt in build/, that
# module's ctest label run; a failing run kills the mutant, a passing one
# lets it survive. The file is then put back byte for byte, also when the
# script fails or is interrupted (a trap on EXIT, INT and TERM), and the
# test programs are rebuilt from the restored sources at the end. The
# unmutated tests run first: a module whose tests fail already cannot kill
# anything.
#
#   scripts/mutants.sh [--list] [--no-baseline] [NAME...]    (after scripts/build.sh)
#
# Exit status: 0 when every mutant run was killed, 1 when one survived or
# anything else went wrong.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build=${IOS_BUILD_DIR:-build}

# Each mutant: a name, the file, the exact text it changes and the text it
# becomes (in Python string syntax: \n is a newline), the test programs to
# rebuild and the ctest label (a regex) of the module's tests.
names=() files=() originals=() mutations=() targets_of=() labels=()
mutant() { names+=("$1"); files+=("$2"); originals+=("$3"); mutations+=("$4"); targets_of+=("$5"); labels+=("$6"); }
# The DP's group-size pruning (r) one unit too strict.
mutant dp-group-size lib/sched/ios_dp.cpp \
  'if (r_ == 0 || popcount(c) <= r_) candidates |= bit(x);' \
  'if (r_ == 0 || popcount(c) < r_) candidates |= bit(x);' \
  ios_sched_tests '^sched$'
# The unit-bound pruning applied to possible merges too.
mutant dp-merge-exemption lib/sched/ios_dp.cpp \
  'if (!bound_.empty() && !(use_merge_ && (e & (e - 1)) != 0 && is_antichain(e)) &&' \
  'if (!bound_.empty() &&' \
  ios_sched_tests '^sched$'
# A concat's channel offset advanced only past the inputs written in place.
mutant concat-offset lib/exec/storage_plan.cpp \
  '        ++out_.zero_copy_concat_inputs_;\n      }\n      channel += channels;\n' \
  '        ++out_.zero_copy_concat_inputs_;\n        channel += channels;\n      }\n' \
  ios_exec_tests '^exec$'
# Exp no longer kept in float32 at half precision.
mutant float32-exp lib/ir/half_conversion.cpp \
  '    case OpKind::kReduceProd:\n    case OpKind::kExp:\n' \
  '    case OpKind::kReduceProd:\n' \
  'ios_ir_tests ios_ops_tests' '^(ir|ops)$'

list=0 baseline=1 only=()
for arg in "$@"; do
  case "$arg" in
    --list) list=1 ;;
    --no-baseline) baseline=0 ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "mutants.sh: unknown option $arg" >&2; exit 2 ;;
    *) only+=("$arg") ;;
  esac
done
if [ "$list" = 1 ]; then
  for i in "${!names[@]}"; do printf '%-20s %-28s label %s\n' "${names[$i]}" "${files[$i]}" "${labels[$i]}"; done
  exit 0
fi
selected=()  # indices
for i in "${!names[@]}"; do
  if [ "${#only[@]}" = 0 ] || printf '%s\n' "${only[@]}" | grep -qxF -- "${names[$i]}"; then selected+=("$i"); fi
done
[ "${#selected[@]}" -gt 0 ] || { echo "mutants.sh: no mutant named ${only[*]} (--list)" >&2; exit 2; }
[ -f "$build/build.ninja" ] || { echo "mutants.sh: no build in $build/: run scripts/build.sh first" >&2; exit 2; }

work=$(mktemp -d)
saved=""  # the file under mutation, saved as $work/original
targets_touched=()
restore() {
  if [ -n "$saved" ]; then
    cp "$work/original" "$root/$saved"  # a new time stamp: the next build recompiles it
    if ! cmp -s "$work/original" "$root/$saved"; then
      echo "mutants.sh: FAILED to restore $saved; its original is in $work/original" >&2
      return 1
    fi
    saved=""
  fi
}
on_exit() {
  local rc=$?
  restore || { trap - EXIT; exit 1; }
  rm -rf "$work"
  exit "$rc"
}
trap on_exit EXIT
trap 'echo "mutants.sh: interrupted; restoring" >&2; exit 130' INT TERM

# mutate FILE ORIGINAL MUTATED: replaces the one occurrence of ORIGINAL.
mutate() {
  /usr/bin/python3 - "$root/$1" "$2" "$3" <<'PYEOF'
import ast, sys
path, old, new = sys.argv[1], *(ast.literal_eval('"' + s.replace('"', '\\"') + '"') for s in sys.argv[2:])
text = open(path, encoding="utf-8").read()
count = text.count(old)
if count != 1:
    sys.exit(f"{path}: the text to mutate occurs {count} times, expected once: {old!r}")
open(path, "w", encoding="utf-8").write(text.replace(old, new))
PYEOF
}

build_targets() { cmake --build "$build" --target "$@" >"$work/build.log" 2>&1; }
run_label() { (cd "$build" && ctest -j2 -L "$1" >"$work/ctest.log" 2>&1); }
failed_tests() { sed -n '/The following tests FAILED/,$p' "$work/ctest.log" | grep -E '^\s+[0-9]+ - ' | sed -E 's/^\s+[0-9]+ - //; s/ \(Failed\)$//' | head -5; }

start=$(date +%s)
echo "mutants.sh: ${#selected[@]} mutants, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')"
if [ "$baseline" = 1 ]; then
  declare -A checked=()
  for i in "${selected[@]}"; do
    label=${labels[$i]}
    [ -n "${checked[$label]:-}" ] && continue
    checked[$label]=1
    read -r -a targets <<<"${targets_of[$i]}"
    build_targets "${targets[@]}" || { cat "$work/build.log" >&2; echo "mutants.sh: the unmutated build failed" >&2; exit 1; }
    t0=$(date +%s)
    if ! run_label "$label"; then
      tail -30 "$work/ctest.log" >&2
      echo "mutants.sh: the unmutated tests of label $label fail; fix them first" >&2
      exit 1
    fi
    echo "  baseline  label $label passes ($(( $(date +%s) - t0 )) s)"
  done
fi

killed=0 survived=0
for i in "${selected[@]}"; do
  name=${names[$i]} file=${files[$i]} label=${labels[$i]}
  read -r -a targets <<<"${targets_of[$i]}"
  t0=$(date +%s)
  cp "$root/$file" "$work/original"
  saved=$file
  targets_touched+=("${targets[@]}")
  mutate "$file" "${originals[$i]}" "${mutations[$i]}"
  if ! build_targets "${targets[@]}"; then
    tail -20 "$work/build.log" >&2
    echo "mutants.sh: building $name failed (a mutant that does not compile, or an interrupted build)" >&2
    exit 1
  fi
  if run_label "$label"; then
    verdict=SURVIVED
    survived=$((survived + 1))
  else
    verdict=killed
    killed=$((killed + 1))
  fi
  restore
  printf '  %-9s %-20s %s, label %s (%d s)\n' "$verdict" "$name" "$file" "$label" $(( $(date +%s) - t0 ))
  if [ "$verdict" = killed ]; then
    failed_tests | sed 's/^/              by: /'
  fi
done

# The test programs again from the restored sources.
mapfile -t unique_targets < <(printf '%s\n' "${targets_touched[@]}" | sort -u)
build_targets "${unique_targets[@]}" || { cat "$work/build.log" >&2; echo "mutants.sh: rebuilding the restored sources failed" >&2; exit 1; }
mapfile -t mutated_files < <(for i in "${selected[@]}"; do echo "${files[$i]}"; done | sort -u)
git -C "$root" diff --quiet -- "${mutated_files[@]}" 2>/dev/null ||
  echo "mutants.sh: note: the mutated files differ from git's HEAD as they did before the run (restored byte for byte)"
echo "mutants.sh: killed $killed of $((killed + survived)), $(( $(date +%s) - start )) s"
[ "$survived" = 0 ]
