#!/usr/bin/env bash
# Compile time of a config (default: Llama-3.1-8B), side by side with cbc-opt parsing and
# printing the same IR, in one run. Prints medians over N runs.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build}
CONFIG=${1:-test/configs/published/llama-3.1-8b.json}
N=${N:-7}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
time_cmd() { # prints seconds
  local t0 t1
  t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}

"$BUILD/bin/cbc" compile "$CONFIG" -o "$tmp/m.fb" --no-cuda --quiet
"$BUILD/bin/cbc" dump "$tmp/m.fb" --ir > "$tmp/m.mlir"

echo "config: $CONFIG ($(grep -c '' "$tmp/m.mlir") lines of IR)"
for mode in no-cuda cuda cuda-cached; do
  flags=(--quiet)
  case $mode in
    no-cuda) flags+=(--no-cuda) ;;
    cuda) flags+=(--kernel-cache "$tmp/cold-$RANDOM") ;;
    cuda-cached) flags+=(--kernel-cache "$tmp/warm"); "$BUILD/bin/cbc" compile "$CONFIG" -o "$tmp/w.fb" "${flags[@]}" ;;
  esac
  m=$(for i in $(seq "$N"); do
        [ "$mode" = cuda ] && flags[-1]="$tmp/cold-$i"
        time_cmd "$BUILD/bin/cbc" compile "$CONFIG" -o "$tmp/c.fb" "${flags[@]}"
      done | median)
  printf "  cbc compile (%-11s)  %8.3f s\n" "$mode" "$m"
  [ "$mode" = no-cuda ] && base=$m
done
p=$(for i in $(seq "$N"); do time_cmd "$BUILD/bin/cbc-opt" "$tmp/m.mlir" -o "$tmp/o.mlir"; done | median)
printf "  cbc-opt parse+print    %8.3f s\n" "$p"
printf "  ratio compile(no-cuda) / cbc-opt: %.2f\n" "$(echo "$base / $p" | bc -l)"
