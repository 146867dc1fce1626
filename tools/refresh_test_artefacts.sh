#!/usr/bin/env bash
# Rewrites the committed test artefacts (test/artefacts/<family>.fb) from the parity fixtures'
# configs with the built compiler. The runtime's tests read them, so that a runtime-only build
# needs no compiler; the compiler's unit test CommittedArtefacts.MatchAFreshCompile fails when
# one is stale. Run after a change to the dialect, a pass, the writer or the schema.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build}
FAMILIES=(llama llama_fp8 bitnet_ternary olmo_hybrid gpt_oss gpt_oss_mxfp4 qwen3_moe deepseek_v3 longcat_flash rwkv xlstm recurrent_gemma qwen4_exp_text deepseek_v4)
for f in "${FAMILIES[@]}"; do
  "$BUILD/bin/cbc" compile "test/parity/fixtures/$f/config.json" -o "test/artefacts/$f.fb" --no-cuda --quiet
  echo "refresh: test/artefacts/$f.fb ($(stat -c %s "test/artefacts/$f.fb") bytes)"
done
