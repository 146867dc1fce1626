#!/usr/bin/env bash
# Replays every regression input under test/fuzz/regressions/<target>/, then runs each libFuzzer
# target (test/fuzz) for a bounded time on its seeds, all targets at once. Exits 1 on the first
# crash, sanitizer report, leak, timeout or runaway allocation, printing the input (base64) and
# where it was saved. Seeds are the committed inputs of the tree (fixture and lit configs,
# committed artefacts) plus test/fuzz/corpus/<target>/; what a run adds is thrown away.
#   tools/fuzz.sh [BUILD_DIR]      (default build-fuzz, configured by tools/setup.sh)
#   FUZZ_SECONDS=600 FUZZ_SEED=0 FUZZ_TARGETS="config_fuzz" tools/fuzz.sh   (longer, random seed)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-${FUZZ_BUILD_DIR:-build-fuzz}}
SECONDS_EACH=${FUZZ_SECONDS:-60}
SEED=${FUZZ_SEED:-1} # fixed by default so CI explores the same inputs each time; 0 is random
TARGETS=${FUZZ_TARGETS:-"config_fuzz artefact_fuzz safetensors_fuzz request_fuzz"}
FINDINGS="$BUILD/fuzz-findings"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$FINDINGS"
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

# The seed directories of one target, assembled from the tree.
seeds() {
  local t=$1 dir="$WORK/seeds-$1"
  mkdir -p "$dir"
  case $t in
    config_fuzz)
      for f in test/parity/fixtures/*/config.json; do cp "$f" "$dir/$(basename "$(dirname "$f")").json"; done
      cp test/lit/Inputs/configs/*.json test/lit/Inputs/bad/*.json test/lit/Inputs/nonfinite/*.json "$dir/" ;;
    artefact_fuzz) cp test/artefacts/*.fb "$dir/" ;;
  esac
  [ -d "test/fuzz/corpus/${t%_fuzz}" ] && cp test/fuzz/corpus/"${t%_fuzz}"/* "$dir/"
  echo "$dir"
}

report() { # a failed target: its log's tail and the inputs it saved
  local t=$1
  echo "fuzz: $t FAILED; log tail:" >&2
  tail -n 60 "$WORK/$t.log" >&2
  for f in "$FINDINGS/$t"-*; do
    [ -f "$f" ] || continue
    echo "fuzz: $t input saved as $f ($(stat -c %s "$f") bytes); base64:" >&2
    head -c 4096 "$f" | base64 -w 100 >&2
  done
}

pids=()
for t in $TARGETS; do
  bin="$BUILD/test/fuzz/$t"
  [ -x "$bin" ] || { echo "fuzz: $bin is not built (ninja -C $BUILD cbc-fuzz)" >&2; exit 1; }
  regs=(test/fuzz/regressions/"${t%_fuzz}"/*)
  if [ -e "${regs[0]}" ]; then # each input once: a crash fails at once
    if ! "$bin" -timeout=25 -rss_limit_mb=2048 "${regs[@]}" >"$WORK/$t.replay.log" 2>&1; then
      echo "fuzz: $t crashed replaying test/fuzz/regressions/${t%_fuzz}:" >&2
      tail -n 60 "$WORK/$t.replay.log" >&2
      exit 1
    fi
    echo "fuzz: $t replayed ${#regs[@]} regression input(s)"
  fi
  dict=()
  case $t in config_fuzz | request_fuzz | safetensors_fuzz) dict=(-dict=test/fuzz/json.dict) ;; esac
  mkdir -p "$WORK/new-$t"
  "$bin" -max_total_time="$SECONDS_EACH" -seed="$SEED" -timeout=25 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$FINDINGS/$t-" "${dict[@]}" \
    "$WORK/new-$t" "$(seeds "$t")" >"$WORK/$t.log" 2>&1 &
  pids+=("$t:$!")
done

status=0
for p in "${pids[@]}"; do
  t=${p%%:*}
  if wait "${p#*:}"; then
    echo "fuzz: $t ok, $(grep -E '^stat::number_of_executed_units' "$WORK/$t.log" | awk '{print $2}') runs," \
      "$(grep -oE 'cov: [0-9]+' "$WORK/$t.log" | tail -1)"
  else
    report "$t"
    status=1
  fi
done
exit $status
