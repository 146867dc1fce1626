//===- Passes.td - cbc passes --------------------------------------------*- tablegen -*-===//

#ifndef CBC_PASSES_TD
#define CBC_PASSES_TD

include "mlir/Pass/PassBase.td"

defvar Cbc_StorageTypeValues = [{::llvm::cl::values(
    clEnumValN(::cbc::StorageType::bf16, "bf16", "bfloat16"),
    clEnumValN(::cbc::StorageType::f16, "f16", "float16"),
    clEnumValN(::cbc::StorageType::f32, "f32", "float32"))}];

def CbcSelectWeightFormats : Pass<"cbc-select-weight-formats", "::mlir::ModuleOp"> {
  let dependentDialects = ["::cbc::CbcDialect"];
  let summary = "Chooses per quantised weight: dequantise it at load or run it quantised.";
  let description = [{
    The front end types each weight the checkpoint stores quantised with its format
    (`#cbc.quant`); this pass chooses, per weight, from the format and the kernels the target
    has. No backend runs a quantised format yet, so every such weight is dequantised at load:
    its type becomes the plain element type, and the loader is told what it cannot see from the
    tensors' dtypes. An MXFP4 weight gets `dequant = mxfp4` (each part names a
    `[blocks, scales]` pair). A block-scaled FP8 weight needs nothing per weight: the loader
    dequantises every F8_E4M3 tensor of a model whose `#cbc.model` says `quantization = "fp8"`
    with the weight's block as `fp8_block`, which the pass checks. Passes after it see only
    plain types.
  }];
}

class CbcShardPass<string name, string what> : Pass<name, "::mlir::ModuleOp"> {
  let dependentDialects = ["::cbc::CbcDialect"];
  let options = [
    Option<"ranks", "ranks", "int64_t", /*default=*/"1", "Ranks of the tensor-parallel group (1: nothing to do)">,
  ];
}

