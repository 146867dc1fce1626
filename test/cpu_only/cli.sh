#!/bin/sh
# The cbc of a build without CUDA (CBC_CUDA=OFF), with or without the compiler: `cbc run
# --backend cuda` is a usage error (status 2, one line, before loading), and the default backend
# (auto) serves on the CPU without a note about CUDA. --help says so.
# usage: cli.sh CBC SOURCE_DIR
set -eu
CBC=$1
SRC=$2
fail() { echo "cpu-only cli: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo '{"prompt": [1, 5, 9], "max_new_tokens": 3, "ignore_eos": true}' > "$tmp/prompts.jsonl"
model="$SRC/test/artefacts/llama.fb"
weights="$SRC/test/parity/fixtures/llama"

status=0
"$CBC" run "$model" --weights "$weights" --backend cuda --prompts "$tmp/prompts.jsonl" \
  > "$tmp/out" 2> "$tmp/err" || status=$?
[ "$status" -eq 2 ] || fail "--backend cuda exited $status, not 2"
[ "$(cat "$tmp/err")" = "cbc run: error: --backend cuda: this cbc was built without CUDA (CBC_CUDA=OFF); use --backend cpu or auto" ] ||
  fail "--backend cuda said: $(cat "$tmp/err")"
[ ! -s "$tmp/out" ] || fail "--backend cuda printed results"

# auto: the CPU, quietly; the same tokens as --backend cpu.
"$CBC" run "$model" --weights "$weights" --prompts "$tmp/prompts.jsonl" > "$tmp/auto" 2> "$tmp/err"
grep -q '^cbc run: cpu backend,' "$tmp/err" || fail "auto did not serve on the CPU: $(cat "$tmp/err")"
if grep -q CUDA "$tmp/err"; then fail "auto spoke of CUDA: $(cat "$tmp/err")"; fi
"$CBC" run "$model" --weights "$weights" --backend cpu --prompts "$tmp/prompts.jsonl" --quiet > "$tmp/cpu"
tokens() { sed -n 's/.*"tokens":\[\([0-9,]*\)\].*/\1/p' "$1"; }
[ -n "$(tokens "$tmp/cpu")" ] || fail "--backend cpu generated nothing"
[ "$(tokens "$tmp/auto")" = "$(tokens "$tmp/cpu")" ] || fail "auto generated [$(tokens "$tmp/auto")], cpu [$(tokens "$tmp/cpu")]"

"$CBC" run --help | grep -q -- '--backend auto|cpu|cuda .*default auto, which is the CPU: this cbc was built without CUDA' ||
  fail "cbc run --help does not say the build has no CUDA"
echo "cpu-only cli: ok"
