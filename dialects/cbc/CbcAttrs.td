//===- CbcAttrs.td - parameter bundles of the cbc dialect -----------*- tablegen -*-===//
//
// Attributes with typed fields and their own verifiers: what two ops share (a RoPE schedule,
// a cache layer's retention) is one attribute, compared as one value, and what the planner
// decides (the cache plan, the arena) is checked when it is built or parsed.
//
//===----------------------------------------------------------------------------------===//

#ifndef CBC_ATTRS_TD
#define CBC_ATTRS_TD

include "dialects/cbc/CbcEnums.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/TensorEncoding.td"

// A bracketed list of integers: `[0, 1, 2]`.
class Cbc_IntListParameter<string desc> : ArrayRefParameter<"int64_t", desc> {
  let parser = [{ [&]() -> ::mlir::FailureOr<::llvm::SmallVector<int64_t>> {
    ::llvm::SmallVector<int64_t> values;
    if ($_parser.parseCommaSeparatedList(::mlir::AsmParser::Delimiter::Square, [&]() {
          return $_parser.parseInteger(values.emplace_back());
        }))
      return ::mlir::failure();
    return values;
  }() }];
  let printer = [{ $_printer << '['; ::llvm::interleaveComma($_self, $_printer); $_printer << ']'; }];
  let defaultValue = "::llvm::SmallVector<int64_t>()";
  let comparator = "::llvm::equal($_lhs, $_rhs)";
}

// A bracketed list of attributes of one kind: `[#cbc.cache_row<"k", 8>, ...]`.
class Cbc_AttrListParameter<string attr, string desc> : ArrayRefParameter<attr, desc> {
  let parser = [{ [&]() -> ::mlir::FailureOr<::llvm::SmallVector<}] # attr # [{>> {
    ::llvm::SmallVector<}] # attr # [{> values;
    if ($_parser.parseCommaSeparatedList(::mlir::AsmParser::Delimiter::Square, [&]() {
          return $_parser.parseAttribute(values.emplace_back());
        }))
      return ::mlir::failure();
    return values;
  }() }];
  let printer = [{ $_printer << '['; ::llvm::interleaveComma($_self, $_printer); $_printer << ']'; }];
  let defaultValue = "::llvm::SmallVector<" # attr # ">()";
  let comparator = "::llvm::equal($_lhs, $_rhs)";
}

