"""The same workload served by transformers' own continuous batching (generate_batch), for the
ratio tools/gpu_check.sh prints. Random weights, bf16, the fastest attention available."""
import json, sys, time

import torch
from transformers import AutoConfig, AutoModelForCausalLM, GenerationConfig

config_path, concurrency, prompt_len, new_tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
cfg = AutoConfig.from_pretrained(config_path) if config_path.endswith("/") else AutoConfig.for_model(**json.load(open(config_path)))
attn = "sdpa"
try:
    import flash_attn  # noqa: F401
    attn = "flash_attention_2"
except ImportError:
    pass
torch.manual_seed(0)
with torch.device("cuda"):
    model = AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.bfloat16, attn_implementation=attn)
model.eval()
gen = torch.Generator().manual_seed(7)
inputs = [torch.randint(0, cfg.vocab_size, (prompt_len,), generator=gen).tolist() for _ in range(concurrency)]
gc = GenerationConfig(max_new_tokens=new_tokens, do_sample=False, eos_token_id=None, pad_token_id=0)
t0 = time.time()
out = model.generate_batch(inputs=inputs, generation_config=gc, progress_bar=False)
torch.cuda.synchronize()
elapsed = time.time() - t0
generated = sum(len(o.generated_tokens) for o in out.values())
print(f"HF_THROUGHPUT_{concurrency} {generated / elapsed:.3f}  ({attn}, {generated} tokens in {elapsed:.1f} s)")
