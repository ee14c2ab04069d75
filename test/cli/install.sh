# Installing to a prefix: programs, man pages generated from --help, bash
# completion; and --version. The library as a CMake package: a project of its
# own (test/install/consumer) finds it with find_package(ios), links
# ios::sched, and its program schedules a small graph with the installed
# schedulers.
source "$(dirname "$0")/common.bash"
build_dir="$IOS_BIN/.."

for prog in ios-optimize ios-run; do
  expect_ok "$prog --version" -- "$IOS_BIN/$prog" --version || continue
  head -1 "$WORK/stdout" | grep -qE "^$prog [0-9]+\.[0-9]+\.[0-9]+ \(commit [0-9a-f]{7,}(-dirty)?|unknown\)$" ||
    fail "$prog --version first line: $(head -1 "$WORK/stdout")"
  grep -qE "^built with: +CUDA [^,]+, cuDNN " "$WORK/stdout" || fail "$prog --version lacks the build's CUDA/cuDNN: $(cat "$WORK/stdout")"
  grep -qE "^run time: +CUDA driver [^,]+, cuDNN " "$WORK/stdout" || fail "$prog --version lacks the run-time versions"
done

prefix="$WORK/prefix"
expect_ok "cmake --install" -- cmake --install "$build_dir" --prefix "$prefix"
for prog in ios-optimize ios-run; do
  [ -x "$prefix/bin/$prog" ] || fail "$prefix/bin/$prog not installed"
  expect_ok "installed $prog --version" -- "$prefix/bin/$prog" --version
  grep -q "^$prog " "$WORK/stdout" || fail "installed $prog --version: $(cat "$WORK/stdout")"
  page="$prefix/share/man/man1/$prog.1"
  if [ ! -f "$page" ]; then fail "$page not installed (is help2man installed? scripts/setup.sh)"; continue; fi
  MANWIDTH=120 man -l "$page" >"$WORK/man.txt" 2>"$WORK/man.err" || fail "man -l $page: $(cat "$WORK/man.err")"
  grep -q "^NAME" "$WORK/man.txt" || fail "$prog man page has no NAME section"
  # Every option of --help is in the page: it is generated from --help.
  for opt in $("$IOS_BIN/$prog" --help | grep -oE -- '--[a-z][a-z0-9-]+' | sort -u); do
    grep -q -- "$opt" "$WORK/man.txt" || fail "$prog man page lacks $opt"
  done
  [ -f "$prefix/share/bash-completion/completions/$prog" ] || fail "no bash completion installed for $prog"
done
[ -f "$WORK/man.txt" ] && grep -q -- "--check" "$WORK/man.txt" && ok || fail "ios-run man page lacks --check"

# Bash completion through bash-completion's own loader, as an interactive
# shell finds it: the installed file must be where the loader looks.
complete_words() {  # complete_words WORD... : what TAB offers for the last word
  PATH="$prefix/bin:$PATH" XDG_DATA_DIRS="$prefix/share" bash --norc --noprofile -c '
    source /usr/share/bash-completion/bash_completion || exit 3
    _completion_loader "$1" || true
    spec=$(complete -p "$1" 2>/dev/null) || { echo "NO-COMPLETION"; exit 0; }
    COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 ))
    COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
    fn=$(sed -E "s/.*-F ([^ ]+).*/\1/" <<<"$spec")
    "$fn" "$1" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
    printf "%s\n" "${COMPREPLY[@]}"' bash "$@"
}
if [ -f /usr/share/bash-completion/bash_completion ]; then
  out=$(complete_words ios-optimize --sched)
  [ "$out" = "--scheduler" ] && ok || fail "ios-optimize --sched<TAB> offers '$out', expected --scheduler"
  out=$(complete_words ios-optimize --scheduler ios-)
  [ "$(echo $out)" = "ios-parallel ios-merge" ] && ok || fail "ios-optimize --scheduler ios-<TAB> offers '$out'"
  out=$(complete_words ios-run --dry)
  [ "$out" = "--dry-run" ] && ok || fail "ios-run --dry<TAB> offers '$out'"
  out=$(complete_words ios-run --backend c)
  [ "$(echo $out)" = "cuda cpu" ] && ok || fail "ios-run --backend c<TAB> offers '$out'"
  # Every precision, as the program names them (read back from its --help).
  for prog in ios-optimize ios-run; do
    out=$(complete_words $prog --precision "")
    [ "$(echo $out)" = "tf32 fp32 fp16 bf16" ] && ok || fail "$prog --precision <TAB> offers '$out'"
  done
  out=$(complete_words ios-run --precision b)
  [ "$out" = "bf16" ] && ok || fail "ios-run --precision b<TAB> offers '$out'"
