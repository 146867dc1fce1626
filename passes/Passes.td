//===- Passes.td - cbc passes --------------------------------------------*- tablegen -*-===//

#ifndef CBC_PASSES_TD
#define CBC_PASSES_TD

include "mlir/Pass/PassBase.td"

def CbcPlanCache : Pass<"cbc-plan-cache", "::mlir::ModuleOp"> {
  let summary = "Plans the paged cache from the rows each layer declares.";
  let description = [{
    Every `cbc.kv.append` declares the rows its layer keeps per token (`k` and `v`, with their
    widths) and its retention (all tokens, the last `window` tokens, or the current `chunk`).
    Layers with the same retention share block tables and form one group. Every
    `cbc.state.*` op declares a fixed-size per-request state by name (`conv [C, K-1]`,
    `recurrent [Hv, dk, dv]`, ...), kept in fp32 in a slot per live request. The pass assigns
    `group` to every `cbc.kv.*` op and records the plan in the module attribute
    `cbc.cache_plan`: the block size, per group its retention, layers and bytes per token at the
    cache dtype, and the states with their bytes per request.
  }];
  let options = [
    Option<"kvDtype", "kv-dtype", "std::string", /*default=*/"\"bf16\"",
           "Element type of the cache: bf16, f16 or f32">,
    Option<"blockSize", "block-size", "int64_t", /*default=*/"16",
           "Tokens per cache block">,
  ];
}

def CbcSchedule : Pass<"cbc-schedule", "::mlir::ModuleOp"> {
  let summary = "Orders the step program and plans its activation buffers.";
  let description = [{
    Checks that the step is a straight-line program whose cache reads follow the writes of the
    same layer, numbers its instructions, and packs every activation into one arena by liveness.
    Activations have a row class: per token (`T` rows) or per request (`R` rows, after
    `cbc.rows.gather`). Each class gets one arena; offsets are in 4-byte elements per row, so a
    backend sizes the arena as `row_elems * max_rows`. Results carry `cbc.buffers`
    (`[class, offset]` per result) and the module carries `cbc.arena`.
  }];
}

def CbcFuseAddNorm : Pass<"cbc-fuse-add-norm", "::mlir::ModuleOp"> {
  let summary = "Fuses each residual add with the RMS norm that reads it.";
  let description = [{
    `%s = cbc.math.add %a, %b` followed by a whole-row `cbc.math.rms_norm %s` becomes one
    `cbc.math.add_rms_norm` producing both the sum (still the residual stream) and the
    normalised rows: one kernel and one pass over the activations instead of two.
  }];
}

def CbcFuseAttentionInputs : Pass<"cbc-fuse-attention-inputs", "::mlir::ModuleOp"> {
  let summary = "Fuses the attention prologue into cbc.kv.rope_append.";
  let description = [{
    The chain `cbc.math.split` of a fused q|k|v row, optional per-head `cbc.math.rms_norm` of
    q and k, `cbc.math.rope` of q and k with the same schedule, and the `cbc.kv.append` of the
    rotated k and v becomes one `cbc.kv.rope_append`, which writes the cache and returns the
    rotated q. Run after `cbc-plan-cache`.
  }];
}

#endif