def CbcShardAttention : CbcShardPass<"cbc-shard-attention", "attention"> {
  let summary = "Divides each attention layer's heads among the ranks.";
  let description = [{
    For `ranks = N > 1`, every attention layer in the plain form (a fused q|k|v `cbc.math.linear`,
    a `cbc.math.split`, per-head ops such as RoPE and q/k norms, the layer's `cbc.kv.append` and
    `cbc.kv.attention`, then the output linear) becomes one rank's part: the fused projection is
    column-parallel (its weight `#cbc.shard` keeps the rank's q, k and v heads), the cache and
    the attention see `num_heads / N` heads and `num_kv_heads / N` KV heads (one KV head copied
    to `N / num_kv_heads` ranks when the ranks outnumber them), and the output linear is
    row-parallel: its partial product is summed by a `cbc.comm.all_reduce`, which adds the
    output bias once. Run before `cbc-plan-cache`, which then plans one rank's cache. A size
    that does not divide the heads (nor, for KV heads, is divided by them) is an error listing
    the sizes the model takes. Layers in other forms (latent attention, ALiBi, relative
    biases, shared caches) stay whole on every rank, which is correct, only not divided.
  }];
}

def CbcShardMlp : CbcShardPass<"cbc-shard-mlp", "mlp"> {
  let summary = "Divides each dense MLP's intermediate features among the ranks.";
  let description = [{
    For `ranks = N > 1`, an up (or fused gate|up) `cbc.math.linear` read only by a
    `cbc.math.glu` or `cbc.math.act`, read only by a down linear, becomes one rank's part: the
    up projection keeps the rank's `I / N` gate and up rows (halves) or its block of rows
    (interleaved pairs, ungated), the down projection the same columns, and a
    `cbc.comm.all_reduce` sums the partial products (adding the down bias once). An `I` the
    size does not divide is an error listing the sizes the model takes.
  }];
}

def CbcShardExperts : CbcShardPass<"cbc-shard-experts", "experts"> {
  let summary = "Divides each MoE layer's experts, or their features, among the ranks.";
  let description = [{
    For `ranks = N > 1`: with `expert-parallel`, rank `r` holds experts `r * E / N` onwards
    (`expert_ranks = N` on `cbc.moe.experts`, which skips the other ranks' ids); otherwise
    every expert's intermediate features are divided as a dense MLP's (layers with a down bias
    or identity experts stay whole: their terms would be added on every rank). Either way a
    `cbc.comm.all_reduce` sums the ranks' partial results. Every rank sees every token (the
    attention before it is replicated or reduced), so no all-to-all is needed: the partial
    sums are combined in the same all-reduce form as vLLM's all-gather/reduce-scatter
    backend.
  }];
  let options = [
    Option<"ranks", "ranks", "int64_t", /*default=*/"1", "Ranks of the tensor-parallel group (1: nothing to do)">,
    Option<"expertParallel", "expert-parallel", "bool", /*default=*/"false", "Divide by experts (EP), not by features">,
  ];
}

def CbcShardRecurrent : CbcShardPass<"cbc-shard-recurrent", "recurrent"> {
  let summary = "Divides gated-delta, KDA and mLSTM heads and WKV channels, and their states, among the ranks.";
  let description = [{
    For `ranks = N > 1`, a gated-delta mixer in the plain form (input linears split into the
    conv's q|k|v, the output norm's gate z, a and b; a depthwise `cbc.state.conv1d` and a
    split into q, k, v; `cbc.state.gated_delta`; `cbc.math.rms_norm_gated` per value head; the
    output linear) keeps on each rank `Hk / N` key heads with their value heads (a key head
    copied to `N / Hk` ranks when the ranks outnumber them): the input linears' rows of each
    part (q, k, v, z, a, b cut each on its own), the conv's channels, `A_log` and `dt_bias`,
    and the output's columns, summed by a `cbc.comm.all_reduce`. The conv and recurrent states
    become one rank's, so each rank keeps `1/N` of them. A size that does not divide the value
    heads, or neither divides nor is divided by the key heads, is an error listing the sizes
    the model takes. An mLSTM layer in the plain form (one linear split into q | k | v | o,
    another soft-capped and split into the two gates; `cbc.state.mlstm`; a
    `cbc.math.layer_norm` per head; sigmoid(o) times it; the output linear) keeps `H / N`
    heads: those heads' rows of every part of both linears (the gates' bias too), of the norm's
    weight, and the output's columns, summed by a `cbc.comm.all_reduce`; `N` must divide `H`.
    RWKV's time mix in the plain form (k and v each from its own linear, r the sigmoid of
    another, `cbc.state.wkv`, r times it, the output linear) keeps `C / N` channels: the three
    linears' rows, `time_decay` and `time_first`, the output's columns; `N` must divide `C`.
    A KDA mixer in the plain form (one linear split into q|k|v through a depthwise conv, f, b and
    g, f and g straight or through a low-rank second linear; `cbc.state.kda`; the gated RMS norm
    per head; the output linear) keeps `H / N` heads: their rows of q, k, v and b (and of f and g,
    or of their second projections, the first ones whole), the conv's channels, `A_log` and
    `dt_bias`, the output's columns; `N` must divide `H`. `cbc.state.ssd`,
    `cbc.state.selective_scan`, `cbc.state.lightning` (its norm spans every head) and
    `cbc.state.rg_lru` (its block-diagonal gates) mixers are not divided yet: they stay whole on
    every rank.
  }];
}

def CbcShardVocab : CbcShardPass<"cbc-shard-vocab", "vocab"> {
  let summary = "Divides the LM head's and the embedding's vocabulary among the ranks.";
  let description = [{
    For `ranks = N > 1`, the linear the step's logits come from (through a softcap or an
    activation) keeps the rank's `V / N` rows, and a `cbc.comm.all_gather` joins the ranks'
    logits: exact, nothing is summed. A token embedding keeps the rank's `V / N` rows too
    (`vocab_ranks = N`: zeros for the other ranks' ids), and a `cbc.comm.all_reduce` adds the
    one non-zero row of each token: exact as well. A vocabulary `N` does not divide, an
    embedding with an offset or an `oov_row`, or a table of positions, stays whole. A hashed
    n-gram table (`cbc.state.ngram_embed`) keeps `width / N` columns of every row: each rank
    looks up its columns of every head, a `cbc.comm.all_gather` joins them and a split and a
    concat put the heads back in order (a width `N` does not divide stays whole).
    The pass records `cbc.ranks = N` on the module, which the artefact keeps.
  }];
}

