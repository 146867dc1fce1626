#!/usr/bin/env bash
# Ring 4 on one GPU (not run in CI): build, run every parity model on the CUDA backend against
# the CPU backend, and benchmark random-weight models in bf16 (512-token prompts, 128 new
# tokens) shaped like Llama-3.1-8B, like Qwen3-Next-80B-A3B cut to 8 layers (2 attention,
# 6 gated-delta; 80 GB would not fit) and like DeepSeek-V3 cut to 4 layers (latent attention,
# grouped sigmoid routing over 256 experts) and like Kimi-Linear-48B-A3B cut to 4 layers (KDA and
# NoPE latent attention): decode tokens/s at concurrency 1, 16, 64 and 256,
# prefill tokens/s, and the fraction of the H200's 4.8 TB/s a decode step reaches. Where torch and transformers
# are installed it serves the same workload with transformers' generate_batch and prints
# cbc's throughput as a ratio to it. Then, time allowing, it measures every launch of a step
# (CUDA events around each launch, outside graphs, averaged over several steps) of Llama-3.1-8B
# and Qwen3-30B-A3B on bench/roofline.py's workloads (decode of 1, 64 and 256 requests with 1024
# cached tokens each, a 2048-token prefill) and prints the times beside the roofline's
# prediction; `tools/gpu_check.sh --launch-times` does only that. It also serves the example
# model greedily with and without speculative decoding (transformers' tokens either way, and
# the tokens/s of each). Without a GPU it stops at once.
set -uo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
ONLY_LAUNCH_TIMES=0
case "${1:-}" in
  "") ;;
  --launch-times) ONLY_LAUNCH_TIMES=1 ;;
  *) echo "usage: tools/gpu_check.sh [--launch-times]" >&2; exit 2 ;;
esac

if ! { ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1' || [ -e /usr/lib/x86_64-linux-gnu/libcuda.so.1 ] || [ -e /usr/lib64/libcuda.so.1 ]; }; then
  echo "gpu_check: no CUDA driver on this machine (libcuda.so.1 not found); nothing to check." >&2
  exit 2
fi
if command -v nvidia-smi >/dev/null && ! timeout 20 nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu_check: nvidia-smi sees no GPU; nothing to check." >&2
  exit 2
fi

BUILD=${BUILD_DIR:-build}
export CCACHE_BASEDIR="$PWD"
timeout 300 tools/setup.sh || { echo "gpu_check: setup failed" >&2; exit 1; }
timeout 400 ninja -C "$BUILD" cbc cbc-gpu-check || { echo "gpu_check: build failed" >&2; exit 1; }
echo "gpu_check: built in $(( $(date +%s) - start )) s"

out="$BUILD/gpu-check"
mkdir -p "$out/fixtures"
: > "$out/report.txt"
CONFIG=${CONFIG:-test/configs/published/llama-3.1-8b.json}
status=0
if [ "$ONLY_LAUNCH_TIMES" = 0 ]; then
for cfg in test/parity/fixtures/*/config.json; do
  fam=$(basename "$(dirname "$cfg")")
  "$BUILD/bin/cbc" compile "$cfg" -o "$out/fixtures/$fam.fb" --target sm_90,sm_80 --kernel-cache "$out/kernels" --quiet || exit 1
done
"$BUILD/bin/cbc" compile "$CONFIG" -o "$out/bench.fb" --target sm_90,sm_80 --kernel-cache "$out/kernels" --quiet || exit 1
STATE_CONFIG=${STATE_CONFIG:-test/configs/bench/qwen3-next-80b-a3b-8layers.json}
"$BUILD/bin/cbc" compile "$STATE_CONFIG" -o "$out/bench-states.fb" --target sm_90,sm_80 --kernel-cache "$out/kernels" --quiet || exit 1
# DeepSeek-V3's shapes (MLA with a 576-value latent row, 256 experts, top 8 in 4 of 8 groups)
# cut to 4 layers (1 dense, 3 MoE: about 72 GB of bf16 weights) to fit one H200.
MLA_CONFIG=${MLA_CONFIG:-test/configs/bench/deepseek-v3-4layers.json}
"$BUILD/bin/cbc" compile "$MLA_CONFIG" -o "$out/bench-mla.fb" --target sm_90,sm_80 --kernel-cache "$out/kernels" --quiet || exit 1
# Kimi-Linear-48B-A3B's shapes (32 KDA heads of 128, NoPE MLA, 256 experts, top 8) cut to 4 layers
# (3 KDA, 1 MLA; 1 dense, 3 MoE: about 13 GB of bf16 weights).
KDA_CONFIG=${KDA_CONFIG:-test/configs/bench/kimi-linear-48b-a3b-4layers.json}
"$BUILD/bin/cbc" compile "$KDA_CONFIG" -o "$out/bench-kda.fb" --target sm_90,sm_80 --kernel-cache "$out/kernels" --quiet || exit 1

left=$(( 480 - ($(date +%s) - start) ))
timeout $(( left > 60 ? left - 30 : 30 )) "$BUILD/bin/cbc-gpu-check" "$out/fixtures" "$out/bench.fb" "$out/bench-states.fb" "$out/bench-mla.fb" "$out/bench-kda.fb" | tee "$out/report.txt"
status=${PIPESTATUS[0]}
else
  "$BUILD/bin/cbc" compile "$CONFIG" -o "$out/bench.fb" --target sm_90,sm_80 --kernel-cache "$out/kernels" --quiet || exit 1
fi

# Measured per-launch times beside the roofline (bench/README.md), one model at a time.
MOE_CONFIG=${MOE_CONFIG:-test/configs/published/qwen3-30b-a3b.json}
"$BUILD/bin/cbc" compile "$MOE_CONFIG" -o "$out/bench-moe.fb" --target sm_90,sm_80 --kernel-cache "$out/kernels" --quiet || exit 1
for model in bench bench-moe; do
  left=$(( 480 - ($(date +%s) - start) ))
  if [ "$left" -lt 150 ]; then
    echo "gpu_check: no time left to profile $model.fb launch by launch"
    continue
  fi
  if timeout $(( left - 100 )) "$BUILD/bin/cbc-gpu-check" --launch-times "$out/$model.launches.csv" "$out/$model.fb"; then
    python3 bench/roofline.py "$out/$model.fb" --cbc "$BUILD/bin/cbc" --measured "$out/$model.launches.csv" | tee -a "$out/report.txt"
  fi
done

left=$(( 480 - ($(date +%s) - start) ))
if [ "$ONLY_LAUNCH_TIMES" = 0 ] && [ "$left" -gt 90 ] && python3 -c 'import torch, transformers; assert torch.cuda.is_available()' 2>/dev/null; then
  echo "gpu_check: transformers generate_batch on the same workload (concurrency 256)"
  timeout $(( left - 20 )) python3 tools/gpu_check/hf_generate_batch.py "$CONFIG" 256 512 128 | tee -a "$out/report.txt"
  cbc=$(grep -o 'CBC_THROUGHPUT_256_[a-z0-9_]* [0-9.]*' "$out/report.txt" | head -1 | awk '{print $2}')
  hf=$(grep -o 'HF_THROUGHPUT_256 [0-9.]*' "$out/report.txt" | awk '{print $2}')
  if [ -n "$cbc" ] && [ -n "$hf" ]; then
    echo "cbc / transformers generate_batch throughput at 256 concurrent requests: $(echo "$cbc / $hf" | bc -l | cut -c1-6)x"
  fi
elif [ "$ONLY_LAUNCH_TIMES" = 0 ]; then
  echo "gpu_check: torch/transformers with CUDA not available or no time left; skipping the generate_batch comparison"
fi
# Speculative decoding on the GPU: the trained example model, greedy, one request at a time, with
# and without prompt lookup: both must give transformers' tokens (the kjv fixture), and the
# tokens/s of each and the acceptance are printed.
left=$(( 480 - ($(date +%s) - start) ))
if [ "$ONLY_LAUNCH_TIMES" = 0 ] && [ "$left" -gt 60 ]; then
  "$BUILD/bin/cbc" compile examples/kjv-llama/config.json -o "$out/kjv.fb" --target sm_90,sm_80 --kernel-cache "$out/kernels" --quiet || status=1
  python3 test/lit/Inputs/greedy-fixture.py prompts examples/kjv-llama/transformers_greedy.json > "$out/kjv.jsonl"
  for spec in off ngram; do
    flags=(); [ "$spec" = ngram ] && flags=(--speculative ngram --num-speculative-tokens 4)
    timeout 120 "$BUILD/bin/cbc" run "$out/kjv.fb" --weights examples/kjv-llama --backend cuda --max-requests 1 \
      --prompts "$out/kjv.jsonl" "${flags[@]}" > "$out/kjv-$spec.out" 2> "$out/kjv-$spec.err" || status=1
    { echo "gpu_check: speculative $spec: $(python3 test/lit/Inputs/greedy-fixture.py compare examples/kjv-llama/transformers_greedy.json "$out/kjv-$spec.out" 2>&1 | tail -1)"
      echo "  $(grep -m1 'tok/s' "$out/kjv-$spec.err")"
      grep -m1 'speculative decoding' "$out/kjv-$spec.err"; } | tee -a "$out/report.txt"
  done
fi
# Tensor parallelism: with two GPUs or more, the tensor-parallel parity suites (mpiexec: the CPU
# backend, and the CUDA backend's kernels under emulation), then the bench model on the GPUs: one
# GPU, then --tp 2 over NCCL (one rank a GPU), the same prompts greedy. Random bf16 weights: the
# ranks' row-parallel sums round differently from one GPU's, so the report gives the share of
# requests whose tokens agree and each run's throughput rather than asserting equality.
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
if [ "$ONLY_LAUNCH_TIMES" = 0 ] && [ "${gpus:-0}" -ge 2 ] && command -v mpiexec >/dev/null; then
  echo "gpu_check: $gpus GPUs: tensor parallelism"
  timeout 900 ninja -C "$BUILD" cbc-tp-tests cbc-tp-simt-tests && (cd "$BUILD" && timeout 900 ctest -R 'tp-(parity|simt)-2' --output-on-failure) || status=1
  "$BUILD/bin/cbc" compile "$CONFIG" --tp 2 -o "$out/bench-tp2.fb" --target sm_90,sm_80 --kernel-cache "$out/kernels" --quiet || status=1
  python3 -c 'import json
for i in range(64): print(json.dumps([1 + (i * 37 + j * 11) % 1000 for j in range(64)]))' > "$out/tp.jsonl"
  timeout 300 "$BUILD/bin/cbc" run "$out/bench.fb" --random-weights --backend cuda --prompts "$out/tp.jsonl" \
    --max-new-tokens 64 > "$out/tp1-gpu.out" 2> "$out/tp1-gpu.err" || status=1
  if timeout 300 mpiexec -n 2 "$BUILD/bin/cbc" run "$out/bench-tp2.fb" --random-weights --backend cuda \
       --prompts "$out/tp.jsonl" --max-new-tokens 64 > "$out/tp2-gpu.out" 2> "$out/tp2-gpu.err"; then
    agree=$(python3 -c 'import json, sys
runs = [{r["index"]: r["tokens"] for r in map(json.loads, open(f))} for f in sys.argv[1:]]
print(sum(runs[1].get(i) == t for i, t in runs[0].items()), "of", len(runs[0]))' "$out/tp1-gpu.out" "$out/tp2-gpu.out")
    { echo "gpu_check: --tp 2 over NCCL served; requests with one GPU's tokens: $agree"
      echo "  one GPU: $(grep -i 'tok/s\|tokens/s' "$out/tp1-gpu.err" | tail -1)"
      echo "  --tp 2:  $(grep -i 'tok/s\|tokens/s' "$out/tp2-gpu.err" | tail -1)"; } | tee -a "$out/report.txt"
  else
    echo "gpu_check: --tp 2 on the CUDA backend failed: $(grep -m1 error "$out/tp2-gpu.err")" | tee -a "$out/report.txt"
    status=1
  fi
fi
echo "gpu_check: done in $(( $(date +%s) - start )) s"
exit "$status"
