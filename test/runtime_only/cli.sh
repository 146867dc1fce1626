#!/bin/sh
# The cbc of a runtime-only build (CBC_BUILD_COMPILER=OFF): it refuses to compile with a clear
# error, still dumps and runs committed artefacts (on the fixtures' weights, bf16 and FP8,
# generating the greedy tokens transformers did), and links no MLIR.
# usage: cli.sh CBC SOURCE_DIR
set -eu
CBC=$1
SRC=$2
fail() { echo "runtime-only cli: $*" >&2; exit 1; }

status=0
err=$("$CBC" compile "$SRC/test/parity/fixtures/llama/config.json" -o /dev/null 2>&1) || status=$?
[ "$status" -eq 2 ] || fail "cbc compile exited $status, not 2"
case $err in
  *"built without the compiler (CBC_BUILD_COMPILER=OFF)"*) ;;
  *) fail "cbc compile said: $err" ;;
esac

"$CBC" dump "$SRC/test/artefacts/llama.fb" | grep -q '^model_type *llama$' || fail "cbc dump lost the summary"

# A fixture's first prompt and the greedy tokens transformers produced for it.
read_expected() {
  python3 - "$SRC/test/parity/fixtures/$1/expected.safetensors" "$2" <<'PY'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
s, e = json.loads(b[8:8 + n])[sys.argv[2]]["data_offsets"]
print(",".join(str(v) for v in struct.unpack("<%di" % ((e - s) // 4), b[8 + n + s:8 + n + e])))
PY
}
# llama_fp8: the same model with its linears stored as block-scaled FP8, dequantised at load;
# deepseek_v3 and longcat_flash: latent attention and the DeepSeek-style routers.
for family in llama llama_fp8 deepseek_v3 longcat_flash; do
  prompt=$(read_expected $family prompt_0)
  want=$(read_expected $family tokens_0)
  out=$(echo "{\"prompt\": [$prompt], \"max_new_tokens\": 16, \"ignore_eos\": true}" |
        "$CBC" run "$SRC/test/artefacts/$family.fb" --weights "$SRC/test/parity/fixtures/$family" --backend cpu --quiet)
  got=$(echo "$out" | sed -n 's/.*"tokens":\[\([0-9,]*\)\].*/\1/p')
  [ "$got" = "$want" ] || fail "$family: cbc run generated [$got], transformers [$want]"
done

if nm -C "$CBC" | grep -q 'mlir::'; then fail "the binary links MLIR"; fi
echo "runtime-only cli: ok"
