// RUN: cbc-opt %s -split-input-file -verify-diagnostics

// One case (or more) per verifier message of dialects/cbc/CbcOps.cpp and of the parameter
// bundles in dialects/cbc/CbcAttrs.cpp (dialect/verifier-coverage.test checks that every message
// has one), plus the type constraints of CbcBase.td that guard the verifiers (packed rows, int32
// vectors, block tables, static weights), and a case for a value outside a closed set.

//===----------------------------------------------------------------------===//
// cbc.weight.ref
//===----------------------------------------------------------------------===//

func.func @weight_empty_name() {
  // expected-error @+1 {{'cbc.weight.ref' op needs a non-empty name}}
  %0 = cbc.weight.ref "" {sources = [["a"]]} : tensor<4xbf16>
  return
}

// -----

func.func @weight_no_sources() {
  // expected-error @+1 {{'cbc.weight.ref' op needs at least one source}}
  %0 = cbc.weight.ref "w" {sources = []} : tensor<4xbf16>
  return
}

// -----

func.func @weight_part_not_a_list() {
  // expected-error @+1 {{'cbc.weight.ref' op each source part must be a non-empty list of tensor names}}
  %0 = cbc.weight.ref "w" {sources = ["a"]} : tensor<4xbf16>
  return
}

// -----

func.func @weight_empty_part() {
  // expected-error @+1 {{'cbc.weight.ref' op each source part must be a non-empty list of tensor names}}
  %0 = cbc.weight.ref "w" {sources = [[]]} : tensor<4xbf16>
  return
}

// -----

func.func @weight_part_not_strings() {
  // expected-error @+1 {{'cbc.weight.ref' op each source part must be a non-empty list of tensor names}}
  %0 = cbc.weight.ref "w" {sources = [["a", 3]]} : tensor<4xbf16>
  return
}

// -----

func.func @weight_none_two_parts() {
  // expected-error @+1 {{'cbc.weight.ref' op combine 'none' takes exactly one source part}}
  %0 = cbc.weight.ref "w" {sources = [["a"], ["b"]]} : tensor<4xbf16>
  return
}

// -----