else
  fail "bash-completion is not installed (scripts/setup.sh installs it)"
fi

# The library, its headers and the CMake package.
for f in lib/libios_sched.a lib/libios_core.a lib/libios_engine.a include/ios/sched/scheduler.h include/ios/core/error.h \
         include/ios/engine.h include/ios/error.h \
         lib/cmake/ios/iosConfig.cmake lib/cmake/ios/iosConfigVersion.cmake lib/cmake/ios/iosTargets.cmake; do
  [ -f "$prefix/$f" ] && ok || fail "$prefix/$f not installed"
done
# The Python package, where the build made one: installed in the prefix's
# Python folder (ios/__init__.py, ios/_compile.py and the extension
# ios/_ios.*.so) and importable from there by Debian's python3.
if compgen -G "$build_dir/python/ios/_ios.*.so" >/dev/null; then
  module=$(find "$prefix/lib" -path "*/dist-packages/ios/_ios.*.so" | head -1)
  if [ -n "$module" ]; then
    expect_ok "import the installed Python package" -- env PYTHONPATH="$(dirname "$(dirname "$module")")" \
      /usr/bin/python3 -c "import ios; assert ios.__file__.startswith('$prefix'), ios.__file__
assert ios._ios.__file__.startswith('$prefix'), ios._ios.__file__
print(ios.optimize.__doc__); print(ios.compile.__doc__)"
  else
    fail "the Python package is not installed under $prefix/lib/python3.*/dist-packages/ios"
  fi
fi
# The consumer is built with the compiler this build used (the libraries' ABI).
cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build_dir/CMakeCache.txt")
consumer="$WORK/consumer"
if expect_ok "configure the consumer project against $prefix" -- \
     cmake -S "$IOS_SOURCE_DIR/test/install/consumer" -B "$consumer" -G Ninja \
           -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" &&
   expect_ok "build the consumer project" -- cmake --build "$consumer"; then
  # Its headers came from the prefix, not from this checkout.
  grep -q -- "-isystem $prefix/include/ios\|-I$prefix/include/ios" "$consumer/build.ninja" ||
    fail "the consumer is not compiled against $prefix/include/ios"
  ! grep -q -- "$IOS_SOURCE_DIR/lib" "$consumer/build.ninja" ||
    fail "the consumer's build refers to this checkout's lib/"
  # A diamond 0 -> {1, 2, 3} -> 4 with weights 1 2 3 2 1, a stage taking its
  # longest group: sequential adds all up, IOS runs the three in parallel.
  if expect_ok "consumer: sequential" -- "$consumer/schedule_diamond" sequential; then
    grep -qx "sequential: 5 stages, predicted 9.0 ms" "$WORK/stdout" && ok ||
      fail "consumer sequential: $(cat "$WORK/stdout")"
  fi
  if expect_ok "consumer: ios" -- "$consumer/schedule_diamond" ios; then
    grep -qx "ios: 3 stages, predicted 5.0 ms" "$WORK/stdout" && grep -qx "stage: \[1\] \[2\] \[3\]" "$WORK/stdout" &&
      ok || fail "consumer ios: $(cat "$WORK/stdout")"
  fi
  expect_error "consumer: unknown scheduler" 2 "schedule_diamond: .*no-such" -- "$consumer/schedule_diamond" no-such
  # The engine API from the installed package: optimize, run, refusals,
  # threads (test/install/consumer/engine_api.cpp prints a line per check).
  if expect_ok "consumer: engine API" -- "$consumer/engine_api" "$IOS_MODELS_DIR/squeezenet1_1-bdyn.onnx" \
       "$IOS_MODELS_DIR/vit_style.onnx"; then
    ! grep -q "^FAILED" "$WORK/stdout" && [ "$(grep -c "^ok:" "$WORK/stdout")" -ge 17 ] && ok ||
      fail "consumer engine API: $(cat "$WORK/stdout")"
  else
    cat "$WORK/stdout"
  fi
fi
finish