// A double, printed exactly (shortest round-trip form) and stored as an APFloat, which MLIR
// knows how to hash.
class Cbc_F64Parameter<string default = ""> : APFloatParameter<"a double"> {
  let parser = [{ [&]() -> ::mlir::FailureOr<::llvm::APFloat> {
    double value;
    if ($_parser.parseFloat(value))
      return ::mlir::failure();
    return ::llvm::APFloat(value);
  }() }];
  let printer = [{ $_printer << $_self.convertToDouble() }];
  let defaultValue = !if(!empty(default), "", "::llvm::APFloat(" # default # ")");
}

// An f32 array printed in full, `array<f32: ...>`: the stripped form rounds to seven digits, and a
// schedule must survive a round trip through text exactly.
class Cbc_F32ArrayParameter<string desc, string default = ""> :
    AttrParameter<"::mlir::DenseF32ArrayAttr", desc> {
  let defaultValue = default;
  let parser = [{ [&]() -> ::mlir::FailureOr<::mlir::DenseF32ArrayAttr> {
    ::mlir::DenseF32ArrayAttr value;
    if ($_parser.parseAttribute(value))
      return ::mlir::failure();
    return value;
  }() }];
  let printer = [{ $_printer.printAttribute($_self) }];
}

def Cbc_RopeAttr : Cbc_Attr<"Rope", "rope"> {
  let summary = "A rotary position embedding schedule.";
  let description = [{
    Rows hold heads of `head_dim` features. The `rotary_dim` features of every head from
    `rotary_offset` on (default 0: the first ones) are rotated by
    `angle = position * inv_freq[i]`; the rest pass through. `pairing = half` pairs
    feature `i` with `i + rotary_dim/2` (rotate_half); `interleaved` pairs `2i` with `2i+1`.
    `cos` and `sin` are multiplied by `attention_factor`.

    Length-dependent schedules are explicit and per token: a token at position `p` of a request
    whose prompt has `prompt_lens[r]` tokens sees the length `L = max(prompt_len, p + 1)`, the
    length a one-forward prefill followed by decoding sees. With `inv_freq_long`, tokens with
    `L > long_after` use the long frequencies. With `dynamic_base` set (non-zero), dynamic NTK
    rescales the base from `L` once it exceeds `dynamic_max_positions`, by `dynamic_factor`.

    Multimodal RoPE: with `sections` (one entry per frequency, `rotary_dim / 2` of them), a
    token has three positions (temporal, height, width: an image's grid) and frequency `i`
    turns by the position of component `sections[i]` (0, 1 or 2); the rotating op then reads
    the step argument `rope_positions`, all tokens' first components, then their second, then
    their third.

    ```mlir
    #cbc.rope<head_dim = 64, rotary_dim = 64, inv_freq = array<f32: 1.0, ...>>
    ```
  }];
  let parameters = (ins "int64_t":$head_dim, "int64_t":$rotary_dim,
                        Cbc_EnumParameter<Cbc_RopePairing, "half">:$pairing,
                        Cbc_F32ArrayParameter<"inverse frequencies">:$inv_freq,
                        Cbc_F64Parameter<"1.0">:$attention_factor,
                        Cbc_F32ArrayParameter<"long-context inverse frequencies",
                                              "::mlir::DenseF32ArrayAttr()">:$inv_freq_long,
                        DefaultValuedParameter<"int64_t", "0">:$long_after,
                        Cbc_F64Parameter<"0.0">:$dynamic_base,
                        Cbc_F64Parameter<"0.0">:$dynamic_factor,
                        DefaultValuedParameter<"int64_t", "0">:$dynamic_max_positions,
                        Cbc_IntListParameter<"the position component each frequency reads">:$sections,
                        DefaultValuedParameter<"int64_t", "0">:$rotary_offset);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Cbc_ClampedSwigluAttr : Cbc_Attr<"ClampedSwiglu", "clamped_swiglu"> {
  let summary = "A gated unit with clamped inputs: (clamp(up) + up_offset) * g * sigmoid(alpha * g).";
  let description = [{
    The activation of a gated linear unit whose gate is clamped to `g = min(gate, limit)` and
    whose up input to `[-limit, limit]`; the result is `(up + up_offset) * g * sigmoid(alpha * g)`:
    the unit with the default offset 1 adds one to up; a plain clamped SwiGLU has offset 0 and alpha 1.
  }];
  let parameters = (ins Cbc_F64Parameter<>:$limit, Cbc_F64Parameter<>:$alpha, Cbc_F64Parameter<"1.0">:$up_offset);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Cbc_RouteGroupsAttr : Cbc_Attr<"RouteGroups", "route_groups"> {
  let summary = "Group-limited expert selection: only the experts of the best groups compete.";
  let description = [{
    The router's `E` experts form `count` groups of `E / count` consecutive experts. Each group
    is scored from its experts' selection scores (`top2_sum`: the sum of its two best, `max`: its
    best), the `keep` best groups are kept (ties: the lower group index), and every expert of
    the other groups gets the selection score `fill` (`neg_inf` or `zero`) before the top `k`
    are chosen.

    ```mlir
    #cbc.route_groups<count = 8, keep = 4, score = top2_sum, fill = neg_inf>
    ```
  }];
  let parameters = (ins "int64_t":$count, "int64_t":$keep, EnumParameter<Cbc_GroupScore>:$score,
                        EnumParameter<Cbc_GroupFill>:$fill);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Cbc_SoftcappedSwigluAttr : Cbc_Attr<"SoftcappedSwiglu", "softcapped_swiglu"> {
  let summary = "A gated unit with soft-capped inputs: cap_g(g) * sigmoid(g) * cap_u(up).";
  let description = [{
    The activation of a gated linear unit whose gate's linear factor and whose up input pass
    soft caps, `cap_c(z) = c * tanh(z / c)`, while the sigmoid reads the raw gate:
    `gate_cap * tanh(g / gate_cap) * sigmoid(g) * up_cap * tanh(up / up_cap)`.
  }];
  let parameters = (ins Cbc_F64Parameter<>:$gate_cap, Cbc_F64Parameter<>:$up_cap);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

// What a gated unit applies to its gate: an activation, or the clamped or soft-capped form.
def Cbc_GluActivation : AnyAttrOf<[Cbc_ActivationAttr, Cbc_ClampedSwigluAttr, Cbc_SoftcappedSwigluAttr]>;

def Cbc_RetentionAttr : Cbc_Attr<"Retention", "retention"> {
  let summary = "Which tokens a cache layer keeps: all, a window, the current chunk, or compressed windows.";
  let description = [{
    `#cbc.retention<all>` keeps every token. `#cbc.retention<window, N>` keeps a query at
    position `p` attending to keys `j > p - N`, and the cache frees blocks that leave the
    window. `#cbc.retention<chunk, N>` keeps keys with `j / N == p / N`.
    `#cbc.retention<compressed, N>` keeps one row per window of `N` positions: row `w` stands
    for positions `[w * N, (w + 1) * N)`, is written by the token at `(w + 1) * N - 1` (the
    others write nothing), and a query at `p` sees the rows `w < (p + 1) / N`, the windows
    complete at its position. The layer's rows are numbered by window, so a request of `P`
    positions holds `P / N` rows.
  }];
  let parameters = (ins EnumParameter<Cbc_RetentionKind>:$kind,
                        DefaultValuedParameter<"int64_t", "0">:$tokens);
  let assemblyFormat = "`<` $kind (`,` $tokens^)? `>`";
  let genVerifyDecl = 1;
  // Lets ops give the attribute a default value, a C++ expression.
  let constBuilderCall = "$0";
  let extraClassDeclaration = [{
    static RetentionAttr all(::mlir::MLIRContext *ctx) { return get(ctx, RetentionKind::all, 0); }
  }];
}

def Cbc_CacheRowAttr : Cbc_Attr<"CacheRow", "cache_row"> {
  let summary = "One row a cache layer keeps per token: its name and element count.";
  let parameters = (ins StringRefParameter<"the row's name">:$name, "int64_t":$elems);
  let assemblyFormat = "`<` $name `,` $elems `>`";
}

def Cbc_CacheLayerAttr : Cbc_Attr<"CacheLayer", "cache_layer"> {
  let summary = "The rows one attention layer keeps per token, and its group.";
  let parameters = (ins "int64_t":$layer, "int64_t":$group,
                        Cbc_AttrListParameter<"CacheRowAttr", "rows">:$rows);
  let assemblyFormat = "`<` struct(params) `>`";
}

def Cbc_CacheGroupAttr : Cbc_Attr<"CacheGroup", "cache_group"> {
  let summary = "Layers whose cache is kept together: one kind, one retention, one unit size.";
  let description = [{
    A `paged` group's layers share block tables and keep rows per token in blocks of the plan's
    block size (`bytes_per_token` for all of them together, at the cache dtype); its retention
    says which tokens they keep. A `static` group keeps rows the same way but writes them once
    per request (an encoder's output). The `state` group keeps the per-request states of its
    layers (the plan's `states`): one unit is one snapshot of all of them, `bytes_per_unit`
    bytes; its retention is unused. Groups come paged first, then static, then the state group.
  }];
  let parameters = (ins "int64_t":$id, Cbc_EnumParameter<Cbc_CacheKind, "paged">:$kind,
                        "RetentionAttr":$retention, Cbc_IntListParameter<"layers">:$layers,
                        DefaultValuedParameter<"int64_t", "0">:$bytes_per_token,
                        DefaultValuedParameter<"int64_t", "0">:$bytes_per_unit);
  let assemblyFormat = "`<` struct(params) `>`";
}

def Cbc_StateDeclAttr : Cbc_Attr<"StateDecl", "state_decl"> {
  let summary = "A fixed-size fp32 state a live request keeps for one layer.";
  let parameters = (ins "int64_t":$layer, StringRefParameter<"the state's name">:$name,
                        Cbc_IntListParameter<"shape">:$shape, "int64_t":$bytes);
  let assemblyFormat = "`<` struct(params) `>`";
}

def Cbc_CachePlanAttr : Cbc_Attr<"CachePlan", "cache_plan"> {
  let summary = "The cache's groups, layers and states, as cbc-plan-cache decided them.";
  let description = [{
    The block size and element type of the paged cache; the cache groups (see
    `#cbc.cache_group`); per attention layer its rows and group; the per-request states with
    their bytes, which the state group keeps.
  }];
  let parameters = (ins "int64_t":$block_size, EnumParameter<Cbc_StorageType>:$kv_dtype,
                        Cbc_AttrListParameter<"CacheGroupAttr", "groups">:$groups,
                        Cbc_AttrListParameter<"CacheLayerAttr", "layers">:$layers,
                        Cbc_AttrListParameter<"StateDeclAttr", "states">:$states);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Cbc_ShardAttr : Cbc_Attr<"Shard", "shard"> {
  let summary = "Which slice of a weight each rank of a tensor-parallel group holds.";
  let description = [{
    The assembled weight (every transform of `cbc.weight.ref` applied) is cut along dimension
    `dim` into consecutive segments of `segments` rows (their sum is the whole dimension); each
    segment `i` is cut into `pieces[i]` equal pieces, and rank `r` of the `ranks` ranks holds
    piece `r * pieces[i] / ranks` of every segment, the pieces concatenated in segment order.
    `pieces[i] = ranks` splits a segment evenly; a smaller divisor of `ranks` replicates each
    piece on `ranks / pieces[i]` neighbouring ranks (KV heads when the ranks outnumber them);
    `1` replicates the segment whole. A fused q|k|v projection is three segments, so each rank
    holds its own q, k and v heads together.

    ```mlir
    #cbc.shard<ranks = 2, dim = 0, segments = [64, 32, 32], pieces = [2, 2, 2]>
    ```
  }];
  let parameters = (ins "int64_t":$ranks, "int64_t":$dim,
                        Cbc_IntListParameter<"segments">:$segments,
                        Cbc_IntListParameter<"pieces">:$pieces);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    // The extent along `dim` one rank holds.
    int64_t rankExtent() const;
  }];
}

def Cbc_ArenaAttr : Cbc_Attr<"Arena", "arena"> {
  let summary = "The widths of the step's two activation arenas, in 4-byte elements per row.";
  let parameters = (ins "int64_t":$token_row_elems, "int64_t":$request_row_elems);
  let assemblyFormat = "`<` struct(params) `>`";
}

def Cbc_WeightAliasAttr : Cbc_Attr<"WeightAlias", "weight_alias"> {
  let summary = "Another spelling of checkpoint tensor names: `from` replaced by `to`.";
  let parameters = (ins StringRefParameter<"">:$from, StringRefParameter<"">:$to);
  let assemblyFormat = "`<` $from `,` $to `>`";
}

def Cbc_ModelAttr : Cbc_Attr<"Model", "model"> {
  let summary = "What the runtime needs to know about the model besides its step.";
  let parameters = (ins StringRefParameter<"">:$model_type,
                        StringRefParameter<"", "\"\"">:$outer_model_type,
                        "int64_t":$vocab_size, "int64_t":$hidden_size, "int64_t":$num_layers,
                        "int64_t":$max_positions,
                        Cbc_IntListParameter<"eos_token_ids">:$eos_token_ids,
                        DefaultValuedParameter<"int64_t", "-1">:$bos_token_id,
                        StringRefParameter<"">:$checkpoint_dtype,
                        StringRefParameter<"", "\"\"">:$quantization,
                        Cbc_IntListParameter<"fp8_block">:$fp8_block,
                        Cbc_AttrListParameter<"WeightAliasAttr", "weight_aliases">:$weight_aliases,
                        DefaultValuedParameter<"int64_t", "-1">:$injected_token);
  let description = [{
    `injected_token` (when not -1) is the token id the step reads at rows whose embeddings a
    request gives (a multimodal wrapper that looks its placeholders up as its pad id, which
    per-layer embeddings then see).

    `quantization` names a checkpoint format the loader undoes. With `"fp8"` (block-scaled
    e4m3 FP8), `fp8_block` is the `[rows, cols]` block of a weight that one element of its
    `weight_scale_inv` scales; which tensors are stored in FP8 is the checkpoint's to say, so
    the loader decides per tensor. The weights the front end expects in FP8 carry the same block
    in their `#cbc.quant` type. With `"ternary"`, a weight stored `U8` holds four ternary codes
    a byte (a BitLinear checkpoint) with a one-element `<name>_scale`, which the loader unpacks.
  }];
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Cbc_QuantAttr : Cbc_Attr<"Quant", "quant", [DeclareAttrInterfaceMethods<VerifiableTensorEncoding>]> {
  let summary = "A weight's quantised storage format: the encoding of its tensor type.";
  let description = [{
    A weight that the checkpoint stores quantised says so in its type, as a layout is part of a
    tensor's type: the element type stays the one its consumers compute in (what dequantising
    yields) and the encoding says how the elements are stored. `scheme` names the stored codes;
    each `block = [rows, cols]` tile of the last two dimensions shares one scale of type
    `scale` (tiles at the edges may be partial where the scheme allows).

    ```mlir
    tensor<32x5760x2880xbf16, #cbc.quant<mxfp4, block = [1, 32], scale = f8E8M0FNU>>
    tensor<4096x4096xbf16, #cbc.quant<fp8_e4m3, block = [128, 128], scale = f32>>
    ```

    `mxfp4` is OCP MXFP4: blocks of 32 codes along the last dimension with a power-of-two
    scale; each source part of the weight names its `[blocks, scales]` tensor pair. `fp8_e4m3`
    is block-scaled FP8 (e4m3fn codes): every checkpoint tensor the weight is assembled from is
    tiled by the block on its own, its scales kept beside it as `<name>_scale_inv`.

    The front end declares what the checkpoint's config announces; `cbc-select-weight-formats`
    then chooses per weight to dequantise it at load (the type becomes plain) or to keep it
    quantised for a kernel that reads the format.
  }];
  let parameters = (ins EnumParameter<Cbc_QuantScheme>:$scheme, Cbc_IntListParameter<"block">:$block,
                        "::mlir::Type":$scale);
  let assemblyFormat = "`<` $scheme `,` `block` `=` $block `,` `scale` `=` $scale `>`";
  let genVerifyDecl = 1;
}

#endif // CBC_ATTRS_TD