def CbcPlanCache : Pass<"cbc-plan-cache", "::mlir::ModuleOp"> {
  let dependentDialects = ["::cbc::CbcDialect"];
  let summary = "Plans the paged cache from the rows each layer declares.";
  let description = [{
    Every `cbc.kv.append` declares the rows its layer keeps per token (`k` and `v`, with their
    widths) and its retention (`#cbc.retention<all>`, a window or the current chunk). Layers
    with the same retention share block tables and form one paged group. Every op with
    `StatefulOpInterface` declares a fixed-size per-request state by name (`conv [C, K-1]`,
    `recurrent [Hv, dk, dv]`, ...), kept in fp32; all of them form the state group, one unit of
    which is a snapshot of every state of a request. The pass assigns `group` to every
    `cbc.kv.*` op and records the plan in the module attribute
    `cbc.cache_plan = #cbc.cache_plan<...>`: the block size, the groups (per paged group its
    retention, layers and bytes per token at the cache dtype; the state group's layers and
    bytes per unit), the attention layers' rows and the states with their bytes.
  }];
  let options = [
    Option<"kvDtype", "kv-dtype", "::cbc::StorageType", /*default=*/"::cbc::StorageType::bf16",
           "Element type of the cache", Cbc_StorageTypeValues>,
    Option<"blockSize", "block-size", "int64_t", /*default=*/"16",
           "Tokens per cache block">,
  ];
}

def CbcFuseAttentionInputs : Pass<"cbc-fuse-attention-inputs", "::mlir::ModuleOp"> {
  let dependentDialects = ["::cbc::CbcDialect"];
  let summary = "Fuses the attention prologue into cbc.kv.rope_append.";
  let description = [{
    The chain `cbc.math.split` of a fused q|k|v row, optional per-head `cbc.math.rms_norm` of
    q and k, `cbc.math.rope` of q and k with the same `#cbc.rope` schedule, and the
    `cbc.kv.append` of the rotated k and v becomes one `cbc.kv.rope_append`, which writes the
    cache and returns the rotated q. Run after `cbc-plan-cache`.
  }];
}

def CbcFuseAddNorm : Pass<"cbc-fuse-add-norm", "::mlir::ModuleOp"> {
  let dependentDialects = ["::cbc::CbcDialect"];
  let summary = "Fuses each residual add with the RMS norm that reads it.";
  let description = [{
    `%s = cbc.math.add %a, %b` followed by a whole-row `cbc.math.rms_norm %s` becomes one
    `cbc.math.add_rms_norm` producing both the sum (still the residual stream) and the
    normalised rows: one kernel and one pass over the activations instead of two.
  }];
}

def CbcAssignDeviceTypes : Pass<"cbc-assign-device-types", "::mlir::ModuleOp"> {
  let dependentDialects = ["::cbc::CbcDialect"];
  let summary = "Gives every value of the step the element type the device holds it in.";
  let description = [{
    Rewrites the element type of every result: activations take the activation type and
    weights keep their `cbc.weight.ref` element type; the step's metadata is i32 and the logits
    leave the device in f32. Some values stay f32 where rounding them would change a discrete
    choice or round twice:
    * router logits and a router bias (two experts a few thousandths apart round to one bf16
      value and the choice flips; cuBLASLt adds a bias of the output's type), before and after
      a soft cap on them;
    * the q|k|v input of `cbc.kv.rope_append` when a kernel rather than a GEMM makes it (the
      fused prologue would otherwise round k once more than `cbc.kv.append` does);
    * the input of a final logit softcap;
    * the query and head weights of `cbc.kv.index_select` (its scores choose keys, like a router's);
    * a router's mixing weights, and whatever weights `cbc.moe.experts` and
      `cbc.moe.slot_linear` mix with (a learned scale applied to the router's, say): their
      kernels read them as f32;
    * a hyper-connection's coefficients (`cbc.stream.hc_weights`): its projected input, its
      base and scale, and its result, which transformers computes in f32 in every dtype.
    A weight held in f32 this way keeps the type the front end declared in `declared`, for the
    artefact's weight manifest. The program's semantics stay f32 (the artefact's program records
    f32 activations); the device types are what the CUDA code generation reads.
  }];
  let options = [
    Option<"activationDtype", "activation-dtype", "::cbc::StorageType",
           /*default=*/"::cbc::StorageType::bf16", "Element type of activations on the device",
           Cbc_StorageTypeValues>,
  ];
}

def CbcScheduleStep : Pass<"cbc-schedule-step", "::mlir::ModuleOp"> {
  let dependentDialects = ["::cbc::CbcDialect"];
  let summary = "Orders the step program and plans its activation buffers.";
  let description = [{
    Checks that the step is a straight-line program whose cache reads follow the writes of the
    same layer, numbers its instructions, and packs every activation into one arena by liveness.
    Activations have a row class: per token (`T` rows) or per request (`R` rows, after
    `cbc.rows.gather`). Each class gets one arena; offsets are in 4-byte elements per row
    whatever the value's element type (a bf16 value fills half the space planned for it), so a
    backend sizes the arena as `row_elems * max_rows`. Results carry `cbc.buffers`
    (`[class, offset]` per result) and the module carries `cbc.arena = #cbc.arena<...>`.
  }];
}

#endif
