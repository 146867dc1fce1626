//===- CbcOps.td - cbc operations ---------------------------------------*- tablegen -*-===//

#ifndef CBC_OPS_TD
#define CBC_OPS_TD

include "dialects/cbc/CbcAttrs.td"
include "dialects/cbc/CbcInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/IR/OpBase.td"

//===----------------------------------------------------------------------------------===//
// Weights
//===----------------------------------------------------------------------------------===//

def Cbc_WeightGroup : OpDocGroup {
  let summary = "Weights";
  let description = "Program weights and how they are assembled from checkpoint tensors.";
}

let opDocGroup = Cbc_WeightGroup in {

def Cbc_WeightRefOp : Cbc_Op<"weight.ref", [Pure]> {
  let summary = "A program weight assembled from checkpoint tensors.";
  let description = [{
    Names one weight of the step program and says how it is assembled from the tensors of a
    Hugging Face checkpoint, by their HF names. `sources` is a list of parts; each part is a list
    of HF tensor names concatenated along dimension 0. `regroup = [outer, s0, s1, ...]` then
    views the leading `outer * (s0 + s1 + ...)` rows of each part as `outer` groups of segments
    `s0, s1, ...` and reorders them segment first (all groups' s0 rows, then all s1 rows, ...);
    later rows stay in place: checkpoints that interleave q/gate or q/k/v/z per head become
    contiguous blocks. With `combine = none` there is exactly one part; with `combine = stack`
    the parts are stacked along a new leading dimension (one part per expert). `transpose` swaps
    the last two dimensions of every part (checkpoints that store `x @ W` rather than `W x`).
    The loader checks every source's shape against the result; singleton dimensions may differ
    (a `[C, 1, K]` conv weight serves as `[C, K]`).

    A weight the checkpoint stores quantised has a `#cbc.quant` type: with `mxfp4` each part
    names two tensors, MXFP4 blocks `[E, R, G, 16]` and scales `[E, R, G]`.
    `cbc-select-weight-formats` dequantises such a weight at load by giving it the plain type
    and, where the loader cannot tell the format from the tensors' dtypes, a `dequant`
    transform: `dequant = mxfp4` has the loader expand each pair into the `[E, R, G * 32]`
    tensor it encodes, first of all. When `cbc-assign-device-types` holds a weight in a wider
    type than the front end declared (a router's bias in f32), `declared` keeps the declared
    element type, which the artefact's weight manifest records.

    Other transforms serve checkpoints whose layout differs from a plain concatenation:
    `block_diag = n` (with `combine = none`) views the concatenated part as a matrix
    `[R, C]` (leading dimensions flattened into rows), cuts it into `n` blocks of `R / n` rows and
    places them along the diagonal of a zero `[R, n * C]` matrix, before `regroup`: per-head
    projections or several low-rank adapters become one GEMM. `row_scales = [rows0, f0, rows1,
    f1, ...]` multiplies the first `rows0` rows of the assembled weight by `f0`, the next `rows1`
    by `f1`, and so on over all of its leading dimension, last of all: constant multipliers on a
    projection's output (or, on the weight only, its input) are folded in at load time.
    `flatten` (with `combine = none`) reads every source tensor as a matrix of its last
    dimension (leading dimensions flattened into rows), so that tensors of different ranks
    concatenate, and reads the assembled part in the result's shape (the element counts must
    agree): `[S, I, H]` shared-expert projections join `[E, 2I, H]` fused experts this way. With
    `transpose` too, the part is read in the result's shape with its last two dimensions
    swapped, then transposed: experts stored as `[E * I, H]` row blocks become `[E, H, I]`.

    Under tensor or expert parallelism (`cbc compile --tp N`) a `shard` (`#cbc.shard`) says
    which slice of the assembled weight each rank holds; the result type is one rank's slice,
    and the loader of rank `r` keeps only that slice.

    ```mlir
    %w = cbc.weight.ref "layers.0.gate_up" {
           sources = [["model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.up_proj.weight"]]}
           : tensor<256x64xbf16>
    ```
  }];
  let arguments = (ins StrAttr:$name, ArrayAttr:$sources,
                   DefaultValuedAttr<Cbc_WeightCombineAttr, "::cbc::WeightCombine::none">:$combine,
                   UnitAttr:$transpose,
                   OptionalAttr<Cbc_DequantAttr>:$dequant,
                   OptionalAttr<DenseI64ArrayAttr>:$regroup,
                   OptionalAttr<I64Attr>:$block_diag,
                   OptionalAttr<DenseF64ArrayAttr>:$row_scales,
                   UnitAttr:$flatten,
                   OptionalAttr<TypeAttrOf<AnyTypeOf<[BF16, F16, F32]>>>:$declared,
                   OptionalAttr<Cbc_ShardAttr>:$shard);
  let results = (outs Cbc_Weight:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let hasVerifier = 1;
}

} // Cbc_WeightGroup

//===----------------------------------------------------------------------------------===//
// Dense math
//===----------------------------------------------------------------------------------===//

def Cbc_MathGroup : OpDocGroup {
  let summary = "Dense math";
  let description = "Row-wise math on packed rows: GEMMs, norms, RoPE and elementwise ops.";
}

let opDocGroup = Cbc_MathGroup in {

def Cbc_EmbedOp : Cbc_Op<"math.embed", [Pure]> {
  let opcode = 0;
  let params = "EmbedParams";
  let summary = "Embedding gather by token or by position, with an optional offset and scale.";
  let description = [{
    `result[t] = table[tokens[t] + offset] * scale`. `tokens` is the step's token ids or its
    positions: learned absolute position embeddings are a table indexed by position, some
    starting `offset` rows in (some keep two rows before position 0). A scale that the
    checkpoint's own dtype rounds is rounded by the front end before it becomes `scale`. With
    `oov_row`, a token id at or past the table's rows reads that row instead: a table shorter
    than the vocabulary (per-layer embedding tables that skip a model's multimodal ids).

    With `vocab_ranks = N` (a vocabulary-parallel embedding, `cbc-shard-vocab`) the table is
    one rank's `V / N` rows: rank `r` holds ids `r * V / N` onwards and gives zeros for the
    others, so that a `cbc.comm.all_reduce` of the ranks' rows is exactly the whole lookup.
  }];
  let arguments = (ins Cbc_Index:$tokens, Cbc_Weight:$table,
                   DefaultValuedAttr<F64Attr, "1.0">:$scale,
                   DefaultValuedAttr<I64Attr, "0">:$offset,
                   OptionalAttr<I64Attr>:$oov_row,
                   DefaultValuedAttr<I64Attr, "1">:$vocab_ranks);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = "$tokens `,` $table attr-dict `:` type($tokens) `,` type($table) `->` type($result)";
  let hasVerifier = 1;
}

def Cbc_LinearOp : Cbc_Op<"math.linear", [Pure]> {
  let matrices = ["weight"];
  let opcode = 1;
  let summary = "Row-wise matrix product with a [N, K] weight and optional bias.";
  let description = [{
    `result[t, n] = sum_k x[t, k] * weight[n, k] + bias[n]`. This is the GEMM of the step; the
    CPU backend calls BLAS and the CUDA backend calls cuBLASLt.
  }];
  let arguments = (ins Cbc_Rows:$x, Cbc_Weight:$weight, Optional<Cbc_Weight>:$bias);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = "$x `,` $weight (`,` $bias^)? attr-dict `:` type(operands) `->` type($result)";
  let hasVerifier = 1;
}

def Cbc_RmsNormOp : Cbc_Op<"math.rms_norm", [Pure]> {
  let opcode = 2;
  let params = "NormParams";
  let summary = "RMS normalisation over groups of `group` features.";
  let description = [{
    Each row is split into groups of `group` features (the whole row by default; one head for
    q/k norms). Each group is scaled by `rsqrt(mean(x^2) + eps)` and multiplied by
    `weight + offset`; zero-centred norm weights use `offset = 1`. Without a weight the group is
    only normalised. The weight holds one entry per feature of a group (shared by the groups) or
    one per feature of the row (each residual stream normed on its own, with its own weights).
  }];
  let arguments = (ins Cbc_Rows:$x, Optional<Cbc_Weight>:$weight, F64Attr:$eps,
                   DefaultValuedAttr<F64Attr, "0.0">:$offset, OptionalAttr<I64Attr>:$group);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = "$x (`,` $weight^)? attr-dict `:` type(operands) `->` type($result)";
  let hasVerifier = 1;
}

def Cbc_LayerNormOp : Cbc_Op<"math.layer_norm", [Pure, AttrSizedOperandSegments]> {
  let opcode = 31;
  let params = "NormParams";
  let summary = "Layer normalisation over groups of `group` features, with an optional weight and bias.";
  let description = [{
    Each row is split into groups of `group` features (the whole row by default; one head for
    q/k norms), and each group becomes `(x - mean(x)) * rsqrt(var(x) + eps) * (weight + offset)
    + bias`, with the biased variance (the mean of the squared deviations), as
    `torch.nn.LayerNorm` computes it. The weight and the bias are optional (an absent weight is
    1, an absent bias 0): decoders norm with all three forms, and the sparse attention indexer's
    key norm has both. A bias comes only with a weight, so the operand list says which is which.
    Both hold one entry per feature of a group (shared by the groups) or one per feature of the
    row (a norm per head with its own weights). `offset = 1` serves weights stored as
    `weight - 1` (zero-centred LayerNorm weights).
  }];
  let arguments = (ins Cbc_Rows:$x, Optional<Cbc_Weight>:$weight, Optional<Cbc_Weight>:$bias, F64Attr:$eps,
                   DefaultValuedAttr<F64Attr, "0.0">:$offset, OptionalAttr<I64Attr>:$group);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = "$x (`,` $weight^)? (`,` $bias^)? attr-dict `:` type(operands) `->` type($result)";
  let hasVerifier = 1;
}

def Cbc_AddOp : Cbc_Op<"math.add", [Pure]> {
  let opcode = 3;
  let summary = "Elementwise sum (the residual add), or a learned row added to every row.";
  let description = [{
    `result = lhs + rhs`, for packed rows of the same shape. `rhs` may also be a weight of
    `[width]`, added to every row: a learned vector such as a recurrent stack's initial state. A
    weight of `[g]`, `g` dividing the width, adds entry `i` to the `width / g` columns of group
    `i` (one learned bias per head).
  }];
  let arguments = (ins Cbc_Rows:$lhs, AnyTypeOf<[Cbc_Rows, Cbc_Weight]>:$rhs);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` custom<RowsTypes>(type($lhs), type($rhs), type($result))";
  let hasVerifier = 1;
}

def Cbc_MulOp : Cbc_Op<"math.mul", [Pure]> {
  let opcode = 4;
  let summary = "Elementwise product, with one factor per row broadcast.";
  let description = [{
    `result = x * g`, where the width of `g` divides that of `x` (as cbc.math.gate: per element,
    per group of columns or, with width 1, per row). Gated convolutions multiply their
    projections this way. `g` may also be a weight of `[n]`, `n` dividing the width: entry `i`
    multiplies the `width / n` columns of group `i` (one element: a block's learned output
    scale; one per head: a learned key temperature; one per column: an affine scale).
  }];
  let arguments = (ins Cbc_Rows:$x, AnyTypeOf<[Cbc_Rows, Cbc_Weight]>:$g);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = "$x `,` $g attr-dict `:` type($x) `,` type($g) `->` type($result)";
  let hasVerifier = 1;
}

def Cbc_GateOp : Cbc_Op<"math.gate", [Pure]> {
  let opcode = 5;
  let summary = "Multiplies rows by a sigmoid gate.";
  let description = [{
    `result = x * sigmoid(g)`, where the width of `g` divides that of `x`: column `j` of a row
    reads gate `j / (width(x) / width(g))`, so `g` is per element, per head (Ling's attention
    output gate) or, with width 1, per row (shared-expert gates).
  }];
  let arguments = (ins Cbc_Rows:$x, Cbc_Rows:$g);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = "$x `,` $g attr-dict `:` type($x) `,` type($g) `->` type($result)";
  let hasVerifier = 1;
}

def Cbc_GluOp : Cbc_Op<"math.glu", [Pure]> {
  let opcode = 6;
  let params = "GluParams";
  let summary = "Gated linear unit over a fused [gate | up] row.";
  let description = [{
    Splits each row of width `2I` into gate and up halves (`layout = halves`) or alternating
    columns (`layout = interleaved`), and returns `act(gate) * up`. `act` is an activation
    (`#cbc.act<silu>`, ...) or `#cbc.clamped_swiglu<limit, alpha>`, which computes
    `(clamp(up, -limit, limit) + 1) * g * sigmoid(alpha * g)` with `g = min(gate, limit)`.
  }];
  let arguments = (ins Cbc_Rows:$x, Cbc_GluActivation:$act,
                   DefaultValuedAttr<Cbc_GluLayoutAttr, "::cbc::GluLayout::halves">:$layout);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
  let hasVerifier = 1;
}

def Cbc_SplitOp : Cbc_Op<"math.split", [Pure]> {
  let opcode = 7;
  let summary = "Splits rows into consecutive column blocks.";
  let description = [{
    Returns the column blocks of `x` in order; their widths must add up to the width of `x`.
    Used after a fused projection (q|k|v).
  }];
  let arguments = (ins Cbc_Rows:$x);
  let results = (outs Cbc_NonEmpty<Cbc_Rows>:$results);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($results)";
  let hasVerifier = 1;
}

def Cbc_ConcatOp : Cbc_Op<"math.concat", [Pure]> {
  let opcode = 8;
  let summary = "Concatenates rows column-wise.";
  let description = [{
    `result[t] = [x0[t] | x1[t] | ...]`: the inputs' columns side by side, in operand order; the
    result width is the sum of the input widths. The inverse of `cbc.math.split`: blocks that
    read the residual stream next to the original embeddings.
  }];
  let arguments = (ins Cbc_NonEmpty<Cbc_Rows>:$inputs);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs) `->` type($result)";
  let hasVerifier = 1;
}

def Cbc_RopeOp : Cbc_Op<"math.rope", [Pure, AttrSizedOperandSegments]> {
  let opcode = 9;
  let params = "RopeParams";
  let summary = "Rotary position embedding applied per head.";
  let description = [{
    Rotates every head of `x` by the schedule `rope` (see `#cbc.rope`) at each token's position,
    with the per-token length its schedule sees from `prompt_lens`. A schedule with `sections`
    (multimodal RoPE) reads each token's three positions from `section_positions`, the step
    argument `rope_positions`. With `freq_log_scale` (a weight of `rotary_dim / 2` learned
    log-scales, LeRoPE), frequency `i` is `inv_freq[i] * exp(freq_log_scale[i])` in fp32: the
    frequencies then depend on the checkpoint, not on config.json alone.
  }];
  let arguments = (ins Cbc_Rows:$x, Cbc_Index:$positions, Cbc_Index:$seq_ids,
                   Cbc_Index:$prompt_lens, Optional<Cbc_Index>:$section_positions,
                   Optional<Cbc_Weight>:$freq_log_scale, Cbc_RopeAttr:$rope);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = "$x `,` $positions `,` $seq_ids `,` $prompt_lens (`sections` $section_positions^ `:` type($section_positions))? (`freq_log_scale` $freq_log_scale^ `:` type($freq_log_scale))? attr-dict `:` type($x) `,` type($positions) `,` type($seq_ids) `,` type($prompt_lens) `->` type($result)";
  let hasVerifier = 1;
}

def Cbc_ActOp : Cbc_Op<"math.act", [Pure, SameOperandsAndResultShape]> {
  let opcode = 10;
  let params = "ActParams";
  let summary = "Elementwise activation, then a constant factor.";
  let description = [{
    `result = scale * act(x)`. Serves plain (ungated) MLPs and the constant multipliers on
    embeddings, residual branches and logits (`act = none`).
  }];
  let arguments = (ins Cbc_Rows:$x, Cbc_ActivationAttr:$act,
                   DefaultValuedAttr<F64Attr, "1.0">:$scale);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = "$x attr-dict `:` custom<RowsTypes>(type($x), type($result))";
  let hasVerifier = 1;
}

def Cbc_SoftcapOp : Cbc_Op<"math.softcap", [Pure, SameOperandsAndResultShape]> {
  let opcode = 11;
  let params = "SoftcapParams";
  let summary = "Logit soft-capping: cap * tanh(x / cap).";
  let description = [{ Applied to the final logits of models that cap them. }];
  let arguments = (ins Cbc_Rows:$x, F64Attr:$cap);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = "$x attr-dict `:` custom<RowsTypes>(type($x), type($result))";
  let hasVerifier = 1;
}

def Cbc_ClampOp : Cbc_Op<"math.clamp", [Pure, SameOperandsAndResultShape]> {
  let opcode = 33;
  let params = "ClampParams";
  let summary = "Clamps every element to [-limit, limit].";
  let description = [{
    `result = min(max(x, -limit), limit)`. Checkpoints trained with clipped projections apply it
    to the fused q/k/v rows before RoPE (`clip_qkv`).
  }];
  let arguments = (ins Cbc_Rows:$x, F64Attr:$limit);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = "$x attr-dict `:` custom<RowsTypes>(type($x), type($result))";
  let hasVerifier = 1;
}

def Cbc_XieluOp : Cbc_Op<"math.xielu", [Pure]> {
  let opcode = 34;
  let summary = "The xIELU activation, its parameters learned scalars.";
  let description = [{
    With `ap = softplus(alpha_p)` and `an = beta + softplus(alpha_n)`, each element becomes
    `ap * x^2 + beta * x` where `x > 0`, else `(expm1(min(x, eps)) - x) * an + beta * x`. The four
    parameters are one-element weights of the layer (Apertus learns `alpha_p` and `alpha_n` per
    MLP; `beta` and `eps`, normally 0.5 and -1e-6, are stored beside them).
  }];
  let arguments = (ins Cbc_Rows:$x, Cbc_Weight:$alpha_p, Cbc_Weight:$alpha_n, Cbc_Weight:$beta, Cbc_Weight:$eps);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = [{
    $x `,` $alpha_p `,` $alpha_n `,` $beta `,` $eps attr-dict `:` type($x) `,` type($alpha_p) `,` type($alpha_n) `,`
    type($beta) `,` type($eps) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Cbc_ActQuantOp : Cbc_Op<"math.act_quant", [Pure, SameOperandsAndResultShape]> {
  let opcode = 35;
  let summary = "Per-row symmetric int8 fake quantisation of activations (absmax).";
  let description = [{
    With `s = 127 / max(max_j |x[t, j]|, 1e-5)` per row, `result[t, j] = clamp(round(x[t, j] * s),
    -128, 127) / s`, rounding half to even. Linear layers over ternary weights (W1.58A8) quantise
    their input rows this way; the quantised values stay in float,
    exact multiples of `1 / s`, so the product that follows is the one the int8 kernel computes.
  }];
  let arguments = (ins Cbc_Rows:$x);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = "$x attr-dict `:` custom<RowsTypes>(type($x), type($result))";
}

def Cbc_MatchRmsOp : Cbc_Op<"math.match_rms", [Pure]> {
  let opcode = 40;
  let params = "MatchRmsParams";
  let summary = "Rescales each row to the root mean square of a reference row.";
  let description = [{
    `result[t] = x[t] * sqrt(mean_j ref[t, j]^2) / sqrt(max(mean_j x[t, j]^2, floor))`, both
    means in fp32 over their own rows. AltUp's extra residual streams start, and end, as
    projections of the main one brought to its magnitude this way.
  }];
  let arguments = (ins Cbc_Rows:$x, Cbc_Rows:$ref, DefaultValuedAttr<F64Attr, "1e-5">:$floor);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = "$x `,` $ref attr-dict `:` type($x) `,` type($ref) `->` type($result)";
  let hasVerifier = 1;
}

def Cbc_L2ClipOp : Cbc_Op<"math.l2_clip", [Pure]> {
  let opcode = 54;
  let params = "L2ClipParams";
  let summary = "Shortens each group of a row to at most a given L2 norm.";
  let description = [{
    `x` is cut into groups of `group` features (heads). Each group, first multiplied by `scale`
    where given (`[width]`, one factor per feature of the row), becomes
    `y * min(1, threshold / (|y|_2 + eps))`, in fp32: a group shorter than `threshold - eps`
    passes unchanged, a longer one comes out just under `threshold` long. Query, key and
    relative-state clips of an attention without norms use it.

    ```mlir
    %y = cbc.math.l2_clip %x scale(%s) {group = 16 : i64, threshold = 4.0 : f64}
           : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Cbc_Rows:$x, Optional<Cbc_Weight>:$scale, I64Attr:$group, F64Attr:$threshold,
                   DefaultValuedAttr<F64Attr, "1e-6">:$eps);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = "$x (`scale` `(` $scale^ `)`)? attr-dict `:` type(operands) `->` type($result)";
  let hasVerifier = 1;
}

def Cbc_GaussianTopkOp : Cbc_Op<"math.gaussian_topk", [Pure, SameOperandsAndResultShape]> {
  let opcode = 41;
  let params = "GaussianTopkParams";
  let summary = "Keeps each row's entries above a Gaussian quantile, shifted down to it.";
  let description = [{
    `result[t, j] = max(x[t, j] - (mean_t + multiplier * std_t), 0)`, the row's mean and
    population standard deviation in fp32. With `multiplier` the standard normal quantile of a
    target sparsity, a row drawn from a Gaussian keeps about `1 - sparsity` of its entries:
    activation-sparse MLPs apply it to the gate projection before the activation.
  }];
  let arguments = (ins Cbc_Rows:$x, F64Attr:$multiplier);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = "$x attr-dict `:` custom<RowsTypes>(type($x), type($result))";
  let hasVerifier = 1;
}

def Cbc_HeadPadOp : Cbc_Op<"math.head_pad", [Pure]> {
  let opcode = 42;
  let params = "HeadPadParams";
  let summary = "Widens every head by `width` features: one value, then zeros.";
  let description = [{
    `x` holds `heads` heads of `D` features; each is followed by `width` more, the first of them
    `extra[t, h]` (one per head) or, without `extra`, `value`, the others zero. A per-key score
    bias rides through attention this way: keys padded with their bias, queries with the
    reciprocal of the softmax scale, so `q' . k'` adds the bias over the scale; a `width` of 8
    keeps the heads whole 16-byte chunks.
  }];
  let arguments = (ins Cbc_Rows:$x, Optional<Cbc_Rows>:$extra, I64Attr:$heads, I64Attr:$width,
                   DefaultValuedAttr<F64Attr, "0.0">:$value);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = "$x (`,` $extra^)? attr-dict `:` type($x) (`,` type($extra)^)? `->` type($result)";
  let hasVerifier = 1;
}

def Cbc_DiffHeadsOp : Cbc_Op<"math.diff_heads", [Pure]> {
  let opcode = 36;
  let params = "DiffHeadsParams";
  let summary = "Differential attention's combination: one half of the heads minus lambda times the other.";
  let description = [{
    With `W` the result width and `lambda = exp(sum(q1 * k1)) - exp(sum(q2 * k2)) + lambda_init`
    (the four learned vectors of the layer, the sums in fp32), `result[t, j] = x[t, j] - lambda *
    x[t, W + j]`: head `h` of the first half minus lambda times head `h` of the second
    (differential attention, where each head's output is twice head_dim wide).
  }];
  let arguments = (ins Cbc_Rows:$x, Cbc_Weight:$q1, Cbc_Weight:$k1, Cbc_Weight:$q2, Cbc_Weight:$k2,
                   F64Attr:$lambda_init);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = [{
    $x `,` $q1 `,` $k1 `,` $q2 `,` $k2 attr-dict `:` type($x) `,` type($q1) `,` type($k1) `,` type($q2) `,`
    type($k2) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Cbc_HeadLinearOp : Cbc_Op<"math.head_linear", [Pure]> {
  let opcode = 25;
  let params = "HeadLinearParams";
  let summary = "A matrix product per head with a slice of each head's rows of one weight.";
  let description = [{
    The weight `[heads * R, C]` holds `heads` blocks of `R` rows; each head uses rows
    `[offset, offset + rows)` of its block, `W_h [rows, C]`. Without `transpose`, x is
    `[T, heads * C]` and `result[t, h] = W_h x[t, h]` is `[T, heads * rows]`; with `transpose`, x
    is `[T, heads * rows]` and `result[t, h] = W_h^T x[t, h]` is `[T, heads * C]`. Latent attention
    absorbs its key up-projection into the query (`transpose`) and applies its value
    up-projection to the attended latents this way, from the one checkpoint tensor.
  }];
  let arguments = (ins Cbc_Rows:$x, Cbc_Weight:$weight, I64Attr:$heads, I64Attr:$offset,
                   I64Attr:$rows, UnitAttr:$transpose);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = "$x `,` $weight attr-dict `:` type($x) `,` type($weight) `->` type($result)";
  let hasVerifier = 1;
}

def Cbc_SinusoidalPositionOp : Cbc_Op<"math.sinusoidal_position", [Pure]> {
  let opcode = 32;
  let params = "SinusoidalPositionParams";
  let summary = "Sinusoidal position embeddings, computed from each token's position.";
  let description = [{
    Absolute positions with no table to load (the tensor2tensor form of XGLM and fairseq's
    decoders). For result width `D` and `h = D / 2`, row `t` is the sine then the cosine of
    `n f_i` for `i < h`, where `n = positions[t] + offset` and
    `f_i = exp(i * -(ln(base) / (h - 1)))`, with a last column of zeros when `D` is odd, all in
    fp32 as transformers computes them: the step and each `i * step` rounded to fp32 before
    `exp`, and `n f_i` rounded before `sin` and `cos`. The row of `n == padding_row`, when given,
    is zeros (a padding position's). `D` is at least 4. With `form = power` (the original
    Transformer's spacing) the
    frequencies are `f_i = 1 / base ^ (2i / D)` instead, the exponent, the power and its
    reciprocal each in fp32, and `D` must be even.

    ```mlir
    %p = cbc.math.sinusoidal_position %positions {offset = 2 : i64, padding_row = 1 : i64}
           : tensor<?xi32> -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Cbc_Index:$positions, DefaultValuedAttr<I64Attr, "0">:$offset,
                   DefaultValuedAttr<F64Attr, "10000.0">:$base, OptionalAttr<I64Attr>:$padding_row,
                   DefaultValuedAttr<Cbc_SinusoidFormAttr, "::cbc::SinusoidForm::log_step">:$form);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = "$positions attr-dict `:` type($positions) `->` type($result)";
  let hasVerifier = 1;
}

def Cbc_PositionScaleOp : Cbc_Op<"math.position_scale", [Pure]> {
  let opcode = 26;
  let params = "PositionScaleParams";
  let summary = "Scales each row by a factor that grows slowly with its token's position.";
  let description = [{
    `result[t] = x[t] * (1 + beta * log(1 + floor((positions[t] + offset) / period)))`: the
    position-dependent query scaling (attention temperature tuning) of long-context attention.
    With `form = log_ratio` the factor is `1 + beta * log(max((positions[t] + offset) / period,
    1))` with a real quotient: one before position `period - offset`, then logarithmic growth.
    With `form = power` it is `(1 + (positions[t] + offset) / period) ^ beta`, a real quotient
    (scalable softmax on the queries of position-free layers).
  }];
  let arguments = (ins Cbc_Rows:$x, Cbc_Index:$positions, F64Attr:$beta, I64Attr:$period,
                   DefaultValuedAttr<I64Attr, "0">:$offset,
                   DefaultValuedAttr<Cbc_PositionScaleFormAttr, "::cbc::PositionScaleForm::log1p_floor">:$form);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = "$x `,` $positions attr-dict `:` type($x) `,` type($positions) `->` type($result)";
  let hasVerifier = 1;
}

def Cbc_HeadPositionScaleOp : Cbc_Op<"math.head_position_scale", [Pure]> {
  let opcode = 52;
  let summary = "Scales each head of a row by a learned affine function of log(1 + position).";
  let description = [{
    With `H` the length of `scale` and `bias`, `x` holds `H` heads of `width / H` features and
    `result[t, h, :] = x[t, h, :] * (scale[h] * log(1 + positions[t]) + bias[h])`, in fp32: a
    learned per-head query scaling of attentions and sparse-attention indexers. The factor is
    `bias[h]` at position 0 and may be negative, so it cannot be folded into a projection that a
    nonlinearity follows.

    ```mlir
    %y = cbc.math.head_position_scale %x, %positions, %scale, %bias
           : tensor<?x96xf32>, tensor<?xi32>, tensor<4xf32>, tensor<4xf32> -> tensor<?x96xf32>
    ```
  }];
  let arguments = (ins Cbc_Rows:$x, Cbc_Index:$positions, Cbc_Weight:$scale, Cbc_Weight:$bias);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = "$x `,` $positions `,` $scale `,` $bias attr-dict `:` type(operands) `->` type($result)";
  let hasVerifier = 1;
}

def Cbc_GroupDotOp : Cbc_Op<"math.group_dot", [Pure]> {
  let opcode = 56;
  let params = "GroupDotParams";
  let summary = "Per group of columns, the dot product of two rows, scaled, through an activation.";
  let description = [{
    `a` and `b` `[T, G * D]` hold `G = groups` groups of `D` columns side by side;
    `result[t, g] = act(scale * sum_i a[t, g * D + i] * b[t, g * D + i])`, `[T, G]`, summed in
    fp32. A residual stream's gate from its own key and query (one group per stream) reads it
    this way, with `act = signed_sqrt`.
  }];
  let arguments = (ins Cbc_Rows:$a, Cbc_Rows:$b, I64Attr:$groups, F64Attr:$scale,
                   DefaultValuedAttr<Cbc_ActivationAttr, "::cbc::Activation::none">:$act);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = "$a `,` $b attr-dict `:` type($a) `,` type($b) `->` type($result)";
  let hasVerifier = 1;
}

def Cbc_AddRmsNormOp : Cbc_Op<"math.add_rms_norm", [Pure]> {
  let opcode = 12;
  let params = "NormParams";
  let summary = "Residual add fused with the RMS norm that follows it.";
  let description = [{
    Returns `sum = lhs + rhs` and `rms_norm(sum, weight)` (see `cbc.math.rms_norm`, over whole
    rows). Formed by `cbc-fuse-add-norm`: one pass over the residual stream instead of two.
  }];
  let arguments = (ins Cbc_Rows:$lhs, Cbc_Rows:$rhs, Optional<Cbc_Weight>:$weight, F64Attr:$eps,
                   DefaultValuedAttr<F64Attr, "0.0">:$offset);
  let results = (outs Cbc_Rows:$sum, Cbc_Rows:$normed);
  let assemblyFormat = "$lhs `,` $rhs (`,` $weight^)? attr-dict `:` type(operands) `->` type($sum) `,` type($normed)";
  let hasVerifier = 1;
}

def Cbc_RmsNormGatedOp : Cbc_Op<"math.rms_norm_gated", [Pure]> {
  let opcode = 13;
  let params = "GatedNormParams";
  let summary = "RMS norm combined with an activated gate, in either order.";
  let description = [{
    Over groups of `group` features: with `order = norm_gate`,
    `y = rmsnorm(x) * (w + offset) * act(z)`; with `gate_norm`,
    `y = rmsnorm(x * act(z)) * (w + offset)`. The weight has one entry per feature of a group,
    shared by every group, or one per feature of the row.
  }];
  let arguments = (ins Cbc_Rows:$x, Cbc_Rows:$z, Optional<Cbc_Weight>:$weight, F64Attr:$eps,
                   DefaultValuedAttr<F64Attr, "0.0">:$offset, OptionalAttr<I64Attr>:$group,
                   DefaultValuedAttr<Cbc_ActivationAttr, "::cbc::Activation::silu">:$act,
                   DefaultValuedAttr<Cbc_NormGateOrderAttr, "::cbc::NormGateOrder::norm_gate">:$order);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = "$x `,` $z (`,` $weight^)? attr-dict `:` type(operands) `->` type($result)";
  let hasVerifier = 1;
}

} // Cbc_MathGroup

//===----------------------------------------------------------------------------------===//
// The paged cache
//===----------------------------------------------------------------------------------===//

def Cbc_KvGroup : OpDocGroup {
  let summary = "The paged cache";
  let description = [{
    Ops that write rows into, and attend over, the paged cache of a layer through the
    runtime's persistent block tables. Each layer declares the rows it keeps per token and its
    retention; `cbc-plan-cache` groups layers by retention and assigns `group`.
  }];
}

defvar Cbc_AllTokens = "::cbc::RetentionAttr::all($_builder.getContext())";

let opDocGroup = Cbc_KvGroup in {

def Cbc_KvAppendOp : Cbc_Op<"kv.append", [MemoryEffects<[MemWrite]>]> {
  let opcode = 14;
  let params = "KvAppendParams";
  let site = Cbc_CacheSite;
  let summary = "Writes this step's key and value rows into the paged cache.";
  let description = [{
    Token `t` of request row `r = seq_ids[t]` at `p = positions[t]` is written to the block
    `block_tables[group, slots[r], p / block_size]` of layer `layer`: the tables are the
    runtime's persistent ones, one row per live request slot. The layer declares the rows it
    keeps per token: `k` of `num_kv_heads * head_dim` and `v` of `num_kv_heads * v_head_dim`,
    and which tokens it keeps (`retention`). With `latent` (one kv head), the rows are a
    latent-attention layer's: the normed latent (`k`, named `latent` in the plan) and the roped
    key shared by all heads (`v`, named `k_rope`), which `cbc.kv.latent_attention` reads.
    With `#cbc.retention<compressed, N>` only the tokens closing a window write, their rows
    numbered by window (`cbc.state.window_pool` computes them).
  }];
  let arguments = (ins Cbc_Rows:$k, Cbc_Rows:$v, Cbc_Index:$positions, Cbc_Index:$seq_ids,
                   Cbc_Index:$slots, Cbc_BlockTables:$block_tables,
                   I64Attr:$layer, I64Attr:$num_kv_heads, I64Attr:$head_dim,
                   DefaultValuedAttr<Cbc_RetentionAttr, Cbc_AllTokens>:$retention,
                   OptionalAttr<I64Attr>:$group, UnitAttr:$latent);
  let assemblyFormat = "$k `,` $v `,` $positions `,` $seq_ids `,` $slots `,` $block_tables attr-dict `:` type(operands)";
  let hasVerifier = 1;
}

def Cbc_KvAttentionOp : Cbc_Op<"kv.attention", [MemoryEffects<[MemRead]>, AttrSizedOperandSegments]> {
  let opcode = 15;
  let params = "KvAttentionParams";
  let site = Cbc_CacheSite;
  let summary = "Causal attention of this step's queries over the paged cache.";
  let description = [{
    Query row `t` (request row `r = seq_ids[t]`, position `p = positions[t]`) attends to the
    cached keys of its request at positions `j <= p` through `block_tables[group, slots[r]]`,
    with grouped-query heads (`num_heads / num_kv_heads` queries per key head), and to those
    the layer's `retention` keeps. `scale` multiplies `q . k`; then `softcap` applies
    `cap * tanh(s / cap)` to scores; `sinks` adds one learned logit per head to the softmax
    denominator only. With `distance_bias` (`[T, num_heads * bias_extent]`, computed per query
    token from its hidden state), the score of query `t`, head `h` for the key at position `j`
    gains `distance_bias[t, h * bias_extent + (p - j)]` when `p - j < bias_extent`, and nothing
    beyond: a relative-position bias, added after `scale` (and after `softcap`). With
    `block_selection` (`[T, selection_heads * k]` block indices from `cbc.kv.block_select`, -1
    for none), query head `h` reads only the keys whose position `j` lies in one of the blocks
    (`j / selection_block`) that selection head `h / (num_heads / selection_heads)` lists.
    With `alibi_slopes` (one per query head), the score of head `h` for the key at position `j`
    gains `-alibi_slopes[h] * (p - j)`, after `scale`: ALiBi's linear bias (a constant
    per query row does not change the softmax, so biases anchored at the key alone agree).
    With `key_ends` (the step argument `key_ends`), query `t` attends to the keys at positions
    `j < key_ends[t]` instead of `j <= p`: the rows of one image see each other both ways
    (their key end is the image's end), the others causally (`p + 1`); the lower bound of the
    retention stays the query's.
    With `sink_logits` (`[T, num_heads]`, instead of `sinks`) each query row brings its own sink
    logit per head: a projection of the token rather than a learned constant.
  }];
  let arguments = (ins Cbc_Rows:$q, Cbc_Index:$positions, Cbc_Index:$seq_ids,
                   Cbc_Index:$cu_seqlens, Cbc_Index:$kv_lens, Cbc_Index:$slots,
                   Cbc_BlockTables:$block_tables, Optional<Cbc_Weight>:$sinks,
                   Optional<Cbc_Rows>:$distance_bias, Optional<Cbc_RowsI32>:$block_selection,
                   Optional<Cbc_Index>:$key_ends, Optional<Cbc_Rows>:$sink_logits,
                   I64Attr:$layer, I64Attr:$num_heads, I64Attr:$num_kv_heads, I64Attr:$head_dim,
                   F64Attr:$scale,
                   DefaultValuedAttr<Cbc_RetentionAttr, Cbc_AllTokens>:$retention,
                   OptionalAttr<F64Attr>:$softcap, OptionalAttr<I64Attr>:$group,
                   DefaultValuedAttr<I64Attr, "0">:$bias_extent,
                   DefaultValuedAttr<I64Attr, "0">:$selection_heads,
                   DefaultValuedAttr<I64Attr, "0">:$selection_block,
                   OptionalAttr<DenseF32ArrayAttr>:$alibi_slopes);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = "$q `,` $positions `,` $seq_ids `,` $cu_seqlens `,` $kv_lens `,` $slots `,` $block_tables (`,` $sinks^)? (`distance_bias` `(` $distance_bias^ `)`)? (`blocks` `(` $block_selection^ `)`)? (`key_ends` `(` $key_ends^ `)`)? (`sink_logits` `(` $sink_logits^ `)`)? attr-dict `:` type(operands) `->` type($result)";
  let hasVerifier = 1;
}

def Cbc_KvLatentAttentionOp : Cbc_Op<"kv.latent_attention", [MemoryEffects<[MemRead]>, AttrSizedOperandSegments]> {
  let opcode = 24;
  let params = "KvLatentAttentionParams";
  let site = Cbc_CacheSite;
  let summary = "Multi-head latent attention over a layer's cached latents, weights absorbed.";
  let description = [{
    Reads only the rows a `latent` `cbc.kv.append` keeps: per cached token `j`, the latent
    `c_j [latent_dim]` and the shared roped key `r_j [rope_dim]`. Each query head `h` of token
    `t` brings its latent-space query `q_latent[t, h] [latent_dim]` (the non-rotated query with
    the key up-projection absorbed, `cbc.math.head_linear`) and its roped query
    `q_rope[t, h] [rope_dim]`, and attends causally (and as `retention` keeps) with score
    `scale * (q_latent . c_j + q_rope . r_j)`. The result is, per head, the softmax-weighted sum
    of the latents `[T, num_heads * latent_dim]`; the value up-projection is applied after it,
    again by `cbc.math.head_linear`. No per-head key or value is ever formed from the cache.
    With `selection` (`[T, k]` positions from `cbc.kv.index_select`, -1 for none), query `t`
    attends only to the listed rows, so its work is `k` rows whatever the context length.
    `sinks` adds one learned logit per head to each softmax, attending to nothing.

    With `entries_rate = N > 0` the query also attends, in the same softmax, to the compressed
    rows of cache layer `entries_layer` (`#cbc.retention<compressed, N>`, latent rows of
    `latent_dim` and no roped part): the entries `w < (p + 1) / N` whose windows are complete
    at its position, each scored `scale * q_latent . c_w` and weighing its `c_w` in the sum;
    with `entry_selection` (`[T, k]` entry indices, -1 for none) only the listed ones.
    `entries_group` is that layer's group, set by `cbc-plan-cache`. Shared-key-value attention
    over a window of tokens plus compressed memories reads its two caches this way.
  }];
  let arguments = (ins Cbc_Rows:$q_latent, Cbc_Rows:$q_rope, Cbc_Index:$positions,
                   Cbc_Index:$seq_ids, Cbc_Index:$cu_seqlens, Cbc_Index:$kv_lens, Cbc_Index:$slots,
                   Cbc_BlockTables:$block_tables,
                   I64Attr:$layer, I64Attr:$num_heads, I64Attr:$latent_dim, I64Attr:$rope_dim,
                   F64Attr:$scale,
                   DefaultValuedAttr<Cbc_RetentionAttr, Cbc_AllTokens>:$retention,
                   OptionalAttr<I64Attr>:$group, Optional<Cbc_Weight>:$sinks, Optional<Cbc_RowsI32>:$selection,
                   Optional<Cbc_RowsI32>:$entry_selection,
                   DefaultValuedAttr<I64Attr, "0">:$entries_rate, OptionalAttr<I64Attr>:$entries_layer,
                   OptionalAttr<I64Attr>:$entries_group);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = "$q_latent `,` $q_rope `,` $positions `,` $seq_ids `,` $cu_seqlens `,` $kv_lens `,` $slots `,` $block_tables (`sinks` `(` $sinks^ `)`)? (`selection` `(` $selection^ `)`)? (`entries` `(` $entry_selection^ `)`)? attr-dict `:` type(operands) `->` type($result)";
  let hasVerifier = 1;
}

def Cbc_KvIndexAppendOp : Cbc_Op<"kv.index_append", [MemoryEffects<[MemWrite]>]> {
  let opcode = 29;
  let params = "KvIndexAppendParams";
  let site = Cbc_CacheSite;
  let summary = "Writes this step's indexer keys as the layer's `index_key` cache row.";
  let description = [{
    A sparse (indexed) attention layer keeps, beside the rows its `cbc.kv.append` declares, one
    more row per token: the lightning indexer's key `index_key [T, head_dim]` (already normed
    and roped by the ops before). Token `t` of request row `seq_ids[t]` at `positions[t]` is
    written where `cbc.kv.append` writes that token's rows of layer `layer`, after them. A
    layer that reuses an earlier layer's selection declares no such row. `cbc.kv.index_select`
    reads it. `retention` is the layer's: with `#cbc.retention<compressed, N>` the keys are
    compressed entries, written by the tokens that close a window.
  }];
  let arguments = (ins Cbc_Rows:$index_key, Cbc_Index:$positions, Cbc_Index:$seq_ids,
                   Cbc_Index:$slots, Cbc_BlockTables:$block_tables,
                   I64Attr:$layer, I64Attr:$head_dim, OptionalAttr<I64Attr>:$group,
                   DefaultValuedAttr<Cbc_RetentionAttr, Cbc_AllTokens>:$retention);
  let assemblyFormat = "$index_key `,` $positions `,` $seq_ids `,` $slots `,` $block_tables attr-dict `:` type(operands)";
  let hasVerifier = 1;
}

def Cbc_KvIndexSelectOp : Cbc_Op<"kv.index_select", [MemoryEffects<[MemRead]>]> {
  let opcode = 30;
  let params = "KvIndexSelectParams";
  let site = Cbc_CacheSite;
  let summary = "Lightning-indexer scores over a layer's cached index keys, and each query's top-k.";
  let description = [{
    Query row `t` (request `seq_ids[t]`, position `p = positions[t]`) scores every cached
    indexer key `k_j` of its request with `j <= p` (the `index_key` rows of layer `layer`):
    `score(t, j) = sum_h weights[t, h] * weight_scale * relu(key_scale * q[t, h] . k_j)`, with
    `num_heads` query heads of `head_dim` in `q`. The result row `t` holds the positions of the
    `topk` best keys in ascending position order; among equal scores the lower position is
    kept, so the selection is deterministic. When fewer than `topk` keys are visible (`p + 1 < topk`), all of them are
    selected and the row is padded with -1. `cbc.kv.latent_attention` with `selection` attends
    to exactly these rows; a later layer may take the same result (a shared indexer).
    With `#cbc.retention<compressed, N>` (the layer's) the keys are compressed entries: query
    `t` scores the entries `w < (p + 1) / N` and the result lists entry indices, for
    `cbc.kv.latent_attention`'s `entry_selection`.
  }];
  let arguments = (ins Cbc_Rows:$q, Cbc_Rows:$weights, Cbc_Index:$positions, Cbc_Index:$seq_ids,
                   Cbc_Index:$cu_seqlens, Cbc_Index:$kv_lens, Cbc_Index:$slots,
                   Cbc_BlockTables:$block_tables,
                   I64Attr:$layer, I64Attr:$num_heads, I64Attr:$head_dim, I64Attr:$topk,
                   F64Attr:$key_scale, F64Attr:$weight_scale, OptionalAttr<I64Attr>:$group,
                   DefaultValuedAttr<Cbc_RetentionAttr, Cbc_AllTokens>:$retention);
  let results = (outs Cbc_RowsI32:$result);
  let assemblyFormat = "$q `,` $weights `,` $positions `,` $seq_ids `,` $cu_seqlens `,` $kv_lens `,` $slots `,` $block_tables attr-dict `:` type(operands) `->` type($result)";
  let hasVerifier = 1;
}

def Cbc_KvPoolSelectOp : Cbc_Op<"kv.pool_select", [MemoryEffects<[MemRead]>, AttrSizedOperandSegments]> {
  let opcode = 53;
  let params = "KvPoolSelectParams";
  let site = Cbc_CacheSite;
  let summary = "Lightning-indexer scores over pooled index keys, and each query's best pools plus its own open pool.";
  let description = [{
    The positions of a request form pools of `pool` consecutive positions, pool `i` covering
    `[i * pool, (i + 1) * pool)`. With `ape`, a cached `index_key` row of layer `layer` holds a
    token's key and its pooling logits, `[k | g]` of `2 * head_dim`, and a complete pool's key
    is, per feature `f`, `sum_j softmax_j(g_j[f] + ape[j, f]) * k_j[f]` over its positions `j`
    (`ape [pool, head_dim]`, a learned bias per position in the pool). Without it the row is the
    key alone (`head_dim`) and the pool's key is the mean of its tokens' keys. Either key is then
    RMS-normed with `key_norm + norm_offset` when `key_norm` is given (`eps`), and rotated by
    `key_freqs` when given: rotate-half RoPE over its first `2 * len(key_freqs)` features at the
    pool's first position, frequency `i` turning by `(i * pool) * key_freqs[i]`; all in fp32.
    Query row `t` at position `p` scores the complete pools that end at or before `p`:
    `score(t, i) = sum_h weights[t, h] * weight_scale * relu(key_scale * q[t, h] . key_i)`, each
    head's weight 1 without `weights`.
    The result row holds the positions of the `pools` best pools (all of them when there are no
    more; among equal scores the lower pool), pool by pool in ascending order, then the
    positions of the query's own incomplete pool up to `p` (its tail, which it always sees);
    unused entries are -1, so the width is `pools * pool + pool - 1`. A query whose pool has
    just completed sees itself only if that pool is chosen. `cbc.kv.latent_attention` with
    `selection` attends to exactly these rows. With `blocks` the row holds pool indices
    instead, `pools + 1` of them: the chosen pools, then the query's own pool if it is
    incomplete, -1 for the rest, for `cbc.kv.attention` with `block_selection` and
    `selection_block = pool` (whose causal bound cuts the open pool at the query).
  }];
  let arguments = (ins Cbc_Rows:$q, Optional<Cbc_Rows>:$weights, Cbc_Index:$positions, Cbc_Index:$seq_ids,
                   Cbc_Index:$cu_seqlens, Cbc_Index:$kv_lens, Cbc_Index:$slots,
                   Cbc_BlockTables:$block_tables, Optional<Cbc_Weight>:$ape, Optional<Cbc_Weight>:$key_norm,
                   I64Attr:$layer, I64Attr:$num_heads, I64Attr:$head_dim, I64Attr:$pools, I64Attr:$pool,
                   F64Attr:$key_scale, F64Attr:$weight_scale, OptionalAttr<I64Attr>:$group,
                   OptionalAttr<F64Attr>:$eps, DefaultValuedAttr<F64Attr, "0.0">:$norm_offset,
                   OptionalAttr<DenseF32ArrayAttr>:$key_freqs, UnitAttr:$blocks);
  let results = (outs Cbc_RowsI32:$result);
  let assemblyFormat = "$q (`weights` `(` $weights^ `:` type($weights) `)`)? `,` $positions `,` $seq_ids `,` $cu_seqlens `,` $kv_lens `,` $slots `,` $block_tables (`ape` `(` $ape^ `:` type($ape) `)`)? (`key_norm` `(` $key_norm^ `:` type($key_norm) `)`)? attr-dict `:` type($q) `,` type($positions) `,` type($seq_ids) `,` type($cu_seqlens) `,` type($kv_lens) `,` type($slots) `,` type($block_tables) `->` type($result)";
  let hasVerifier = 1;
}

def Cbc_KvBlockSelectOp : Cbc_Op<"kv.block_select", [MemoryEffects<[MemRead]>]> {
  let opcode = 39;
  let params = "KvBlockSelectParams";
  let site = Cbc_CacheSite;
  let summary = "Lightning-indexer block scores over a layer's cached index keys, and each head's top-k blocks.";
  let description = [{
    Query row `t` (request `seq_ids[t]`, position `p = positions[t]`) scores every cached
    indexer key `k_j` of its request with `j <= p` (the `index_key` rows of layer `layer`) with
    `s(h, j) = q[t, h] . k_j` for each of its `num_heads` query heads of `head_dim` in `q`. A
    block `b` of `block` positions scores the maximum of its visible keys; the `local` blocks
    ending at the query's own (`p / block`, `p / block - 1`, ..., not below 0) score +inf, so
    they are always taken. Row `t` holds, for each head `h`, the `topk` best visible blocks in
    ascending order (among equal scores the lower block), padded with -1 when fewer are
    visible: `[T, num_heads * topk]`. `cbc.kv.attention` with `block_selection` attends to
    exactly these blocks.
  }];
  let arguments = (ins Cbc_Rows:$q, Cbc_Index:$positions, Cbc_Index:$seq_ids,
                   Cbc_Index:$cu_seqlens, Cbc_Index:$kv_lens, Cbc_Index:$slots,
                   Cbc_BlockTables:$block_tables,
                   I64Attr:$layer, I64Attr:$num_heads, I64Attr:$head_dim, I64Attr:$block, I64Attr:$topk,
                   DefaultValuedAttr<I64Attr, "1">:$local, OptionalAttr<I64Attr>:$group);
  let results = (outs Cbc_RowsI32:$result);
  let assemblyFormat = "$q `,` $positions `,` $seq_ids `,` $cu_seqlens `,` $kv_lens `,` $slots `,` $block_tables attr-dict `:` type(operands) `->` type($result)";
  let hasVerifier = 1;
}

def Cbc_KvRopeAppendOp : Cbc_Op<"kv.rope_append", [MemoryEffects<[MemWrite]>, AttrSizedOperandSegments]> {
  let opcode = 16;
  let params = "KvRopeAppendParams";
  let site = Cbc_CacheSite;
  let summary = "Splits a fused q|k|v row, normalises and rotates q and k, appends k and v.";
  let description = [{
    The attention prologue in one op, formed by `cbc-fuse-attention-inputs`: `qkv` holds
    `num_heads` query heads, then `num_kv_heads` key heads, then `num_kv_heads` value heads of
    `head_dim` features. With norm weights, each q and k head is RMS-normalised (`eps`,
    `norm_offset`, weights `q_norm` and `k_norm`). q and k are rotated as `cbc.math.rope` does
    with `rope`; k and v are written to the cache as `cbc.kv.append` does (`layer`, `group`,
    `retention`). The result is the rotated q.
  }];
  let arguments = (ins Cbc_Rows:$qkv, Cbc_Index:$positions, Cbc_Index:$seq_ids,
                   Cbc_Index:$prompt_lens, Cbc_Index:$slots, Cbc_BlockTables:$block_tables,
                   Optional<Cbc_Weight>:$q_norm, Optional<Cbc_Weight>:$k_norm,
                   I64Attr:$layer, I64Attr:$num_heads, I64Attr:$num_kv_heads, I64Attr:$head_dim,
                   DefaultValuedAttr<Cbc_RetentionAttr, Cbc_AllTokens>:$retention,
                   OptionalAttr<I64Attr>:$group,
                   OptionalAttr<F64Attr>:$eps, DefaultValuedAttr<F64Attr, "0.0">:$norm_offset,
                   Cbc_RopeAttr:$rope);
  let results = (outs Cbc_Rows:$q);
  let assemblyFormat = "$qkv `,` $positions `,` $seq_ids `,` $prompt_lens `,` $slots `,` $block_tables (`norms` `(` $q_norm^ `,` $k_norm `)`)? attr-dict `:` functional-type(operands, $q)";
  let hasVerifier = 1;
}

} // Cbc_KvGroup

//===----------------------------------------------------------------------------------===//
// Per-request states
//===----------------------------------------------------------------------------------===//

def Cbc_StateGroup : OpDocGroup {
  let summary = "Per-request states";
  let description = [{
    Ops that scan each request's rows in order from a fixed-size state and leave the final
    state behind. Request `r` starts from the state in unit `state_in[r]` of the cache's state
    group (zeros unless `has_initial_state[r]`) and leaves its final state in unit
    `state_out[r]`; unit `state_in[r]` is left as it was unless the two are the same. They are
    the same but after a fork (the input is shared) or in a step that keeps its input for a
    rollback. Each op declares its state through `StatefulOpInterface`.
  }];
}

// A recurrence over each request's rows: its own operands, then the step's per-request
// metadata `cu_seqlens, state_in, state_out, has_initial_state`; `layer` and the state's name.
// Kernels read a request's state from its input unit and write it to its output unit.
class Cbc_StateScanOp<string mnemonic, dag operands, dag attributes,
                      string stateName = "recurrent", list<Trait> traits = []> :
    Cbc_Op<mnemonic, !listconcat([MemoryEffects<[MemRead, MemWrite]>,
                                  DeclareOpInterfaceMethods<Cbc_StatefulOpInterface>], traits)> {
  let site = Cbc_StateSite;
  let arguments = !con(operands,
                       (ins Cbc_Index:$cu_seqlens, Cbc_Index:$state_in, Cbc_Index:$state_out,
                            Cbc_Index:$has_initial_state, I64Attr:$layer),
                       attributes,
                       (ins DefaultValuedStrAttr<StrAttr, stateName>:$state));
  let results = (outs Cbc_Rows:$result);
  let hasVerifier = 1;
}

let opDocGroup = Cbc_StateGroup in {

def Cbc_StateConv1dOp : Cbc_StateScanOp<"state.conv1d",
    (ins Cbc_Rows:$x, Cbc_Weight:$weight, Optional<Cbc_Weight>:$bias, Optional<Cbc_Weight>:$initial,
         Optional<Cbc_Rows>:$taps),
    (ins DefaultValuedAttr<Cbc_ActivationAttr, "::cbc::Activation::none">:$act, UnitAttr:$residual,
         UnitAttr:$lag_order, DefaultValuedAttr<F64Attr, "1.0">:$scale,
         DefaultValuedAttr<I64Attr, "1">:$dilation), "conv",
    [AttrSizedOperandSegments]> {
  let opcode = 17;
  let params = "Conv1dParams";
  let summary = "Causal (depthwise or grouped) convolution over packed rows, carrying inputs per request.";
  let description = [{
    `weight` is torch's Conv1d layout `[C, G, K]`: `G = 1` is a depthwise convolution, a larger
    `G` (dividing `C`) a grouped one whose groups of `G` channels mix inside the group; `[C, K]`
    is depthwise too. For each
    request `r` (rows `cu_seqlens[r]` to `cu_seqlens[r+1]`), the rows are prefixed with the
    request's state, the last `K - 1` inputs it has seen, and channel `c` of row `t` becomes
    `act(bias[c] + sum_{i, j} weight[c, i, j] * xe[t + j, g + i])`, where `g` is the first channel
    of `c`'s group and tap `K - 1` is the row itself. A fresh request (`has_initial_state[r]`
    false) starts from inputs of `initial[c]` (zeros without it): a convolution stacked on a
    biased one sees its predecessor's bias before the first row. The state left in unit
    `state_out[r]` is then the last `K - 1` inputs: the layer declares the state `state`
    (default `conv`) of shape `[C, K - 1]`. With `residual` the row itself is added,
    `x[t, c] + act(...)`, before the result is rounded to its type (a residual short conv
    computed in fp32); `scale` then multiplies the whole, still in fp32.

    With `dilation = d` (depthwise only, no taps) tap `j` reads the input `(K - 1 - j) * d` rows
    back, and the state holds the last `(K - 1) * d` inputs: `[C, (K - 1) * d]`.

    With `taps` (`[T, (C / D) * K]`, depthwise only) each row brings taps of its own, shared by
    each run of `D` consecutive channels: channel `c` of row `t` uses
    `weight[c, 0, j] + taps[t, (c / D) * K + j]` as tap `j` (a dynamic convolution whose taps a
    projection of the token computes). With `lag_order` both count back from the row: index `j`
    weighs the input `j` rows before, so index 0 is the row itself.
  }];
  let assemblyFormat = "$x `,` $weight (`bias` `(` $bias^ `)`)? (`initial` `(` $initial^ `)`)? (`taps` `(` $taps^ `)`)? `,` $cu_seqlens `,` $state_in `,` $state_out `,` $has_initial_state attr-dict `:` functional-type(operands, $result)";
}

def Cbc_StateShiftOp : Cbc_StateScanOp<"state.shift",
    (ins Cbc_Rows:$x, Optional<Cbc_Weight>:$initial), (ins), "shift"> {
  let opcode = 38;
  let params = "ShiftParams";
  let summary = "Each request's rows one row later: every row becomes the request's previous input.";
  let description = [{
    A token shift. For each request `r`, row `t` of the result is the request's input row
    `t - 1`, and its first row is the input before the step: the request's state, which a fresh
    request (`has_initial_state[r]` false) starts as `initial` (zeros without it). The state
    left in unit `state_out[r]` is the last input, `[C, 1]`. Value heads computed from the
    previous token (ZAYA's delayed values) and RWKV's time shift read their input this way.
  }];
  let assemblyFormat = "$x (`initial` `(` $initial^ `)`)? `,` $cu_seqlens `,` $state_in `,` $state_out `,` $has_initial_state attr-dict `:` functional-type(operands, $result)";
}

def Cbc_GatedDeltaOp : Cbc_StateScanOp<"state.gated_delta",
    (ins Cbc_Rows:$q, Cbc_Rows:$k, Cbc_Rows:$v, Cbc_Rows:$a, Cbc_Rows:$b, Cbc_Weight:$A_log,
         Cbc_Weight:$dt_bias),
    (ins I64Attr:$num_k_heads, I64Attr:$num_v_heads, I64Attr:$k_dim, I64Attr:$v_dim,
         DefaultValuedAttr<F64Attr, "1.0">:$beta_scale, UnitAttr:$qk_l2norm)> {
  let opcode = 18;
  let params = "GatedDeltaParams";
  let summary = "The gated delta rule, per value head, with a matrix state per request.";
  let description = [{
    Inputs `q, k [T, Hk * dk]`, `v [T, Hv * dv]`, `a, b [T, Hv]` and weights
    `A_log, dt_bias [Hv]`. Value head `h` uses key head `h / (Hv / Hk)`. Per token, in fp32:
    `g = -exp(A_log) * softplus(a + dt_bias)`, `beta = beta_scale * sigmoid(b)`, q and k
    l2-normalised (eps 1e-6) when `qk_l2norm`, q scaled by `dk^-1/2`, then
    `S = exp(g) S; S += k (beta (v - S^T k))^T; o = S^T q` with `S [Hv, dk, dv]`, the state
    `recurrent` in fp32. The result is `[T, Hv * dv]`.
  }];
  let assemblyFormat = "$q `,` $k `,` $v `,` $a `,` $b `,` $A_log `,` $dt_bias `,` $cu_seqlens `,` $state_in `,` $state_out `,` $has_initial_state attr-dict `:` functional-type(operands, $result)";
}

def Cbc_KdaOp : Cbc_StateScanOp<"state.kda",
    (ins Cbc_Rows:$q, Cbc_Rows:$k, Cbc_Rows:$v, Cbc_Rows:$f, Cbc_Rows:$b, Cbc_Weight:$A_log,
         Cbc_Weight:$dt_bias),
    (ins I64Attr:$num_heads, I64Attr:$k_dim, I64Attr:$v_dim, Cbc_DecayGateAttr:$gate,
         OptionalAttr<F64Attr>:$lower_bound)> {
  let opcode = 28;
  let params = "KdaParams";
  let summary = "The delta rule with a log decay per key channel, a matrix state per request.";
  let description = [{
    KDA: the gated delta rule with a decay per key channel. Inputs `q, k [T, H * dk]`,
    `v [T, H * dv]`, the forget gate's input `f [T, H * dk]` and `b [T, H]`; weights
    `A_log [H]` (any shape of H elements) and `dt_bias [H * dk]`. Per token and head `h`, in
    fp32: with `x = f + dt_bias`, the log decay of channel `d` is
    `g[d] = -exp(A_log[h]) * softplus(x[d])` (`gate` softplus) or
    `lower_bound * sigmoid(exp(A_log[h]) * x[d])` (`gate` bounded_sigmoid, `lower_bound < 0`
    given only then); `beta = sigmoid(b)`; q and k are l2-normalised (`x / sqrt(sum x^2 +
    1e-6)`) and q scaled by `dk^-1/2`; then `S = diag(exp(g)) S; S += k (beta (v - S^T k))^T;
    o = S^T q` with `S [H, dk, dv]`, the state `recurrent` in fp32. Backends may run long rows
    in chunks; the result is the same. The result is `[T, H * dv]`.
  }];
  let assemblyFormat = "$q `,` $k `,` $v `,` $f `,` $b `,` $A_log `,` $dt_bias `,` $cu_seqlens `,` $state_in `,` $state_out `,` $has_initial_state attr-dict `:` functional-type(operands, $result)";
}

def Cbc_SsdOp : Cbc_StateScanOp<"state.ssd",
    (ins Cbc_Rows:$x, Cbc_Rows:$dt, Cbc_Rows:$B, Cbc_Rows:$C, Cbc_Weight:$A_log,
         Cbc_Weight:$dt_bias, Cbc_Weight:$D),
    (ins I64Attr:$num_heads, I64Attr:$head_dim, I64Attr:$n_groups, I64Attr:$state_size,
         DefaultValuedAttr<F64Attr, "0.0">:$dt_min,
         DefaultValuedAttr<F64Attr, "std::numeric_limits<double>::infinity()">:$dt_max)> {
  let opcode = 19;
  let params = "SsdParams";
  let summary = "The state space dual scan: a scalar decay per head, a matrix state.";
  let description = [{
    Inputs `x [T, H * P]`, `dt [T, H]`, `B, C [T, G * N]` and weights `A_log, dt_bias, D [H]`,
    with `H = num_heads`, `P = head_dim`, `G = n_groups`, `N = state_size`; head `h` reads
    group `h / (H / G)`. Per token, in fp32: `dt = clamp(softplus(dt + dt_bias), dt_min,
    dt_max)`, `S[h] = exp(dt * -exp(A_log[h])) S[h] + dt x[h] B^T`, `y[h] = S[h] C + D[h] x[h]`
    with `S [H, P, N]`, the state `recurrent`. Backends may run long rows in chunks (the SSD
    form); the result is the same. The result is `[T, H * P]`.
  }];
  let assemblyFormat = "$x `,` $dt `,` $B `,` $C `,` $A_log `,` $dt_bias `,` $D `,` $cu_seqlens `,` $state_in `,` $state_out `,` $has_initial_state attr-dict `:` functional-type(operands, $result)";
}

def Cbc_SelectiveScanOp : Cbc_StateScanOp<"state.selective_scan",
    (ins Cbc_Rows:$x, Cbc_Rows:$dt, Cbc_Rows:$B, Cbc_Rows:$C, Cbc_Weight:$A_log,
         Cbc_Weight:$dt_bias, Cbc_Weight:$D, Optional<Cbc_Rows>:$z),
    (ins I64Attr:$n_groups, I64Attr:$state_size)> {
  let opcode = 20;
  let params = "SelectiveScanParams";
  let summary = "The selective scan: a decay per channel and state entry, a vector state.";
  let description = [{
    Inputs `x, dt [T, I]`, `B, C [T, G * N]`, weights `A_log [I, N]`, `dt_bias, D [I]`, and
    optionally a gate `z [T, I]`; channel `i` reads group `i / (I / G)`. Per token, in fp32:
    `dt = softplus(dt + dt_bias)`, `S[i, n] = exp(dt * -exp(A_log[i, n])) S[i, n] +
    dt B[n] x[i]`, `y[i] = sum_n S[i, n] C[n] + D[i] x[i]`, times `silu(z[i])` when gated. The
    state `recurrent` is `[I, N]`. The result is `[T, I]`.
  }];
  let assemblyFormat = "$x `,` $dt `,` $B `,` $C `,` $A_log `,` $dt_bias `,` $D (`gate` `(` $z^ `)`)? `,` $cu_seqlens `,` $state_in `,` $state_out `,` $has_initial_state attr-dict `:` functional-type(operands, $result)";
}

def Cbc_LightningOp : Cbc_StateScanOp<"state.lightning",
    (ins Cbc_Rows:$q, Cbc_Rows:$k, Cbc_Rows:$v),
    (ins I64Attr:$num_heads, I64Attr:$head_dim, DenseF64ArrayAttr:$decay,
         DefaultValuedAttr<I64Attr, "1">:$ranks)> {
  let opcode = 27;
  let params = "LightningParams";
  let summary = "Linear attention with a constant decay per head and a matrix state per request.";
  let description = [{
    Inputs `q, k, v [T, H * d]` taken as given (no activation, no normalisation, no `d^-1/2`)
    and one decay rate `decay[h] >= 0` per head. Per token, in fp32:
    `S[h] = exp(-decay[h]) S[h] + k[h]^T v[h]; o[h] = q[h] S[h]` with `S [H, d, d]`, the state
    `recurrent` in fp32. Backends may run a request's rows in blocks (intra-block
    `(q k^T masked by exp(-decay (i - j))) v`, inter-block `exp(-decay (i + 1)) q S`); the
    result is the same up to rounding. The result is `[T, H * d]`. With `ranks = N`
    (`cbc-shard-recurrent`) the op runs one rank's `H` heads of `N * H`: `decay` holds every
    rank's rates, and rank `r` uses `decay[r * H + h]`.
  }];
  let assemblyFormat = "$q `,` $k `,` $v `,` $cu_seqlens `,` $state_in `,` $state_out `,` $has_initial_state attr-dict `:` functional-type(operands, $result)";
}

def Cbc_WkvOp : Cbc_StateScanOp<"state.wkv",
    (ins Cbc_Rows:$k, Cbc_Rows:$v, Cbc_Weight:$time_decay, Cbc_Weight:$time_first), (ins), "wkv"> {
  let opcode = 49;
  let params = "WkvParams";
  let summary = "RWKV's weighted key-value recurrence, per channel, with its state per request.";
  let description = [{
    Inputs `k, v [T, C]` and weights `time_decay, time_first [C]`. Channel `c` keeps, per
    request, a numerator `a`, a denominator `b` and their common exponent `p` (the state
    `wkv`, `[3, C]` in fp32; a fresh request starts empty: `a = b = 0`, `p = -1e30`). With
    `w = -exp(time_decay[c])` and `u = time_first[c]`, each row in order, in fp32:
    `q = max(p, k + u)`, `out = (e^(p-q) a + e^(k+u-q) v) / (e^(p-q) b + e^(k+u-q))`; then
    `q' = max(p + w, k)`, `a = e^(p+w-q') a + e^(k-q') v`, `b = e^(p+w-q') b + e^(k-q')`, `p = q'`.
    That is `out = (e^(u+k) v + sum_i e^(w (t-1-i) + k_i) v_i) / (the same with 1 for v)`, the
    running exponent keeping it finite. The result is `[T, C]`.
  }];
  let assemblyFormat = "$k `,` $v `,` $time_decay `,` $time_first `,` $cu_seqlens `,` $state_in `,` $state_out `,` $has_initial_state attr-dict `:` functional-type(operands, $result)";
}

def Cbc_RgLruOp : Cbc_StateScanOp<"state.rg_lru",
    (ins Cbc_Rows:$x, Cbc_Rows:$input_gate, Cbc_Rows:$recurrent_gate, Cbc_Weight:$recurrent_param), (ins)> {
  let opcode = 50;
  let params = "RgLruParams";
  let summary = "Griffin's real-gated linear recurrent unit, per channel, with its state per request.";
  let description = [{
    Inputs `x, input_gate, recurrent_gate [T, C]` (the gates as logits) and the weight
    `recurrent_param [C]`. Per channel, in fp32: `log_a = -8 * sigmoid(recurrent_gate) *
    softplus(recurrent_param)`, `a = exp(log_a)`; the input `x * sigmoid(input_gate)` scaled by
    `sqrt(1 - a^2)`, except on a request's first row (position 0: a fresh request's first row),
    which is taken whole and forgets the state; then `h = a h + scaled input`, and the result is
    `h`. The state `recurrent` is `h [C]` in fp32.
  }];
  let assemblyFormat = "$x `,` $input_gate `,` $recurrent_gate `,` $recurrent_param `,` $cu_seqlens `,` $state_in `,` $state_out `,` $has_initial_state attr-dict `:` functional-type(operands, $result)";
}

def Cbc_MlstmOp : Cbc_StateScanOp<"state.mlstm",
    (ins Cbc_Rows:$q, Cbc_Rows:$k, Cbc_Rows:$v, Cbc_Rows:$input_gate, Cbc_Rows:$forget_gate),
    (ins I64Attr:$num_heads, I64Attr:$k_dim, I64Attr:$v_dim, DefaultValuedAttr<F64Attr, "1e-6">:$eps)> {
  let opcode = 51;
  let params = "MlstmParams";
  let summary = "The mLSTM cell: a matrix memory per head with exponential gating and a normaliser.";
  let description = [{
    Inputs `q, k [T, H * dk]`, `v [T, H * dv]` and the gate pre-activations `input_gate,
    forget_gate [T, H]`, with `H = num_heads`, `dk = k_dim`, `dv = v_dim`. Head `h` keeps, per
    request, a matrix `C [dk, dv]`, a normaliser `n [dk]` and a stabiliser `m` (the state
    `recurrent`, `[H, dk * (dv + 1) + 1]` in fp32: `C` row-major, then `n`, then `m`; all zero
    for a fresh request, `m` included). Each row in order, in fp32, with `i` and `f` the head's
    gates: `lf = logsigmoid(f)`, `m' = max(lf + m, i)`, `C = e^(lf+m-m') C + e^(i-m') k v^T`,
    `n = e^(lf+m-m') n + e^(i-m') k`, `m = m'`; the result is
    `(q' C) / (max(|q' . n|, e^(-m)) + eps)` with `q' = q dk^-1/2`. Without the stabiliser
    (`C~ = e^m C`) a key enters with `e^i` and decays by `sigmoid(f)` per later row; `m` keeps the
    exponentials finite and shows only through the floor and `eps`. The result is `[T, H * dv]`.
  }];
  let assemblyFormat = "$q `,` $k `,` $v `,` $input_gate `,` $forget_gate `,` $cu_seqlens `,` $state_in `,` $state_out `,` $has_initial_state attr-dict `:` functional-type(operands, $result)";
}

def Cbc_NgramEmbedOp : Cbc_StateScanOp<"state.ngram_embed",
    (ins Cbc_Index:$tokens, Cbc_Weight:$table),
    (ins I64Attr:$eos, I64Attr:$heads_per_ngram, DenseI64ArrayAttr:$multipliers,
         DenseI64ArrayAttr:$primes), "ngram"> {
  let opcode = 57;
  let params = "NgramEmbedParams";
  let summary = "Hashed n-gram embeddings of each token and the ones before it, with the last ids as a state.";
  let description = [{
    With `n = len(multipliers)` (the longest n-gram) and `P = len(primes) = (n - 1) *
    heads_per_ngram` heads, token `t` of a request looks back at its context `c_s`,
    `s = 0 .. n - 1`: `c_0` is the token, `c_s` the token `s` rows back, or `eos` if the walk
    back crosses an `eos` (any of the tokens `s` to 1 back is `eos`) or the request's start.
    For each `m = 2 .. n` the hash is `x = (c_0 * multipliers[0]) XOR ... XOR (c_{m-1} *
    multipliers[m-1])` in 64-bit integers, and head `g = (m - 2) * heads_per_ngram + k` reads
    row `x mod primes[g] + primes[0] + ... + primes[g-1]` of `table [rows, D]`. The result
    `[T, P * D]` is the heads' rows side by side. The walk back reaches at most `n - 1` tokens,
    which the request keeps as the state `ngram` (`[1, n - 1]`, the ids as fp32, exact below
    2^24); a fresh request starts from `eos` ones.
  }];
  let assemblyFormat = "$tokens `,` $table `,` $cu_seqlens `,` $state_in `,` $state_out `,` $has_initial_state attr-dict `:` functional-type(operands, $result)";
}

def Cbc_WindowPoolOp : Cbc_StateScanOp<"state.window_pool",
    (ins Cbc_Rows:$x, Cbc_Index:$positions, Cbc_Weight:$ape, Optional<Cbc_Weight>:$norm),
    (ins I64Attr:$rate, I64Attr:$dim, UnitAttr:$overlap, DefaultValuedAttr<F64Attr, "1e-6">:$eps,
         OptionalAttr<Cbc_RopeAttr>:$rope), "window"> {
  let opcode = 58;
  let params = "WindowPoolParams";
  let summary = "Softmax-gated pooling of each window of `rate` tokens into one compressed entry.";
  let description = [{
    Row `t` of `x` at position `p = positions[t]` holds a key-value part and its gate logits,
    `[kv | g]`, each `S * dim` wide (`S = 2` with `overlap`, else 1), and lies in window
    `w = p / rate`, slot `s = p mod rate`. A window's entry is, per feature `f`,
    `sum_j softmax_j(g_j[f] + ape[s_j, f]) * kv_j[f]` over its slots `j` (`ape [rate, S * dim]`
    a learned bias per slot); with `overlap` the slots are window `w`'s second halves (features
    `dim ..`, with `ape`'s second half) and, for `w > 0`, window `w - 1`'s first halves
    (features `0 .. dim`), `2 * rate` slots in one softmax. The entry is RMS-normed with `norm`
    when given (`eps`), and rotated by `rope` at position `w * rate`, the window's first; all in
    fp32. Row `t` of the result holds the entry of window `w` when `s = rate - 1` (the token
    closes it), zeros otherwise: `cbc.kv.append` with `#cbc.retention<compressed, rate>`
    writes exactly those rows.

    The request's state `window` is the open window's entry pooled so far, as a running
    softmax per feature (the largest logit, the sum of exponentials and the weighted kv:
    `[3, dim]`, whatever the rate); with `overlap` also the next window's, which pools the open
    window's first halves (`[6, dim]`). A request's rows must continue its positions.
  }];
  let assemblyFormat = "$x `,` $positions `,` $ape (`norm` `(` $norm^ `)`)? `,` $cu_seqlens `,` $state_in `,` $state_out `,` $has_initial_state attr-dict `:` functional-type(operands, $result)";
}

} // Cbc_StateGroup

//===----------------------------------------------------------------------------------===//
// Packed rows
//===----------------------------------------------------------------------------------===//

def Cbc_RowsGroup : OpDocGroup {
  let summary = "Packed rows";
  let description = "Gathers between the step's per-token and per-request rows.";
}

let opDocGroup = Cbc_RowsGroup in {

def Cbc_RowsGatherOp : Cbc_Op<"rows.gather", [Pure]> {
  let opcode = 21;
  let summary = "Gathers selected rows (each request's last row for the logits).";
  let description = [{ `result[r] = x[rows[r]]`. Keeps the LM head to one row per request. }];
  let arguments = (ins Cbc_Rows:$x, Cbc_Index:$rows);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = "$x `,` $rows attr-dict `:` type($x) `,` type($rows) `->` type($result)";
  let hasVerifier = 1;
}

def Cbc_RowsInjectOp : Cbc_Op<"rows.inject", [Pure]> {
  let opcode = 45;
  let summary = "Replaces rows by the embeddings a request gives (image or audio features).";
  let description = [{
    `result = x`, then `result[rows[j]] = embeds[j]` for every `j`: the rows of a prompt's
    placeholder tokens take the embeddings an encoder made for them, as a multimodal model's
    scatter of its features into the token embeddings does. `rows` and `embeds` are the step
    arguments `inject_rows` and `inject_embeds`, which the engine fills from the requests'
    embedding segments; a step without such rows copies `x`.
  }];
  let arguments = (ins Cbc_Rows:$x, Cbc_Index:$rows, Cbc_Rows:$embeds);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = "$x `,` $rows `,` $embeds attr-dict `:` type($x) `,` type($rows) `,` type($embeds) `->` type($result)";
  let hasVerifier = 1;
}

} // Cbc_RowsGroup

//===----------------------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------------------===//

def Cbc_MoeGroup : OpDocGroup {
  let summary = "Mixture of experts";
  let description = "Routing tokens to experts and running the experts.";
}

let opDocGroup = Cbc_MoeGroup in {

def Cbc_MoeRouteOp : Cbc_Op<"moe.route", [Pure, AttrSizedOperandSegments]> {
  let opcode = 22;
  let params = "MoeRouteParams";
  let summary = "Chooses `k` experts per token and their mixing weights.";
  let description = [{
    From router logits `[T, E]`:
    * `score = softmax`: softmax over all experts, take the top `k`, optionally renormalise
      them to sum to one (`renorm`);
    * `score = topk_softmax`: take the top `k` logits, then softmax over those `k`;
    * `score = sigmoid`: a sigmoid per expert, top `k`, optionally renormalised;
    * `score = sparsemixer`: the top `k` logits `l`, in rounds; round `j` chooses
      the best expert not yet chosen, with logit `m`, and weighs it `1 / sum exp(l_e - m)` over
      the experts `e` not chosen before it whose `(m - l_e) / max(|l_e|, m)` does not exceed
      `threshold`. The weights are not renormalised.
    With `selection_bias` (`[E]`, softmax or sigmoid scores only) the experts are chosen by
    the selection score `score + bias` (`logit + bias` with `bias_on_logits`) but weighted by
    the unbiased score. With `groups`
    (`#cbc.route_groups`, softmax or sigmoid scores only) the choice is group-limited: experts
    outside the kept groups get the group's fill as their selection score, and are still
    weighted by their unbiased score should one be chosen. Renormalising divides by the sum of
    the chosen weights plus `renorm_eps`. Weights are then multiplied by `scaling`. The ids come
    in descending order of selection score; ties choose the lower expert index.

    With `sinks = S` (sigmoid scores, no groups, no renorm) the last `S` logits score sink
    experts that every token takes beside its `k` chosen ones (shared experts that compete in
    the normalisation): the logits are `[T, E + S]`, the selection bias `[E]`, and each of the
    `S + k` weights is its sigmoid score over the sum of all `S + k` sigmoid scores, times
    `scaling`. The results have `S + k` columns, the sinks first; ids number the experts of a
    tensor that holds the sinks before the routed experts: sink `i` is id `i`, routed expert
    `e` is id `S + e`.

    `score = sqrt_softplus` scores `sqrt(softplus(logit))` per expert, chosen and weighted as
    the sigmoid scores are. With `table` (`[vocab, k]` expert ids, stored as floats) and `tokens`
    (each row's token id) the experts are not chosen by score but looked up: row `t` takes
    `table[tokens[t]]` in order, weighted by their scores as above (hash routing; no selection
    bias or groups).
  }];
  let arguments = (ins Cbc_Rows:$logits, Optional<Cbc_Weight>:$selection_bias,
                   Optional<Cbc_Index>:$tokens, Optional<Cbc_Weight>:$table, I64Attr:$k,
                   Cbc_RouteScoreAttr:$score, DefaultValuedAttr<BoolAttr, "false">:$renorm,
                   DefaultValuedAttr<F64Attr, "0.0">:$renorm_eps,
                   DefaultValuedAttr<F64Attr, "1.0">:$scaling,
                   OptionalAttr<Cbc_RouteGroupsAttr>:$groups,
                   DefaultValuedAttr<I64Attr, "0">:$sinks,
                   DefaultValuedAttr<F64Attr, "0.0">:$threshold,
                   DefaultValuedAttr<BoolAttr, "false">:$bias_on_logits);
  let results = (outs Cbc_Rows:$weights, Cbc_RowsI32:$ids);
  let assemblyFormat = [{
    $logits (`bias` `(` $selection_bias^ `:` type($selection_bias) `)`)?
    (`table` `(` $tokens^ `,` $table `:` type($tokens) `,` type($table) `)`)? attr-dict `:` type($logits)
    `->` type($weights) `,` type($ids)
  }];
  let hasVerifier = 1;
}

def Cbc_MoeExpertsOp : Cbc_Op<"moe.experts", [Pure, AttrSizedOperandSegments]> {
  let opcode = 23;
  let params = "MoeExpertsParams";
  let matrices = ["gate_up", "down"];
  let summary = "Runs each token through its chosen experts and mixes the results.";
  let description = [{
    `result[t] = sum_j weights[t, j] * down_e(glu(gate_up_e(x[t])))` with `e = ids[t, j]`.
    `gate_up` is `[E, 2I, H]` and `down` is `[E, H, I]`, with optional biases `[E, 2I]` and
    `[E, H]`. `act` and `layout` are those of `cbc.math.glu`. `ungated` experts have no gate:
    `gate_up` holds only the up projection `[E, I, H]` (bias `[E, I]`) and each expert computes
    `down_e(act(up_e(x[t])))` with a plain activation. With `identity_experts = Z` the router
    chooses among `E + Z` experts, and an id `e >= E` is an identity expert: it contributes
    `weights[t, j] * x[t]`. With `null_experts = N` the ids from `E + Z` to `E + Z + N - 1` are
    null experts, which contribute nothing (a router's option to skip the block). With
    `scale_input` the weight scales the expert's input instead of
    its output: `result[t] = sum_j down_e(glu(gate_up_e(weights[t, j] * x[t])))`. Backends group
    tokens by expert (grouped GEMM on the GPU).

    With `expert_ranks = N` (expert parallelism) the `E` experts of the weights are one rank's
    share of `E * N`: rank `r` runs the ids `r * E` to `r * E + E - 1` and skips the other
    routed ids; identity experts (ids from `E * N`) count on rank 0 only. The ranks' results
    are partial sums that a `cbc.comm.all_reduce` adds.
  }];
  let arguments = (ins Cbc_Rows:$x, Cbc_RowsI32:$ids, Cbc_Rows:$weights,
                   Cbc_Weight:$gate_up, Cbc_Weight:$down,
                   Optional<Cbc_Weight>:$gate_up_bias, Optional<Cbc_Weight>:$down_bias,
                   Cbc_GluActivation:$act,
                   DefaultValuedAttr<Cbc_GluLayoutAttr, "::cbc::GluLayout::halves">:$layout,
                   UnitAttr:$ungated, DefaultValuedAttr<I64Attr, "0">:$identity_experts,
                   UnitAttr:$scale_input, DefaultValuedAttr<I64Attr, "0">:$null_experts,
                   DefaultValuedAttr<I64Attr, "1">:$expert_ranks);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = "$x `,` $ids `,` $weights `,` $gate_up `,` $down (`bias` `(` $gate_up_bias^ `,` $down_bias `)`)? attr-dict `:` functional-type(operands, $result)";
  let hasVerifier = 1;
}

def Cbc_MoeSlotLinearOp : Cbc_Op<"moe.slot_linear", [Pure]> {
  let opcode = 37;
  let matrices = ["weight"];
  let summary = "One linear layer per routing choice: each token's chosen experts project it.";
  let description = [{
    `weight` is `[E, N, K]` and `ids` `[T, k]`. Without `weights` every choice projects the
    token's row: `x` is `[T, K]` and `result[t, j N : (j + 1) N] = weight[ids[t, j]] . x[t]`,
    `[T, k N]` (a mixture of attention heads' queries: one block of heads per choice). With
    `weights` (`[T, k]`) each choice projects its own block of `x` (`[T, k K]`) and the results
    mix: `result[t] = sum_j weights[t, j] * weight[ids[t, j]] . x[t, j K : (j + 1) K]`, `[T, N]`
    (the same heads' output projection). Backends group the choices by expert, as for
    `cbc.moe.experts`.
  }];
  let arguments = (ins Cbc_Rows:$x, Cbc_RowsI32:$ids, Cbc_Weight:$weight, Optional<Cbc_Rows>:$weights);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = [{
    $x `,` $ids `,` $weight (`mix` `(` $weights^ `:` type($weights) `)`)? attr-dict `:` type($x) `,` type($ids) `,`
    type($weight) `->` type($result)
  }];
  let hasVerifier = 1;
}

} // Cbc_MoeGroup

//===----------------------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------------------===//

def Cbc_CommGroup : OpDocGroup {
  let summary = "Collectives";
  let description = [{
    Data exchanged between the ranks of a tensor-parallel group, each running the same step
    program on its own slice of the weights (`#cbc.shard`). The `cbc-shard-*` passes insert
    them; every rank issues the same collectives in the same order.
  }];
}

let opDocGroup = Cbc_CommGroup in {

def Cbc_AllReduceOp : Cbc_Op<"comm.all_reduce", [Pure]> {
  let opcode = 43;
  let params = "CommParams";
  let summary = "Sums the ranks' partial rows; every rank gets the sum.";
  let description = [{
    `result = x_0 + x_1 + ... + x_(ranks-1) (+ bias)`: the partial products of a row-parallel
    linear or of the experts a rank holds. The sum is taken in rank order after gathering every
    rank's rows, so that it does not depend on message sizes or the library's algorithm (the
    same bits for the same inputs at any batch). The optional `bias` (`[N]`) is added once,
    after the sum.
  }];
  let arguments = (ins Cbc_Rows:$x, Optional<Cbc_Weight>:$bias, I64Attr:$ranks);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = [{
    $x (`bias` `(` $bias^ `:` type($bias) `)`)? attr-dict `:` custom<RowsTypes>(type($x), type($result))
  }];
  let hasVerifier = 1;
}

def Cbc_AllGatherOp : Cbc_Op<"comm.all_gather", [Pure]> {
  let opcode = 44;
  let params = "CommParams";
  let summary = "Concatenates the ranks' column slices; every rank gets the whole rows.";
  let description = [{
    `result = [x_0 | x_1 | ... | x_(ranks-1)]` along the last dimension: the vocabulary slices
    of a column-parallel LM head become the whole logits. Exact: nothing is added.
  }];
  let arguments = (ins Cbc_Rows:$x, I64Attr:$ranks);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
  let hasVerifier = 1;
}

} // Cbc_CommGroup

//===----------------------------------------------------------------------------------===//
// Residual streams
//===----------------------------------------------------------------------------------===//

def Cbc_StreamGroup : OpDocGroup {
  let summary = "Residual streams";
  let description = [{
    Hyper-connections keep `N` residual streams per token instead of one. The streams travel
    side by side in one `[T, N * hidden]` value (stream `n` at columns `n * hidden ...`), so
    every other op, the scheduler and the cache see an ordinary row. A block reads one stream
    mixed from all of them (`cbc.stream.collapse`) and its output is spread back over them
    (`cbc.stream.expand`), with per-token coefficients that `cbc.stream.hc_weights` computes
    from the streams themselves.
  }];
}

let opDocGroup = Cbc_StreamGroup in {

def Cbc_StreamHcWeightsOp : Cbc_Op<"stream.hc_weights", [Pure]> {
  let opcode = 46;
  let params = "HcWeightsParams";
  let summary = "A hyper-connection's per-token coefficients from its projected streams.";
  let description = [{
    `mixes [T, W]` is the hyper-connection's projection of the token's normed streams; `base
    [W]` and `scale` (one factor per kind of coefficient) are its learned parameters. Row `t`
    of the result holds, in this order:
    - `pre [N] = sigmoid(mixes_pre * scale[0] + base_pre) + eps` (every kind);
    - `post [N] = magnitude * sigmoid(mixes_post * scale[1] + base_post) + post_eps` (kinds
      `independent` and `manifold`);
    - `comb [N, N]` (kind `manifold`): `softmax` over each row `j` of
      `mixes_comb * scale[2] + base_comb`, plus `eps`, then Sinkhorn's normalisation: the
      columns divided by their sums (plus `eps`), then `sinkhorn_iters - 1` rounds of the rows
      and the columns likewise.
    So `W` is `N` (`collapse`: a final head), `2 N` (`independent`) or `(2 + N) N`
    (`manifold`). Computed in fp32.
  }];
  let arguments = (ins Cbc_Rows:$mixes, Cbc_Weight:$base, Cbc_Weight:$scale, Cbc_HcKindAttr:$kind,
                   I64Attr:$streams, F64Attr:$magnitude, F64Attr:$eps, F64Attr:$post_eps,
                   DefaultValuedAttr<I64Attr, "0">:$sinkhorn_iters);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = "$mixes `,` $base `,` $scale attr-dict `:` type(operands) `->` type($result)";
  let hasVerifier = 1;
}

def Cbc_StreamCollapseOp : Cbc_Op<"stream.collapse", [Pure]> {
  let opcode = 47;
  let params = "StreamParams";
  let summary = "One row mixed from a token's residual streams.";
  let description = [{
    `result[t] = sum_n weights[t, offset + n] * streams[t, n]`, with `streams [T, N * H]`
    holding `N` streams of `H` side by side and the `N` coefficients at column `offset` of
    `weights` (a `cbc.stream.hc_weights` result, whose `pre` sits at 0). The block of a
    hyper-connected layer reads this row. Without `weights` the result is the streams' mean,
    `(1 / N) sum_n streams[t, n]`, summed in fp32: gated residual streams, whose gates are
    applied per element before it.
  }];
  let arguments = (ins Cbc_Rows:$streams, Optional<Cbc_Rows>:$weights, I64Attr:$count,
                   DefaultValuedAttr<I64Attr, "0">:$offset);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = "$streams (`,` $weights^)? attr-dict `:` type($streams) (`,` type($weights)^)? `->` type($result)";
  let hasVerifier = 1;
}

def Cbc_StreamExpandOp : Cbc_Op<"stream.expand", [Pure]> {
  let opcode = 48;
  let params = "StreamParams";
  let summary = "A block's output spread over the residual streams, which it joins.";
  let description = [{
    `result[t, k] = weights[t, offset + k] * block[t] + residual_k`, for each of the `N`
    streams of `streams [T, N * H]` (`block [T, H]`). Without `comb` the residual is stream `k`
    itself; with it, the streams mixed by the `N x N` matrix that follows the `N` coefficients
    in `weights`, read transposed: `residual_k = sum_j comb[j, k] * streams[t, j]`.
  }];
  let arguments = (ins Cbc_Rows:$block, Cbc_Rows:$streams, Cbc_Rows:$weights, I64Attr:$count,
                   DefaultValuedAttr<I64Attr, "0">:$offset, UnitAttr:$comb);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = "$block `,` $streams `,` $weights attr-dict `:` type($block) `,` type($streams) `,` type($weights) `->` type($result)";
  let hasVerifier = 1;
}

def Cbc_StreamAttendOp : Cbc_Op<"stream.attend", [Pure]> {
  let opcode = 55;
  let params = "StreamAttendParams";
  let summary = "Learned queries attending over a token's own source rows.";
  let description = [{
    `sources [T, N * H]` holds `N` rows of `H` per token side by side (`N = count`) and
    `query [Q, H]` `Q` learned queries (`[H]`: one). Per token, every source is normalised without a weight,
    `n_i = s_i / sqrt(mean(s_i^2) + eps)`, and query `q` returns
    `sum_i softmax_i(query[q] . n_i / sqrt(H)) * n_i` as columns `q * H` to `(q + 1) * H` of the
    result `[T, Q * H]`, in fp32. Nothing crosses tokens: a residual stream replaced by
    attention over the embedding and earlier blocks' outputs reads its inputs this way.
  }];
  let arguments = (ins Cbc_Rows:$sources, Cbc_Weight:$query, I64Attr:$count,
                   DefaultValuedAttr<F64Attr, "1e-6">:$eps);
  let results = (outs Cbc_Rows:$result);
  let assemblyFormat = "$sources `,` $query attr-dict `:` type($sources) `,` type($query) `->` type($result)";
  let hasVerifier = 1;
}

} // Cbc_StreamGroup


#endif // CBC_OPS_TD