func.func @weight_stack_count() {
  // expected-error @+1 {{'cbc.weight.ref' op combine 'stack' needs one source part per leading index}}
  %0 = cbc.weight.ref "w" {combine = #cbc.combine<stack>, sources = [["a"], ["b"]]} : tensor<3x4x4xbf16>
  return
}

// -----

func.func @weight_stack_rank() {
  // expected-error @+1 {{'cbc.weight.ref' op combine 'stack' needs one source part per leading index}}
  %0 = cbc.weight.ref "w" {combine = #cbc.combine<stack>, sources = [["a"], ["b"]]} : tensor<2xbf16>
  return
}

// -----

func.func @weight_regroup_short() {
  // expected-error @+1 {{'cbc.weight.ref' op regroup must be [outer, segment sizes...] of positive sizes}}
  %0 = cbc.weight.ref "w" {sources = [["a"]], regroup = array<i64: 4>} : tensor<16x4xbf16>
  return
}

// -----

func.func @weight_regroup_zero() {
  // expected-error @+1 {{'cbc.weight.ref' op regroup must be [outer, segment sizes...] of positive sizes}}
  %0 = cbc.weight.ref "w" {sources = [["a"]], regroup = array<i64: 2, 4, 0>} : tensor<16x4xbf16>
  return
}

// -----

func.func @weight_regroup_negative_outer() {
  // expected-error @+1 {{'cbc.weight.ref' op regroup must be [outer, segment sizes...] of positive sizes}}
  %0 = cbc.weight.ref "w" {sources = [["a"]], regroup = array<i64: -2, 4, 4>} : tensor<16x4xbf16>
  return
}

// -----

func.func @weight_regroup_empty() {
  // expected-error @+1 {{'cbc.weight.ref' op regroup must be [outer, segment sizes...] of positive sizes}}
  %0 = cbc.weight.ref "w" {sources = [["a"]], regroup = array<i64>} : tensor<16x4xbf16>
  return
}

// -----

func.func @weight_regroup_too_many_rows() {
  // expected-error @+1 {{'cbc.weight.ref' op regroup covers 48 rows but the weight has 16}}
  %0 = cbc.weight.ref "w" {sources = [["a"]], regroup = array<i64: 4, 4, 8>} : tensor<16x4xbf16>
  return
}

// -----

func.func @weight_regroup_not_i64_array() {
  // expected-error @+1 {{'cbc.weight.ref' op attribute 'regroup' failed to satisfy constraint: i64 dense array attribute}}
  %0 = cbc.weight.ref "w" {sources = [["a"]], regroup = [2, 4, 4]} : tensor<16x4xbf16>
  return
}

// -----

func.func @weight_dynamic_shape() {
  // expected-error @+1 {{'cbc.weight.ref' op result #0 must be statically shaped weight tensor (plain or #cbc.quant), but got 'tensor<?x4xbf16>'}}
  %0 = cbc.weight.ref "w" {sources = [["a"]]} : tensor<?x4xbf16>
  return
}

// -----

// A weight's storage format: #cbc.quant, the encoding of its type.
func.func @weight_quant_block() {
  // expected-error @+1 {{quant block must be [rows, cols], both positive}}
  %0 = cbc.weight.ref "w" {sources = [["a"]]} : tensor<4x32xbf16, #cbc.quant<fp8_e4m3, block = [0, 32], scale = f32>>
  return
}

// -----

func.func @weight_quant_block_rank() {
  // expected-error @+1 {{quant block must be [rows, cols], both positive}}
  %0 = cbc.weight.ref "w" {sources = [["a"]]} : tensor<4x32xbf16, #cbc.quant<fp8_e4m3, block = [32], scale = f32>>
  return
}

// -----

func.func @weight_mxfp4_block() {
  // expected-error @+1 {{mxfp4 stores blocks of [1, 32] with f8E8M0FNU scales}}
  %0 = cbc.weight.ref "w" {sources = [["b", "s"]]} : tensor<4x32xbf16, #cbc.quant<mxfp4, block = [1, 16], scale = f8E8M0FNU>>
  return
}

// -----

func.func @weight_mxfp4_scale() {
  // expected-error @+1 {{mxfp4 stores blocks of [1, 32] with f8E8M0FNU scales}}
  %0 = cbc.weight.ref "w" {sources = [["b", "s"]]} : tensor<4x32xbf16, #cbc.quant<mxfp4, block = [1, 32], scale = f32>>
  return
}

// -----

func.func @weight_fp8_scale() {
  // expected-error @+1 {{fp8_e4m3 scales must be f32, bf16 or f16}}
  %0 = cbc.weight.ref "w" {sources = [["a"]]} : tensor<4x32xbf16, #cbc.quant<fp8_e4m3, block = [2, 2], scale = i8>>
  return
}

// -----

// The element type is what dequantising yields, not the stored codes.
func.func @weight_quant_element() {
  // expected-error @+1 {{a quantised weight's element type is its dequantised type: bf16, f16 or f32}}
  %0 = cbc.weight.ref "w" {sources = [["a"]]} : tensor<4x32xf8E4M3FN, #cbc.quant<fp8_e4m3, block = [2, 2], scale = f32>>
  return
}

// -----

func.func @weight_quant_rank() {
  // expected-error @+1 {{a quantised weight needs at least 2 dimensions for its blocks to tile}}
  %0 = cbc.weight.ref "w" {sources = [["a"]]} : tensor<32xbf16, #cbc.quant<fp8_e4m3, block = [2, 2], scale = f32>>
  return
}

// -----

func.func @weight_mxfp4_width() {
  // expected-error @+1 {{an mxfp4 weight's last dimension must be a multiple of 32}}
  %0 = cbc.weight.ref "w" {sources = [["b", "s"]]} : tensor<2x4x48xbf16, #cbc.quant<mxfp4, block = [1, 32], scale = f8E8M0FNU>>
  return
}

// -----

func.func @weight_mxfp4_pairs() {
  // expected-error @+1 {{'cbc.weight.ref' op an MXFP4 weight's source parts each name its blocks and its scales}}
  %0 = cbc.weight.ref "w" {sources = [["b"]]} : tensor<2x4x64xbf16, #cbc.quant<mxfp4, block = [1, 32], scale = f8E8M0FNU>>
  return
}

// -----

func.func @weight_quant_and_dequant() {
  // expected-error @+1 {{'cbc.weight.ref' op dequant expands a weight at load, so its type must be plain, not #cbc.quant}}
  %0 = cbc.weight.ref "w" {dequant = #cbc.dequant<mxfp4>, sources = [["b", "s"]]} : tensor<2x4x64xbf16, #cbc.quant<mxfp4, block = [1, 32], scale = f8E8M0FNU>>
  return
}

// -----

func.func @weight_other_encoding() {
  // expected-error @+1 {{'cbc.weight.ref' op result #0 must be statically shaped weight tensor (plain or #cbc.quant), but got 'tensor<4xbf16, "dense">'}}
  %0 = cbc.weight.ref "w" {sources = [["a"]]} : tensor<4xbf16, "dense">
  return
}

// -----

func.func @weight_declared_same() {
  // expected-error @+1 {{'cbc.weight.ref' op declared records the type a plain weight was widened from, so it must differ from its type}}
  %0 = cbc.weight.ref "w" {declared = f32, sources = [["a"]]} : tensor<4xf32>
  return
}

// -----

func.func @weight_declared_quant() {
  // expected-error @+1 {{'cbc.weight.ref' op declared records the type a plain weight was widened from, so it must differ from its type}}
  %0 = cbc.weight.ref "w" {declared = bf16, sources = [["a"]]} : tensor<4x4xf32, #cbc.quant<fp8_e4m3, block = [2, 2], scale = f32>>
  return
}

// -----

func.func @weight_declared_type() {
  // expected-error @+1 {{'cbc.weight.ref' op attribute 'declared' failed to satisfy constraint}}
  %0 = cbc.weight.ref "w" {declared = i32, sources = [["a"]]} : tensor<4xf32>
  return
}

//===----------------------------------------------------------------------===//
// Type constraints shared by the ops
//===----------------------------------------------------------------------===//

// -----

func.func @rows_static_leading_dim(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'cbc.math.add' op operand #0 must be packed rows (tensor<?xNxf32>, bf16 or f16), but got 'tensor<4x8xf32>'}}
  %0 = cbc.math.add %x, %x : tensor<4x8xf32>
  return
}

// -----

func.func @rows_not_float(%x: tensor<?x8xf64>) {
  // expected-error @+1 {{'cbc.math.softcap' op operand #0 must be packed rows (tensor<?xNxf32>, bf16 or f16), but got 'tensor<?x8xf64>'}}
  %0 = cbc.math.softcap %x {cap = 1.0 : f64} : tensor<?x8xf64>
  return
}

// -----

// A storage format belongs to weights; rows are plain.
func.func @rows_encoded(%x: tensor<?x32xbf16, #cbc.quant<fp8_e4m3, block = [1, 32], scale = f32>>) {
  // expected-error @+1 {{'cbc.math.act' op operand #0 must be packed rows (tensor<?xNxf32>, bf16 or f16), but got 'tensor<?x32xbf16, #cbc.quant<fp8_e4m3, block = [1, 32], scale = f32>>'}}
  %0 = cbc.math.act %x {act = #cbc.act<silu>} : (tensor<?x32xbf16, #cbc.quant<fp8_e4m3, block = [1, 32], scale = f32>>) -> tensor<?x32xbf16>
  return
}

// -----

// The functional form of an elementwise op's types lists each operand's.
func.func @rows_types_count(%x: tensor<?x8xbf16>) {
  // expected-error @+1 {{expected 2 operand types and one result type}}
  %0 = cbc.math.add %x, %x : (tensor<?x8xbf16>) -> tensor<?x8xf32>
  return
}

// -----

func.func @rows_types_shape(%x: tensor<?x8xbf16>, %y: tensor<?x4xbf16>) {
  // expected-error @+1 {{'cbc.math.add' op requires the same shape for all operands and results}}
  %0 = cbc.math.add %x, %y : (tensor<?x8xbf16>, tensor<?x4xbf16>) -> tensor<?x8xf32>
  return
}

// -----

func.func @rows_dynamic_width(%x: tensor<?x?xf32>, %rows: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.rows.gather' op operand #0 must be packed rows (tensor<?xNxf32>, bf16 or f16), but got 'tensor<?x?xf32>'}}
  %0 = cbc.rows.gather %x, %rows : tensor<?x?xf32>, tensor<?xi32> -> tensor<?x?xf32>
  return
}

// -----

func.func @index_not_i32(%x: tensor<?x8xf32>, %rows: tensor<?xi64>) {
  // expected-error @+1 {{'cbc.rows.gather' op operand #1 must be int32 vector (tensor<?xi32>), but got 'tensor<?xi64>'}}
  %0 = cbc.rows.gather %x, %rows : tensor<?x8xf32>, tensor<?xi64> -> tensor<?x8xf32>
  return
}

// -----

func.func @block_tables_rank(%k: tensor<?x8xf32>, %pos: tensor<?xi32>, %bt: tensor<?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.append' op operand #5 must be block tables (tensor<?x?x?xi32>), but got 'tensor<?x?xi32>'}}
  cbc.kv.append %k, %k, %pos, %pos, %pos, %bt {layer = 0 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>
  return
}

// -----

func.func @weight_operand_dynamic(%x: tensor<?x8xf32>, %w: tensor<?x8xbf16>) {
  // expected-error @+1 {{'cbc.math.linear' op operand #1 must be statically shaped weight tensor (plain or #cbc.quant), but got 'tensor<?x8xbf16>'}}
  %0 = cbc.math.linear %x, %w : tensor<?x8xf32>, tensor<?x8xbf16> -> tensor<?x8xf32>
  return
}

// -----

func.func @route_ids_not_i32(%l: tensor<?x4xf32>) {
  // expected-error @+1 {{'cbc.moe.route' op result #1 must be packed int32 rows (tensor<?xNxi32>), but got 'tensor<?x2xf32>'}}
  %w, %ids = cbc.moe.route %l {k = 2 : i64, score = #cbc.score<softmax>} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xf32>
  return
}

//===----------------------------------------------------------------------===//
// Dense math
//===----------------------------------------------------------------------===//

// -----

func.func @embed_table_rank(%tok: tensor<?xi32>, %t: tensor<16xbf16>) {
  // expected-error @+1 {{'cbc.math.embed' op table must be [vocab, hidden]}}
  %0 = cbc.math.embed %tok, %t : tensor<?xi32>, tensor<16xbf16> -> tensor<?x16xf32>
  return
}

// -----

func.func @embed_width(%tok: tensor<?xi32>, %t: tensor<16x8xbf16>) {
  // expected-error @+1 {{'cbc.math.embed' op result width must equal the table's hidden size}}
  %0 = cbc.math.embed %tok, %t : tensor<?xi32>, tensor<16x8xbf16> -> tensor<?x16xf32>
  return
}

// -----

func.func @embed_offset(%pos: tensor<?xi32>, %t: tensor<16x8xbf16>) {
  // expected-error @+1 {{'cbc.math.embed' op offset must not be negative}}
  %0 = cbc.math.embed %pos, %t {offset = -2 : i64} : tensor<?xi32>, tensor<16x8xbf16> -> tensor<?x8xf32>
  return
}

// -----

func.func @linear_weight_rank(%x: tensor<?x8xf32>, %w: tensor<2x4x8xbf16>) {
  // expected-error @+1 {{'cbc.math.linear' op weight must be [out, in]}}
  %0 = cbc.math.linear %x, %w : tensor<?x8xf32>, tensor<2x4x8xbf16> -> tensor<?x4xf32>
  return
}

// -----

func.func @linear_in(%x: tensor<?x8xf32>, %w: tensor<4x6xbf16>) {
  // expected-error @+1 {{'cbc.math.linear' op weight input size 6 does not match input width 8}}
  %0 = cbc.math.linear %x, %w : tensor<?x8xf32>, tensor<4x6xbf16> -> tensor<?x4xf32>
  return
}

// -----

func.func @linear_out(%x: tensor<?x8xf32>, %w: tensor<4x8xbf16>) {
  // expected-error @+1 {{'cbc.math.linear' op weight output size must equal the result width}}
  %0 = cbc.math.linear %x, %w : tensor<?x8xf32>, tensor<4x8xbf16> -> tensor<?x8xf32>
  return
}

// -----

func.func @linear_bias(%x: tensor<?x8xf32>, %w: tensor<4x8xbf16>, %b: tensor<8xbf16>) {
  // expected-error @+1 {{'cbc.math.linear' op bias must be [out]}}
  %0 = cbc.math.linear %x, %w, %b : tensor<?x8xf32>, tensor<4x8xbf16>, tensor<8xbf16> -> tensor<?x4xf32>
  return
}

// -----

func.func @linear_bias_rank(%x: tensor<?x8xf32>, %w: tensor<4x8xbf16>, %b: tensor<1x4xbf16>) {
  // expected-error @+1 {{'cbc.math.linear' op bias must be [out]}}
  %0 = cbc.math.linear %x, %w, %b : tensor<?x8xf32>, tensor<4x8xbf16>, tensor<1x4xbf16> -> tensor<?x4xf32>
  return
}

// -----

func.func @norm_group_divides(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.rms_norm' op group 3 must divide the row width 8}}
  %0 = cbc.math.rms_norm %x {eps = 1.0e-6 : f64, group = 3 : i64} : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @norm_group_zero(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.rms_norm' op group 0 must divide the row width 8}}
  %0 = cbc.math.rms_norm %x {eps = 1.0e-6 : f64, group = 0 : i64} : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @norm_weight(%x: tensor<?x8xf32>, %w: tensor<6xbf16>) {
  // expected-error @+1 {{'cbc.math.rms_norm' op weight must have one entry per feature of a group or of the row}}
  %0 = cbc.math.rms_norm %x, %w {eps = 1.0e-6 : f64, group = 4 : i64} : tensor<?x8xf32>, tensor<6xbf16> -> tensor<?x8xf32>
  return
}

// -----

func.func @norm_eps(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.rms_norm' op eps must be positive}}
  %0 = cbc.math.rms_norm %x {eps = 0.0 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @norm_result(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.rms_norm' op result width must equal the input width}}
  %0 = cbc.math.rms_norm %x {eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @add_weight_width(%x: tensor<?x8xf32>) {
  %w = cbc.weight.ref "z" {sources = [["z"]]} : tensor<3xbf16>
  // expected-error @+1 {{'cbc.math.add' op a weight addend must be one row whose length divides the operand's width}}
  %0 = cbc.math.add %x, %w : (tensor<?x8xf32>, tensor<3xbf16>) -> tensor<?x8xf32>
  return
}

// -----

func.func @add_types(%x: tensor<?x8xf32>, %y: tensor<?x4xf32>) {
  // expected-error @+1 {{'cbc.math.add' op requires the same shape for all operands and results}}
  %0 = "cbc.math.add"(%x, %y) : (tensor<?x8xf32>, tensor<?x4xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @glu_act(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.glu' op attribute 'act' failed to satisfy constraint: an elementwise activation or A gated unit with clamped inputs: (clamp(up) + up_offset) * g * sigmoid(alpha * g).}}
  %0 = cbc.math.glu %x {act = "tanh"} : tensor<?x8xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @glu_width(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.glu' op input width must be twice the result width}}
  %0 = cbc.math.glu %x {act = #cbc.act<silu>} : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @split_widths(%x: tensor<?x12xf32>) {
  // expected-error @+1 {{'cbc.math.split' op result widths add up to 10, not the input width 12}}
  %0:2 = cbc.math.split %x : tensor<?x12xf32> -> tensor<?x8xf32>, tensor<?x2xf32>
  return
}

// -----

func.func @rope_head_dim(%x: tensor<?x8xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.math.rope' op rope head_dim must divide the row width}}
  %0 = cbc.math.rope %x, %p, %p, %p {rope = #cbc.rope<head_dim = 3, rotary_dim = 2, inv_freq = array<f32: 1.0>>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  return
}

// -----

func.func @rope_head_dim_zero(%x: tensor<?x8xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{rope head_dim must be positive}}
  %0 = cbc.math.rope %x, %p, %p, %p {rope = #cbc.rope<head_dim = 0, rotary_dim = 2, inv_freq = array<f32: 1.0>>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  return
}

// -----

func.func @rope_rotary_odd(%x: tensor<?x8xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{rope rotary_dim must be even and in (0, head_dim]}}
  %0 = cbc.math.rope %x, %p, %p, %p {rope = #cbc.rope<head_dim = 4, rotary_dim = 3, inv_freq = array<f32: 1.0>>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  return
}

// -----

func.func @rope_rotary_too_big(%x: tensor<?x8xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{rope rotary_dim must be even and in (0, head_dim]}}
  %0 = cbc.math.rope %x, %p, %p, %p {rope = #cbc.rope<head_dim = 4, rotary_dim = 8, inv_freq = array<f32: 1.0, 1.0, 1.0, 1.0>>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  return
}

// -----

func.func @rope_inv_freq(%x: tensor<?x8xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{rope inv_freq must have rotary_dim / 2 entries}}
  %0 = cbc.math.rope %x, %p, %p, %p {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0>>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  return
}

// -----

// Closed sets are enums: the parser refuses a value outside them.
func.func @rope_pairing(%x: tensor<?x8xf32>, %p: tensor<?xi32>) {
  // expected-error @+2 {{expected ::cbc::RopePairing to be one of: half, interleaved}}
  // expected-error @+1 {{failed to parse Cbc_RopeAttr parameter 'pairing'}}
  %0 = cbc.math.rope %x, %p, %p, %p {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, pairing = neox, inv_freq = array<f32: 1.0, 0.1>>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  return
}

// -----

func.func @rope_inv_freq_long(%x: tensor<?x8xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{rope inv_freq_long must have rotary_dim / 2 entries}}
  %0 = cbc.math.rope %x, %p, %p, %p {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.1>, inv_freq_long = array<f32: 0.5>, long_after = 4096>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  return
}

// -----

func.func @rope_long_after(%x: tensor<?x8xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{rope inv_freq_long needs a positive long_after}}
  %0 = cbc.math.rope %x, %p, %p, %p {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.1>, inv_freq_long = array<f32: 0.5, 0.05>>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  return
}

// -----

func.func @rope_dynamic(%x: tensor<?x8xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{rope dynamic_base needs a positive dynamic_factor and dynamic_max_positions}}
  %0 = cbc.math.rope %x, %p, %p, %p {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.1>, dynamic_base = 10000.0, dynamic_factor = 2.0>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  return
}

// -----

func.func @rope_result(%x: tensor<?x8xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.math.rope' op result width must equal the input width}}
  %0 = cbc.math.rope %x, %p, %p, %p {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.1>>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4xf32>
  return
}

// -----

func.func @diff_heads_width(%x: tensor<?x8xf32>, %l: tensor<4xbf16>) {
  // expected-error @+1 {{'cbc.math.diff_heads' op input width must be twice the result width}}
  %0 = cbc.math.diff_heads %x, %l, %l, %l, %l {lambda_init = 0.2 : f64} : tensor<?x8xf32>, tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16> -> tensor<?x8xf32>
  return
}

// -----

func.func @diff_heads_lambdas(%x: tensor<?x8xf32>, %l: tensor<4xbf16>, %m: tensor<2xbf16>) {
  // expected-error @+1 {{'cbc.math.diff_heads' op lambda vectors must be four of one length and element type}}
  %0 = cbc.math.diff_heads %x, %l, %l, %m, %l {lambda_init = 0.2 : f64} : tensor<?x8xf32>, tensor<4xbf16>, tensor<4xbf16>, tensor<2xbf16>, tensor<4xbf16> -> tensor<?x4xf32>
  return
}

// -----

func.func @diff_heads_init(%x: tensor<?x8xf32>, %l: tensor<4xbf16>) {
  // expected-error @+1 {{'cbc.math.diff_heads' op lambda_init must be finite}}
  %0 = cbc.math.diff_heads %x, %l, %l, %l, %l {lambda_init = 0x7FF0000000000000 : f64} : tensor<?x8xf32>, tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16> -> tensor<?x4xf32>
  return
}

// -----

func.func @act_quant_width(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.act_quant' op requires the same shape for all operands and results}}
  %0 = cbc.math.act_quant %x : (tensor<?x8xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @clamp_limit(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.clamp' op limit must be positive and finite}}
  %0 = cbc.math.clamp %x {limit = 0.0 : f64} : tensor<?x8xf32>
  return
}

// -----

func.func @xielu_param_not_scalar(%x: tensor<?x8xf32>, %a: tensor<2xbf16>, %b: tensor<1xbf16>) {
  // expected-error @+1 {{'cbc.math.xielu' op parameters must each have exactly one element}}
  %0 = cbc.math.xielu %x, %a, %b, %b, %b : tensor<?x8xf32>, tensor<2xbf16>, tensor<1xbf16>, tensor<1xbf16>, tensor<1xbf16> -> tensor<?x8xf32>
  return
}

// -----

func.func @xielu_param_types(%x: tensor<?x8xf32>, %a: tensor<1xf32>, %b: tensor<1xbf16>) {
  // expected-error @+1 {{'cbc.math.xielu' op parameters must share one element type}}
  %0 = cbc.math.xielu %x, %b, %a, %b, %b : tensor<?x8xf32>, tensor<1xbf16>, tensor<1xf32>, tensor<1xbf16>, tensor<1xbf16> -> tensor<?x8xf32>
  return
}

// -----

func.func @xielu_width(%x: tensor<?x8xf32>, %b: tensor<1xbf16>) {
  // expected-error @+1 {{'cbc.math.xielu' op result width must equal the input width}}
  %0 = cbc.math.xielu %x, %b, %b, %b, %b : tensor<?x8xf32>, tensor<1xbf16>, tensor<1xbf16>, tensor<1xbf16>, tensor<1xbf16> -> tensor<?x4xf32>
  return
}

// -----

func.func @softcap_cap(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.softcap' op cap must be positive}}
  %0 = cbc.math.softcap %x {cap = -30.0 : f64} : tensor<?x8xf32>
  return
}

// -----

// 3 gates cannot split 8 columns into equal groups.
func.func @gate_width(%x: tensor<?x8xf32>, %g: tensor<?x3xf32>) {
  // expected-error @+1 {{'cbc.math.gate' op gate width must divide the input width}}
  %0 = cbc.math.gate %x, %g : tensor<?x8xf32>, tensor<?x3xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @gate_result(%x: tensor<?x8xf32>, %g: tensor<?x1xf32>) {
  // expected-error @+1 {{'cbc.math.gate' op result width must equal the input width}}
  %0 = cbc.math.gate %x, %g : tensor<?x8xf32>, tensor<?x1xf32> -> tensor<?x4xf32>
  return
}

// -----

// A plain product: the widths are checked.
func.func @gate_none_width(%x: tensor<?x8xf32>, %g: tensor<?x5xf32>) {
  // expected-error @+1 {{'cbc.math.mul' op gate width must divide the input width}}
  %0 = cbc.math.mul %x, %g : tensor<?x8xf32>, tensor<?x5xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @gate_none_result(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.mul' op result width must equal the input width}}
  %0 = cbc.math.mul %x, %x : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @rms_norm_gated_z_width(%x: tensor<?x16xf32>, %z: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.rms_norm_gated' op x, z and the result must have the same width}}
  %0 = cbc.math.rms_norm_gated %x, %z {eps = 1.0e-6 : f64} : tensor<?x16xf32>, tensor<?x8xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @rms_norm_gated_result_width(%x: tensor<?x16xf32>) {
  // expected-error @+1 {{'cbc.math.rms_norm_gated' op x, z and the result must have the same width}}
  %0 = cbc.math.rms_norm_gated %x, %x {eps = 1.0e-6 : f64} : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @rms_norm_gated_group(%x: tensor<?x16xf32>) {
  // expected-error @+1 {{'cbc.math.rms_norm_gated' op group 6 must divide the row width 16}}
  %0 = cbc.math.rms_norm_gated %x, %x {eps = 1.0e-6 : f64, group = 6 : i64} : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @rms_norm_gated_group_zero(%x: tensor<?x16xf32>) {
  // expected-error @+1 {{'cbc.math.rms_norm_gated' op group 0 must divide the row width 16}}
  %0 = cbc.math.rms_norm_gated %x, %x {eps = 1.0e-6 : f64, group = 0 : i64} : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @rms_norm_gated_group_negative(%x: tensor<?x16xf32>) {
  // expected-error @+1 {{'cbc.math.rms_norm_gated' op group -4 must divide the row width 16}}
  %0 = cbc.math.rms_norm_gated %x, %x {eps = 1.0e-6 : f64, group = -4 : i64} : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  return
}

// -----

// A per-group weight, but the norm is over whole rows.
func.func @rms_norm_gated_weight(%x: tensor<?x16xf32>, %w: tensor<4xbf16>) {
  // expected-error @+1 {{'cbc.math.rms_norm_gated' op weight must have one entry per feature of a group or of the row}}
  %0 = cbc.math.rms_norm_gated %x, %x, %w {eps = 1.0e-6 : f64} : tensor<?x16xf32>, tensor<?x16xf32>, tensor<4xbf16> -> tensor<?x16xf32>
  return
}

// -----

func.func @rms_norm_gated_weight_rank(%x: tensor<?x16xf32>, %w: tensor<1x4xbf16>) {
  // expected-error @+1 {{'cbc.math.rms_norm_gated' op weight must have one entry per feature of a group or of the row}}
  %0 = cbc.math.rms_norm_gated %x, %x, %w {eps = 1.0e-6 : f64, group = 4 : i64} : tensor<?x16xf32>, tensor<?x16xf32>, tensor<1x4xbf16> -> tensor<?x16xf32>
  return
}

// -----

func.func @rms_norm_gated_eps(%x: tensor<?x16xf32>) {
  // expected-error @+1 {{'cbc.math.rms_norm_gated' op eps must be positive}}
  %0 = cbc.math.rms_norm_gated %x, %x {eps = 0.0 : f64} : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @rms_norm_gated_no_eps(%x: tensor<?x16xf32>) {
  // expected-error @+1 {{'cbc.math.rms_norm_gated' op requires attribute 'eps'}}
  %0 = cbc.math.rms_norm_gated %x, %x : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @rms_norm_gated_z_type(%x: tensor<?x16xf32>, %z: tensor<?x16xi8>) {
  // expected-error @+1 {{'cbc.math.rms_norm_gated' op operand #1 must be packed rows (tensor<?xNxf32>, bf16 or f16), but got 'tensor<?x16xi8>'}}
  %0 = cbc.math.rms_norm_gated %x, %z {eps = 1.0e-6 : f64} : tensor<?x16xf32>, tensor<?x16xi8> -> tensor<?x16xf32>
  return
}

// -----

func.func @head_linear_weight(%x: tensor<?x16xf32>, %w: tensor<9x8xbf16>) {
  // expected-error @+1 {{'cbc.math.head_linear' op weight must be [heads * R, C] with heads positive}}
  %y = cbc.math.head_linear %x, %w {heads = 2 : i64, offset = 0 : i64, rows = 4 : i64} : tensor<?x16xf32>, tensor<9x8xbf16> -> tensor<?x8xf32>
  return
}

// -----

func.func @head_linear_rows(%x: tensor<?x16xf32>, %w: tensor<12x8xbf16>) {
  // expected-error @+1 {{'cbc.math.head_linear' op rows [offset, offset + rows) must lie within each head's weight rows}}
  %y = cbc.math.head_linear %x, %w {heads = 2 : i64, offset = 4 : i64, rows = 4 : i64} : tensor<?x16xf32>, tensor<12x8xbf16> -> tensor<?x8xf32>
  return
}

// -----

func.func @head_linear_widths(%x: tensor<?x16xf32>, %w: tensor<12x8xbf16>) {
  // expected-error @+1 {{'cbc.math.head_linear' op x and result widths must be heads times the rows (or columns) each head reads and writes}}
  %y = cbc.math.head_linear %x, %w {heads = 2 : i64, offset = 2 : i64, rows = 4 : i64, transpose} : tensor<?x16xf32>, tensor<12x8xbf16> -> tensor<?x8xf32>
  return
}

// -----

func.func @pool_select_sizes(%q: tensor<?x8xf32>, %w: tensor<?x2xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %ape: tensor<2x4xf32>) {
  // expected-error @+1 {{'cbc.kv.pool_select' op num_heads, head_dim, pools and pool must be positive}}
  %s = cbc.kv.pool_select %q weights(%w : tensor<?x2xf32>), %p, %p, %p, %p, %p, %bt ape(%ape : tensor<2x4xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 4 : i64, pools = 0 : i64, pool = 2 : i64, key_scale = 0.5 : f64, weight_scale = 0.7 : f64} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x1xi32>
  return
}

// -----

func.func @pool_select_q(%q: tensor<?x6xf32>, %w: tensor<?x2xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %ape: tensor<2x4xf32>) {
  // expected-error @+1 {{'cbc.kv.pool_select' op q width must be num_heads * head_dim}}
  %s = cbc.kv.pool_select %q weights(%w : tensor<?x2xf32>), %p, %p, %p, %p, %p, %bt ape(%ape : tensor<2x4xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 4 : i64, pools = 2 : i64, pool = 2 : i64, key_scale = 0.5 : f64, weight_scale = 0.7 : f64} : tensor<?x6xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x5xi32>
  return
}

// -----

func.func @pool_select_weights(%q: tensor<?x8xf32>, %w: tensor<?x3xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %ape: tensor<2x4xf32>) {
  // expected-error @+1 {{'cbc.kv.pool_select' op weights must have one column per head}}
  %s = cbc.kv.pool_select %q weights(%w : tensor<?x3xf32>), %p, %p, %p, %p, %p, %bt ape(%ape : tensor<2x4xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 4 : i64, pools = 2 : i64, pool = 2 : i64, key_scale = 0.5 : f64, weight_scale = 0.7 : f64} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x5xi32>
  return
}

// -----

func.func @pool_select_ape(%q: tensor<?x8xf32>, %w: tensor<?x2xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %ape: tensor<2x3xf32>) {
  // expected-error @+1 {{'cbc.kv.pool_select' op ape must be [pool, head_dim]}}
  %s = cbc.kv.pool_select %q weights(%w : tensor<?x2xf32>), %p, %p, %p, %p, %p, %bt ape(%ape : tensor<2x3xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 4 : i64, pools = 2 : i64, pool = 2 : i64, key_scale = 0.5 : f64, weight_scale = 0.7 : f64} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x5xi32>
  return
}

// -----

func.func @pool_select_width(%q: tensor<?x8xf32>, %w: tensor<?x2xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %ape: tensor<2x4xf32>) {
  // expected-error @+1 {{'cbc.kv.pool_select' op result width must be pools * pool + pool - 1 (with blocks: pools + 1)}}
  %s = cbc.kv.pool_select %q weights(%w : tensor<?x2xf32>), %p, %p, %p, %p, %p, %bt ape(%ape : tensor<2x4xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 4 : i64, pools = 2 : i64, pool = 2 : i64, key_scale = 0.5 : f64, weight_scale = 0.7 : f64} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x4xi32>
  return
}

// -----

func.func @rope_freq_log_scale(%x: tensor<?x8xf32>, %p: tensor<?xi32>, %a: tensor<4xf32>) {
  // expected-error @+1 {{'cbc.math.rope' op freq_log_scale must hold rotary_dim / 2 values}}
  %0 = cbc.math.rope %x, %p, %p, %p freq_log_scale %a : tensor<4xf32> {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  return
}

// -----

func.func @l2_clip_group(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.l2_clip' op group must be positive and divide the row}}
  %y = cbc.math.l2_clip %x {group = 3 : i64, threshold = 1.0 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @l2_clip_scale(%x: tensor<?x8xf32>, %s: tensor<2x4xf32>) {
  // expected-error @+1 {{'cbc.math.l2_clip' op scale must have one entry per feature of the row}}
  %y = cbc.math.l2_clip %x scale(%s) {group = 4 : i64, threshold = 1.0 : f64} : tensor<?x8xf32>, tensor<2x4xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @l2_clip_threshold(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.l2_clip' op threshold must be positive and eps non-negative, both finite}}
  %y = cbc.math.l2_clip %x {group = 4 : i64, threshold = 0.0 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @l2_clip_eps(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.l2_clip' op threshold must be positive and eps non-negative, both finite}}
  %y = cbc.math.l2_clip %x {eps = -1.0 : f64, group = 4 : i64, threshold = 1.0 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @l2_clip_width(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.l2_clip' op result width must equal the input width}}
  %y = cbc.math.l2_clip %x {group = 4 : i64, threshold = 1.0 : f64} : tensor<?x8xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @head_position_scale_vectors(%x: tensor<?x8xf32>, %p: tensor<?xi32>, %s: tensor<2xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'cbc.math.head_position_scale' op scale and bias must be vectors of one entry per head}}
  %y = cbc.math.head_position_scale %x, %p, %s, %b : tensor<?x8xf32>, tensor<?xi32>, tensor<2xf32>, tensor<4xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @head_position_scale_heads(%x: tensor<?x8xf32>, %p: tensor<?xi32>, %s: tensor<3xf32>) {
  // expected-error @+1 {{'cbc.math.head_position_scale' op x must hold whole heads}}
  %y = cbc.math.head_position_scale %x, %p, %s, %s : tensor<?x8xf32>, tensor<?xi32>, tensor<3xf32>, tensor<3xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @head_position_scale_width(%x: tensor<?x8xf32>, %p: tensor<?xi32>, %s: tensor<2xf32>) {
  // expected-error @+1 {{'cbc.math.head_position_scale' op result width must equal the input width}}
  %y = cbc.math.head_position_scale %x, %p, %s, %s : tensor<?x8xf32>, tensor<?xi32>, tensor<2xf32>, tensor<2xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @position_scale_period(%x: tensor<?x16xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.math.position_scale' op period must be positive and offset not negative}}
  %y = cbc.math.position_scale %x, %p {beta = 0.1 : f64, period = 0 : i64} : tensor<?x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @position_scale_width(%x: tensor<?x16xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.math.position_scale' op result width must equal the input width}}
  %y = cbc.math.position_scale %x, %p {beta = 0.1 : f64, period = 8 : i64} : tensor<?x16xf32>, tensor<?xi32> -> tensor<?x8xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// The paged cache
//===----------------------------------------------------------------------===//

// -----

func.func @append_heads(%k: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.append' op head counts and head_dim must be positive}}
  cbc.kv.append %k, %k, %p, %p, %p, %bt {layer = 0 : i64, num_kv_heads = 0 : i64, head_dim = 4 : i64} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  return
}

// -----

func.func @append_head_dim(%k: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.append' op head counts and head_dim must be positive}}
  cbc.kv.append %k, %k, %p, %p, %p, %bt {layer = 0 : i64, num_kv_heads = 2 : i64, head_dim = -4 : i64} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  return
}

// -----

func.func @append_window(%k: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{window, chunk and compressed retention need a positive token count}}
  cbc.kv.append %k, %k, %p, %p, %p, %bt {layer = 0 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, retention = #cbc.retention<window, 0>} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  return
}

// -----

func.func @append_chunk(%k: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{window, chunk and compressed retention need a positive token count}}
  cbc.kv.append %k, %k, %p, %p, %p, %bt {layer = 0 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, retention = #cbc.retention<chunk, -1>} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  return
}

// -----

func.func @append_k_width(%k: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.append' op k width must be num_kv_heads * head_dim}}
  cbc.kv.append %k, %k, %p, %p, %p, %bt {layer = 0 : i64, num_kv_heads = 4 : i64, head_dim = 4 : i64} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  return
}

// -----

func.func @append_latent_heads(%k: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.append' op latent rows have one kv head}}
  cbc.kv.append %k, %k, %p, %p, %p, %bt {layer = 0 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, latent} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  return
}

// -----

func.func @latent_dims(%q: tensor<?x16xf32>, %r: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.latent_attention' op num_heads and latent_dim must be positive and rope_dim not negative}}
  %o = cbc.kv.latent_attention %q, %r, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 2 : i64, latent_dim = 8 : i64, rope_dim = -4 : i64, scale = 0.5 : f64} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @latent_width(%q: tensor<?x16xf32>, %r: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.latent_attention' op q_latent and result width must be num_heads * latent_dim}}
  %o = cbc.kv.latent_attention %q, %r, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 2 : i64, latent_dim = 4 : i64, rope_dim = 4 : i64, scale = 0.5 : f64} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @latent_rope_width(%q: tensor<?x16xf32>, %r: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.latent_attention' op q_rope width must be num_heads * rope_dim}}
  %o = cbc.kv.latent_attention %q, %r, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 2 : i64, latent_dim = 8 : i64, rope_dim = 2 : i64, scale = 0.5 : f64} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @append_v_width(%k: tensor<?x8xf32>, %v: tensor<?x5xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.append' op v width must be a multiple of num_kv_heads}}
  cbc.kv.append %k, %v, %p, %p, %p, %bt {layer = 0 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64} : tensor<?x8xf32>, tensor<?x5xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  return
}

// -----

func.func @append_no_result_allowed(%k: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.append' op requires zero results}}
  %0 = "cbc.kv.append"(%k, %k, %p, %p, %bt) {layer = 0 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @attention_kv_heads(%q: tensor<?x16xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.attention' op head counts and head_dim must be positive}}
  %0 = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 0 : i64, head_dim = 4 : i64, scale = 0.5 : f64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @attention_window(%q: tensor<?x16xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{window, chunk and compressed retention need a positive token count}}
  %0 = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64, retention = #cbc.retention<window, -128>} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @attention_chunk(%q: tensor<?x16xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{window, chunk and compressed retention need a positive token count}}
  %0 = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64, retention = #cbc.retention<chunk, 0>} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @attention_gqa(%q: tensor<?x12xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.attention' op num_heads must be a multiple of num_kv_heads}}
  %0 = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 3 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64} : tensor<?x12xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x12xf32>
  return
}

// -----

func.func @attention_no_heads(%q: tensor<?x16xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.attention' op head counts and head_dim must be positive}}
  %0 = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 0 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @attention_q_width(%q: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.attention' op q width must be num_heads * head_dim}}
  %0 = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @attention_result(%q: tensor<?x16xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.attention' op result width must be a multiple of num_heads}}
  %0 = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x10xf32>
  return
}

// -----

func.func @attention_sinks(%q: tensor<?x16xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %s: tensor<2xbf16>) {
  // expected-error @+1 {{'cbc.kv.attention' op sinks must have one entry per query head}}
  %0 = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt, %s {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<2xbf16> -> tensor<?x16xf32>
  return
}

// -----

func.func @attention_sinks_rank(%q: tensor<?x16xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %s: tensor<4x1xbf16>) {
  // expected-error @+1 {{'cbc.kv.attention' op sinks must have one entry per query head}}
  %0 = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt, %s {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<4x1xbf16> -> tensor<?x16xf32>
  return
}

// -----

func.func @attention_sinks_twice(%q: tensor<?x16xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %s: tensor<4xf32>, %r: tensor<?x4xf32>) {
  // expected-error @+1 {{'cbc.kv.attention' op takes sinks or sink logits, not both}}
  %0 = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt, %s sink_logits(%r) {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<4xf32>, tensor<?x4xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @attention_sink_logits(%q: tensor<?x16xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %r: tensor<?x2xf32>) {
  // expected-error @+1 {{'cbc.kv.attention' op sink_logits must hold one logit per query head}}
  %0 = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt sink_logits(%r) {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<?x2xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @attention_alibi_count(%q: tensor<?x16xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.attention' op alibi_slopes must have one entry per query head}}
  %0 = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64, alibi_slopes = array<f32: 0.5, 0.25>} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @attention_alibi_finite(%q: tensor<?x16xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.attention' op alibi_slopes must be finite}}
  %0 = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64, alibi_slopes = array<f32: 0.5, 0.25, 0x7F800000, 0.125>} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @attention_softcap(%q: tensor<?x16xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.attention' op softcap must be positive}}
  %0 = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64, softcap = 0.0 : f64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @attention_missing_scale(%q: tensor<?x16xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.attention' op requires attribute 'scale'}}
  %0 = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  return
}

//===----------------------------------------------------------------------===//
// Per-request states
//===----------------------------------------------------------------------===//

// -----

func.func @conv_weight_rank(%x: tensor<?x8xf32>, %w: tensor<8x1x1x4xbf16>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.conv1d' op weight must be [channels, group, kernel] with group dividing channels, or [channels, kernel]}}
  %0 = cbc.state.conv1d %x, %w, %i, %i, %i, %i {layer = 0 : i64} : (tensor<?x8xf32>, tensor<8x1x1x4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @conv_taps_width(%x: tensor<?x8xf32>, %w: tensor<8x4xf32>, %t: tensor<?x6xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.conv1d' op taps must be [T, n * kernel] with n dividing the channels of a depthwise conv}}
  %0 = cbc.state.conv1d %x, %w taps(%t), %i, %i, %i, %i {layer = 0 : i64} : (tensor<?x8xf32>, tensor<8x4xf32>, tensor<?x6xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @conv_taps_grouped(%x: tensor<?x8xf32>, %w: tensor<8x2x4xf32>, %t: tensor<?x8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.conv1d' op taps must be [T, n * kernel] with n dividing the channels of a depthwise conv}}
  %0 = cbc.state.conv1d %x, %w taps(%t), %i, %i, %i, %i {layer = 0 : i64} : (tensor<?x8xf32>, tensor<8x2x4xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @conv_scale(%x: tensor<?x8xf32>, %w: tensor<8x1x4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.conv1d' op scale must be finite and non-zero}}
  %0 = cbc.state.conv1d %x, %w, %i, %i, %i, %i {layer = 0 : i64, scale = 0.0 : f64} : (tensor<?x8xf32>, tensor<8x1x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @conv_lag_order_grouped(%x: tensor<?x8xf32>, %w: tensor<8x2x4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.conv1d' op lag_order needs a depthwise conv}}
  %0 = cbc.state.conv1d %x, %w, %i, %i, %i, %i {lag_order, layer = 0 : i64} : (tensor<?x8xf32>, tensor<8x2x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @conv_weight_channels(%x: tensor<?x8xf32>, %w: tensor<4x1x4xbf16>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.conv1d' op weight must be [channels, group, kernel] with group dividing channels}}
  %0 = cbc.state.conv1d %x, %w, %i, %i, %i, %i {layer = 0 : i64} : (tensor<?x8xf32>, tensor<4x1x4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// Grouped: the middle dimension (input channels per group) must divide the channels.
func.func @conv_weight_middle(%x: tensor<?x8xf32>, %w: tensor<8x3x4xbf16>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.conv1d' op weight must be [channels, group, kernel] with group dividing channels}}
  %0 = cbc.state.conv1d %x, %w, %i, %i, %i, %i {layer = 0 : i64} : (tensor<?x8xf32>, tensor<8x3x4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @conv_initial_length(%x: tensor<?x8xf32>, %w: tensor<8x1x4xbf16>, %b: tensor<4xbf16>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.conv1d' op initial must have one entry per channel}}
  %0 = cbc.state.conv1d %x, %w initial(%b), %i, %i, %i, %i {layer = 0 : i64} : (tensor<?x8xf32>, tensor<8x1x4xbf16>, tensor<4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @shift_initial_length(%x: tensor<?x8xf32>, %b: tensor<4xbf16>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.shift' op initial must have one entry per channel}}
  %0 = cbc.state.shift %x initial(%b), %i, %i, %i, %i {layer = 0 : i64} : (tensor<?x8xf32>, tensor<4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @shift_result_width(%x: tensor<?x8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.shift' op result width must equal the channel count}}
  %0 = cbc.state.shift %x, %i, %i, %i, %i {layer = 0 : i64} : (tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @conv_weight_empty_kernel(%x: tensor<?x8xf32>, %w: tensor<8x1x0xbf16>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.conv1d' op weight must be [channels, group, kernel] with group dividing channels}}
  %0 = cbc.state.conv1d %x, %w, %i, %i, %i, %i {layer = 0 : i64} : (tensor<?x8xf32>, tensor<8x1x0xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @conv_bias(%x: tensor<?x8xf32>, %w: tensor<8x1x4xbf16>, %b: tensor<4xbf16>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.conv1d' op bias must have one entry per channel}}
  %0 = cbc.state.conv1d %x, %w bias(%b), %i, %i, %i, %i {layer = 0 : i64} : (tensor<?x8xf32>, tensor<8x1x4xbf16>, tensor<4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @conv_bias_rank(%x: tensor<?x8xf32>, %w: tensor<8x1x4xbf16>, %b: tensor<8x1xbf16>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.conv1d' op bias must have one entry per channel}}
  %0 = cbc.state.conv1d %x, %w bias(%b), %i, %i, %i, %i {layer = 0 : i64} : (tensor<?x8xf32>, tensor<8x1x4xbf16>, tensor<8x1xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @conv_result(%x: tensor<?x8xf32>, %w: tensor<8x1x4xbf16>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.conv1d' op result width must equal the channel count}}
  %0 = cbc.state.conv1d %x, %w, %i, %i, %i, %i {layer = 0 : i64} : (tensor<?x8xf32>, tensor<8x1x4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @conv_no_layer(%x: tensor<?x8xf32>, %w: tensor<8x1x4xbf16>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.conv1d' op requires attribute 'layer'}}
  %0 = cbc.state.conv1d %x, %w, %i, %i, %i, %i : (tensor<?x8xf32>, tensor<8x1x4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @conv_slots_type(%x: tensor<?x8xf32>, %w: tensor<8x1x4xbf16>, %i: tensor<?xi32>, %s: tensor<?xi64>) {
  // expected-error @+1 {{'cbc.state.conv1d' op operand #3 must be int32 vector (tensor<?xi32>), but got 'tensor<?xi64>'}}
  %0 = cbc.state.conv1d %x, %w, %i, %s, %s, %i {layer = 0 : i64} : (tensor<?x8xf32>, tensor<8x1x4xbf16>, tensor<?xi32>, tensor<?xi64>, tensor<?xi64>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @conv_dynamic_weight(%x: tensor<?x8xf32>, %w: tensor<8x1x?xbf16>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.conv1d' op operand #1 must be statically shaped weight tensor (plain or #cbc.quant), but got 'tensor<8x1x?xbf16>'}}
  %0 = cbc.state.conv1d %x, %w, %i, %i, %i, %i {layer = 0 : i64} : (tensor<?x8xf32>, tensor<8x1x?xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// has_initial_state as i64.
func.func @scan_metadata_type(%q: tensor<?x8xf32>, %a: tensor<?x4xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>, %h: tensor<?xi64>) {
  // expected-error @+1 {{'cbc.state.gated_delta' op operand #10 must be int32 vector (tensor<?xi32>), but got 'tensor<?xi64>'}}
  %0 = cbc.state.gated_delta %q, %q, %q, %a, %a, %w, %w, %i, %i, %i, %h {layer = 0 : i64, num_k_heads = 2 : i64, num_v_heads = 4 : i64, k_dim = 4 : i64, v_dim = 2 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi64>) -> tensor<?x8xf32>
  return
}

// -----

// cu_seqlens as packed rows rather than a vector.
func.func @scan_metadata_rank(%q: tensor<?x8xf32>, %a: tensor<?x4xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>, %c: tensor<?x1xi32>) {
  // expected-error @+1 {{'cbc.state.gated_delta' op operand #7 must be int32 vector (tensor<?xi32>), but got 'tensor<?x1xi32>'}}
  %0 = cbc.state.gated_delta %q, %q, %q, %a, %a, %w, %w, %c, %i, %i, %i {layer = 0 : i64, num_k_heads = 2 : i64, num_v_heads = 4 : i64, k_dim = 4 : i64, v_dim = 2 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?x1xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @scan_missing_v_dim(%q: tensor<?x8xf32>, %a: tensor<?x4xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.gated_delta' op requires attribute 'v_dim'}}
  %0 = cbc.state.gated_delta %q, %q, %q, %a, %a, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_k_heads = 2 : i64, num_v_heads = 4 : i64, k_dim = 4 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @scan_missing_heads(%q: tensor<?x8xf32>, %a: tensor<?x4xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.gated_delta' op requires attribute 'num_k_heads'}}
  %0 = cbc.state.gated_delta %q, %q, %q, %a, %a, %w, %w, %i, %i, %i, %i {layer = 0 : i64, k_dim = 4 : i64, v_dim = 2 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// 4 value heads cannot share 3 key heads.
func.func @scan_heads_not_multiple(%q: tensor<?x12xf32>, %v: tensor<?x8xf32>, %a: tensor<?x4xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.gated_delta' op num_v_heads must be a positive multiple of num_k_heads}}
  %0 = cbc.state.gated_delta %q, %q, %v, %a, %a, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_k_heads = 3 : i64, num_v_heads = 4 : i64, k_dim = 4 : i64, v_dim = 2 : i64} : (tensor<?x12xf32>, tensor<?x12xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @scan_zero_k_heads(%q: tensor<?x8xf32>, %a: tensor<?x4xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.gated_delta' op num_v_heads must be a positive multiple of num_k_heads}}
  %0 = cbc.state.gated_delta %q, %q, %q, %a, %a, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_k_heads = 0 : i64, num_v_heads = 4 : i64, k_dim = 4 : i64, v_dim = 2 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// The same check guards the head sizes.
func.func @scan_negative_k_dim(%q: tensor<?x8xf32>, %a: tensor<?x4xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.gated_delta' op num_v_heads must be a positive multiple of num_k_heads}}
  %0 = cbc.state.gated_delta %q, %q, %q, %a, %a, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_k_heads = 2 : i64, num_v_heads = 4 : i64, k_dim = -4 : i64, v_dim = 2 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @scan_q_width(%q: tensor<?x6xf32>, %k: tensor<?x8xf32>, %a: tensor<?x4xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.gated_delta' op q and k must be [T, num_k_heads * k_dim] and v [T, num_v_heads * v_dim]}}
  %0 = cbc.state.gated_delta %q, %k, %k, %a, %a, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_k_heads = 2 : i64, num_v_heads = 4 : i64, k_dim = 4 : i64, v_dim = 2 : i64} : (tensor<?x6xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// v_dim 4 makes v [T, 16].
func.func @scan_v_width(%q: tensor<?x8xf32>, %a: tensor<?x4xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.gated_delta' op q and k must be [T, num_k_heads * k_dim] and v [T, num_v_heads * v_dim]}}
  %0 = cbc.state.gated_delta %q, %q, %q, %a, %a, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_k_heads = 2 : i64, num_v_heads = 4 : i64, k_dim = 4 : i64, v_dim = 4 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x16xf32>
  return
}

// -----

// Activations must be float packed rows.
func.func @scan_k_type(%q: tensor<?x8xf32>, %k: tensor<?x8xi32>, %a: tensor<?x4xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.gated_delta' op operand #1 must be packed rows (tensor<?xNxf32>, bf16 or f16), but got 'tensor<?x8xi32>'}}
  %0 = cbc.state.gated_delta %q, %k, %q, %a, %a, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_k_heads = 2 : i64, num_v_heads = 4 : i64, k_dim = 4 : i64, v_dim = 2 : i64} : (tensor<?x8xf32>, tensor<?x8xi32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @scan_b_width(%q: tensor<?x8xf32>, %a: tensor<?x4xf32>, %b: tensor<?x2xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.gated_delta' op a and b must be [T, num_v_heads]}}
  %0 = cbc.state.gated_delta %q, %q, %q, %a, %b, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_k_heads = 2 : i64, num_v_heads = 4 : i64, k_dim = 4 : i64, v_dim = 2 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// a given per token with a static row count is not packed rows.
func.func @scan_a_static(%q: tensor<?x8xf32>, %a: tensor<3x4xf32>, %b: tensor<?x4xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.gated_delta' op operand #3 must be packed rows (tensor<?xNxf32>, bf16 or f16), but got 'tensor<3x4xf32>'}}
  %0 = cbc.state.gated_delta %q, %q, %q, %a, %b, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_k_heads = 2 : i64, num_v_heads = 4 : i64, k_dim = 4 : i64, v_dim = 2 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<3x4xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @scan_a_log(%q: tensor<?x8xf32>, %a: tensor<?x4xf32>, %w: tensor<4xf32>, %w2: tensor<2xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.gated_delta' op A_log and dt_bias must have num_v_heads entries}}
  %0 = cbc.state.gated_delta %q, %q, %q, %a, %a, %w2, %w, %i, %i, %i, %i {layer = 0 : i64, num_k_heads = 2 : i64, num_v_heads = 4 : i64, k_dim = 4 : i64, v_dim = 2 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<2xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// A weight must have a static shape.
func.func @scan_dt_bias_dynamic(%q: tensor<?x8xf32>, %a: tensor<?x4xf32>, %w: tensor<4xf32>, %d: tensor<?xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.gated_delta' op operand #6 must be statically shaped weight tensor (plain or #cbc.quant), but got 'tensor<?xf32>'}}
  %0 = cbc.state.gated_delta %q, %q, %q, %a, %a, %w, %d, %i, %i, %i, %i {layer = 0 : i64, num_k_heads = 2 : i64, num_v_heads = 4 : i64, k_dim = 4 : i64, v_dim = 2 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @scan_result(%q: tensor<?x8xf32>, %a: tensor<?x4xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.gated_delta' op result width must be num_v_heads * v_dim}}
  %0 = cbc.state.gated_delta %q, %q, %q, %a, %a, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_k_heads = 2 : i64, num_v_heads = 4 : i64, k_dim = 4 : i64, v_dim = 2 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @scan_beta_scale(%q: tensor<?x8xf32>, %a: tensor<?x4xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.gated_delta' op beta_scale must be positive}}
  %0 = cbc.state.gated_delta %q, %q, %q, %a, %a, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_k_heads = 2 : i64, num_v_heads = 4 : i64, k_dim = 4 : i64, v_dim = 2 : i64, beta_scale = 0.0 : f64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @gather_width(%x: tensor<?x8xf32>, %r: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.rows.gather' op result width must equal the input width}}
  %0 = cbc.rows.gather %x, %r : tensor<?x8xf32>, tensor<?xi32> -> tensor<?x4xf32>
  return
}

// -----

func.func @inject_width(%x: tensor<?x8xbf16>, %r: tensor<?xi32>, %e: tensor<?x4xf32>) {
  // expected-error @+1 {{'cbc.rows.inject' op embeddings and result must have the input's width}}
  %0 = cbc.rows.inject %x, %r, %e : tensor<?x8xbf16>, tensor<?xi32>, tensor<?x4xf32> -> tensor<?x8xbf16>
  return
}

// -----

func.func @inject_bf16_embeddings(%x: tensor<?x8xbf16>, %r: tensor<?xi32>, %e: tensor<?x8xbf16>) {
  // expected-error @+1 {{'cbc.rows.inject' op embeddings must be f32}}
  %0 = cbc.rows.inject %x, %r, %e : tensor<?x8xbf16>, tensor<?xi32>, tensor<?x8xbf16> -> tensor<?x8xbf16>
  return
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

// -----

func.func @route_k_zero(%l: tensor<?x4xf32>) {
  // expected-error @+1 {{'cbc.moe.route' op k must be in [1, experts]}}
  %w, %ids = cbc.moe.route %l {k = 0 : i64, score = #cbc.score<softmax>} : tensor<?x4xf32> -> tensor<?x0xf32>, tensor<?x0xi32>
  return
}

// -----

func.func @route_k_too_big(%l: tensor<?x4xf32>) {
  // expected-error @+1 {{'cbc.moe.route' op k must be in [1, experts]}}
  %w, %ids = cbc.moe.route %l {k = 5 : i64, score = #cbc.score<softmax>} : tensor<?x4xf32> -> tensor<?x5xf32>, tensor<?x5xi32>
  return
}

// -----

// Top-k-then-softmax has no separate selection score to bias.
func.func @route_bias_topk_softmax(%l: tensor<?x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'cbc.moe.route' op a selection bias needs softmax or sigmoid scores}}
  %w, %ids = cbc.moe.route %l bias(%b : tensor<4xf32>) {k = 2 : i64, score = #cbc.score<topk_softmax>} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return
}

// -----

func.func @route_bias_size(%l: tensor<?x4xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{'cbc.moe.route' op selection bias must have one entry per expert}}
  %w, %ids = cbc.moe.route %l bias(%b : tensor<3xf32>) {k = 2 : i64, score = #cbc.score<sigmoid>} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return
}

// -----

func.func @route_bias_rank(%l: tensor<?x4xf32>, %b: tensor<1x4xf32>) {
  // expected-error @+1 {{'cbc.moe.route' op selection bias must have one entry per expert}}
  %w, %ids = cbc.moe.route %l bias(%b : tensor<1x4xf32>) {k = 2 : i64, score = #cbc.score<softmax>} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return
}

// -----

func.func @route_renorm_eps(%l: tensor<?x4xf32>) {
  // expected-error @+1 {{'cbc.moe.route' op renorm_eps must not be negative}}
  %w, %ids = cbc.moe.route %l {k = 2 : i64, score = #cbc.score<sigmoid>, renorm = true, renorm_eps = -1.0e-6 : f64} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return
}

// -----

func.func @route_bias_on_logits(%l: tensor<?x4xf32>) {
  // expected-error @+1 {{'cbc.moe.route' op bias_on_logits needs a selection bias}}
  %w, %ids = cbc.moe.route %l {k = 2 : i64, score = #cbc.score<sigmoid>, bias_on_logits = true} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return
}

// -----

func.func @route_sparsemixer_renorm(%l: tensor<?x4xf32>) {
  // expected-error @+1 {{'cbc.moe.route' op sparsemixer scores take no selection bias, groups or renorm}}
  %w, %ids = cbc.moe.route %l {k = 2 : i64, score = #cbc.score<sparsemixer>, renorm = true} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return
}

// -----

func.func @route_threshold_score(%l: tensor<?x4xf32>) {
  // expected-error @+1 {{'cbc.moe.route' op a threshold must not be negative, and needs sparsemixer scores}}
  %w, %ids = cbc.moe.route %l {k = 2 : i64, score = #cbc.score<softmax>, threshold = 2.0e-1 : f64} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return
}

// -----

func.func @route_threshold_negative(%l: tensor<?x4xf32>) {
  // expected-error @+1 {{'cbc.moe.route' op a threshold must not be negative, and needs sparsemixer scores}}
  %w, %ids = cbc.moe.route %l {k = 2 : i64, score = #cbc.score<sparsemixer>, threshold = -1.0e-1 : f64} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return
}

// -----

func.func @route_weights_columns(%l: tensor<?x4xf32>) {
  // expected-error @+1 {{'cbc.moe.route' op weights and ids must have k columns}}
  %w, %ids = cbc.moe.route %l {k = 2 : i64, score = #cbc.score<softmax>} : tensor<?x4xf32> -> tensor<?x3xf32>, tensor<?x2xi32>
  return
}

// -----

func.func @route_ids_columns(%l: tensor<?x4xf32>) {
  // expected-error @+1 {{'cbc.moe.route' op weights and ids must have k columns}}
  %w, %ids = cbc.moe.route %l {k = 2 : i64, score = #cbc.score<softmax>} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x1xi32>
  return
}

// -----

func.func @experts_rank(%x: tensor<?x8xf32>, %ids: tensor<?x2xi32>, %w: tensor<?x2xf32>, %gu: tensor<12x8xbf16>, %d: tensor<4x8x6xbf16>) {
  // expected-error @+1 {{'cbc.moe.experts' op expert weights must be [experts, out, in]}}
  %0 = cbc.moe.experts %x, %ids, %w, %gu, %d {act = #cbc.act<silu>} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<12x8xbf16>, tensor<4x8x6xbf16>) -> tensor<?x8xf32>
  return
}

// -----

func.func @experts_down_experts(%x: tensor<?x8xf32>, %ids: tensor<?x2xi32>, %w: tensor<?x2xf32>, %gu: tensor<4x12x8xbf16>, %d: tensor<3x8x6xbf16>) {
  // expected-error @+1 {{'cbc.moe.experts' op down must be [experts, hidden, intermediate] matching gate_up}}
  %0 = cbc.moe.experts %x, %ids, %w, %gu, %d {act = #cbc.act<silu>} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x12x8xbf16>, tensor<3x8x6xbf16>) -> tensor<?x8xf32>
  return
}

// -----

func.func @experts_down_intermediate(%x: tensor<?x8xf32>, %ids: tensor<?x2xi32>, %w: tensor<?x2xf32>, %gu: tensor<4x12x8xbf16>, %d: tensor<4x8x12xbf16>) {
  // expected-error @+1 {{'cbc.moe.experts' op down must be [experts, hidden, intermediate] matching gate_up}}
  %0 = cbc.moe.experts %x, %ids, %w, %gu, %d {act = #cbc.act<silu>} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x12x8xbf16>, tensor<4x8x12xbf16>) -> tensor<?x8xf32>
  return
}

// -----

func.func @experts_hidden(%x: tensor<?x4xf32>, %ids: tensor<?x2xi32>, %w: tensor<?x2xf32>, %gu: tensor<4x12x8xbf16>, %d: tensor<4x8x6xbf16>) {
  // expected-error @+1 {{'cbc.moe.experts' op input and result width must equal the hidden size}}
  %0 = cbc.moe.experts %x, %ids, %w, %gu, %d {act = #cbc.act<silu>} : (tensor<?x4xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x12x8xbf16>, tensor<4x8x6xbf16>) -> tensor<?x8xf32>
  return
}

// -----

func.func @experts_ids(%x: tensor<?x8xf32>, %ids: tensor<?x3xi32>, %w: tensor<?x2xf32>, %gu: tensor<4x12x8xbf16>, %d: tensor<4x8x6xbf16>) {
  // expected-error @+1 {{'cbc.moe.experts' op ids and weights must have the same number of columns}}
  %0 = cbc.moe.experts %x, %ids, %w, %gu, %d {act = #cbc.act<silu>} : (tensor<?x8xf32>, tensor<?x3xi32>, tensor<?x2xf32>, tensor<4x12x8xbf16>, tensor<4x8x6xbf16>) -> tensor<?x8xf32>
  return
}

// -----

// The custom form always prints both biases; the generic form can give one.
func.func @experts_one_bias(%x: tensor<?x8xf32>, %ids: tensor<?x2xi32>, %w: tensor<?x2xf32>, %gu: tensor<4x12x8xbf16>, %d: tensor<4x8x6xbf16>, %b: tensor<4x12xbf16>) {
  // expected-error @+1 {{'cbc.moe.experts' op give both biases or neither}}
  %0 = "cbc.moe.experts"(%x, %ids, %w, %gu, %d, %b) <{act = #cbc.act<silu>, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 0>}> : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x12x8xbf16>, tensor<4x8x6xbf16>, tensor<4x12xbf16>) -> tensor<?x8xf32>
  return
}

// -----

func.func @experts_bias_shape(%x: tensor<?x8xf32>, %ids: tensor<?x2xi32>, %w: tensor<?x2xf32>, %gu: tensor<4x12x8xbf16>, %d: tensor<4x8x6xbf16>, %b1: tensor<4x12xbf16>, %b2: tensor<4x6xbf16>) {
  // expected-error @+1 {{'cbc.moe.experts' op biases must be [experts, gate_up rows] and [experts, hidden]}}
  %0 = cbc.moe.experts %x, %ids, %w, %gu, %d bias(%b1, %b2) {act = #cbc.act<silu>} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x12x8xbf16>, tensor<4x8x6xbf16>, tensor<4x12xbf16>, tensor<4x6xbf16>) -> tensor<?x8xf32>
  return
}

// -----

func.func @experts_gate_up_bias_shape(%x: tensor<?x8xf32>, %ids: tensor<?x2xi32>, %w: tensor<?x2xf32>, %gu: tensor<4x12x8xbf16>, %d: tensor<4x8x6xbf16>, %b1: tensor<4x6xbf16>, %b2: tensor<4x8xbf16>) {
  // expected-error @+1 {{'cbc.moe.experts' op biases must be [experts, gate_up rows] and [experts, hidden]}}
  %0 = cbc.moe.experts %x, %ids, %w, %gu, %d bias(%b1, %b2) {act = #cbc.act<silu>} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x12x8xbf16>, tensor<4x8x6xbf16>, tensor<4x6xbf16>, tensor<4x8xbf16>) -> tensor<?x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// Fused ops (cbc-fuse-add-norm, cbc-fuse-attention-inputs)
//===----------------------------------------------------------------------===//

// -----

func.func @add_rms_norm_rhs_width(%x: tensor<?x8xf32>, %y: tensor<?x4xf32>) {
  // expected-error @+1 {{'cbc.math.add_rms_norm' op operands and results must have the same width}}
  %s, %n = cbc.math.add_rms_norm %x, %y {eps = 1.0e-6 : f64} : tensor<?x8xf32>, tensor<?x4xf32> -> tensor<?x8xf32>, tensor<?x8xf32>
  return
}

// -----

func.func @add_rms_norm_sum_width(%x: tensor<?x8xf32>, %y: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.add_rms_norm' op operands and results must have the same width}}
  %s, %n = cbc.math.add_rms_norm %x, %y {eps = 1.0e-6 : f64} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x4xf32>, tensor<?x8xf32>
  return
}

// -----

func.func @add_rms_norm_normed_width(%x: tensor<?x8xf32>, %y: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.add_rms_norm' op operands and results must have the same width}}
  %s, %n = cbc.math.add_rms_norm %x, %y {eps = 1.0e-6 : f64} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>, tensor<?x16xf32>
  return
}

// -----

// A per-head weight: the fused norm is over whole rows.
func.func @add_rms_norm_weight(%x: tensor<?x8xf32>, %y: tensor<?x8xf32>, %w: tensor<4xbf16>) {
  // expected-error @+1 {{'cbc.math.add_rms_norm' op weight must have one entry per feature}}
  %s, %n = cbc.math.add_rms_norm %x, %y, %w {eps = 1.0e-6 : f64} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<4xbf16> -> tensor<?x8xf32>, tensor<?x8xf32>
  return
}

// -----

func.func @add_rms_norm_weight_rank(%x: tensor<?x8xf32>, %y: tensor<?x8xf32>, %w: tensor<1x8xbf16>) {
  // expected-error @+1 {{'cbc.math.add_rms_norm' op weight must have one entry per feature}}
  %s, %n = cbc.math.add_rms_norm %x, %y, %w {eps = 1.0e-6 : f64} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<1x8xbf16> -> tensor<?x8xf32>, tensor<?x8xf32>
  return
}

// -----

func.func @add_rms_norm_eps(%x: tensor<?x8xf32>, %y: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.add_rms_norm' op eps must be positive}}
  %s, %n = cbc.math.add_rms_norm %x, %y {eps = 0.0 : f64} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>, tensor<?x8xf32>
  return
}

// -----

func.func @add_rms_norm_eps_negative(%x: tensor<?x8xf32>, %y: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.add_rms_norm' op eps must be positive}}
  %s, %n = cbc.math.add_rms_norm %x, %y {eps = -1.0e-6 : f64} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>, tensor<?x8xf32>
  return
}

// -----

func.func @add_rms_norm_missing_eps(%x: tensor<?x8xf32>, %y: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.add_rms_norm' op requires attribute 'eps'}}
  %s, %n = cbc.math.add_rms_norm %x, %y {offset = 1.0 : f64} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>, tensor<?x8xf32>
  return
}

// -----

func.func @rope_append_kv_heads(%qkv: tensor<?x32xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.rope_append' op head counts and head_dim must be positive}}
  %0 = cbc.kv.rope_append %qkv, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 0 : i64, head_dim = 4 : i64, rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @rope_append_head_dim(%qkv: tensor<?x32xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{rope head_dim must be positive}}
  %0 = cbc.kv.rope_append %qkv, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 0 : i64, rope = #cbc.rope<head_dim = 0, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @rope_append_window(%qkv: tensor<?x32xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{window, chunk and compressed retention need a positive token count}}
  %0 = cbc.kv.rope_append %qkv, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, retention = #cbc.retention<window, 0>, rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @rope_append_chunk(%qkv: tensor<?x32xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{window, chunk and compressed retention need a positive token count}}
  %0 = cbc.kv.rope_append %qkv, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, retention = #cbc.retention<chunk, -8192>, rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @rope_append_gqa(%qkv: tensor<?x28xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.rope_append' op num_heads must be a multiple of num_kv_heads}}
  %0 = cbc.kv.rope_append %qkv, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 3 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : (tensor<?x28xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x12xf32>
  return
}

// -----

func.func @rope_append_no_heads(%qkv: tensor<?x16xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.rope_append' op head counts and head_dim must be positive}}
  %0 = cbc.kv.rope_append %qkv, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 0 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : (tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x0xf32>
  return
}

// -----

// q|k|v of 16 + 8 + 8 = 32, not 24.
func.func @rope_append_qkv_width(%qkv: tensor<?x24xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.rope_append' op qkv width must be (num_heads + 2 * num_kv_heads) * head_dim}}
  %0 = cbc.kv.rope_append %qkv, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : (tensor<?x24xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @rope_append_result_width(%qkv: tensor<?x32xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.rope_append' op result width must be num_heads * head_dim}}
  %0 = cbc.kv.rope_append %qkv, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @rope_append_norm_shape(%qkv: tensor<?x32xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %qn: tensor<8xbf16>, %kn: tensor<8xbf16>) {
  // expected-error @+1 {{'cbc.kv.rope_append' op norm weights must have head_dim entries}}
  %0 = cbc.kv.rope_append %qkv, %p, %p, %p, %p, %bt norms(%qn, %kn) {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, eps = 1.0e-6 : f64, rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<8xbf16>, tensor<8xbf16>) -> tensor<?x16xf32>
  return
}

// -----

func.func @rope_append_norm_rank(%qkv: tensor<?x32xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %qn: tensor<1x4xbf16>, %kn: tensor<1x4xbf16>) {
  // expected-error @+1 {{'cbc.kv.rope_append' op norm weights must have head_dim entries}}
  %0 = cbc.kv.rope_append %qkv, %p, %p, %p, %p, %bt norms(%qn, %kn) {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, eps = 1.0e-6 : f64, rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<1x4xbf16>, tensor<1x4xbf16>) -> tensor<?x16xf32>
  return
}

// -----

// The custom form always prints both norm weights; the generic form can give one.
func.func @rope_append_one_norm(%qkv: tensor<?x32xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %qn: tensor<4xbf16>) {
  // expected-error @+1 {{'cbc.kv.rope_append' op give both q and k norm weights or neither}}
  %0 = "cbc.kv.rope_append"(%qkv, %p, %p, %p, %p, %bt, %qn) <{layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, eps = 1.0e-6 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 0>, rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>}> : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<4xbf16>) -> tensor<?x16xf32>
  return
}

// -----

func.func @rope_append_norm_eps_missing(%qkv: tensor<?x32xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %qn: tensor<4xbf16>, %kn: tensor<4xbf16>) {
  // expected-error @+1 {{'cbc.kv.rope_append' op q/k norms need a positive eps}}
  %0 = cbc.kv.rope_append %qkv, %p, %p, %p, %p, %bt norms(%qn, %kn) {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<4xbf16>, tensor<4xbf16>) -> tensor<?x16xf32>
  return
}

// -----

func.func @rope_append_norm_eps_zero(%qkv: tensor<?x32xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %qn: tensor<4xbf16>, %kn: tensor<4xbf16>) {
  // expected-error @+1 {{'cbc.kv.rope_append' op q/k norms need a positive eps}}
  %0 = cbc.kv.rope_append %qkv, %p, %p, %p, %p, %bt norms(%qn, %kn) {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, eps = 0.0 : f64, rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<4xbf16>, tensor<4xbf16>) -> tensor<?x16xf32>
  return
}

// -----

func.func @rope_append_rotary_odd(%qkv: tensor<?x32xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{rope rotary_dim must be even and in (0, head_dim]}}
  %0 = cbc.kv.rope_append %qkv, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, rope = #cbc.rope<head_dim = 4, rotary_dim = 3, inv_freq = array<f32: 1.0>>} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @rope_append_rotary_zero(%qkv: tensor<?x32xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{rope rotary_dim must be even and in (0, head_dim]}}
  %0 = cbc.kv.rope_append %qkv, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, rope = #cbc.rope<head_dim = 4, rotary_dim = 0, inv_freq = array<f32>>} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @rope_append_rotary_too_big(%qkv: tensor<?x32xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{rope rotary_dim must be even and in (0, head_dim]}}
  %0 = cbc.kv.rope_append %qkv, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, rope = #cbc.rope<head_dim = 4, rotary_dim = 8, inv_freq = array<f32: 1.0, 1.0, 1.0, 1.0>>} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @rope_append_inv_freq(%qkv: tensor<?x32xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{rope inv_freq must have rotary_dim / 2 entries}}
  %0 = cbc.kv.rope_append %qkv, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0>>} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @rope_append_inv_freq_long(%qkv: tensor<?x32xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{rope inv_freq_long must have rotary_dim / 2 entries}}
  %0 = cbc.kv.rope_append %qkv, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>, inv_freq_long = array<f32: 0.5>, long_after = 4096>} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @rope_append_long_after(%qkv: tensor<?x32xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{rope inv_freq_long needs a positive long_after}}
  %0 = cbc.kv.rope_append %qkv, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>, inv_freq_long = array<f32: 0.5, 0.05>>} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @rope_append_dynamic(%qkv: tensor<?x32xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{rope dynamic_base needs a positive dynamic_factor and dynamic_max_positions}}
  %0 = cbc.kv.rope_append %qkv, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>, dynamic_base = 10000.0, dynamic_factor = 2.0>} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @rope_append_dynamic_factor(%qkv: tensor<?x32xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{rope dynamic_base needs a positive dynamic_factor and dynamic_max_positions}}
  %0 = cbc.kv.rope_append %qkv, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>, dynamic_base = 10000.0, dynamic_max_positions = 2048>} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @rope_append_missing_inv_freq(%qkv: tensor<?x32xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{struct is missing required parameter: inv_freq}}
  %0 = cbc.kv.rope_append %qkv, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, rope = #cbc.rope<head_dim = 4, rotary_dim = 4>} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x16xf32>
  return
}

//===----------------------------------------------------------------------===//
// cbc.weight.ref block_diag and row_scales, cbc.math.concat, ungated cbc.moe.experts
//===----------------------------------------------------------------------===//

// -----

func.func @weight_block_diag_rows() {
  // expected-error @+1 {{'cbc.weight.ref' op block_diag needs combine 'none' and a [rows, cols] weight whose rows and columns it divides}}
  %0 = cbc.weight.ref "w" {sources = [["x_proj_weight"]], block_diag = 2 : i64} : tensor<9x8xbf16>
  return
}

// -----

func.func @weight_block_diag_stack() {
  // expected-error @+1 {{'cbc.weight.ref' op block_diag needs combine 'none' and a [rows, cols] weight whose rows and columns it divides}}
  %0 = cbc.weight.ref "w" {combine = #cbc.combine<stack>, sources = [["a"], ["b"]], block_diag = 2 : i64} : tensor<2x4x4xbf16>
  return
}

// -----

func.func @weight_block_diag_rank() {
  // expected-error @+1 {{'cbc.weight.ref' op block_diag needs combine 'none' and a [rows, cols] weight whose rows and columns it divides}}
  %0 = cbc.weight.ref "w" {sources = [["a"]], block_diag = 2 : i64} : tensor<8xbf16>
  return
}

// -----

func.func @weight_block_diag_zero() {
  // expected-error @+1 {{'cbc.weight.ref' op block_diag needs combine 'none' and a [rows, cols] weight whose rows and columns it divides}}
  %0 = cbc.weight.ref "w" {sources = [["a"]], block_diag = 0 : i64} : tensor<8x8xbf16>
  return
}

// -----

func.func @weight_row_scales_odd() {
  // expected-error @+1 {{'cbc.weight.ref' op row_scales must be pairs of a positive whole row count and a finite factor}}
  %0 = cbc.weight.ref "w" {sources = [["a"]], row_scales = array<f64: 8.0, 0.5, 4.0>} : tensor<8x4xbf16>
  return
}

// -----

func.func @weight_row_scales_fraction() {
  // expected-error @+1 {{'cbc.weight.ref' op row_scales must be pairs of a positive whole row count and a finite factor}}
  %0 = cbc.weight.ref "w" {sources = [["a"]], row_scales = array<f64: 4.5, 0.5, 3.5, 2.0>} : tensor<8x4xbf16>
  return
}

// -----

func.func @weight_row_scales_zero_rows() {
  // expected-error @+1 {{'cbc.weight.ref' op row_scales must be pairs of a positive whole row count and a finite factor}}
  %0 = cbc.weight.ref "w" {sources = [["a"]], row_scales = array<f64: 0.0, 0.5, 8.0, 2.0>} : tensor<8x4xbf16>
  return
}

// -----

func.func @weight_row_scales_infinite() {
  // expected-error @+1 {{'cbc.weight.ref' op row_scales must be pairs of a positive whole row count and a finite factor}}
  %0 = cbc.weight.ref "w" {sources = [["a"]], row_scales = array<f64: 8.0, 0x7FF0000000000000>} : tensor<8x4xbf16>
  return
}

// -----

func.func @weight_row_scales_empty() {
  // expected-error @+1 {{'cbc.weight.ref' op row_scales must be pairs of a positive whole row count and a finite factor}}
  %0 = cbc.weight.ref "w" {sources = [["a"]], row_scales = array<f64>} : tensor<8x4xbf16>
  return
}

// -----

func.func @weight_row_scales_cover() {
  // expected-error @+1 {{'cbc.weight.ref' op row_scales cover 6 rows but the weight has 8}}
  %0 = cbc.weight.ref "w" {sources = [["a"]], row_scales = array<f64: 4.0, 0.5, 2.0, 2.0>} : tensor<8x4xbf16>
  return
}

// -----

func.func @weight_row_scales_cover_bias() {
  // expected-error @+1 {{'cbc.weight.ref' op row_scales cover 10 rows but the weight has 8}}
  %0 = cbc.weight.ref "b" {sources = [["a.bias"]], row_scales = array<f64: 10.0, 0.5>} : tensor<8xbf16>
  return
}

// -----

func.func @concat_width(%x: tensor<?x8xf32>, %y: tensor<?x4xf32>) {
  // expected-error @+1 {{'cbc.math.concat' op result width 16 is not the sum of the input widths, 12}}
  %0 = cbc.math.concat %x, %y : tensor<?x8xf32>, tensor<?x4xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @concat_empty() {
  // expected-error @+1 {{'cbc.math.concat' op needs at least one input}}
  %0 = "cbc.math.concat"() : () -> tensor<?x4xf32>
  return
}

// -----

func.func @concat_not_rows(%x: tensor<8x8xf32>) {
  // expected-error @+1 {{'cbc.math.concat' op operand #0 must be variadic of packed rows (tensor<?xNxf32>, bf16 or f16), but got 'tensor<8x8xf32>'}}
  %0 = "cbc.math.concat"(%x) : (tensor<8x8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @experts_ungated_act(%x: tensor<?x8xf32>, %ids: tensor<?x2xi32>, %w: tensor<?x2xf32>, %u: tensor<4x6x8xbf16>, %d: tensor<4x8x6xbf16>) {
  // expected-error @+1 {{'cbc.moe.experts' op ungated experts take a plain activation}}
  %0 = cbc.moe.experts %x, %ids, %w, %u, %d {act = #cbc.clamped_swiglu<limit = 7.0, alpha = 1.702>, ungated} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x6x8xbf16>, tensor<4x8x6xbf16>) -> tensor<?x8xf32>
  return
}

// -----

func.func @experts_ungated_shapes(%x: tensor<?x8xf32>, %ids: tensor<?x2xi32>, %w: tensor<?x2xf32>, %gu: tensor<4x12x8xbf16>, %d: tensor<4x8x6xbf16>) {
  // A gated [E, 2I, H] gate_up with an [E, H, I] down is not an ungated pair.
  // expected-error @+1 {{'cbc.moe.experts' op ungated experts need gate_up [experts, intermediate, hidden] and down [experts, hidden, intermediate]}}
  %0 = cbc.moe.experts %x, %ids, %w, %gu, %d {act = #cbc.act<relu2>, ungated} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x12x8xbf16>, tensor<4x8x6xbf16>) -> tensor<?x8xf32>
  return
}

// -----

func.func @experts_ungated_bias(%x: tensor<?x8xf32>, %ids: tensor<?x2xi32>, %w: tensor<?x2xf32>, %u: tensor<4x6x8xbf16>, %d: tensor<4x8x6xbf16>, %ub: tensor<4x12xbf16>, %db: tensor<4x8xbf16>) {
  // The up bias of ungated experts has one entry per gate_up row: [experts, intermediate].
  // expected-error @+1 {{'cbc.moe.experts' op biases must be [experts, gate_up rows] and [experts, hidden]}}
  %0 = cbc.moe.experts %x, %ids, %w, %u, %d bias(%ub, %db) {act = #cbc.act<relu2>, ungated} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x6x8xbf16>, tensor<4x8x6xbf16>, tensor<4x12xbf16>, tensor<4x8xbf16>) -> tensor<?x8xf32>
  return
}

// -----

// The state-space scans, cbc.math.act and the per-row weight of cbc.math.rms_norm_gated, with the
// edges of each check (zero, negative, NaN and infinite values, wrong element types, dynamic
// shapes).
//
// cbc.state.ssd cases use 4 heads of head_dim 2 and 2 groups of state size 3 unless they say
// otherwise: x [T, 8], dt [T, 4], B and C [T, 6], A_log, dt_bias and D [4], then cu_seqlens,
// slots and has_initial_state. cbc.state.selective_scan cases use 8 channels, 1 group and state
// size 3: x and dt [T, 8], B and C [T, 3], A_log [8, 3], dt_bias and D [8], z [T, 8], then the
// metadata.

//===----------------------------------------------------------------------===//
// cbc.state.ssd
//===----------------------------------------------------------------------===//

// The metadata are type-checked too: slots as i64.
func.func @ssd_metadata_type(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>, %l: tensor<?xi64>) {
  // expected-error @+1 {{'cbc.state.ssd' op operand #8 must be int32 vector (tensor<?xi32>), but got 'tensor<?xi64>'}}
  %0 = cbc.state.ssd %x, %dt, %b, %b, %w, %w, %w, %i, %l, %l, %i {layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi64>, tensor<?xi64>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// Without num_heads.
func.func @ssd_no_num_heads(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.ssd' op requires attribute 'num_heads'}}
  %0 = cbc.state.ssd %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i, %i {layer = 0 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// Without head_dim.
func.func @ssd_no_head_dim(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.ssd' op requires attribute 'head_dim'}}
  %0 = cbc.state.ssd %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_heads = 4 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// Without n_groups.
func.func @ssd_no_n_groups(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.ssd' op requires attribute 'n_groups'}}
  %0 = cbc.state.ssd %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// Without state_size.
func.func @ssd_no_state_size(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.ssd' op requires attribute 'state_size'}}
  %0 = cbc.state.ssd %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// 4 heads in 3 groups (B and C [T, 3 x 2]).
func.func @ssd_heads_not_multiple(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.ssd' op num_heads must be a positive multiple of n_groups}}
  %0 = cbc.state.ssd %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 3 : i64, state_size = 2 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// num_heads 0.
func.func @ssd_num_heads_0(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.ssd' op num_heads must be a positive multiple of n_groups}}
  %0 = cbc.state.ssd %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_heads = 0 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// head_dim 0.
func.func @ssd_head_dim_0(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.ssd' op num_heads must be a positive multiple of n_groups}}
  %0 = cbc.state.ssd %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_heads = 4 : i64, head_dim = 0 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// n_groups 0.
func.func @ssd_n_groups_0(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.ssd' op num_heads must be a positive multiple of n_groups}}
  %0 = cbc.state.ssd %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 0 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// state_size 0.
func.func @ssd_state_size_0(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.ssd' op num_heads must be a positive multiple of n_groups}}
  %0 = cbc.state.ssd %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 0 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// head_dim -2.
func.func @ssd_head_dim_neg2(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.ssd' op num_heads must be a positive multiple of n_groups}}
  %0 = cbc.state.ssd %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_heads = 4 : i64, head_dim = -2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// n_groups -2.
func.func @ssd_n_groups_neg2(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.ssd' op num_heads must be a positive multiple of n_groups}}
  %0 = cbc.state.ssd %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = -2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// state_size -3.
func.func @ssd_state_size_neg3(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.ssd' op num_heads must be a positive multiple of n_groups}}
  %0 = cbc.state.ssd %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = -3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// x of 6 columns for 4 heads of 2.
func.func @ssd_x_width(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>, %x6: tensor<?x6xf32>) {
  // expected-error @+1 {{'cbc.state.ssd' op x must be [T, num_heads * head_dim] and dt [T, num_heads]}}
  %0 = cbc.state.ssd %x6, %dt, %b, %b, %w, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x6xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// x as f64 rows.
func.func @ssd_x_f64(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>, %xb: tensor<?x8xf64>) {
  // expected-error @+1 {{'cbc.state.ssd' op operand #0 must be packed rows (tensor<?xNxf32>, bf16 or f16), but got 'tensor<?x8xf64>'}}
  %0 = cbc.state.ssd %xb, %dt, %b, %b, %w, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf64>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// x with a static row count is not packed rows.
func.func @ssd_x_static(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>, %xs: tensor<5x8xf32>) {
  // expected-error @+1 {{'cbc.state.ssd' op operand #0 must be packed rows (tensor<?xNxf32>, bf16 or f16), but got 'tensor<5x8xf32>'}}
  %0 = cbc.state.ssd %xs, %dt, %b, %b, %w, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<5x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// dt with one column per channel (the selective scan's layout) instead of per head.
func.func @ssd_dt_width(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.ssd' op x must be [T, num_heads * head_dim] and dt [T, num_heads]}}
  %0 = cbc.state.ssd %x, %x, %b, %b, %w, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// B of one group only.
func.func @ssd_b_width(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>, %b3: tensor<?x3xf32>) {
  // expected-error @+1 {{'cbc.state.ssd' op B and C must be [T, n_groups * state_size]}}
  %0 = cbc.state.ssd %x, %dt, %b3, %b, %w, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x3xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// C of one group only.
func.func @ssd_c_width(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>, %b3: tensor<?x3xf32>) {
  // expected-error @+1 {{'cbc.state.ssd' op B and C must be [T, n_groups * state_size]}}
  %0 = cbc.state.ssd %x, %dt, %b, %b3, %w, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// C as a vector.
func.func @ssd_c_rank(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>, %v: tensor<6xf32>) {
  // expected-error @+1 {{'cbc.state.ssd' op operand #3 must be packed rows (tensor<?xNxf32>, bf16 or f16), but got 'tensor<6xf32>'}}
  %0 = cbc.state.ssd %x, %dt, %b, %v, %w, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// A_log with one entry per channel.
func.func @ssd_alog_entries(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>, %w8: tensor<8xf32>) {
  // expected-error @+1 {{'cbc.state.ssd' op A_log, dt_bias and D must have num_heads entries}}
  %0 = cbc.state.ssd %x, %dt, %b, %b, %w8, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// dt_bias of 2 entries.
func.func @ssd_dt_bias_entries(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>, %w2: tensor<2xf32>) {
  // expected-error @+1 {{'cbc.state.ssd' op A_log, dt_bias and D must have num_heads entries}}
  %0 = cbc.state.ssd %x, %dt, %b, %b, %w, %w2, %w, %i, %i, %i, %i {layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<2xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// D per channel.
func.func @ssd_d_entries(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>, %w8: tensor<8xbf16>) {
  // expected-error @+1 {{'cbc.state.ssd' op A_log, dt_bias and D must have num_heads entries}}
  %0 = cbc.state.ssd %x, %dt, %b, %b, %w, %w, %w8, %i, %i, %i, %i {layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// D of dynamic size.
func.func @ssd_d_dynamic(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>, %wd: tensor<?xf32>) {
  // expected-error @+1 {{'cbc.state.ssd' op operand #6 must be statically shaped weight tensor (plain or #cbc.quant), but got 'tensor<?xf32>'}}
  %0 = cbc.state.ssd %x, %dt, %b, %b, %w, %w, %wd, %i, %i, %i, %i {layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// A result of one head's width.
func.func @ssd_result_width(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.ssd' op result width must be num_heads * head_dim}}
  %0 = cbc.state.ssd %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2xf32>
  return
}

// -----

// time_step_limit [0.2, 0.1].
func.func @ssd_dt_min_above_max(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.ssd' op dt limits must satisfy 0 <= dt_min <= dt_max}}
  %0 = cbc.state.ssd %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64, dt_min = 0.2 : f64, dt_max = 0.1 : f64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// A negative lower limit.
func.func @ssd_dt_min_negative(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.ssd' op dt limits must satisfy 0 <= dt_min <= dt_max}}
  %0 = cbc.state.ssd %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64, dt_min = -0.001 : f64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// A negative upper limit with the default lower one (0).
func.func @ssd_dt_max_negative(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.ssd' op dt limits must satisfy 0 <= dt_min <= dt_max}}
  %0 = cbc.state.ssd %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64, dt_max = -1.0 : f64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// A NaN lower limit.
func.func @ssd_dt_min_nan(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.ssd' op dt limits must satisfy 0 <= dt_min <= dt_max}}
  %0 = cbc.state.ssd %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64, dt_min = 0x7FF8000000000000 : f64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// A NaN upper limit.
func.func @ssd_dt_max_nan(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.ssd' op dt limits must satisfy 0 <= dt_min <= dt_max}}
  %0 = cbc.state.ssd %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64, dt_max = 0x7FF8000000000000 : f64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// An infinite lower limit is above any finite upper limit.
func.func @ssd_dt_min_inf(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.ssd' op dt limits must satisfy 0 <= dt_min <= dt_max}}
  %0 = cbc.state.ssd %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64, dt_min = 0x7FF0000000000000 : f64, dt_max = 1.0 : f64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// dt_max -inf.
func.func @ssd_dt_max_neg_inf(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.ssd' op dt limits must satisfy 0 <= dt_min <= dt_max}}
  %0 = cbc.state.ssd %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64, dt_max = 0xFFF0000000000000 : f64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// cbc.state.selective_scan
//===----------------------------------------------------------------------===//

// has_initial_state as packed rows.
func.func @sel_metadata_type(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>, %h: tensor<?x1xi32>) {
  // expected-error @+1 {{'cbc.state.selective_scan' op operand #11 must be int32 vector (tensor<?xi32>), but got 'tensor<?x1xi32>'}}
  %0 = cbc.state.selective_scan %x, %x, %b, %b, %a, %w, %w gate(%x), %i, %i, %i, %h {layer = 0 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x1xi32>) -> tensor<?x8xf32>
  return
}

// -----

// Without n_groups.
func.func @sel_no_n_groups(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.selective_scan' op requires attribute 'n_groups'}}
  %0 = cbc.state.selective_scan %x, %x, %b, %b, %a, %w, %w gate(%x), %i, %i, %i, %i {layer = 0 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// Without state_size (the ssd attributes do not stand in for it).
func.func @sel_no_state_size(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.selective_scan' op requires attribute 'state_size'}}
  %0 = cbc.state.selective_scan %x, %x, %b, %b, %a, %w, %w gate(%x), %i, %i, %i, %i {layer = 0 : i64, n_groups = 1 : i64, num_heads = 8 : i64, head_dim = 1 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// dt of 4 columns (the SSD scan's per-head dt).
func.func @sel_dt_width(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>, %d4: tensor<?x4xf32>) {
  // expected-error @+1 {{'cbc.state.selective_scan' op x, dt and z must be [T, channels]}}
  %0 = cbc.state.selective_scan %x, %d4, %b, %b, %a, %w, %w gate(%x), %i, %i, %i, %i {layer = 0 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// z of 4 columns.
func.func @sel_z_width(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>, %z4: tensor<?x4xf32>) {
  // expected-error @+1 {{'cbc.state.selective_scan' op x, dt and z must be [T, channels]}}
  %0 = cbc.state.selective_scan %x, %x, %b, %b, %a, %w, %w gate(%z4), %i, %i, %i, %i {layer = 0 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// z as f64 rows.
func.func @sel_z_f64(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>, %zb: tensor<?x8xf64>) {
  // expected-error @+1 {{'cbc.state.selective_scan' op operand #7 must be packed rows (tensor<?xNxf32>, bf16 or f16), but got 'tensor<?x8xf64>'}}
  %0 = cbc.state.selective_scan %x, %x, %b, %b, %a, %w, %w gate(%zb), %i, %i, %i, %i {layer = 0 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf64>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// x as f64 rows: no channel count at all.
func.func @sel_x_f64(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>, %xb: tensor<?x8xf64>) {
  // expected-error @+1 {{'cbc.state.selective_scan' op operand #0 must be packed rows (tensor<?xNxf32>, bf16 or f16), but got 'tensor<?x8xf64>'}}
  %0 = cbc.state.selective_scan %xb, %x, %b, %b, %a, %w, %w gate(%x), %i, %i, %i, %i {layer = 0 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xf64>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// 3 groups over 8 channels (B and C [T, 3 x 1]).
func.func @sel_groups_not_dividing(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.selective_scan' op n_groups must divide the channel count}}
  %0 = cbc.state.selective_scan %x, %x, %b, %b, %a, %w, %w gate(%x), %i, %i, %i, %i {layer = 0 : i64, n_groups = 3 : i64, state_size = 1 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// n_groups 0.
func.func @sel_groups_zero(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.selective_scan' op n_groups must divide the channel count}}
  %0 = cbc.state.selective_scan %x, %x, %b, %b, %a, %w, %w gate(%x), %i, %i, %i, %i {layer = 0 : i64, n_groups = 0 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// state_size 0.
func.func @sel_state_zero(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.selective_scan' op n_groups must divide the channel count}}
  %0 = cbc.state.selective_scan %x, %x, %b, %b, %a, %w, %w gate(%x), %i, %i, %i, %i {layer = 0 : i64, n_groups = 1 : i64, state_size = 0 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// state_size -3.
func.func @sel_state_negative(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.selective_scan' op n_groups must divide the channel count}}
  %0 = cbc.state.selective_scan %x, %x, %b, %b, %a, %w, %w gate(%x), %i, %i, %i, %i {layer = 0 : i64, n_groups = 1 : i64, state_size = -3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// B for two groups while n_groups is 1.
func.func @sel_b_width(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>, %b6: tensor<?x6xf32>) {
  // expected-error @+1 {{'cbc.state.selective_scan' op B and C must be [T, n_groups * state_size]}}
  %0 = cbc.state.selective_scan %x, %x, %b6, %b, %a, %w, %w gate(%x), %i, %i, %i, %i {layer = 0 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x6xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// C of 2 columns.
func.func @sel_c_width(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>, %c2: tensor<?x2xf32>) {
  // expected-error @+1 {{'cbc.state.selective_scan' op B and C must be [T, n_groups * state_size]}}
  %0 = cbc.state.selective_scan %x, %x, %b, %c2, %a, %w, %w gate(%x), %i, %i, %i, %i {layer = 0 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x2xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// A_log with one entry per channel (Mamba2's per-head layout).
func.func @sel_alog_per_channel(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.selective_scan' op A_log must be [channels, state_size]}}
  %0 = cbc.state.selective_scan %x, %x, %b, %b, %w, %w, %w gate(%x), %i, %i, %i, %i {layer = 0 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// A_log of dynamic shape.
func.func @sel_alog_dynamic(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>, %ad: tensor<8x?xf32>) {
  // expected-error @+1 {{'cbc.state.selective_scan' op operand #4 must be statically shaped weight tensor (plain or #cbc.quant), but got 'tensor<8x?xf32>'}}
  %0 = cbc.state.selective_scan %x, %x, %b, %b, %ad, %w, %w gate(%x), %i, %i, %i, %i {layer = 0 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x?xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// dt_bias of 4 entries.
func.func @sel_dt_bias_entries(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>, %w4: tensor<4xf32>) {
  // expected-error @+1 {{'cbc.state.selective_scan' op dt_bias and D must have one entry per channel}}
  %0 = cbc.state.selective_scan %x, %x, %b, %b, %a, %w4, %w gate(%x), %i, %i, %i, %i {layer = 0 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<4xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// D of 16 entries, without z.
func.func @sel_d_entries(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>, %w16: tensor<16xf32>) {
  // expected-error @+1 {{'cbc.state.selective_scan' op dt_bias and D must have one entry per channel}}
  %0 = cbc.state.selective_scan %x, %x, %b, %b, %a, %w, %w16, %i, %i, %i, %i {layer = 0 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// A result of 16 columns.
func.func @sel_result_width(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.selective_scan' op result width must equal the channel count}}
  %0 = cbc.state.selective_scan %x, %x, %b, %b, %a, %w, %w gate(%x), %i, %i, %i, %i {layer = 0 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x16xf32>
  return
}

// -----

// A result of 4 columns, without z.
func.func @sel_result_width_no_z(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.selective_scan' op result width must equal the channel count}}
  %0 = cbc.state.selective_scan %x, %x, %b, %b, %a, %w, %w, %i, %i, %i, %i {layer = 0 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4xf32>
  return
}

// -----

// Activation 'gelu_pytorch_tanh'.
func.func @act_unknown_gelu_pytorch_tanh(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.act' op attribute 'act' failed to satisfy constraint: an elementwise activation}}
  %0 = cbc.math.act %x {act = "gelu_pytorch_tanh"} : tensor<?x8xf32>
  return
}

// -----

// A scale of inf.
func.func @act_scale_inf(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.act' op scale must be finite}}
  %0 = cbc.math.act %x {act = #cbc.act<none>, scale = 0x7FF0000000000000 : f64} : tensor<?x8xf32>
  return
}

// -----

// A scale of neg inf.
func.func @act_scale_neg_inf(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.act' op scale must be finite}}
  %0 = cbc.math.act %x {act = #cbc.act<none>, scale = 0xFFF0000000000000 : f64} : tensor<?x8xf32>
  return
}

// -----

// A scale of nan.
func.func @act_scale_nan(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.act' op scale must be finite}}
  %0 = cbc.math.act %x {act = #cbc.act<none>, scale = 0x7FF8000000000000 : f64} : tensor<?x8xf32>
  return
}

// -----

// The activation is required.
func.func @act_no_act(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.act' op requires attribute 'act'}}
  %0 = cbc.math.act %x {scale = 2.0 : f64} : tensor<?x8xf32>
  return
}

// -----

// Operand and result are packed float rows.
func.func @act_type(%x: tensor<?x8xf64>) {
  // expected-error @+1 {{'cbc.math.act' op operand #0 must be packed rows (tensor<?xNxf32>, bf16 or f16), but got 'tensor<?x8xf64>'}}
  %0 = cbc.math.act %x {act = #cbc.act<silu>} : tensor<?x8xf64>
  return
}

// -----

//===----------------------------------------------------------------------===//
// cbc.math.rms_norm_gated, per-row weight
//===----------------------------------------------------------------------===//

// Groups of 4 over 16 features: the weight has 4 or 16 entries, not 8.
func.func @rng_weight_neither(%x: tensor<?x16xf32>, %w: tensor<8xbf16>) {
  // expected-error @+1 {{'cbc.math.rms_norm_gated' op weight must have one entry per feature of a group or of the row}}
  %0 = cbc.math.rms_norm_gated %x, %x, %w {eps = 1.0e-5 : f64, group = 4 : i64, order = #cbc.order<gate_norm>} : tensor<?x16xf32>, tensor<?x16xf32>, tensor<8xbf16> -> tensor<?x16xf32>
  return
}

// -----

// A per-row weight of 16 elements as [4, 4].
func.func @rng_weight_row_rank(%x: tensor<?x16xf32>, %w: tensor<4x4xbf16>) {
  // expected-error @+1 {{'cbc.math.rms_norm_gated' op weight must have one entry per feature of a group or of the row}}
  %0 = cbc.math.rms_norm_gated %x, %x, %w {eps = 1.0e-5 : f64, group = 4 : i64, order = #cbc.order<gate_norm>} : tensor<?x16xf32>, tensor<?x16xf32>, tensor<4x4xbf16> -> tensor<?x16xf32>
  return
}

// -----

// More entries than the row (32 for 16 features).
func.func @rng_weight_too_long(%x: tensor<?x16xf32>, %w: tensor<32xbf16>) {
  // expected-error @+1 {{'cbc.math.rms_norm_gated' op weight must have one entry per feature of a group or of the row}}
  %0 = cbc.math.rms_norm_gated %x, %x, %w {eps = 1.0e-5 : f64, group = 4 : i64} : tensor<?x16xf32>, tensor<?x16xf32>, tensor<32xbf16> -> tensor<?x16xf32>
  return
}

// -----

// x of zero channels.
func.func @sel_x_empty(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>, %x0: tensor<?x0xf32>, %a0: tensor<0x3xf32>, %w0: tensor<0xf32>) {
  // expected-error @+1 {{'cbc.state.selective_scan' op x, dt and z must be [T, channels]}}
  %0 = cbc.state.selective_scan %x0, %x0, %b, %b, %a0, %w0, %w0, %i, %i, %i, %i {layer = 0 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x0xf32>, tensor<?x0xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<0x3xf32>, tensor<0xf32>, tensor<0xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x0xf32>
  return
}

// -----

func.func @weight_dequant_part() {
  // expected-error @+1 {{'cbc.weight.ref' op an MXFP4 weight's source parts each name its blocks and its scales}}
  %0 = cbc.weight.ref "w" {dequant = #cbc.dequant<mxfp4>, sources = [["e.blocks"]]} : tensor<2x64x8xbf16>
  return
}

// -----

func.func @rope_append_head_dim(%qkv: tensor<?x32xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.rope_append' op rope head_dim must equal head_dim}}
  %0 = cbc.kv.rope_append %qkv, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, rope = #cbc.rope<head_dim = 2, rotary_dim = 2, inv_freq = array<f32: 1.0>>} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @experts_ungated_layout(%x: tensor<?x8xf32>, %ids: tensor<?x2xi32>, %w: tensor<?x2xf32>, %up: tensor<4x6x8xbf16>, %down: tensor<4x8x6xbf16>) {
  // expected-error @+1 {{'cbc.moe.experts' op ungated experts have no gate layout}}
  %0 = cbc.moe.experts %x, %ids, %w, %up, %down {act = #cbc.act<relu2>, layout = #cbc.glu_layout<interleaved>, ungated} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x6x8xbf16>, tensor<4x8x6xbf16>) -> tensor<?x8xf32>
  return
}

// -----

// The parameter bundles check their own fields, wherever they appear.
// expected-error @+1 {{rope attention_factor must be finite}}
func.func private @rope_factor() attributes {test.rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.1>, attention_factor = 0x7FF0000000000000>}

// -----

// expected-error @+1 {{clamped_swiglu needs a positive finite limit and a finite alpha}}
func.func private @clamp_limit() attributes {test.clamp = #cbc.clamped_swiglu<limit = 0.0, alpha = 1.702>}

// -----

// expected-error @+1 {{clamped_swiglu needs a positive finite limit and a finite alpha}}
func.func private @clamp_alpha() attributes {test.clamp = #cbc.clamped_swiglu<limit = 7.0, alpha = 0x7FF8000000000000>}

// -----

// expected-error @+1 {{softcapped_swiglu needs positive finite caps}}
func.func private @softcap_gate() attributes {test.cap = #cbc.softcapped_swiglu<gate_cap = 0.0, up_cap = 2.0>}

// -----

// expected-error @+1 {{softcapped_swiglu needs positive finite caps}}
func.func private @softcap_up() attributes {test.cap = #cbc.softcapped_swiglu<gate_cap = 2.0, up_cap = 0x7FF0000000000000>}

// -----

// expected-error @+1 {{retention 'all' takes no token count}}
func.func private @retention_all() attributes {test.r = #cbc.retention<all, 8>}

// -----

// expected-error @+1 {{cache plan block_size must be positive}}
func.func private @plan_block() attributes {test.p = #cbc.cache_plan<block_size = 0, kv_dtype = bf16>}

// -----

// expected-error @+1 {{cache plan groups must be numbered in order}}
func.func private @plan_groups() attributes {test.p = #cbc.cache_plan<block_size = 16, kv_dtype = bf16, groups = [#cbc.cache_group<id = 1, retention = #cbc.retention<all>, layers = [0], bytes_per_token = 4>]>}

// -----

// expected-error @+1 {{cache plan layer 3 is in no paged or static group}}
func.func private @plan_layer() attributes {test.p = #cbc.cache_plan<block_size = 16, kv_dtype = bf16, layers = [#cbc.cache_layer<layer = 3, group = 0, rows = [#cbc.cache_row<"k", 4>]>]>}

// -----

// An attention layer's rows belong in a paged group, not the state group.
// expected-error @+1 {{cache plan layer 3 is in no paged or static group}}
func.func private @plan_layer_in_states() attributes {test.p = #cbc.cache_plan<block_size = 16, kv_dtype = bf16, groups = [#cbc.cache_group<id = 0, kind = state, retention = #cbc.retention<all>, layers = [3]>], layers = [#cbc.cache_layer<layer = 3, group = 0, rows = [#cbc.cache_row<"k", 4>]>]>}

// -----

// expected-error @+1 {{cache plan state group's bytes_per_unit must be the sum of the states' bytes}}
func.func private @plan_state_bytes() attributes {test.p = #cbc.cache_plan<block_size = 16, kv_dtype = f32, groups = [#cbc.cache_group<id = 0, kind = state, retention = #cbc.retention<all>, layers = [0], bytes_per_unit = 95>], states = [#cbc.state_decl<layer = 0, name = "conv", shape = [8, 3], bytes = 96>]>}

// -----

// expected-error @+1 {{cache plan state 'conv' of layer 0 is in no state group}}
func.func private @plan_state_group() attributes {test.p = #cbc.cache_plan<block_size = 16, kv_dtype = f32, states = [#cbc.state_decl<layer = 0, name = "conv", shape = [8, 3], bytes = 96>]>}

// -----

// Block tables number the paged and static groups from 0: the state group comes last.
// expected-error @+1 {{cache plan groups must come paged first, then static, then one state group}}
func.func private @plan_group_order() attributes {test.p = #cbc.cache_plan<block_size = 16, kv_dtype = f32, groups = [#cbc.cache_group<id = 0, kind = state, retention = #cbc.retention<all>, layers = [0]>, #cbc.cache_group<id = 1, retention = #cbc.retention<all>, layers = [1], bytes_per_token = 4>]>}

// -----

// expected-error @+1 {{cache plan groups must come paged first, then static, then one state group}}
func.func private @plan_static_then_paged() attributes {test.p = #cbc.cache_plan<block_size = 16, kv_dtype = f32, groups = [#cbc.cache_group<id = 0, kind = static, retention = #cbc.retention<all>, layers = [0], bytes_per_token = 4>, #cbc.cache_group<id = 1, retention = #cbc.retention<all>, layers = [1], bytes_per_token = 4>]>}

// -----

// Group-limited routing and identity experts.
// expected-error @+1 {{route groups need a positive count}}
func.func private @route_groups_count() attributes {test.g = #cbc.route_groups<count = 0, keep = 1, score = top2_sum, fill = neg_inf>}

// -----

// expected-error @+1 {{route groups must keep between 1 and count groups}}
func.func private @route_groups_keep() attributes {test.g = #cbc.route_groups<count = 4, keep = 5, score = max, fill = zero>}

// -----

// expected-error @+1 {{route groups must keep between 1 and count groups}}
func.func private @route_groups_keep_zero() attributes {test.g = #cbc.route_groups<count = 4, keep = 0, score = max, fill = zero>}

// -----

func.func @route_groups_topk_softmax(%l: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.moe.route' op route groups need softmax or sigmoid scores}}
  %w, %ids = cbc.moe.route %l {k = 2 : i64, score = #cbc.score<topk_softmax>, groups = #cbc.route_groups<count = 4, keep = 2, score = top2_sum, fill = neg_inf>} : tensor<?x8xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return
}

// -----

func.func @route_groups_divide(%l: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.moe.route' op route groups must divide the experts evenly}}
  %w, %ids = cbc.moe.route %l {k = 2 : i64, score = #cbc.score<sigmoid>, groups = #cbc.route_groups<count = 3, keep = 2, score = max, fill = neg_inf>} : tensor<?x8xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return
}

// -----

// A top-2 sum needs two experts in every group (torch.topk(2) over one fails).
func.func @route_groups_top2_single(%l: tensor<?x4xf32>) {
  // expected-error @+1 {{'cbc.moe.route' op top2_sum route groups need at least two experts each}}
  %w, %ids = cbc.moe.route %l {k = 2 : i64, score = #cbc.score<sigmoid>, groups = #cbc.route_groups<count = 4, keep = 2, score = top2_sum, fill = neg_inf>} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return
}

// -----

// Two kept groups of two experts hold four candidates, not five.
func.func @route_groups_k(%l: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.moe.route' op k must not exceed the experts of the kept groups (keep * experts / count = 4)}}
  %w, %ids = cbc.moe.route %l {k = 5 : i64, score = #cbc.score<sigmoid>, groups = #cbc.route_groups<count = 4, keep = 2, score = top2_sum, fill = neg_inf>} : tensor<?x8xf32> -> tensor<?x5xf32>, tensor<?x5xi32>
  return
}

// -----

func.func @experts_identity_negative(%x: tensor<?x8xf32>, %ids: tensor<?x2xi32>, %w: tensor<?x2xf32>, %gu: tensor<4x12x8xbf16>, %d: tensor<4x8x6xbf16>) {
  // expected-error @+1 {{'cbc.moe.experts' op identity_experts and null_experts must not be negative}}
  %0 = cbc.moe.experts %x, %ids, %w, %gu, %d {act = #cbc.act<silu>, identity_experts = -1 : i64} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x12x8xbf16>, tensor<4x8x6xbf16>) -> tensor<?x8xf32>
  return
}

// -----

func.func @experts_null_negative(%x: tensor<?x8xf32>, %ids: tensor<?x2xi32>, %w: tensor<?x2xf32>, %gu: tensor<4x12x8xbf16>, %d: tensor<4x8x6xbf16>) {
  // expected-error @+1 {{'cbc.moe.experts' op identity_experts and null_experts must not be negative}}
  %0 = cbc.moe.experts %x, %ids, %w, %gu, %d {act = #cbc.act<silu>, null_experts = -1 : i64} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x12x8xbf16>, tensor<4x8x6xbf16>) -> tensor<?x8xf32>
  return
}

// -----

// The router scores 4 experts, but gate_up has 4 and there are 2 identity experts.
func.func @experts_identity_router(%x: tensor<?x8xf32>, %l: tensor<?x4xf32>, %gu: tensor<4x12x8xbf16>, %d: tensor<4x8x6xbf16>) {
  %w, %ids = cbc.moe.route %l {k = 2 : i64, score = #cbc.score<softmax>} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  // expected-error @+1 {{'cbc.moe.experts' op the router must score the experts plus identity_experts and null_experts (6 columns)}}
  %0 = cbc.moe.experts %x, %ids, %w, %gu, %d {act = #cbc.act<silu>, identity_experts = 2 : i64} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x12x8xbf16>, tensor<4x8x6xbf16>) -> tensor<?x8xf32>
  return
}

// -----

// expected-error @+1 {{quantization "fp8" needs fp8_block = [rows, cols] with both positive}}
func.func private @model_fp8_no_block() attributes {test.m = #cbc.model<model_type = "llama", vocab_size = 8, hidden_size = 8, num_layers = 1, max_positions = 8, checkpoint_dtype = "bfloat16", quantization = "fp8">}

// -----

// expected-error @+1 {{quantization "fp8" needs fp8_block = [rows, cols] with both positive}}
func.func private @model_fp8_block_zero() attributes {test.m = #cbc.model<model_type = "llama", vocab_size = 8, hidden_size = 8, num_layers = 1, max_positions = 8, checkpoint_dtype = "bfloat16", quantization = "fp8", fp8_block = [128, 0]>}

// -----

// expected-error @+1 {{fp8_block belongs to quantization "fp8" only}}
func.func private @model_block_without_fp8() attributes {test.m = #cbc.model<model_type = "gpt_oss", vocab_size = 8, hidden_size = 8, num_layers = 1, max_positions = 8, checkpoint_dtype = "bfloat16", quantization = "mxfp4", fp8_block = [128, 128]>}

// -----

func.func @kda_zero_heads(%q: tensor<?x8xf32>, %v: tensor<?x6xf32>, %b: tensor<?x2xf32>, %w: tensor<2xf32>, %dt: tensor<8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.kda' op num_heads, k_dim and v_dim must be positive}}
  %0 = cbc.state.kda %q, %q, %v, %q, %b, %w, %dt, %i, %i, %i, %i {layer = 0 : i64, num_heads = 0 : i64, k_dim = 4 : i64, v_dim = 3 : i64, gate = #cbc.decay_gate<softplus>} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x6xf32>, tensor<?x8xf32>, tensor<?x2xf32>, tensor<2xf32>, tensor<8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x6xf32>
  return
}

// -----

// v is [T, 6] but v_dim 2 asks for [T, 4].
func.func @kda_q_width(%q: tensor<?x8xf32>, %v: tensor<?x6xf32>, %b: tensor<?x2xf32>, %w: tensor<2xf32>, %dt: tensor<8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.kda' op q and k must be [T, num_heads * k_dim] and v [T, num_heads * v_dim]}}
  %0 = cbc.state.kda %q, %q, %v, %q, %b, %w, %dt, %i, %i, %i, %i {layer = 0 : i64, num_heads = 2 : i64, k_dim = 4 : i64, v_dim = 2 : i64, gate = #cbc.decay_gate<softplus>} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x6xf32>, tensor<?x8xf32>, tensor<?x2xf32>, tensor<2xf32>, tensor<8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @kda_result_width(%q: tensor<?x8xf32>, %v: tensor<?x6xf32>, %b: tensor<?x2xf32>, %w: tensor<2xf32>, %dt: tensor<8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.kda' op result width must be num_heads * v_dim}}
  %0 = cbc.state.kda %q, %q, %v, %q, %b, %w, %dt, %i, %i, %i, %i {layer = 0 : i64, num_heads = 2 : i64, k_dim = 4 : i64, v_dim = 3 : i64, gate = #cbc.decay_gate<softplus>} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x6xf32>, tensor<?x8xf32>, tensor<?x2xf32>, tensor<2xf32>, tensor<8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @kda_missing_gate(%q: tensor<?x8xf32>, %v: tensor<?x6xf32>, %b: tensor<?x2xf32>, %w: tensor<2xf32>, %dt: tensor<8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.kda' op requires attribute 'gate'}}
  %0 = cbc.state.kda %q, %q, %v, %q, %b, %w, %dt, %i, %i, %i, %i {layer = 0 : i64, num_heads = 2 : i64, k_dim = 4 : i64, v_dim = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x6xf32>, tensor<?x8xf32>, tensor<?x2xf32>, tensor<2xf32>, tensor<8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x6xf32>
  return
}

// -----

func.func @kda_lower_bound_without_bounded(%q: tensor<?x8xf32>, %v: tensor<?x6xf32>, %b: tensor<?x2xf32>, %w: tensor<2xf32>, %dt: tensor<8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.kda' op lower_bound is given with the bounded_sigmoid gate and only with it}}
  %0 = cbc.state.kda %q, %q, %v, %q, %b, %w, %dt, %i, %i, %i, %i {layer = 0 : i64, num_heads = 2 : i64, k_dim = 4 : i64, v_dim = 3 : i64, gate = #cbc.decay_gate<softplus>, lower_bound = -5.0 : f64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x6xf32>, tensor<?x8xf32>, tensor<?x2xf32>, tensor<2xf32>, tensor<8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x6xf32>
  return
}

// -----

func.func @kda_bounded_without_lower_bound(%q: tensor<?x8xf32>, %v: tensor<?x6xf32>, %b: tensor<?x2xf32>, %w: tensor<2xf32>, %dt: tensor<8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.kda' op lower_bound is given with the bounded_sigmoid gate and only with it}}
  %0 = cbc.state.kda %q, %q, %v, %q, %b, %w, %dt, %i, %i, %i, %i {layer = 0 : i64, num_heads = 2 : i64, k_dim = 4 : i64, v_dim = 3 : i64, gate = #cbc.decay_gate<bounded_sigmoid>} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x6xf32>, tensor<?x8xf32>, tensor<?x2xf32>, tensor<2xf32>, tensor<8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x6xf32>
  return
}

// -----

func.func @kda_positive_lower_bound(%q: tensor<?x8xf32>, %v: tensor<?x6xf32>, %b: tensor<?x2xf32>, %w: tensor<2xf32>, %dt: tensor<8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.kda' op lower_bound must be negative}}
  %0 = cbc.state.kda %q, %q, %v, %q, %b, %w, %dt, %i, %i, %i, %i {layer = 0 : i64, num_heads = 2 : i64, k_dim = 4 : i64, v_dim = 3 : i64, gate = #cbc.decay_gate<bounded_sigmoid>, lower_bound = 1.0 : f64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x6xf32>, tensor<?x8xf32>, tensor<?x2xf32>, tensor<2xf32>, tensor<8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x6xf32>
  return
}

// -----

// f must have a gate input per key channel.
func.func @kda_f_width(%q: tensor<?x8xf32>, %v: tensor<?x6xf32>, %f: tensor<?x2xf32>, %w: tensor<2xf32>, %dt: tensor<8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.kda' op f must be [T, num_heads * k_dim]}}
  %0 = cbc.state.kda %q, %q, %v, %f, %f, %w, %dt, %i, %i, %i, %i {layer = 0 : i64, num_heads = 2 : i64, k_dim = 4 : i64, v_dim = 3 : i64, gate = #cbc.decay_gate<softplus>} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x6xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<2xf32>, tensor<8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x6xf32>
  return
}

// -----

func.func @kda_b_width(%q: tensor<?x8xf32>, %v: tensor<?x6xf32>, %w: tensor<2xf32>, %dt: tensor<8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.kda' op b must be [T, num_heads]}}
  %0 = cbc.state.kda %q, %q, %v, %q, %q, %w, %dt, %i, %i, %i, %i {layer = 0 : i64, num_heads = 2 : i64, k_dim = 4 : i64, v_dim = 3 : i64, gate = #cbc.decay_gate<softplus>} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x6xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<2xf32>, tensor<8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x6xf32>
  return
}

// -----

func.func @kda_a_log_size(%q: tensor<?x8xf32>, %v: tensor<?x6xf32>, %b: tensor<?x2xf32>, %dt: tensor<8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.kda' op A_log must have num_heads entries}}
  %0 = cbc.state.kda %q, %q, %v, %q, %b, %dt, %dt, %i, %i, %i, %i {layer = 0 : i64, num_heads = 2 : i64, k_dim = 4 : i64, v_dim = 3 : i64, gate = #cbc.decay_gate<softplus>} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x6xf32>, tensor<?x8xf32>, tensor<?x2xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x6xf32>
  return
}

// -----

// dt_bias is per key channel, not per head as in the gated delta rule.
func.func @kda_dt_bias_size(%q: tensor<?x8xf32>, %v: tensor<?x6xf32>, %b: tensor<?x2xf32>, %w: tensor<2xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.kda' op dt_bias must have num_heads * k_dim entries}}
  %0 = cbc.state.kda %q, %q, %v, %q, %b, %w, %w, %i, %i, %i, %i {layer = 0 : i64, num_heads = 2 : i64, k_dim = 4 : i64, v_dim = 3 : i64, gate = #cbc.decay_gate<softplus>} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x6xf32>, tensor<?x8xf32>, tensor<?x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x6xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// cbc.state.lightning (2 heads of 4: q, k, v [T, 8])
//===----------------------------------------------------------------------===//

// Heads of zero width.
func.func @lightning_zero_head_dim(%q: tensor<?x8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.lightning' op num_heads and head_dim must be positive}}
  %0 = cbc.state.lightning %q, %q, %q, %i, %i, %i, %i {layer = 0 : i64, num_heads = 2 : i64, head_dim = 0 : i64, decay = array<f64: 0.5, 0.25>} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// v of 6 columns.
func.func @lightning_v_width(%q: tensor<?x8xf32>, %v: tensor<?x6xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.lightning' op q, k and v must be [T, num_heads * head_dim]}}
  %0 = cbc.state.lightning %q, %q, %v, %i, %i, %i, %i {layer = 0 : i64, num_heads = 2 : i64, head_dim = 4 : i64, decay = array<f64: 0.5, 0.25>} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x6xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// A result of 4 columns.
func.func @lightning_result_width(%q: tensor<?x8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.lightning' op result width must be num_heads * head_dim}}
  %0 = cbc.state.lightning %q, %q, %q, %i, %i, %i, %i {layer = 0 : i64, num_heads = 2 : i64, head_dim = 4 : i64, decay = array<f64: 0.5, 0.25>} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4xf32>
  return
}

// -----

// One decay rate for two heads.
func.func @lightning_decay_count(%q: tensor<?x8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.lightning' op decay must have num_heads entries for each of its ranks}}
  %0 = cbc.state.lightning %q, %q, %q, %i, %i, %i, %i {layer = 0 : i64, num_heads = 2 : i64, head_dim = 4 : i64, decay = array<f64: 0.5>} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// Two ranks' heads need two rates each.
func.func @lightning_ranks_decay_count(%q: tensor<?x8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.lightning' op decay must have num_heads entries for each of its ranks}}
  %0 = cbc.state.lightning %q, %q, %q, %i, %i, %i, %i {layer = 0 : i64, num_heads = 2 : i64, head_dim = 4 : i64, decay = array<f64: 0.5, 0.25>, ranks = 2 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @lightning_ranks(%q: tensor<?x8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.lightning' op ranks must be positive}}
  %0 = cbc.state.lightning %q, %q, %q, %i, %i, %i, %i {layer = 0 : i64, num_heads = 2 : i64, head_dim = 4 : i64, decay = array<f64: 0.5, 0.25>, ranks = 0 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// A negative rate would grow the state without bound.
func.func @lightning_negative_decay(%q: tensor<?x8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.lightning' op decay rates must be finite and not negative}}
  %0 = cbc.state.lightning %q, %q, %q, %i, %i, %i, %i {layer = 0 : i64, num_heads = 2 : i64, head_dim = 4 : i64, decay = array<f64: 0.5, -0.25>} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// Without the decay rates.
func.func @lightning_no_decay(%q: tensor<?x8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.lightning' op requires attribute 'decay'}}
  %0 = cbc.state.lightning %q, %q, %q, %i, %i, %i, %i {layer = 0 : i64, num_heads = 2 : i64, head_dim = 4 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Inkling: distance bias, sink routing, scalar weight factors, flattened weight refs
//===----------------------------------------------------------------------===//

func.func @attention_distance_bias_without_extent(%q: tensor<?x16xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %b: tensor<?x32xf32>) {
  // expected-error @+1 {{'cbc.kv.attention' op a distance bias needs a positive bias_extent, and bias_extent a distance bias}}
  %0 = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt distance_bias(%b) {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.25 : f64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<?x32xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @attention_distance_bias_width(%q: tensor<?x16xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %b: tensor<?x30xf32>) {
  // expected-error @+1 {{'cbc.kv.attention' op distance_bias width must be num_heads * bias_extent}}
  %0 = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt distance_bias(%b) {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.25 : f64, bias_extent = 8 : i64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<?x30xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @route_sinks_softmax(%l: tensor<?x6xf32>) {
  // expected-error @+1 {{'cbc.moe.route' op sinks must not be negative, and need sigmoid scores without groups or renorm}}
  %w, %ids = cbc.moe.route %l {k = 2 : i64, score = #cbc.score<softmax>, sinks = 2 : i64} : tensor<?x6xf32> -> tensor<?x4xf32>, tensor<?x4xi32>
  return
}

// -----

func.func @route_sinks_columns(%l: tensor<?x6xf32>) {
  // expected-error @+1 {{'cbc.moe.route' op with sinks, weights and ids must have sinks + k columns}}
  %w, %ids = cbc.moe.route %l {k = 2 : i64, score = #cbc.score<sigmoid>, sinks = 2 : i64} : tensor<?x6xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return
}

// -----

func.func @mul_weight_not_dividing(%x: tensor<?x8xf32>, %g: tensor<3xbf16>) {
  // expected-error @+1 {{'cbc.math.mul' op a weight factor must be one row whose length divides the operand's width}}
  %0 = cbc.math.mul %x, %g : tensor<?x8xf32>, tensor<3xbf16> -> tensor<?x8xf32>
  return
}

// -----

func.func @weight_flatten_transpose() {
  // expected-error @+1 {{'cbc.weight.ref' op flatten needs combine 'none' and a ranked weight (rank 2 with transpose)}}
  %0 = cbc.weight.ref "w" {sources = [["a", "b"]], flatten, transpose} : tensor<8xbf16>
  return
}

// -----

func.func @index_append_dim(%q: tensor<?x16xf32>, %r: tensor<?x8xf32>, %ik: tensor<?x6xf32>, %iq: tensor<?x12xf32>, %iw: tensor<?x2xf32>, %s: tensor<?x3xi32>, %s0: tensor<?x0xi32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.index_append' op head_dim must be positive}}
  cbc.kv.index_append %ik, %p, %p, %p, %bt {layer = 0 : i64, head_dim = 0 : i64} : tensor<?x6xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  return
}

// -----

func.func @index_append_width(%q: tensor<?x16xf32>, %r: tensor<?x8xf32>, %ik: tensor<?x6xf32>, %iq: tensor<?x12xf32>, %iw: tensor<?x2xf32>, %s: tensor<?x3xi32>, %s0: tensor<?x0xi32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.index_append' op index_key width must be head_dim}}
  cbc.kv.index_append %ik, %p, %p, %p, %bt {layer = 0 : i64, head_dim = 4 : i64} : tensor<?x6xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  return
}

// -----

func.func @index_select_dims(%q: tensor<?x16xf32>, %r: tensor<?x8xf32>, %ik: tensor<?x6xf32>, %iq: tensor<?x12xf32>, %iw: tensor<?x2xf32>, %s: tensor<?x3xi32>, %s0: tensor<?x0xi32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.index_select' op num_heads, head_dim and topk must be positive}}
  %o = cbc.kv.index_select %iq, %iw, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 2 : i64, head_dim = 6 : i64, topk = 0 : i64, key_scale = 0.5 : f64, weight_scale = 0.7 : f64} : tensor<?x12xf32>, tensor<?x2xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x3xi32>
  return
}

// -----

func.func @index_select_q(%q: tensor<?x16xf32>, %r: tensor<?x8xf32>, %ik: tensor<?x6xf32>, %iq: tensor<?x12xf32>, %iw: tensor<?x2xf32>, %s: tensor<?x3xi32>, %s0: tensor<?x0xi32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.index_select' op q width must be num_heads * head_dim}}
  %o = cbc.kv.index_select %iq, %iw, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 2 : i64, head_dim = 4 : i64, topk = 3 : i64, key_scale = 0.5 : f64, weight_scale = 0.7 : f64} : tensor<?x12xf32>, tensor<?x2xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x3xi32>
  return
}

// -----

func.func @index_select_weights(%q: tensor<?x16xf32>, %r: tensor<?x8xf32>, %ik: tensor<?x6xf32>, %iq: tensor<?x12xf32>, %iw: tensor<?x2xf32>, %s: tensor<?x3xi32>, %s0: tensor<?x0xi32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.index_select' op weights must have one column per head}}
  %o = cbc.kv.index_select %iq, %iq, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 2 : i64, head_dim = 6 : i64, topk = 3 : i64, key_scale = 0.5 : f64, weight_scale = 0.7 : f64} : tensor<?x12xf32>, tensor<?x12xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x3xi32>
  return
}

// -----

func.func @index_select_result(%q: tensor<?x16xf32>, %r: tensor<?x8xf32>, %ik: tensor<?x6xf32>, %iq: tensor<?x12xf32>, %iw: tensor<?x2xf32>, %s: tensor<?x3xi32>, %s0: tensor<?x0xi32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.index_select' op result width must be topk}}
  %o = cbc.kv.index_select %iq, %iw, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 2 : i64, head_dim = 6 : i64, topk = 4 : i64, key_scale = 0.5 : f64, weight_scale = 0.7 : f64} : tensor<?x12xf32>, tensor<?x2xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x3xi32>
  return
}

// -----

func.func @latent_selection_empty(%q: tensor<?x16xf32>, %r: tensor<?x8xf32>, %ik: tensor<?x6xf32>, %iq: tensor<?x12xf32>, %iw: tensor<?x2xf32>, %s: tensor<?x3xi32>, %s0: tensor<?x0xi32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.latent_attention' op selection must list at least one row per query}}
  %o = cbc.kv.latent_attention %q, %r, %p, %p, %p, %p, %p, %bt selection(%s0) {layer = 0 : i64, num_heads = 2 : i64, latent_dim = 8 : i64, rope_dim = 4 : i64, scale = 0.5 : f64} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<?x0xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @latent_selection_window(%q: tensor<?x16xf32>, %r: tensor<?x8xf32>, %ik: tensor<?x6xf32>, %iq: tensor<?x12xf32>, %iw: tensor<?x2xf32>, %s: tensor<?x3xi32>, %s0: tensor<?x0xi32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.latent_attention' op a selection reads layers that keep every token}}
  %o = cbc.kv.latent_attention %q, %r, %p, %p, %p, %p, %p, %bt selection(%s) {layer = 0 : i64, num_heads = 2 : i64, latent_dim = 8 : i64, rope_dim = 4 : i64, scale = 0.5 : f64, retention = #cbc.retention<window, 8>} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<?x3xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @layer_norm_result(%x: tensor<?x6xf32>, %w: tensor<6xbf16>) {
  // expected-error @+1 {{'cbc.math.layer_norm' op result width must be the input width}}
  %o = cbc.math.layer_norm %x, %w, %w {eps = 1.0e-6 : f64} : tensor<?x6xf32>, tensor<6xbf16>, tensor<6xbf16> -> tensor<?x4xf32>
  return
}

// -----

func.func @layer_norm_weight(%x: tensor<?x6xf32>, %w: tensor<6xbf16>, %b: tensor<4xbf16>) {
  // expected-error @+1 {{'cbc.math.layer_norm' op weight and bias must have one entry per feature of a group or of the row}}
  %o = cbc.math.layer_norm %x, %w, %b {eps = 1.0e-6 : f64} : tensor<?x6xf32>, tensor<6xbf16>, tensor<4xbf16> -> tensor<?x6xf32>
  return
}

// -----

func.func @layer_norm_group(%x: tensor<?x6xf32>, %w: tensor<4xbf16>) {
  // expected-error @+1 {{'cbc.math.layer_norm' op group must divide the width}}
  %o = cbc.math.layer_norm %x, %w {eps = 1.0e-6 : f64, group = 4 : i64} : tensor<?x6xf32>, tensor<4xbf16> -> tensor<?x6xf32>
  return
}

// -----

func.func @layer_norm_bias_without_weight(%x: tensor<?x6xf32>, %b: tensor<6xbf16>) {
  // The custom form reads a lone operand as the weight; the generic form can give a lone bias.
  // expected-error @+1 {{'cbc.math.layer_norm' op a bias needs a weight}}
  %o = "cbc.math.layer_norm"(%x, %b) <{eps = 1.0e-6 : f64, operandSegmentSizes = array<i32: 1, 0, 1>}> : (tensor<?x6xf32>, tensor<6xbf16>) -> tensor<?x6xf32>
  return
}

// -----

func.func @layer_norm_eps(%x: tensor<?x6xf32>, %w: tensor<6xbf16>) {
  // expected-error @+1 {{'cbc.math.layer_norm' op eps must be positive}}
  %o = cbc.math.layer_norm %x, %w, %w {eps = 0.0 : f64} : tensor<?x6xf32>, tensor<6xbf16>, tensor<6xbf16> -> tensor<?x6xf32>
  return
}

// -----

func.func @sinusoidal_width(%pos: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.math.sinusoidal_position' op result width must be at least 4 (two frequencies)}}
  %o = cbc.math.sinusoidal_position %pos : tensor<?xi32> -> tensor<?x3xf32>
  return
}

// -----

func.func @sinusoidal_offset(%pos: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.math.sinusoidal_position' op offset and padding_row must not be negative}}
  %o = cbc.math.sinusoidal_position %pos {padding_row = -1 : i64} : tensor<?xi32> -> tensor<?x8xf32>
  return
}

// -----

func.func @sinusoidal_base(%pos: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.math.sinusoidal_position' op base must be finite and above 1}}
  %o = cbc.math.sinusoidal_position %pos {base = 1.0 : f64} : tensor<?xi32> -> tensor<?x8xf32>
  return
}

// -----

func.func @sinusoidal_power_odd(%pos: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.math.sinusoidal_position' op the power form needs an even width}}
  %o = cbc.math.sinusoidal_position %pos {form = #cbc.sinusoid_form<power>} : tensor<?xi32> -> tensor<?x9xf32>
  return
}

// -----

func.func @slot_linear_rank(%x: tensor<?x8xf32>, %ids: tensor<?x2xi32>, %w: tensor<6x8xbf16>) {
  // expected-error @+1 {{'cbc.moe.slot_linear' op weight must be [experts, out, in]}}
  %0 = cbc.moe.slot_linear %x, %ids, %w : tensor<?x8xf32>, tensor<?x2xi32>, tensor<6x8xbf16> -> tensor<?x12xf32>
  return
}

// -----

func.func @slot_linear_fan_out(%x: tensor<?x8xf32>, %ids: tensor<?x2xi32>, %w: tensor<4x6x8xbf16>) {
  // expected-error @+1 {{'cbc.moe.slot_linear' op without weights, x must be [tokens, in] and the result [tokens, choices * out]}}
  %0 = cbc.moe.slot_linear %x, %ids, %w : tensor<?x8xf32>, tensor<?x2xi32>, tensor<4x6x8xbf16> -> tensor<?x6xf32>
  return
}

// -----

func.func @slot_linear_mix(%x: tensor<?x8xf32>, %ids: tensor<?x2xi32>, %w: tensor<4x6x8xbf16>, %m: tensor<?x2xf32>) {
  // expected-error @+1 {{'cbc.moe.slot_linear' op with weights, x must be [tokens, choices * in] and the result [tokens, out]}}
  %0 = cbc.moe.slot_linear %x, %ids, %w mix(%m : tensor<?x2xf32>) : tensor<?x8xf32>, tensor<?x2xi32>, tensor<4x6x8xbf16> -> tensor<?x6xf32>
  return
}

// -----

func.func @slot_linear_mix_columns(%x: tensor<?x16xf32>, %ids: tensor<?x2xi32>, %w: tensor<4x6x8xbf16>, %m: tensor<?x3xf32>) {
  // expected-error @+1 {{'cbc.moe.slot_linear' op ids and weights must have the same number of columns}}
  %0 = cbc.moe.slot_linear %x, %ids, %w mix(%m : tensor<?x3xf32>) : tensor<?x16xf32>, tensor<?x2xi32>, tensor<4x6x8xbf16> -> tensor<?x6xf32>
  return
}

// -----

func.func @block_select_shape(%q: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.block_select' op num_heads, head_dim, block and topk must be positive}}
  %0 = cbc.kv.block_select %q, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 2 : i64, head_dim = 4 : i64, block = 0 : i64, topk = 2 : i64} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x4xi32>
  return
}

// -----

func.func @block_select_local(%q: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.block_select' op local must be between 0 and topk}}
  %0 = cbc.kv.block_select %q, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 2 : i64, head_dim = 4 : i64, block = 4 : i64, topk = 2 : i64, local = 3 : i64} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x4xi32>
  return
}

// -----

func.func @block_select_q(%q: tensor<?x6xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.block_select' op q width must be num_heads * head_dim}}
  %0 = cbc.kv.block_select %q, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 2 : i64, head_dim = 4 : i64, block = 4 : i64, topk = 2 : i64} : tensor<?x6xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x4xi32>
  return
}

// -----

func.func @block_select_result(%q: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.block_select' op result width must be num_heads * topk}}
  %0 = cbc.kv.block_select %q, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 2 : i64, head_dim = 4 : i64, block = 4 : i64, topk = 2 : i64} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x3xi32>
  return
}

// -----

func.func @attention_selection_attrs(%q: tensor<?x16xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %sel: tensor<?x4xi32>) {
  // expected-error @+1 {{'cbc.kv.attention' op a block selection needs positive selection_heads and selection_block, and they a block selection}}
  %o = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt blocks(%sel) {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64, selection_heads = 2 : i64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<?x4xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @attention_selection_heads(%q: tensor<?x16xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %sel: tensor<?x6xi32>) {
  // expected-error @+1 {{'cbc.kv.attention' op selection_heads must divide num_heads and the block selection's width}}
  %o = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt blocks(%sel) {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64, selection_heads = 3 : i64, selection_block = 4 : i64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<?x6xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @match_rms_width(%x: tensor<?x8xf32>, %r: tensor<?x4xf32>) {
  // expected-error @+1 {{'cbc.math.match_rms' op result width must equal the input's}}
  %o = cbc.math.match_rms %x, %r : tensor<?x8xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @match_rms_floor(%x: tensor<?x8xf32>, %r: tensor<?x4xf32>) {
  // expected-error @+1 {{'cbc.math.match_rms' op floor must be positive and finite}}
  %o = cbc.math.match_rms %x, %r {floor = 0.0 : f64} : tensor<?x8xf32>, tensor<?x4xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @gaussian_topk_multiplier(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.gaussian_topk' op multiplier must be finite}}
  %o = cbc.math.gaussian_topk %x {multiplier = 0x7FF0000000000000 : f64} : tensor<?x8xf32>
  return
}

// -----

func.func @embed_oov_row(%tok: tensor<?xi32>, %t: tensor<6x8xbf16>) {
  // expected-error @+1 {{'cbc.math.embed' op oov_row must be a row of the table}}
  %o = cbc.math.embed %tok, %t {oov_row = 6 : i64} : tensor<?xi32>, tensor<6x8xbf16> -> tensor<?x8xf32>
  return
}

// -----

func.func @head_pad_heads(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.head_pad' op heads and width must be positive}}
  %o = cbc.math.head_pad %x {heads = 0 : i64, width = 8 : i64} : tensor<?x8xf32> -> tensor<?x24xf32>
  return
}

// -----

func.func @head_pad_split(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.head_pad' op input width must be a multiple of heads}}
  %o = cbc.math.head_pad %x {heads = 3 : i64, width = 8 : i64} : tensor<?x8xf32> -> tensor<?x32xf32>
  return
}

// -----

func.func @head_pad_result(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.head_pad' op result width must be the input's plus heads * width}}
  %o = cbc.math.head_pad %x {heads = 2 : i64, width = 8 : i64} : tensor<?x8xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @head_pad_value(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.head_pad' op value must be finite}}
  %o = cbc.math.head_pad %x {heads = 2 : i64, width = 8 : i64, value = 0x7FF0000000000000 : f64} : tensor<?x8xf32> -> tensor<?x24xf32>
  return
}

// -----

func.func @head_pad_extra(%x: tensor<?x8xf32>, %e: tensor<?x3xf32>) {
  // expected-error @+1 {{'cbc.math.head_pad' op extra must hold one value per head}}
  %o = cbc.math.head_pad %x, %e {heads = 2 : i64, width = 8 : i64} : tensor<?x8xf32>, tensor<?x3xf32> -> tensor<?x24xf32>
  return
}

// -----

// Collectives and weight shards (cbc compile --tp).
func.func @all_reduce_ranks(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.comm.all_reduce' op ranks must be at least 2}}
  %o = cbc.comm.all_reduce %x {ranks = 1 : i64} : tensor<?x8xf32>
  return
}

// -----

func.func @all_reduce_width(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.comm.all_reduce' op result must have the width of x}}
  %o = cbc.comm.all_reduce %x {ranks = 2 : i64} : (tensor<?x8xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @all_reduce_bias(%x: tensor<?x8xf32>, %b: tensor<4xbf16>) {
  // expected-error @+1 {{'cbc.comm.all_reduce' op bias must have one element per column}}
  %o = cbc.comm.all_reduce %x bias(%b : tensor<4xbf16>) {ranks = 2 : i64} : tensor<?x8xf32>
  return
}

// -----

func.func @all_gather_ranks(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.comm.all_gather' op ranks must be at least 2}}
  %o = cbc.comm.all_gather %x {ranks = 1 : i64} : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @all_gather_width(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.comm.all_gather' op result width must be ranks times the width of x}}
  %o = cbc.comm.all_gather %x {ranks = 2 : i64} : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @shard_dim() {
  // expected-error @+1 {{'cbc.weight.ref' op shard dim 2 is not a dimension of the weight}}
  %w = cbc.weight.ref "w" {sources = [["w"]], shard = #cbc.shard<ranks = 2, dim = 2, segments = [8], pieces = [2]>} : tensor<4x8xbf16>
  return
}

// -----

func.func @shard_extent() {
  // expected-error @+1 {{'cbc.weight.ref' op shard gives each rank 4 along dimension 0 but the weight has 8}}
  %w = cbc.weight.ref "w" {sources = [["w"]], shard = #cbc.shard<ranks = 2, dim = 0, segments = [8], pieces = [2]>} : tensor<8x8xbf16>
  return
}

// -----

func.func @shard_ranks() {
  // expected-error @+1 {{a shard needs at least 2 ranks and a dimension}}
  %w = cbc.weight.ref "w" {sources = [["w"]], shard = #cbc.shard<ranks = 1, dim = 0, segments = [8], pieces = [1]>} : tensor<8x8xbf16>
  return
}

// -----

func.func @shard_pieces_per_segment() {
  // expected-error @+1 {{a shard needs one piece count per segment}}
  %w = cbc.weight.ref "w" {sources = [["w"]], shard = #cbc.shard<ranks = 2, dim = 0, segments = [8, 8], pieces = [2]>} : tensor<8x8xbf16>
  return
}

// -----

func.func @shard_cut() {
  // expected-error @+1 {{a segment of 6 cannot be cut in 4 pieces for 4 ranks (each piece count must divide its segment and the ranks)}}
  %w = cbc.weight.ref "w" {sources = [["w"]], shard = #cbc.shard<ranks = 4, dim = 0, segments = [6], pieces = [4]>} : tensor<8x8xbf16>
  return
}

// -----

func.func @moe_expert_ranks(%x: tensor<?x8xf32>, %ids: tensor<?x2xi32>, %w: tensor<?x2xf32>, %gu: tensor<4x8x8xbf16>, %d: tensor<4x8x4xbf16>) {
  // expected-error @+1 {{'cbc.moe.experts' op expert_ranks must be at least 1}}
  %o = cbc.moe.experts %x, %ids, %w, %gu, %d {act = #cbc.act<silu>, expert_ranks = 0 : i64} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x8x8xbf16>, tensor<4x8x4xbf16>) -> tensor<?x8xf32>
  return
}

// -----

func.func @embed_vocab_ranks(%t: tensor<?xi32>, %w: tensor<8x4xbf16>) {
  // expected-error @+1 {{'cbc.math.embed' op vocab_ranks must be at least 1, and above 1 only without offset or oov_row}}
  %o = cbc.math.embed %t, %w {vocab_ranks = 2 : i64, offset = 2 : i64} : tensor<?xi32>, tensor<8x4xbf16> -> tensor<?x4xf32>
  return
}

// -----

func.func @rope_sections_count(%x: tensor<?x8xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{rope sections must give each of the rotary_dim / 2 frequencies a component in [0, 2]}}
  %0 = cbc.math.rope %x, %p, %p, %p sections %p : tensor<?xi32> {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.1>, sections = [0, 1, 2]>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  return
}

// -----

func.func @rope_sections_long(%x: tensor<?x8xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{rope sections have no length-dependent schedule}}
  %0 = cbc.math.rope %x, %p, %p, %p sections %p : tensor<?xi32> {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.1>, inv_freq_long = array<f32: 0.5, 0.05>, long_after = 8, sections = [0, 1]>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  return
}

// -----

func.func @rope_sections_without_positions(%x: tensor<?x8xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.math.rope' op takes section positions exactly when its schedule has sections}}
  %0 = cbc.math.rope %x, %p, %p, %p {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.1>, sections = [0, 1]>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  return
}

// -----

func.func @rope_append_sections(%qkv: tensor<?x32xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.rope_append' op rotates by one position per token: its schedule must have no sections}}
  %0 = cbc.kv.rope_append %qkv, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>, sections = [0, 2]>} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @attention_key_ends_with_bias(%q: tensor<?x16xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %b: tensor<?x32xf32>) {
  // expected-error @+1 {{'cbc.kv.attention' op key ends take neither a block selection nor a distance bias}}
  %0 = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt distance_bias(%b) key_ends(%p) {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.25 : f64, bias_extent = 8 : i64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x16xf32>
  return
}

// -----

// expected-error @+1 {{injected_token must be a token id, or -1 for none}}
func.func private @model_injected_token() attributes {test.m = #cbc.model<model_type = "gemma4_text", vocab_size = 8, hidden_size = 8, num_layers = 1, max_positions = 8, checkpoint_dtype = "bfloat16", injected_token = -2>}

// -----

func.func @hc_weights_magnitude(%m: tensor<?x8xf32>) {
  %b = cbc.weight.ref "b" {sources = [["b"]]} : tensor<8xf32>
  %s = cbc.weight.ref "s" {sources = [["s"]]} : tensor<2xf32>
  // expected-error @+1 {{'cbc.stream.hc_weights' op magnitude must be positive and the epsilons not negative, all finite}}
  %0 = cbc.stream.hc_weights %m, %b, %s {kind = #cbc.hc_kind<independent>, streams = 4 : i64, magnitude = 0.0 : f64, eps = 1.0e-6 : f64, post_eps = 0.0 : f64} : tensor<?x8xf32>, tensor<8xf32>, tensor<2xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @hc_weights_streams(%m: tensor<?x8xf32>) {
  %b = cbc.weight.ref "b" {sources = [["b"]]} : tensor<8xf32>
  %s = cbc.weight.ref "s" {sources = [["s"]]} : tensor<2xf32>
  // expected-error @+1 {{'cbc.stream.hc_weights' op streams must be between 1 and 16}}
  %0 = cbc.stream.hc_weights %m, %b, %s {kind = #cbc.hc_kind<independent>, streams = 0 : i64, magnitude = 2.0 : f64, eps = 1.0e-6 : f64, post_eps = 0.0 : f64} : tensor<?x8xf32>, tensor<8xf32>, tensor<2xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @hc_weights_width(%m: tensor<?x8xf32>) {
  %b = cbc.weight.ref "b" {sources = [["b"]]} : tensor<8xf32>
  %s = cbc.weight.ref "s" {sources = [["s"]]} : tensor<3xf32>
  // expected-error @+1 {{'cbc.stream.hc_weights' op mixes and result width must be N, 2 N or (2 + N) N as the kind has coefficients}}
  %0 = cbc.stream.hc_weights %m, %b, %s {kind = #cbc.hc_kind<manifold>, streams = 4 : i64, magnitude = 2.0 : f64, eps = 1.0e-6 : f64, post_eps = 0.0 : f64, sinkhorn_iters = 20 : i64} : tensor<?x8xf32>, tensor<8xf32>, tensor<3xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @hc_weights_base(%m: tensor<?x8xf32>) {
  %b = cbc.weight.ref "b" {sources = [["b"]]} : tensor<4xf32>
  %s = cbc.weight.ref "s" {sources = [["s"]]} : tensor<2xf32>
  // expected-error @+1 {{'cbc.stream.hc_weights' op base must have one entry per column of mixes}}
  %0 = cbc.stream.hc_weights %m, %b, %s {kind = #cbc.hc_kind<independent>, streams = 4 : i64, magnitude = 2.0 : f64, eps = 1.0e-6 : f64, post_eps = 0.0 : f64} : tensor<?x8xf32>, tensor<4xf32>, tensor<2xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @hc_weights_scale(%m: tensor<?x8xf32>) {
  %b = cbc.weight.ref "b" {sources = [["b"]]} : tensor<8xf32>
  %s = cbc.weight.ref "s" {sources = [["s"]]} : tensor<3xf32>
  // expected-error @+1 {{'cbc.stream.hc_weights' op scale must have one factor per kind of coefficient}}
  %0 = cbc.stream.hc_weights %m, %b, %s {kind = #cbc.hc_kind<independent>, streams = 4 : i64, magnitude = 2.0 : f64, eps = 1.0e-6 : f64, post_eps = 0.0 : f64} : tensor<?x8xf32>, tensor<8xf32>, tensor<3xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @hc_weights_sinkhorn(%m: tensor<?x8xf32>) {
  %b = cbc.weight.ref "b" {sources = [["b"]]} : tensor<8xf32>
  %s = cbc.weight.ref "s" {sources = [["s"]]} : tensor<2xf32>
  // expected-error @+1 {{'cbc.stream.hc_weights' op sinkhorn_iters must be positive for a manifold kind and 0 otherwise}}
  %0 = cbc.stream.hc_weights %m, %b, %s {kind = #cbc.hc_kind<independent>, streams = 4 : i64, magnitude = 2.0 : f64, eps = 1.0e-6 : f64, post_eps = 0.0 : f64, sinkhorn_iters = 3 : i64} : tensor<?x8xf32>, tensor<8xf32>, tensor<2xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @stream_collapse_count(%x: tensor<?x16xf32>, %w: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.stream.collapse' op count must be between 1 and 16}}
  %0 = cbc.stream.collapse %x, %w {count = 17 : i64} : tensor<?x16xf32>, tensor<?x8xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @stream_collapse_width(%x: tensor<?x18xf32>, %w: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.stream.collapse' op streams width must be count * hidden}}
  %0 = cbc.stream.collapse %x, %w {count = 4 : i64} : tensor<?x18xf32>, tensor<?x8xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @stream_collapse_offset(%x: tensor<?x16xf32>, %w: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.stream.collapse' op weights must hold the coefficients from offset on}}
  %0 = cbc.stream.collapse %x, %w {count = 4 : i64, offset = 6 : i64} : tensor<?x16xf32>, tensor<?x8xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @stream_expand_block(%y: tensor<?x8xf32>, %x: tensor<?x16xf32>, %w: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.stream.expand' op block and result widths must be the streams' hidden width (expand: result as the streams)}}
  %0 = cbc.stream.expand %y, %x, %w {count = 4 : i64, offset = 4 : i64} : tensor<?x8xf32>, tensor<?x16xf32>, tensor<?x8xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @stream_expand_comb(%y: tensor<?x4xf32>, %x: tensor<?x16xf32>, %w: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.stream.expand' op weights must hold the coefficients from offset on}}
  %0 = cbc.stream.expand %y, %x, %w {count = 4 : i64, offset = 4 : i64, comb} : tensor<?x4xf32>, tensor<?x16xf32>, tensor<?x8xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @latent_attention_sinks(%q: tensor<?x16xf32>, %r: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  %s = cbc.weight.ref "s" {sources = [["s"]]} : tensor<3xf32>
  // expected-error @+1 {{'cbc.kv.latent_attention' op sinks must have one logit per head}}
  %o = cbc.kv.latent_attention %q, %r, %p, %p, %p, %p, %p, %bt sinks(%s) {layer = 0 : i64, num_heads = 2 : i64, latent_dim = 8 : i64, rope_dim = 4 : i64, scale = 0.5 : f64} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<3xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @rope_append_offset(%qkv: tensor<?x32xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.rope_append' op rotates the first features of a head: its schedule must have no rotary_offset}}
  %0 = cbc.kv.rope_append %qkv, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, rope = #cbc.rope<head_dim = 4, rotary_dim = 2, inv_freq = array<f32: 1.0>, rotary_offset = 2>} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @rope_offset(%x: tensor<?x8xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{rope rotary_offset must keep the rotated features inside the head}}
  %0 = cbc.math.rope %x, %p, %p, %p {rope = #cbc.rope<head_dim = 4, rotary_dim = 2, inv_freq = array<f32: 1.0>, rotary_offset = 3>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  return
}

// -----

// expected-error @+1 {{clamped_swiglu needs a positive finite limit and a finite alpha and up_offset}}
func.func private @clamp_offset() attributes {test.clamp = #cbc.clamped_swiglu<limit = 7.0, alpha = 1.702, up_offset = 0x7FF0000000000000>}

// -----

func.func @wkv_width(%k: tensor<?x8xf32>, %v: tensor<?x4xf32>, %p: tensor<?xi32>) {
  %d = cbc.weight.ref "d" {sources = [["d"]]} : tensor<8xf32>
  // expected-error @+1 {{'cbc.state.wkv' op k, v and result must have the same positive width}}
  %0 = cbc.state.wkv %k, %v, %d, %d, %p, %p, %p, %p {layer = 0 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @wkv_decay(%k: tensor<?x8xf32>, %p: tensor<?xi32>) {
  %d = cbc.weight.ref "d" {sources = [["d"]]} : tensor<4xf32>
  %u = cbc.weight.ref "u" {sources = [["u"]]} : tensor<8xf32>
  // expected-error @+1 {{'cbc.state.wkv' op time_decay and time_first must have one entry per channel}}
  %0 = cbc.state.wkv %k, %k, %d, %u, %p, %p, %p, %p {layer = 0 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @rg_lru_width(%x: tensor<?x8xf32>, %g: tensor<?x4xf32>, %p: tensor<?xi32>) {
  %a = cbc.weight.ref "a" {sources = [["a"]]} : tensor<8xf32>
  // expected-error @+1 {{'cbc.state.rg_lru' op x, the gates and result must have the same positive width}}
  %0 = cbc.state.rg_lru %x, %g, %x, %a, %p, %p, %p, %p {layer = 0 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x8xf32>, tensor<8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @rg_lru_param(%x: tensor<?x8xf32>, %p: tensor<?xi32>) {
  %a = cbc.weight.ref "a" {sources = [["a"]]} : tensor<4xf32>
  // expected-error @+1 {{'cbc.state.rg_lru' op recurrent_param must have one entry per channel}}
  %0 = cbc.state.rg_lru %x, %x, %x, %a, %p, %p, %p, %p {layer = 0 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @mlstm_dims(%q: tensor<?x8xf32>, %v: tensor<?x12xf32>, %g: tensor<?x2xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.mlstm' op num_heads, k_dim and v_dim must be positive}}
  %0 = cbc.state.mlstm %q, %q, %v, %g, %g, %p, %p, %p, %p {k_dim = 0 : i64, layer = 0 : i64, num_heads = 2 : i64, v_dim = 6 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x12xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x12xf32>
  return
}

// -----

func.func @mlstm_qk(%q: tensor<?x8xf32>, %v: tensor<?x12xf32>, %g: tensor<?x2xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.mlstm' op q and k must be [T, num_heads * k_dim]}}
  %0 = cbc.state.mlstm %q, %q, %v, %g, %g, %p, %p, %p, %p {k_dim = 3 : i64, layer = 0 : i64, num_heads = 2 : i64, v_dim = 6 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x12xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x12xf32>
  return
}

// -----

func.func @mlstm_v(%q: tensor<?x8xf32>, %v: tensor<?x12xf32>, %g: tensor<?x2xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.mlstm' op v and result must be [T, num_heads * v_dim]}}
  %0 = cbc.state.mlstm %q, %q, %v, %g, %g, %p, %p, %p, %p {k_dim = 4 : i64, layer = 0 : i64, num_heads = 2 : i64, v_dim = 5 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x12xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x12xf32>
  return
}

// -----

func.func @mlstm_gates(%q: tensor<?x8xf32>, %v: tensor<?x12xf32>, %g: tensor<?x2xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.mlstm' op input_gate and forget_gate must be [T, num_heads]}}
  %0 = cbc.state.mlstm %q, %q, %v, %v, %g, %p, %p, %p, %p {k_dim = 4 : i64, layer = 0 : i64, num_heads = 2 : i64, v_dim = 6 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x12xf32>, tensor<?x12xf32>, tensor<?x2xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x12xf32>
  return
}

// -----

func.func @stream_attend_count(%s: tensor<?x12xf32>, %q: tensor<4xf32>) {
  // expected-error @+1 {{'cbc.stream.attend' op sources must hold count rows of one width}}
  %y = cbc.stream.attend %s, %q {count = 5 : i64} : tensor<?x12xf32>, tensor<4xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @stream_attend_query(%s: tensor<?x12xf32>, %q: tensor<2x3xf32>) {
  // expected-error @+1 {{'cbc.stream.attend' op query must be [queries, width of a source] or [width of a source]}}
  %y = cbc.stream.attend %s, %q {count = 3 : i64} : tensor<?x12xf32>, tensor<2x3xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @stream_attend_result(%s: tensor<?x12xf32>, %q: tensor<2x4xf32>) {
  // expected-error @+1 {{'cbc.stream.attend' op result must hold one row per query}}
  %y = cbc.stream.attend %s, %q {count = 3 : i64} : tensor<?x12xf32>, tensor<2x4xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @stream_attend_eps(%s: tensor<?x12xf32>, %q: tensor<4xf32>) {
  // expected-error @+1 {{'cbc.stream.attend' op eps must be positive and finite}}
  %y = cbc.stream.attend %s, %q {count = 3 : i64, eps = 0.0 : f64} : tensor<?x12xf32>, tensor<4xf32> -> tensor<?x4xf32>
  return
}
// -----

func.func @pool_select_key_norm_width(%q: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %kn: tensor<3xf32>) {
  // expected-error @+1 {{'cbc.kv.pool_select' op key_norm must have head_dim entries and a positive eps}}
  %s = cbc.kv.pool_select %q, %p, %p, %p, %p, %p, %bt key_norm(%kn : tensor<3xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 4 : i64, pools = 2 : i64, pool = 2 : i64, key_scale = 1.0 : f64, weight_scale = 0.5 : f64, eps = 1.0e-6 : f64, blocks} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x3xi32>
  return
}

// -----

func.func @pool_select_key_norm_eps(%q: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %kn: tensor<4xf32>) {
  // expected-error @+1 {{'cbc.kv.pool_select' op key_norm must have head_dim entries and a positive eps}}
  %s = cbc.kv.pool_select %q, %p, %p, %p, %p, %p, %bt key_norm(%kn : tensor<4xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 4 : i64, pools = 2 : i64, pool = 2 : i64, key_scale = 1.0 : f64, weight_scale = 0.5 : f64, blocks} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x3xi32>
  return
}

// -----

func.func @pool_select_key_freqs(%q: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %kn: tensor<4xf32>) {
  // expected-error @+1 {{'cbc.kv.pool_select' op key_freqs must have at most head_dim / 2 entries}}
  %s = cbc.kv.pool_select %q, %p, %p, %p, %p, %p, %bt key_norm(%kn : tensor<4xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 4 : i64, pools = 2 : i64, pool = 2 : i64, key_scale = 1.0 : f64, weight_scale = 0.5 : f64, eps = 1.0e-6 : f64, key_freqs = array<f32: 1.0, 0.5, 0.25>, blocks} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x3xi32>
  return
}

// -----

func.func @pool_select_blocks_width(%q: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %kn: tensor<4xf32>) {
  // expected-error @+1 {{'cbc.kv.pool_select' op result width must be pools * pool + pool - 1 (with blocks: pools + 1)}}
  %s = cbc.kv.pool_select %q, %p, %p, %p, %p, %p, %bt key_norm(%kn : tensor<4xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 4 : i64, pools = 2 : i64, pool = 2 : i64, key_scale = 1.0 : f64, weight_scale = 0.5 : f64, eps = 1.0e-6 : f64, blocks} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x5xi32>
  return
}

// -----

func.func @conv_dilation_grouped(%x: tensor<?x8xf32>, %w: tensor<8x2x4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.conv1d' op dilation must be positive, and above 1 only on a depthwise conv without taps}}
  %0 = cbc.state.conv1d %x, %w, %i, %i, %i, %i {dilation = 2 : i64, layer = 0 : i64} : (tensor<?x8xf32>, tensor<8x2x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @conv_dilation_zero(%x: tensor<?x8xf32>, %w: tensor<8x1x4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.conv1d' op dilation must be positive, and above 1 only on a depthwise conv without taps}}
  %0 = cbc.state.conv1d %x, %w, %i, %i, %i, %i {dilation = 0 : i64, layer = 0 : i64} : (tensor<?x8xf32>, tensor<8x1x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @group_dot_widths(%a: tensor<?x8xf32>, %b: tensor<?x6xf32>) {
  // expected-error @+1 {{'cbc.math.group_dot' op a and b must have the same width, a positive multiple of groups}}
  %0 = cbc.math.group_dot %a, %b {groups = 2 : i64, scale = 1.0 : f64} : tensor<?x8xf32>, tensor<?x6xf32> -> tensor<?x2xf32>
  return
}

// -----

func.func @group_dot_result(%a: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.group_dot' op result width must be groups}}
  %0 = cbc.math.group_dot %a, %a {groups = 2 : i64, scale = 1.0 : f64} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @ngram_primes(%t: tensor<?xi32>, %table: tensor<32x2xf32>, %m: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.ngram_embed' op needs at least 2 multipliers and (n - 1) * heads_per_ngram primes}}
  %0 = cbc.state.ngram_embed %t, %table, %m, %m, %m, %m {layer = 0 : i64, eos = 2 : i64, heads_per_ngram = 1 : i64, multipliers = array<i64: 3, 5, 7>, primes = array<i64: 11>} : (tensor<?xi32>, tensor<32x2xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @ngram_table_rows(%t: tensor<?xi32>, %table: tensor<32x2xf32>, %m: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.ngram_embed' op table must be [rows, dim] with at least the primes' sum of rows}}
  %0 = cbc.state.ngram_embed %t, %table, %m, %m, %m, %m {layer = 0 : i64, eos = 2 : i64, heads_per_ngram = 1 : i64, multipliers = array<i64: 3, 5, 7>, primes = array<i64: 11, 23>} : (tensor<?xi32>, tensor<32x2xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @ngram_eos(%t: tensor<?xi32>, %table: tensor<32x2xf32>, %m: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.ngram_embed' op eos must be a token id below 2^24}}
  %0 = cbc.state.ngram_embed %t, %table, %m, %m, %m, %m {layer = 0 : i64, eos = 16777216 : i64, heads_per_ngram = 1 : i64, multipliers = array<i64: 3, 5, 7>, primes = array<i64: 11, 13>} : (tensor<?xi32>, tensor<32x2xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @ngram_result(%t: tensor<?xi32>, %table: tensor<32x2xf32>, %m: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.ngram_embed' op result width must be the number of primes times the table's width}}
  %0 = cbc.state.ngram_embed %t, %table, %m, %m, %m, %m {layer = 0 : i64, eos = 2 : i64, heads_per_ngram = 1 : i64, multipliers = array<i64: 3, 5, 7>, primes = array<i64: 11, 13>} : (tensor<?xi32>, tensor<32x2xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x6xf32>
  return
}


// -----

func.func @window_pool_rate(%x: tensor<?x8xf32>, %ape: tensor<4x4xf32>, %m: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.window_pool' op rate and dim must be positive}}
  %0 = cbc.state.window_pool %x, %m, %ape, %m, %m, %m, %m {layer = 0 : i64, rate = 0 : i64, dim = 4 : i64} : (tensor<?x8xf32>, tensor<?xi32>, tensor<4x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @window_pool_x(%x: tensor<?x8xf32>, %ape: tensor<4x8xf32>, %m: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.window_pool' op x width must be 2 * dim, or 4 * dim with overlap}}
  %0 = cbc.state.window_pool %x, %m, %ape, %m, %m, %m, %m {layer = 0 : i64, rate = 4 : i64, dim = 4 : i64, overlap} : (tensor<?x8xf32>, tensor<?xi32>, tensor<4x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @window_pool_ape(%x: tensor<?x8xf32>, %ape: tensor<3x4xf32>, %m: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.window_pool' op ape must be [rate, dim], or [rate, 2 * dim] with overlap}}
  %0 = cbc.state.window_pool %x, %m, %ape, %m, %m, %m, %m {layer = 0 : i64, rate = 4 : i64, dim = 4 : i64} : (tensor<?x8xf32>, tensor<?xi32>, tensor<3x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @window_pool_norm(%x: tensor<?x8xf32>, %ape: tensor<4x4xf32>, %n: tensor<3xf32>, %m: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.window_pool' op norm must have dim entries}}
  %0 = cbc.state.window_pool %x, %m, %ape norm(%n), %m, %m, %m, %m {layer = 0 : i64, rate = 4 : i64, dim = 4 : i64} : (tensor<?x8xf32>, tensor<?xi32>, tensor<4x4xf32>, tensor<3xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @window_pool_result(%x: tensor<?x8xf32>, %ape: tensor<4x4xf32>, %m: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.window_pool' op result width must be dim}}
  %0 = cbc.state.window_pool %x, %m, %ape, %m, %m, %m, %m {layer = 0 : i64, rate = 4 : i64, dim = 4 : i64} : (tensor<?x8xf32>, tensor<?xi32>, tensor<4x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @window_pool_rope(%x: tensor<?x8xf32>, %ape: tensor<4x4xf32>, %m: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.window_pool' op rope must be a plain schedule rotating one head of dim features at one position}}
  %0 = cbc.state.window_pool %x, %m, %ape, %m, %m, %m, %m {layer = 0 : i64, rate = 4 : i64, dim = 4 : i64, rope = #cbc.rope<head_dim = 8, rotary_dim = 2, inv_freq = array<f32: 1.0>>} : (tensor<?x8xf32>, tensor<?xi32>, tensor<4x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @latent_compressed_rows(%q: tensor<?x16xf32>, %r: tensor<?x0xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.latent_attention' op reads a window of tokens or all of them; compressed rows are its entries}}
  %o = cbc.kv.latent_attention %q, %r, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 2 : i64, latent_dim = 8 : i64, rope_dim = 0 : i64, scale = 0.5 : f64, retention = #cbc.retention<compressed, 4>} : tensor<?x16xf32>, tensor<?x0xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @latent_entries_layer(%q: tensor<?x16xf32>, %r: tensor<?x0xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.latent_attention' op entries need a positive entries_rate and an entries_layer together}}
  %o = cbc.kv.latent_attention %q, %r, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 2 : i64, latent_dim = 8 : i64, rope_dim = 0 : i64, scale = 0.5 : f64, entries_rate = 4 : i64} : tensor<?x16xf32>, tensor<?x0xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @latent_entry_selection(%q: tensor<?x16xf32>, %r: tensor<?x0xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %s: tensor<?x2xi32>) {
  // expected-error @+1 {{'cbc.kv.latent_attention' op an entry selection needs entries}}
  %o = cbc.kv.latent_attention %q, %r, %p, %p, %p, %p, %p, %bt entries(%s) {layer = 0 : i64, num_heads = 2 : i64, latent_dim = 8 : i64, rope_dim = 0 : i64, scale = 0.5 : f64} : tensor<?x16xf32>, tensor<?x0xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<?x2xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @latent_entry_selection_width(%q: tensor<?x16xf32>, %r: tensor<?x0xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %s: tensor<?x0xi32>) {
  // expected-error @+1 {{'cbc.kv.latent_attention' op an entry selection must list at least one entry per query}}
  %o = cbc.kv.latent_attention %q, %r, %p, %p, %p, %p, %p, %bt entries(%s) {layer = 0 : i64, num_heads = 2 : i64, latent_dim = 8 : i64, rope_dim = 0 : i64, scale = 0.5 : f64, entries_rate = 4 : i64, entries_layer = 3 : i64} : tensor<?x16xf32>, tensor<?x0xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<?x0xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @index_append_window(%ik: tensor<?x6xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.index_append' op index keys are kept for every token or per compressed window}}
  cbc.kv.index_append %ik, %p, %p, %p, %bt {layer = 1 : i64, head_dim = 6 : i64, retention = #cbc.retention<window, 8>} : tensor<?x6xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  return
}

// -----

func.func @index_select_window(%iq: tensor<?x12xf32>, %iw: tensor<?x2xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.index_select' op index keys are kept for every token or per compressed window}}
  %o = cbc.kv.index_select %iq, %iw, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 2 : i64, head_dim = 6 : i64, topk = 3 : i64, key_scale = 0.5 : f64, weight_scale = 0.7 : f64, retention = #cbc.retention<chunk, 8>} : tensor<?x12xf32>, tensor<?x2xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x3xi32>
  return
}

// -----

func.func @route_table_shape(%l: tensor<?x4xf32>, %t: tensor<?xi32>, %table: tensor<16x3xf32>) {
  // expected-error @+1 {{'cbc.moe.route' op routing table must be [vocab, k]}}
  %w, %ids = cbc.moe.route %l table(%t, %table : tensor<?xi32>, tensor<16x3xf32>) {k = 2 : i64, score = #cbc.score<sqrt_softplus>} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return
}

// -----

func.func @route_table_bias(%l: tensor<?x4xf32>, %b: tensor<4xf32>, %t: tensor<?xi32>, %table: tensor<16x2xf32>) {
  // expected-error @+1 {{'cbc.moe.route' op a routing table takes no selection bias, groups or sinks, and needs per-expert scores}}
  %w, %ids = cbc.moe.route %l bias(%b : tensor<4xf32>) table(%t, %table : tensor<?xi32>, tensor<16x2xf32>) {k = 2 : i64, score = #cbc.score<sqrt_softplus>} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return
}

// -----

func.func @route_table_tokens(%l: tensor<?x4xf32>, %table: tensor<16x2xf32>) {
  // expected-error @+1 {{'cbc.moe.route' op a routing table needs the tokens, and the tokens a table}}
  %w, %ids = "cbc.moe.route"(%l, %table) {k = 2 : i64, score = #cbc.score<sqrt_softplus>, operandSegmentSizes = array<i32: 1, 0, 0, 1>} : (tensor<?x4xf32>, tensor<16x2xf32>) -> (tensor<?x2xf32>, tensor<?x2xi32>)
  return
}
