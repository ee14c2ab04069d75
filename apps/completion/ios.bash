# Bash completion for ios-optimize and ios-run, installed under both names.
# Options and the precisions are read from the program's own --help and
# scheduler names from ios-optimize --list-schedulers, so completion follows
# the installed version.

_ios_words_from_help() {
  "$1" --help 2>/dev/null | grep -oE -- '(^|[ ,])--?[A-Za-z][A-Za-z0-9-]*' | sed 's/^[ ,]//' | sort -u
}

# The values an option's --help line lists ("--precision TEXT:{tf32,fp32,...}"),
# one a line: the names the program itself accepts.
_ios_choices_from_help() {
  "$1" --help 2>/dev/null | sed -nE "s/^ *$2 [A-Z]+:\{([^}]*)\}.*/\1/p" | head -1 | tr ',' '\n'
}

_ios_complete() {
  local cur=${COMP_WORDS[COMP_CWORD]}
  local prev=${COMP_WORDS[COMP_CWORD-1]}
  local prog=${COMP_WORDS[0]}
  local IFS=$'\n'
  COMPREPLY=()
  case $prev in
    -s|--scheduler)
      COMPREPLY=($(compgen -W "$("$prog" --list-schedulers 2>/dev/null | awk '/^  [a-z]/ {print $1}')" -- "$cur"))
      return ;;
    --cost) COMPREPLY=($(compgen -W $'auto\nsimulated\nmeasured' -- "$cur")); return ;;
    --backend) COMPREPLY=($(compgen -W $'cuda\ncpu' -- "$cur")); return ;;
    --precision) COMPREPLY=($(compgen -W "$(_ios_choices_from_help "$prog" --precision)" -- "$cur")); return ;;
    --form) COMPREPLY=($(compgen -W $'staged\nstreamed\nbest' -- "$cur")); return ;;
    --launch) COMPREPLY=($(compgen -W $'graph\nplain\nsynced' -- "$cur")); return ;;
    --conv-kernels) COMPREPLY=($(compgen -W $'legacy\ngraph' -- "$cur")); return ;;
    --profile-budget) COMPREPLY=($(compgen -W $'all' -- "$cur")); return ;;
    --device-profile) COMPREPLY=($(compgen -W $'h100\nh200\na100\nv100\nk80' -- "$cur") $(compgen -f -- "$cur")); return ;;
    --output-dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
    -o|--output|--report-json|--dot|--profile-db|--plan-cache|--export-times|--trace|--input|--reference)
      COMPREPLY=($(compgen -f -- "$cur")); return ;;
    -b|--batch|-p|--params|--input-shape|--warmup|--iterations|--duration|--rtol|--atol|--seed|--threads|\
    --max-block-units|--max-block-bound|--time-limit)
      return ;;  # a value the user types
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$(_ios_words_from_help "$prog")" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}

complete -o filenames -F _ios_complete ios-optimize ios-run
