// RUN: cbc-opt %s | cbc-opt | FileCheck %s
// RUN: cbc-opt %s --mlir-print-op-generic | cbc-opt | FileCheck %s

// Every op of the cbc dialect, parsed, printed and parsed again. The second RUN line goes
// through the generic form, so the custom printers and parsers must agree with it.

// CHECK-LABEL: func.func @weights
func.func @weights() -> (tensor<8x4xbf16>, tensor<2x6x4xbf16>, tensor<1x4x6xf32>) {
  // CHECK: %{{[a-z0-9_#]+}} = cbc.weight.ref "w" {sources = {{\[\[}}"a.weight", "b.weight"]]} : tensor<8x4xbf16>
  %0 = cbc.weight.ref "w" {sources = [["a.weight", "b.weight"]]} : tensor<8x4xbf16>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.weight.ref "experts" {combine = #cbc.combine<stack>, sources = {{\[\[}}"e0.w1", "e0.w3"], ["e1.w1", "e1.w3"]]} : tensor<2x6x4xbf16>
  %1 = cbc.weight.ref "experts" {combine = #cbc.combine<stack>, sources = [["e0.w1", "e0.w3"], ["e1.w1", "e1.w3"]]} : tensor<2x6x4xbf16>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.weight.ref "fused" {sources = {{\[\[}}"fused.proj"]], transpose} : tensor<1x4x6xf32>
  %2 = cbc.weight.ref "fused" {combine = #cbc.combine<none>, sources = [["fused.proj"]], transpose} : tensor<1x4x6xf32>
  // MXFP4: each part names its blocks and its scales.
  // CHECK: %{{[a-z0-9_#]+}} = cbc.weight.ref "mx" {dequant = #cbc.dequant<mxfp4>, sources = {{\[\[}}"e.gate_up_proj_blocks", "e.gate_up_proj_scales"]], transpose} : tensor<2x64x8xbf16>
  %3 = cbc.weight.ref "mx" {dequant = #cbc.dequant<mxfp4>, sources = [["e.gate_up_proj_blocks", "e.gate_up_proj_scales"]], transpose} : tensor<2x64x8xbf16>
  return %0, %1, %2 : tensor<8x4xbf16>, tensor<2x6x4xbf16>, tensor<1x4x6xf32>
}

// Weights with their storage format, as the front end declares them, and a weight held wider
// than it was declared.
// CHECK-LABEL: func.func @weight_formats
func.func @weight_formats() {
  // CHECK: cbc.weight.ref "mxq" {sources = {{\[\[}}"e.blocks", "e.scales"]], transpose} : tensor<2x8x64xbf16, #cbc.quant<mxfp4, block = [1, 32], scale = f8E8M0FNU>>
  %0 = cbc.weight.ref "mxq" {sources = [["e.blocks", "e.scales"]], transpose} : tensor<2x8x64xbf16, #cbc.quant<mxfp4, block = [1, 32], scale = f8E8M0FNU>>
  // CHECK: cbc.weight.ref "fp8" {sources = {{\[\[}}"q", "k"]]} : tensor<12x4xf32, #cbc.quant<fp8_e4m3, block = [128, 128], scale = f32>>
  %1 = cbc.weight.ref "fp8" {sources = [["q", "k"]]} : tensor<12x4xf32, #cbc.quant<fp8_e4m3, block = [128, 128], scale = f32>>
  // CHECK: cbc.weight.ref "bias" {declared = bf16, sources = {{\[\[}}"b"]]} : tensor<4xf32>
  %2 = cbc.weight.ref "bias" {declared = bf16, sources = [["b"]]} : tensor<4xf32>
  return
}

// Elementwise ops whose operands and result have different device types print a functional type.
// CHECK-LABEL: func.func @device_types
func.func @device_types(%x: tensor<?x8xbf16>, %y: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // CHECK: cbc.math.add %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} : (tensor<?x8xbf16>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %a = cbc.math.add %x, %y : (tensor<?x8xbf16>, tensor<?x8xf32>) -> tensor<?x8xf32>
  // CHECK: cbc.math.add %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} : tensor<?x8xbf16>{{$}}
  %b = cbc.math.add %x, %x : (tensor<?x8xbf16>, tensor<?x8xbf16>) -> tensor<?x8xbf16>
  // CHECK: cbc.math.act %{{[a-z0-9_#]+}} {act = #cbc.act<none>, scale = 2.000000e+00 : f64} : (tensor<?x8xbf16>) -> tensor<?x8xf32>
  %c = cbc.math.act %b {act = #cbc.act<none>, scale = 2.0 : f64} : (tensor<?x8xbf16>) -> tensor<?x8xf32>
  // CHECK: cbc.math.softcap %{{[a-z0-9_#]+}} {cap = 3.000000e+01 : f64} : (tensor<?x8xf32>) -> tensor<?x8xbf16>
  %d = cbc.math.softcap %c {cap = 30.0 : f64} : (tensor<?x8xf32>) -> tensor<?x8xbf16>
  // CHECK: cbc.math.clamp %{{[a-z0-9_#]+}} {limit = 8.000000e+00 : f64} : (tensor<?x8xbf16>) -> tensor<?x8xf32>
  %e = cbc.math.clamp %d {limit = 8.0 : f64} : (tensor<?x8xbf16>) -> tensor<?x8xf32>
  // CHECK: cbc.math.act_quant %{{[a-z0-9_#]+}} : tensor<?x8xf32>
  %aq = cbc.math.act_quant %e : tensor<?x8xf32>
  %lq = cbc.weight.ref "lambda_q1" {sources = [["a.lambda_q1"]]} : tensor<2xbf16>
  // CHECK: cbc.math.diff_heads %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {lambda_init = 2.000000e-01 : f64} : tensor<?x8xf32>, tensor<2xbf16>, tensor<2xbf16>, tensor<2xbf16>, tensor<2xbf16> -> tensor<?x4xf32>
  %dh = cbc.math.diff_heads %aq, %lq, %lq, %lq, %lq {lambda_init = 0.2 : f64} : tensor<?x8xf32>, tensor<2xbf16>, tensor<2xbf16>, tensor<2xbf16>, tensor<2xbf16> -> tensor<?x4xf32>
  %z0 = cbc.weight.ref "z0" {sources = [["a.z0"]]} : tensor<8xbf16>
  // CHECK: cbc.math.add %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} : (tensor<?x8xf32>, tensor<8xbf16>) -> tensor<?x8xf32>
  %az = cbc.math.add %aq, %z0 : (tensor<?x8xf32>, tensor<8xbf16>) -> tensor<?x8xf32>
  // CHECK: cbc.math.add %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} : (tensor<?x8xf32>, tensor<2xbf16>) -> tensor<?x8xf32>
  %hb = cbc.weight.ref "hb" {sources = [["hb"]]} : tensor<2xbf16>
  %ah = cbc.math.add %az, %hb : (tensor<?x8xf32>, tensor<2xbf16>) -> tensor<?x8xf32>
  %ap = cbc.weight.ref "alpha_p" {sources = [["a.alpha_p"]]} : tensor<1xbf16>
  %an = cbc.weight.ref "alpha_n" {sources = [["a.alpha_n"]]} : tensor<1xbf16>
  %be = cbc.weight.ref "beta" {sources = [["a.beta"]]} : tensor<1xbf16>
  %ep = cbc.weight.ref "eps" {sources = [["a.eps"]]} : tensor<1xbf16>
  // CHECK: cbc.math.xielu %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} : tensor<?x8xf32>, tensor<1xbf16>, tensor<1xbf16>, tensor<1xbf16>, tensor<1xbf16> -> tensor<?x8xf32>
  %f = cbc.math.xielu %e, %ap, %an, %be, %ep : tensor<?x8xf32>, tensor<1xbf16>, tensor<1xbf16>, tensor<1xbf16>, tensor<1xbf16> -> tensor<?x8xf32>
  // CHECK: cbc.math.act %{{[a-z0-9_#]+}} {act = #cbc.act<softplus>} : tensor<?x8xf32>
  %g = cbc.math.act %f {act = #cbc.act<softplus>} : tensor<?x8xf32>
  return %a : tensor<?x8xf32>
}

// CHECK-LABEL: func.func @dense
func.func @dense(%tok: tensor<?xi32>, %table: tensor<16x8xbf16>, %w: tensor<12x8xbf16>,
                 %b: tensor<12xbf16>, %nw: tensor<8xbf16>, %hw: tensor<4xbf16>) -> tensor<?x8xf32> {
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.embed %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} : tensor<?xi32>, tensor<16x8xbf16> -> tensor<?x8xf32>
  %e = cbc.math.embed %tok, %table : tensor<?xi32>, tensor<16x8xbf16> -> tensor<?x8xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.embed %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {scale = 4.800000e+01 : f64} : tensor<?xi32>, tensor<16x8xbf16> -> tensor<?x8xf32>
  %es = cbc.math.embed %tok, %table {scale = 48.0 : f64} : tensor<?xi32>, tensor<16x8xbf16> -> tensor<?x8xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.embed %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {offset = 2 : i64} : tensor<?xi32>, tensor<16x8xbf16> -> tensor<?x8xf32>
  %ep = cbc.math.embed %tok, %table {offset = 2 : i64} : tensor<?xi32>, tensor<16x8xbf16> -> tensor<?x8xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.linear %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} : tensor<?x8xf32>, tensor<12x8xbf16> -> tensor<?x12xf32>
  %l = cbc.math.linear %e, %w : tensor<?x8xf32>, tensor<12x8xbf16> -> tensor<?x12xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.linear %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} : tensor<?x8xf32>, tensor<12x8xbf16>, tensor<12xbf16> -> tensor<?x12xf32>
  %lb = cbc.math.linear %e, %w, %b : tensor<?x8xf32>, tensor<12x8xbf16>, tensor<12xbf16> -> tensor<?x12xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.rms_norm %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {eps = 9.9999999999999995E-7 : f64} : tensor<?x8xf32>, tensor<8xbf16> -> tensor<?x8xf32>
  %n = cbc.math.rms_norm %es, %nw {eps = 1.0e-6 : f64} : tensor<?x8xf32>, tensor<8xbf16> -> tensor<?x8xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.rms_norm %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {eps = 9.9999999999999995E-7 : f64, group = 4 : i64, offset = 1.000000e+00 : f64} : tensor<?x8xf32>, tensor<4xbf16> -> tensor<?x8xf32>
  %g = cbc.math.rms_norm %n, %hw {eps = 1.0e-6 : f64, group = 4 : i64, offset = 1.0 : f64} : tensor<?x8xf32>, tensor<4xbf16> -> tensor<?x8xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.rms_norm %{{[a-z0-9_#]+}} {eps = 1.000000e-05 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
  %u = cbc.math.rms_norm %g {eps = 1.0e-5 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.add %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} : tensor<?x8xf32>
  %a = cbc.math.add %e, %u : tensor<?x8xf32>
  // CHECK: %{{[a-z0-9_#]+}}:3 = cbc.math.split %{{[a-z0-9_#]+}} : tensor<?x12xf32> -> tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  %s:3 = cbc.math.split %lb : tensor<?x12xf32> -> tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.glu %{{[a-z0-9_#]+}} {act = #cbc.act<silu>} : tensor<?x8xf32> -> tensor<?x4xf32>
  %h = cbc.math.glu %a {act = #cbc.act<silu>} : tensor<?x8xf32> -> tensor<?x4xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.glu %{{[a-z0-9_#]+}} {act = #cbc.act<gelu_tanh>, layout = #cbc.glu_layout<interleaved>} : tensor<?x8xf32> -> tensor<?x4xf32>
  %h2 = cbc.math.glu %a {act = #cbc.act<gelu_tanh>, layout = #cbc.glu_layout<interleaved>} : tensor<?x8xf32> -> tensor<?x4xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.glu %{{[a-z0-9_#]+}} {act = #cbc.act<gelu>} : tensor<?x8xf32> -> tensor<?x4xf32>
  %h3 = cbc.math.glu %a {act = #cbc.act<gelu>, layout = #cbc.glu_layout<halves>} : tensor<?x8xf32> -> tensor<?x4xf32>
  // The clamped unit carries its limit and alpha.
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.glu %{{[a-z0-9_#]+}} {act = #cbc.clamped_swiglu<limit = 7.000000e+00, alpha = 1.702000e+00>, layout = #cbc.glu_layout<interleaved>} : tensor<?x8xf32> -> tensor<?x4xf32>
  %h4 = cbc.math.glu %a {act = #cbc.clamped_swiglu<limit = 7.0, alpha = 1.702>, layout = #cbc.glu_layout<interleaved>} : tensor<?x8xf32> -> tensor<?x4xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.softcap %{{[a-z0-9_#]+}} {cap = 3.000000e+01 : f64} : tensor<?x8xf32>
  %c = cbc.math.softcap %a {cap = 30.0 : f64} : tensor<?x8xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.gate %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  %gt = cbc.math.gate %c, %c : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  // CHECK: %{{[a-z0-9_#]+}}:2 = cbc.math.split %{{[a-z0-9_#]+}} : tensor<?x8xf32> -> tensor<?x1xf32>, tensor<?x7xf32>
  %g1:2 = cbc.math.split %a : tensor<?x8xf32> -> tensor<?x1xf32>, tensor<?x7xf32>
  // CHECK: %{{[a-z0-9_#]+}}:2 = cbc.math.split %{{[a-z0-9_#]+}} : tensor<?x8xf32> -> tensor<?x2xf32>, tensor<?x6xf32>
  %lb2:2 = cbc.math.split %a : tensor<?x8xf32> -> tensor<?x2xf32>, tensor<?x6xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.gate %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} : tensor<?x8xf32>, tensor<?x1xf32> -> tensor<?x8xf32>
  %gt1 = cbc.math.gate %gt, %g1#0 : tensor<?x8xf32>, tensor<?x1xf32> -> tensor<?x8xf32>
  // One gate per head: 2 gates over 8 columns, each scaling 4.
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.gate %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} : tensor<?x8xf32>, tensor<?x2xf32> -> tensor<?x8xf32>
  %gh = cbc.math.gate %gt1, %lb2#0 : tensor<?x8xf32>, tensor<?x2xf32> -> tensor<?x8xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.mul %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} : tensor<?x8xf32>, tensor<?x1xf32> -> tensor<?x8xf32>
  %m1 = cbc.math.mul %gh, %g1#0 : tensor<?x8xf32>, tensor<?x1xf32> -> tensor<?x8xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.mul %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  %m = cbc.math.mul %m1, %c : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  return %m : tensor<?x8xf32>
}

// The k-pooled indexer: the 2 best pools of 2 positions and the query's open pool.
// CHECK-LABEL: func.func @pool_select
func.func @pool_select(%q: tensor<?x8xf32>, %w: tensor<?x2xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %ape: tensor<2x4xbf16>) -> tensor<?x5xi32> {
  // CHECK: %{{[a-z0-9_#]+}} = cbc.kv.pool_select %{{[a-z0-9_#]+}} weights(%{{[a-z0-9_#]+}} : tensor<?x2xf32>), %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} ape(%{{[a-z0-9_#]+}} : tensor<2x4xbf16>) {head_dim = 4 : i64, key_scale = 5.000000e-01 : f64, layer = 0 : i64, num_heads = 2 : i64, pool = 2 : i64, pools = 2 : i64, weight_scale = 0.69999999999999996 : f64} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x5xi32>
  %s = cbc.kv.pool_select %q weights(%w : tensor<?x2xf32>), %p, %p, %p, %p, %p, %bt ape(%ape : tensor<2x4xbf16>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 4 : i64, pools = 2 : i64, pool = 2 : i64, key_scale = 0.5 : f64, weight_scale = 0.7 : f64} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x5xi32>
  return %s : tensor<?x5xi32>
}

// QSA's block selection: mean-pooled keys, normed and rotated, no head weights; pool indices out
// (the 2 best blocks and the query's open one).
// CHECK-LABEL: func.func @pool_select_blocks
func.func @pool_select_blocks(%q: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %kn: tensor<4xbf16>) -> tensor<?x3xi32> {
  // CHECK: cbc.kv.pool_select %{{[a-z0-9_#]+}}, %{{.*}} key_norm(%{{[a-z0-9_#]+}} : tensor<4xbf16>) {blocks, eps = 9.9999999999999995E-7 : f64, head_dim = 4 : i64, key_freqs = array<f32: 1.000000e+00>, key_scale = 1.000000e+00 : f64, layer = 0 : i64, norm_offset = 1.000000e+00 : f64, num_heads = 2 : i64, pool = 2 : i64, pools = 2 : i64, weight_scale = 5.000000e-01 : f64} : {{.*}} -> tensor<?x3xi32>
  %s = cbc.kv.pool_select %q, %p, %p, %p, %p, %p, %bt key_norm(%kn : tensor<4xbf16>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 4 : i64, pools = 2 : i64, pool = 2 : i64, key_scale = 1.0 : f64, weight_scale = 0.5 : f64, eps = 1.0e-6 : f64, norm_offset = 1.0 : f64, key_freqs = array<f32: 1.0>, blocks} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x3xi32>
  return %s : tensor<?x3xi32>
}

// Gated residual streams and hashed n-gram embeddings: per-stream norms with the row's weights,
// the streams' mean, a gate per stream from a signed square root of a dot, a dilated conv.
// CHECK-LABEL: func.func @gated_streams
func.func @gated_streams(%h: tensor<?x8xf32>, %w: tensor<8xbf16>, %tok: tensor<?xi32>, %table: tensor<32x2xbf16>,
                         %cw: tensor<8x1x3xbf16>, %m: tensor<?xi32>) -> (tensor<?x4xf32>, tensor<?x2xf32>, tensor<?x8xf32>, tensor<?x4xf32>) {
  // CHECK: cbc.math.rms_norm %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {eps = 9.9999999999999995E-7 : f64, group = 4 : i64, offset = 1.000000e+00 : f64} : tensor<?x8xf32>, tensor<8xbf16> -> tensor<?x8xf32>
  %u = cbc.math.rms_norm %h, %w {eps = 1.0e-6 : f64, offset = 1.0 : f64, group = 4 : i64} : tensor<?x8xf32>, tensor<8xbf16> -> tensor<?x8xf32>
  // CHECK: cbc.stream.collapse %{{[a-z0-9_#]+}} {count = 2 : i64} : tensor<?x8xf32> -> tensor<?x4xf32>
  %x = cbc.stream.collapse %u {count = 2 : i64} : tensor<?x8xf32> -> tensor<?x4xf32>
  // CHECK: cbc.math.group_dot %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {act = #cbc.act<signed_sqrt>, groups = 2 : i64, scale = 5.000000e-01 : f64} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x2xf32>
  %g = cbc.math.group_dot %u, %h {groups = 2 : i64, scale = 0.5 : f64, act = #cbc.act<signed_sqrt>} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x2xf32>
  // CHECK: cbc.state.conv1d %{{.*}} {act = #cbc.act<silu>, dilation = 3 : i64, layer = 0 : i64, state = "ple_conv"}
  %c = cbc.state.conv1d %u, %cw, %m, %m, %m, %m {layer = 0 : i64, act = #cbc.act<silu>, dilation = 3 : i64, state = "ple_conv"} : (tensor<?x8xf32>, tensor<8x1x3xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  // CHECK: cbc.state.ngram_embed %{{.*}} {eos = 2 : i64, heads_per_ngram = 1 : i64, layer = 0 : i64, multipliers = array<i64: 3, 5, 7>, primes = array<i64: 11, 13>}
  %e = cbc.state.ngram_embed %tok, %table, %m, %m, %m, %m {layer = 0 : i64, eos = 2 : i64, heads_per_ngram = 1 : i64, multipliers = array<i64: 3, 5, 7>, primes = array<i64: 11, 13>} : (tensor<?xi32>, tensor<32x2xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4xf32>
  return %x, %g, %c, %e : tensor<?x4xf32>, tensor<?x2xf32>, tensor<?x8xf32>, tensor<?x4xf32>
}

// LeRoPE's learned per-frequency log-scales and Mistral Large 4's per-head log-position factor.
// CHECK-LABEL: func.func @learned_position_scales
func.func @learned_position_scales(%x: tensor<?x8xf32>, %pos: tensor<?xi32>, %seq: tensor<?xi32>, %plen: tensor<?xi32>,
                                   %alpha: tensor<2xf32>, %s: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<?x8xf32> {
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.rope %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} freq_log_scale %{{[a-z0-9_#]+}} : tensor<2xf32> {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.000000e+00, 0.00999999977>>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  %r = cbc.math.rope %x, %pos, %seq, %plen freq_log_scale %alpha : tensor<2xf32> {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.head_position_scale %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} : tensor<?x8xf32>, tensor<?xi32>, tensor<2xf32>, tensor<2xf32> -> tensor<?x8xf32>
  %y = cbc.math.head_position_scale %r, %pos, %s, %b : tensor<?x8xf32>, tensor<?xi32>, tensor<2xf32>, tensor<2xf32> -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// CHECK-LABEL: func.func @rope
func.func @rope(%x: tensor<?x8xf32>, %pos: tensor<?xi32>, %seq: tensor<?xi32>, %plen: tensor<?xi32>) -> tensor<?x8xf32> {
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.rope %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.000000e+00, 0.00999999977>>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  %0 = cbc.math.rope %x, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  // Partial rotary, interleaved pairs and the longrope frequencies.
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.rope %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {rope = #cbc.rope<head_dim = 4, rotary_dim = 2, pairing = interleaved, inv_freq = array<f32: 5.000000e-01>, attention_factor = 1.190000e+00, inv_freq_long = array<f32: 2.500000e-01>, long_after = 4096>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  %1 = cbc.math.rope %0, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 2, pairing = interleaved, inv_freq = array<f32: 0.5>, attention_factor = 1.19, inv_freq_long = array<f32: 0.25>, long_after = 4096>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  // Dynamic NTK.
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.rope %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.000000e+00, 0.00999999977>, dynamic_base = 1.000000e+04, dynamic_factor = 2.000000e+00, dynamic_max_positions = 2048>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  %2 = cbc.math.rope %1, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>, dynamic_base = 10000.0, dynamic_factor = 2.0, dynamic_max_positions = 2048>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  return %2 : tensor<?x8xf32>
}

// CHECK-LABEL: func.func @cache
func.func @cache(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %v: tensor<?x8xf32>,
                 %pos: tensor<?xi32>, %seq: tensor<?xi32>, %cu: tensor<?xi32>, %kvl: tensor<?xi32>,
                 %bt: tensor<?x?x?xi32>, %sinks: tensor<4xbf16>) -> tensor<?x16xf32> {
  // CHECK: cbc.kv.append %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {head_dim = 4 : i64, layer = 0 : i64, num_kv_heads = 2 : i64} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  cbc.kv.append %k, %v, %pos, %seq, %seq, %bt {layer = 0 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  // CHECK: cbc.kv.append %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {group = 1 : i64, head_dim = 4 : i64, layer = 1 : i64, num_kv_heads = 2 : i64, retention = #cbc.retention<window, 4096>} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  cbc.kv.append %k, %v, %pos, %seq, %seq, %bt {layer = 1 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, retention = #cbc.retention<window, 4096>, group = 1 : i64} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  // CHECK: cbc.kv.append %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {head_dim = 4 : i64, layer = 2 : i64, num_kv_heads = 2 : i64, retention = #cbc.retention<chunk, 8192>} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  cbc.kv.append %k, %v, %pos, %seq, %seq, %bt {layer = 2 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, retention = #cbc.retention<chunk, 8192>} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.kv.attention %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {head_dim = 4 : i64, layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 5.000000e-01 : f64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  %o = cbc.kv.attention %q, %pos, %seq, %cu, %kvl, %seq, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  // CHECK: cbc.kv.attention {{.*}}{alibi_slopes = array<f32: 5.000000e-01, 2.500000e-01, 1.250000e-01, 6.250000e-02>, head_dim = 4 : i64
  %oa = cbc.kv.attention %q, %pos, %seq, %cu, %kvl, %seq, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64, alibi_slopes = array<f32: 0.5, 0.25, 0.125, 0.0625>} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  // Key ends: an image's rows see each other.
  // CHECK: cbc.kv.attention {{.*}} key_ends(%{{[a-z0-9_#]+}}) {{.*}} -> tensor<?x16xf32>
  %ok = cbc.kv.attention %q, %pos, %seq, %cu, %kvl, %seq, %bt key_ends(%pos) {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<?xi32> -> tensor<?x16xf32>
  // Sinks are an optional trailing operand.
  // CHECK: %{{[a-z0-9_#]+}} = cbc.kv.attention %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {group = 1 : i64, head_dim = 4 : i64, layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, retention = #cbc.retention<window, 4096>, scale = 5.000000e-01 : f64, softcap = 5.000000e+01 : f64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<4xbf16> -> tensor<?x16xf32>
  %o1 = cbc.kv.attention %o, %pos, %seq, %cu, %kvl, %seq, %bt, %sinks {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64, retention = #cbc.retention<window, 4096>, softcap = 50.0 : f64, group = 1 : i64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<4xbf16> -> tensor<?x16xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.kv.attention %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {head_dim = 4 : i64, layer = 2 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, retention = #cbc.retention<chunk, 8192>, scale = 5.000000e-01 : f64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  %o2 = cbc.kv.attention %o1, %pos, %seq, %cu, %kvl, %seq, %bt {layer = 2 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64, retention = #cbc.retention<chunk, 8192>} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  return %o2 : tensor<?x16xf32>
}

// CHECK-LABEL: func.func @latent
func.func @latent(%lat: tensor<?x8xf32>, %kr: tensor<?x4xf32>, %qn: tensor<?x12xf32>, %qr: tensor<?x8xf32>,
                  %pos: tensor<?xi32>, %seq: tensor<?xi32>, %bt: tensor<?x?x?xi32>,
                  %kvb: tensor<20x8xbf16>) -> tensor<?x8xf32> {
  // CHECK: cbc.kv.append %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {head_dim = 8 : i64, latent, layer = 0 : i64, num_kv_heads = 1 : i64} : tensor<?x8xf32>, tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  cbc.kv.append %lat, %kr, %pos, %seq, %seq, %bt {layer = 0 : i64, num_kv_heads = 1 : i64, head_dim = 8 : i64, latent} : tensor<?x8xf32>, tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.head_linear %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {heads = 2 : i64, offset = 0 : i64, rows = 6 : i64, transpose} : tensor<?x12xf32>, tensor<20x8xbf16> -> tensor<?x16xf32>
  %ql = cbc.math.head_linear %qn, %kvb {heads = 2 : i64, offset = 0 : i64, rows = 6 : i64, transpose} : tensor<?x12xf32>, tensor<20x8xbf16> -> tensor<?x16xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.position_scale %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {beta = 1.000000e-01 : f64, offset = 1 : i64, period = 8192 : i64} : tensor<?x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
  %qs = cbc.math.position_scale %ql, %pos {beta = 0.1 : f64, period = 8192 : i64, offset = 1 : i64} : tensor<?x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.kv.latent_attention %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {latent_dim = 8 : i64, layer = 0 : i64, num_heads = 2 : i64, rope_dim = 4 : i64, scale = 2.500000e-01 : f64} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  %o = cbc.kv.latent_attention %qs, %qr, %pos, %seq, %seq, %seq, %seq, %bt {layer = 0 : i64, num_heads = 2 : i64, latent_dim = 8 : i64, rope_dim = 4 : i64, scale = 0.25 : f64} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.head_linear %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {heads = 2 : i64, offset = 6 : i64, rows = 4 : i64} : tensor<?x16xf32>, tensor<20x8xbf16> -> tensor<?x8xf32>
  %v = cbc.math.head_linear %o, %kvb {heads = 2 : i64, offset = 6 : i64, rows = 4 : i64} : tensor<?x16xf32>, tensor<20x8xbf16> -> tensor<?x8xf32>
  return %v : tensor<?x8xf32>
}

// CHECK-LABEL: func.func @sinusoidal
func.func @sinusoidal(%pos: tensor<?xi32>) -> tensor<?x9xf32> {
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.sinusoidal_position %{{[a-z0-9_#]+}} {offset = 2 : i64, padding_row = 1 : i64} : tensor<?xi32> -> tensor<?x64xf32>
  %a = cbc.math.sinusoidal_position %pos {offset = 2 : i64, padding_row = 1 : i64} : tensor<?xi32> -> tensor<?x64xf32>
  // CHECK: cbc.math.sinusoidal_position %{{[a-z0-9_#]+}} {form = #cbc.sinusoid_form<power>} : tensor<?xi32> -> tensor<?x64xf32>
  %ap = cbc.math.sinusoidal_position %pos {form = #cbc.sinusoid_form<power>} : tensor<?xi32> -> tensor<?x64xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.sinusoidal_position %{{[a-z0-9_#]+}} {base = 5.000000e+02 : f64} : tensor<?xi32> -> tensor<?x9xf32>
  %b = cbc.math.sinusoidal_position %pos {base = 500.0 : f64} : tensor<?xi32> -> tensor<?x9xf32>
  return %b : tensor<?x9xf32>
}

// CHECK-LABEL: func.func @altup_rows
func.func @altup_rows(%x: tensor<?x8xf32>, %r: tensor<?x4xf32>, %tok: tensor<?xi32>, %t: tensor<6x8xbf16>) -> tensor<?x8xf32> {
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.match_rms %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} : tensor<?x8xf32>, tensor<?x4xf32> -> tensor<?x8xf32>
  %m = cbc.math.match_rms %x, %r : tensor<?x8xf32>, tensor<?x4xf32> -> tensor<?x8xf32>
  // CHECK: cbc.math.match_rms %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {floor = 1.000000e-03 : f64}
  %f = cbc.math.match_rms %m, %x {floor = 1.0e-3 : f64} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.gaussian_topk %{{[a-z0-9_#]+}} {multiplier = 1.6484375 : f64} : tensor<?x8xf32>
  %g = cbc.math.gaussian_topk %f {multiplier = 1.6484375 : f64} : tensor<?x8xf32>
  // CHECK: cbc.math.embed %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {oov_row = 0 : i64} : tensor<?xi32>, tensor<6x8xbf16> -> tensor<?x8xf32>
  %e = cbc.math.embed %tok, %t {oov_row = 0 : i64} : tensor<?xi32>, tensor<6x8xbf16> -> tensor<?x8xf32>
  %o = cbc.math.add %g, %e : tensor<?x8xf32>
  return %o : tensor<?x8xf32>
}

// CHECK-LABEL: func.func @key_bias
func.func @key_bias(%q: tensor<?x8xf32>, %b: tensor<?x2xf32>) -> tensor<?x24xf32> {
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.act %{{[a-z0-9_#]+}} {act = #cbc.act<exp>} : tensor<?x2xf32>
  %e = cbc.math.act %b {act = #cbc.act<exp>} : tensor<?x2xf32>
  // CHECK: cbc.math.head_pad %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {heads = 2 : i64, width = 8 : i64} : tensor<?x8xf32>, tensor<?x2xf32> -> tensor<?x24xf32>
  %k = cbc.math.head_pad %q, %e {heads = 2 : i64, width = 8 : i64} : tensor<?x8xf32>, tensor<?x2xf32> -> tensor<?x24xf32>
  // CHECK: cbc.math.head_pad %{{[a-z0-9_#]+}} {heads = 2 : i64, value = 4.000000e+00 : f64, width = 8 : i64} : tensor<?x8xf32> -> tensor<?x24xf32>
  %p = cbc.math.head_pad %q {heads = 2 : i64, width = 8 : i64, value = 4.0 : f64} : tensor<?x8xf32> -> tensor<?x24xf32>
  %o = cbc.math.add %k, %p : tensor<?x24xf32>
  return %o : tensor<?x24xf32>
}

// CHECK-LABEL: func.func @indexed
func.func @indexed(%k: tensor<?x6xf32>, %w6: tensor<6xbf16>, %w3: tensor<3xbf16>, %iq: tensor<?x12xf32>, %iw: tensor<?x2xf32>,
                   %ql: tensor<?x16xf32>, %qr: tensor<?x8xf32>, %pos: tensor<?xi32>, %bt: tensor<?x?x?xi32>) -> tensor<?x16xf32> {
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.layer_norm %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {eps = 9.9999999999999995E-7 : f64} : tensor<?x6xf32>, tensor<6xbf16>, tensor<6xbf16> -> tensor<?x6xf32>
  %kn = cbc.math.layer_norm %k, %w6, %w6 {eps = 1.0e-6 : f64} : tensor<?x6xf32>, tensor<6xbf16>, tensor<6xbf16> -> tensor<?x6xf32>
  // A weight without a bias (Cohere), and neither (OLMo).
  // CHECK: cbc.math.layer_norm %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {eps = 1.000000e-05 : f64} : tensor<?x6xf32>, tensor<6xbf16> -> tensor<?x6xf32>
  %kw = cbc.math.layer_norm %k, %w6 {eps = 1.0e-5 : f64} : tensor<?x6xf32>, tensor<6xbf16> -> tensor<?x6xf32>
  // CHECK: cbc.math.layer_norm %{{[a-z0-9_#]+}} {eps = 1.000000e-05 : f64} : tensor<?x6xf32> -> tensor<?x6xf32>
  %kp = cbc.math.layer_norm %k {eps = 1.0e-5 : f64} : tensor<?x6xf32> -> tensor<?x6xf32>
  // CHECK: cbc.math.layer_norm %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {eps = 1.000000e-05 : f64, group = 3 : i64, offset = 1.000000e+00 : f64} : tensor<?x6xf32>, tensor<3xbf16>, tensor<3xbf16> -> tensor<?x6xf32>
  %kg = cbc.math.layer_norm %k, %w3, %w3 {eps = 1.0e-5 : f64, group = 3 : i64, offset = 1.0 : f64} : tensor<?x6xf32>, tensor<3xbf16>, tensor<3xbf16> -> tensor<?x6xf32>
  // CHECK: cbc.kv.index_append %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {head_dim = 6 : i64, layer = 0 : i64} : tensor<?x6xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  cbc.kv.index_append %kn, %pos, %pos, %pos, %bt {layer = 0 : i64, head_dim = 6 : i64} : tensor<?x6xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  // CHECK: %[[SEL:[a-z0-9_#]+]] = cbc.kv.index_select {{.*}} {head_dim = 6 : i64, key_scale = 5.000000e-01 : f64, layer = 0 : i64, num_heads = 2 : i64, topk = 3 : i64, weight_scale = 0.69999999999999996 : f64} : tensor<?x12xf32>, tensor<?x2xf32>, {{.*}} -> tensor<?x3xi32>
  %sel = cbc.kv.index_select %iq, %iw, %pos, %pos, %pos, %pos, %pos, %bt {layer = 0 : i64, num_heads = 2 : i64, head_dim = 6 : i64, topk = 3 : i64, key_scale = 0.5 : f64, weight_scale = 0.7 : f64} : tensor<?x12xf32>, tensor<?x2xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x3xi32>
  // CHECK: cbc.kv.latent_attention {{.*}} selection(%[[SEL]]) {{.*}}, tensor<?x3xi32> -> tensor<?x16xf32>
  %o = cbc.kv.latent_attention %ql, %qr, %pos, %pos, %pos, %pos, %pos, %bt selection(%sel) {layer = 0 : i64, num_heads = 2 : i64, latent_dim = 8 : i64, rope_dim = 4 : i64, scale = 0.25 : f64} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<?x3xi32> -> tensor<?x16xf32>
  return %o : tensor<?x16xf32>
}

// CHECK-LABEL: func.func @rows
func.func @rows(%x: tensor<?x8xf32>, %rows: tensor<?xi32>) -> tensor<?x8xf32> {
  // CHECK: %{{[a-z0-9_#]+}} = cbc.rows.gather %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} : tensor<?x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %0 = cbc.rows.gather %x, %rows : tensor<?x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// CHECK-LABEL: func.func @rows_inject
func.func @rows_inject(%x: tensor<?x8xbf16>, %rows: tensor<?xi32>, %e: tensor<?x8xf32>) -> tensor<?x8xbf16> {
  // CHECK: cbc.rows.inject %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} : tensor<?x8xbf16>, tensor<?xi32>, tensor<?x8xf32> -> tensor<?x8xbf16>
  %0 = cbc.rows.inject %x, %rows, %e : tensor<?x8xbf16>, tensor<?xi32>, tensor<?x8xf32> -> tensor<?x8xbf16>
  return %0 : tensor<?x8xbf16>
}

// CHECK-LABEL: func.func @streams
func.func @streams(%x: tensor<?x16xf32>, %m: tensor<?x24xf32>) -> tensor<?x16xf32> {
  %b = cbc.weight.ref "b" {sources = [["b"]]} : tensor<24xf32>
  %s = cbc.weight.ref "s" {sources = [["s"]]} : tensor<3xf32>
  // CHECK: cbc.stream.hc_weights {{.*}} {eps = {{.*}} : f64, kind = #cbc.hc_kind<manifold>, magnitude = 2.000000e+00 : f64, post_eps = 0.000000e+00 : f64, sinkhorn_iters = 20 : i64, streams = 4 : i64} : tensor<?x24xf32>, tensor<24xf32>, tensor<3xf32> -> tensor<?x24xf32>
  %w = cbc.stream.hc_weights %m, %b, %s {kind = #cbc.hc_kind<manifold>, streams = 4 : i64, magnitude = 2.0 : f64, eps = 1.0e-6 : f64, post_eps = 0.0 : f64, sinkhorn_iters = 20 : i64} : tensor<?x24xf32>, tensor<24xf32>, tensor<3xf32> -> tensor<?x24xf32>
  // CHECK: cbc.stream.collapse {{.*}} {count = 4 : i64} : tensor<?x16xf32>, tensor<?x24xf32> -> tensor<?x4xf32>
  %c = cbc.stream.collapse %x, %w {count = 4 : i64} : tensor<?x16xf32>, tensor<?x24xf32> -> tensor<?x4xf32>
  // CHECK: cbc.stream.expand {{.*}} {comb, count = 4 : i64, offset = 4 : i64} : tensor<?x4xf32>, tensor<?x16xf32>, tensor<?x24xf32> -> tensor<?x16xf32>
  %e = cbc.stream.expand %c, %x, %w {count = 4 : i64, offset = 4 : i64, comb} : tensor<?x4xf32>, tensor<?x16xf32>, tensor<?x24xf32> -> tensor<?x16xf32>
  return %e : tensor<?x16xf32>
}

// CHECK-LABEL: func.func @latent_sinks_rope_offset
func.func @latent_sinks_rope_offset(%q: tensor<?x16xf32>, %r: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) -> tensor<?x16xf32> {
  %s = cbc.weight.ref "s" {sources = [["s"]]} : tensor<2xf32>
  // CHECK: cbc.kv.latent_attention {{.*}} sinks(%{{[a-z0-9_#]+}}) {
  %o = cbc.kv.latent_attention %q, %r, %p, %p, %p, %p, %p, %bt sinks(%s) {layer = 0 : i64, num_heads = 2 : i64, latent_dim = 8 : i64, rope_dim = 4 : i64, scale = 0.5 : f64} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<2xf32> -> tensor<?x16xf32>
  // CHECK: cbc.math.rope {{.*}} rotary_offset = 4>
  %x = cbc.math.rope %o, %p, %p, %p {rope = #cbc.rope<head_dim = 8, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>, rotary_offset = 4>} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16xf32>
  return %x : tensor<?x16xf32>
}

// CHECK-LABEL: func.func @wkv
func.func @wkv(%k: tensor<?x8xf32>, %p: tensor<?xi32>) -> tensor<?x8xf32> {
  %d = cbc.weight.ref "d" {sources = [["d"]]} : tensor<8xf32>
  // CHECK: cbc.state.wkv {{.*}} {layer = 2 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  %0 = cbc.state.wkv %k, %k, %d, %d, %p, %p, %p, %p {layer = 2 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// CHECK-LABEL: func.func @rg_lru
func.func @rg_lru(%x: tensor<?x8xf32>, %p: tensor<?xi32>) -> tensor<?x8xf32> {
  %a = cbc.weight.ref "a" {sources = [["a"]]} : tensor<8xf32>
  // CHECK: cbc.state.rg_lru {{.*}} {layer = 1 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  %0 = cbc.state.rg_lru %x, %x, %x, %a, %p, %p, %p, %p {layer = 1 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// CHECK-LABEL: func.func @mlstm
func.func @mlstm(%q: tensor<?x8xf32>, %v: tensor<?x12xf32>, %g: tensor<?x2xf32>, %p: tensor<?xi32>) -> tensor<?x12xf32> {
  // CHECK: cbc.state.mlstm {{.*}} {eps = 1.000000e-03 : f64, k_dim = 4 : i64, layer = 2 : i64, num_heads = 2 : i64, v_dim = 6 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x12xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x12xf32>
  %0 = cbc.state.mlstm %q, %q, %v, %g, %g, %p, %p, %p, %p {eps = 1.0e-3 : f64, k_dim = 4 : i64, layer = 2 : i64, num_heads = 2 : i64, v_dim = 6 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x12xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x12xf32>
  return %0 : tensor<?x12xf32>
}

// CHECK-LABEL: func.func @rope_sections
func.func @rope_sections(%x: tensor<?x8xf32>, %p: tensor<?xi32>, %s: tensor<?xi32>) -> tensor<?x8xf32> {
  // CHECK: cbc.math.rope {{.*}} sections %{{[a-z0-9_#]+}} : tensor<?xi32> {rope = #cbc.rope<{{.*}}sections = [0, 1, 2, 0]>}
  %0 = cbc.math.rope %x, %p, %p, %p sections %s : tensor<?xi32> {rope = #cbc.rope<head_dim = 8, rotary_dim = 8, inv_freq = array<f32: 1.0, 0.1, 0.01, 0.001>, sections = [0, 1, 2, 0]>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// CHECK-LABEL: func.func @moe
func.func @moe(%x: tensor<?x8xf32>, %logits: tensor<?x4xf32>, %gu: tensor<4x12x8xbf16>,
               %down: tensor<4x8x6xbf16>, %gub: tensor<4x12xbf16>, %db: tensor<4x8xbf16>,
               %qw: tensor<4x6x8xbf16>) -> tensor<?x8xf32> {
  // CHECK: %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} = cbc.moe.route %{{[a-z0-9_#]+}} {k = 2 : i64, score = #cbc.score<softmax>} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  %w, %ids = cbc.moe.route %logits {k = 2 : i64, score = #cbc.score<softmax>} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  // CHECK: %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} = cbc.moe.route %{{[a-z0-9_#]+}} {k = 2 : i64, renorm = true, scaling = 2.500000e+00 : f64, score = #cbc.score<softmax>} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  %w1, %ids1 = cbc.moe.route %logits {k = 2 : i64, score = #cbc.score<softmax>, renorm = true, scaling = 2.5 : f64} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  // CHECK: %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} = cbc.moe.route %{{[a-z0-9_#]+}} {k = 4 : i64, score = #cbc.score<topk_softmax>} : tensor<?x4xf32> -> tensor<?x4xf32>, tensor<?x4xi32>
  %w2, %ids2 = cbc.moe.route %logits {k = 4 : i64, score = #cbc.score<topk_softmax>} : tensor<?x4xf32> -> tensor<?x4xf32>, tensor<?x4xi32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.moe.experts %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {act = #cbc.act<silu>} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x12x8xbf16>, tensor<4x8x6xbf16>) -> tensor<?x8xf32>
  %y = cbc.moe.experts %x, %ids, %w, %gu, %down {act = #cbc.act<silu>} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x12x8xbf16>, tensor<4x8x6xbf16>) -> tensor<?x8xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.moe.experts %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} bias(%{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}) {act = #cbc.clamped_swiglu<limit = 7.000000e+00, alpha = 1.702000e+00>, layout = #cbc.glu_layout<interleaved>} : (tensor<?x8xf32>, tensor<?x4xi32>, tensor<?x4xf32>, tensor<4x12x8xbf16>, tensor<4x8x6xbf16>, tensor<4x12xbf16>, tensor<4x8xbf16>) -> tensor<?x8xf32>
  %y2 = cbc.moe.experts %y, %ids2, %w2, %gu, %down bias(%gub, %db) {act = #cbc.clamped_swiglu<limit = 7.0, alpha = 1.702>, layout = #cbc.glu_layout<interleaved>} : (tensor<?x8xf32>, tensor<?x4xi32>, tensor<?x4xf32>, tensor<4x12x8xbf16>, tensor<4x8x6xbf16>, tensor<4x12xbf16>, tensor<4x8xbf16>) -> tensor<?x8xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.moe.slot_linear %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} : tensor<?x8xf32>, tensor<?x2xi32>, tensor<4x6x8xbf16> -> tensor<?x12xf32>
  %q = cbc.moe.slot_linear %x, %ids, %qw : tensor<?x8xf32>, tensor<?x2xi32>, tensor<4x6x8xbf16> -> tensor<?x12xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.moe.slot_linear %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} mix(%{{[a-z0-9_#]+}} : tensor<?x2xf32>) : tensor<?x12xf32>, tensor<?x2xi32>, tensor<4x8x6xbf16> -> tensor<?x8xf32>
  %o = cbc.moe.slot_linear %q, %ids, %down mix(%w : tensor<?x2xf32>) : tensor<?x12xf32>, tensor<?x2xi32>, tensor<4x8x6xbf16> -> tensor<?x8xf32>
  return %y2 : tensor<?x8xf32>
}

// The fused ops formed by cbc-fuse-add-norm and cbc-fuse-attention-inputs.

// CHECK-LABEL: func.func @add_rms_norm
func.func @add_rms_norm(%x: tensor<?x8xf32>, %y: tensor<?x8xf32>, %w: tensor<8xbf16>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  // CHECK: %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} = cbc.math.add_rms_norm %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {eps = 9.9999999999999995E-7 : f64, offset = 1.000000e+00 : f64} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<8xbf16> -> tensor<?x8xf32>, tensor<?x8xf32>
  %s, %n = cbc.math.add_rms_norm %x, %y, %w {eps = 1.0e-6 : f64, offset = 1.0 : f64} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<8xbf16> -> tensor<?x8xf32>, tensor<?x8xf32>
  // Without a weight; the default offset is not printed.
  // CHECK: %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} = cbc.math.add_rms_norm %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {eps = 1.000000e-05 : f64} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>, tensor<?x8xf32>
  %s2, %n2 = cbc.math.add_rms_norm %s, %n {eps = 1.0e-5 : f64, offset = 0.0 : f64} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>, tensor<?x8xf32>
  return %s2, %n2 : tensor<?x8xf32>, tensor<?x8xf32>
}

// 4 query heads, 2 kv heads of head_dim 4: q|k|v rows of 16 + 8 + 8 = 32.
// CHECK-LABEL: func.func @rope_append
func.func @rope_append(%qkv: tensor<?x32xf32>, %pos: tensor<?xi32>, %seq: tensor<?xi32>, %plen: tensor<?xi32>,
                       %slots: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %qn: tensor<4xbf16>, %kn: tensor<4xbf16>)
    -> (tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>) {
  // Without norms.
  // CHECK: %{{[a-z0-9_#]+}} = cbc.kv.rope_append %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {head_dim = 4 : i64, layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.000000e+00, 0.00999999977>>} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x16xf32>
  %0 = cbc.kv.rope_append %qkv, %pos, %seq, %plen, %slots, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x16xf32>
  // With q/k norms, their eps and offset, and a cache group.
  // CHECK: %{{[a-z0-9_#]+}} = cbc.kv.rope_append %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} norms(%{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}) {eps = 9.9999999999999995E-7 : f64, group = 1 : i64, head_dim = 4 : i64, layer = 1 : i64, norm_offset = 1.000000e+00 : f64, num_heads = 4 : i64, num_kv_heads = 2 : i64, rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.000000e+00, 0.00999999977>>} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<4xbf16>, tensor<4xbf16>) -> tensor<?x16xf32>
  %1 = cbc.kv.rope_append %qkv, %pos, %seq, %plen, %slots, %bt norms(%qn, %kn) {layer = 1 : i64, group = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, eps = 1.0e-6 : f64, norm_offset = 1.0 : f64, rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<4xbf16>, tensor<4xbf16>) -> tensor<?x16xf32>
  // A sliding-window layer.
  // CHECK: %{{[a-z0-9_#]+}} = cbc.kv.rope_append %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {head_dim = 4 : i64, layer = 2 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, retention = #cbc.retention<window, 4096>, rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.000000e+00, 0.00999999977>>} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x16xf32>
  %2 = cbc.kv.rope_append %qkv, %pos, %seq, %plen, %slots, %bt {layer = 2 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, retention = #cbc.retention<window, 4096>, rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x16xf32>
  // Longrope: partial interleaved rotary, the long frequencies and the attention factor; and a
  // chunked layer.
  // CHECK: %{{[a-z0-9_#]+}} = cbc.kv.rope_append %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {head_dim = 4 : i64, layer = 3 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, retention = #cbc.retention<chunk, 8192>, rope = #cbc.rope<head_dim = 4, rotary_dim = 2, pairing = interleaved, inv_freq = array<f32: 5.000000e-01>, attention_factor = 1.190000e+00, inv_freq_long = array<f32: 2.500000e-01>, long_after = 4096>} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x16xf32>
  %3 = cbc.kv.rope_append %qkv, %pos, %seq, %plen, %slots, %bt {layer = 3 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, retention = #cbc.retention<chunk, 8192>, rope = #cbc.rope<head_dim = 4, rotary_dim = 2, pairing = interleaved, inv_freq = array<f32: 0.5>, attention_factor = 1.19, inv_freq_long = array<f32: 0.25>, long_after = 4096>} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x16xf32>
  // Dynamic NTK.
  // CHECK: %{{[a-z0-9_#]+}} = cbc.kv.rope_append %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {head_dim = 4 : i64, layer = 4 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.000000e+00, 0.00999999977>, dynamic_base = 1.000000e+04, dynamic_factor = 2.000000e+00, dynamic_max_positions = 2048>} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x16xf32>
  %4 = cbc.kv.rope_append %qkv, %pos, %seq, %plen, %slots, %bt {layer = 4 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>, dynamic_base = 10000.0, dynamic_factor = 2.0, dynamic_max_positions = 2048>} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x16xf32>
  return %0, %1, %2, %3, %4 : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>
}

// Per-request state ops and the gated norm that follows a gated delta net.

// q_proj of a gated attention interleaves [q | gate] per head: 2 heads of 4 rows each, viewed
// as [2][4, 4] and regrouped segment first.
// CHECK-LABEL: func.func @regroup
func.func @regroup() -> (tensor<16x8xbf16>, tensor<20x8xbf16>) {
  // CHECK: %{{[a-z0-9_#]+}} = cbc.weight.ref "q" {regroup = array<i64: 2, 4, 4>, sources = {{\[\[}}"q.weight"]]} : tensor<16x8xbf16>
  %0 = cbc.weight.ref "q" {sources = [["q.weight"]], regroup = array<i64: 2, 4, 4>} : tensor<16x8xbf16>
  // Rows past the regrouped ones (k and v here) stay in place; several segments per group.
  // CHECK: %{{[a-z0-9_#]+}} = cbc.weight.ref "qkvz" {regroup = array<i64: 2, 1, 1, 2, 2>, sources = {{\[\[}}"qkvz.weight", "extra.weight"]]} : tensor<20x8xbf16>
  %1 = cbc.weight.ref "qkvz" {combine = #cbc.combine<none>, sources = [["qkvz.weight", "extra.weight"]], regroup = array<i64: 2, 1, 1, 2, 2>} : tensor<20x8xbf16>
  return %0, %1 : tensor<16x8xbf16>, tensor<20x8xbf16>
}

// CHECK-LABEL: func.func @mul
func.func @mul(%x: tensor<?x8xf32>, %g: tensor<?x8xf32>, %g1: tensor<?x1xf32>) -> tensor<?x8xf32> {
  // A plain product, by a full row or one factor per row.
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.mul %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  %0 = cbc.math.mul %x, %g : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.mul %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} : tensor<?x8xf32>, tensor<?x1xf32> -> tensor<?x8xf32>
  %1 = cbc.math.mul %0, %g1 : tensor<?x8xf32>, tensor<?x1xf32> -> tensor<?x8xf32>
  return %1 : tensor<?x8xf32>
}

// 16 features in groups of 4 (one value head each) or as a whole row.
// CHECK-LABEL: func.func @rms_norm_gated
func.func @rms_norm_gated(%x: tensor<?x16xf32>, %z: tensor<?x16xf32>, %w4: tensor<4xbf16>, %w16: tensor<16xf32>)
    -> (tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>) {
  // Gated delta net: norm, then silu gate; the defaults (act, order, offset) are not printed.
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.rms_norm_gated %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {eps = 9.9999999999999995E-7 : f64, group = 4 : i64} : tensor<?x16xf32>, tensor<?x16xf32>, tensor<4xbf16> -> tensor<?x16xf32>
  %0 = cbc.math.rms_norm_gated %x, %z, %w4 {eps = 1.0e-6 : f64, group = 4 : i64, act = #cbc.act<silu>, order = #cbc.order<norm_gate>, offset = 0.0 : f64} : tensor<?x16xf32>, tensor<?x16xf32>, tensor<4xbf16> -> tensor<?x16xf32>
  // Mamba2 style: gate first, over the whole row, with a zero-centred weight.
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.rms_norm_gated %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {eps = 1.000000e-05 : f64, offset = 1.000000e+00 : f64, order = #cbc.order<gate_norm>} : tensor<?x16xf32>, tensor<?x16xf32>, tensor<16xf32> -> tensor<?x16xf32>
  %1 = cbc.math.rms_norm_gated %x, %z, %w16 {eps = 1.0e-5 : f64, order = #cbc.order<gate_norm>, offset = 1.0 : f64} : tensor<?x16xf32>, tensor<?x16xf32>, tensor<16xf32> -> tensor<?x16xf32>
  // Without a weight, a sigmoid gate.
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.rms_norm_gated %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {act = #cbc.act<sigmoid>, eps = 9.9999999999999995E-7 : f64, group = 8 : i64} : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  %2 = cbc.math.rms_norm_gated %x, %z {eps = 1.0e-6 : f64, group = 8 : i64, act = #cbc.act<sigmoid>} : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.rms_norm_gated %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {act = #cbc.act<sigmoid>, eps = 9.9999999999999995E-7 : f64, order = #cbc.order<gate_norm>} : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  %3 = cbc.math.rms_norm_gated %x, %z {eps = 1.0e-6 : f64, act = #cbc.act<sigmoid>, order = #cbc.order<gate_norm>} : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  return %0, %1, %2, %3 : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>
}

// A depthwise conv over 8 channels with kernel 4 (weight [C, 1, K], as torch stores it).
// CHECK-LABEL: func.func @state_conv1d
func.func @state_conv1d(%x: tensor<?x8xf32>, %w: tensor<8x1x4xbf16>, %b: tensor<8xbf16>, %cu: tensor<?xi32>,
                        %slots: tensor<?xi32>, %init: tensor<?xi32>) -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) {
  // Without a bias; act "none" and state "conv" are the defaults.
  // CHECK: %{{[a-z0-9_#]+}} = cbc.state.conv1d %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {layer = 0 : i64} : (tensor<?x8xf32>, tensor<8x1x4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  %0 = cbc.state.conv1d %x, %w, %cu, %slots, %slots, %init {layer = 0 : i64, act = #cbc.act<none>, state = "conv"} : (tensor<?x8xf32>, tensor<8x1x4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  // With a bias and silu (the gated delta net's conv).
  // CHECK: %{{[a-z0-9_#]+}} = cbc.state.conv1d %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} bias(%{{[a-z0-9_#]+}}), %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {act = #cbc.act<silu>, layer = 3 : i64} : (tensor<?x8xf32>, tensor<8x1x4xbf16>, tensor<8xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  %1 = cbc.state.conv1d %0, %w bias(%b), %cu, %slots, %slots, %init {layer = 3 : i64, act = #cbc.act<silu>} : (tensor<?x8xf32>, tensor<8x1x4xbf16>, tensor<8xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  // With a bias, act none, and a state name other than the default.
  // CHECK: %{{[a-z0-9_#]+}} = cbc.state.conv1d %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} bias(%{{[a-z0-9_#]+}}), %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {layer = 1 : i64, state = "conv_b"} : (tensor<?x8xf32>, tensor<8x1x4xbf16>, tensor<8xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  %2 = cbc.state.conv1d %x, %w bias(%b), %cu, %slots, %slots, %init {layer = 1 : i64, state = "conv_b"} : (tensor<?x8xf32>, tensor<8x1x4xbf16>, tensor<8xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return %0, %1, %2 : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
}

// A conv grouped in 2 groups of 4 channels (weight [C, 4, K]) that a fresh request starts from
// `initial` inputs, and a token shift with and without its initial row.
// CHECK-LABEL: func.func @state_grouped_conv_and_shift
func.func @state_grouped_conv_and_shift(%x: tensor<?x8xf32>, %w: tensor<8x4x2xbf16>, %b: tensor<8xbf16>,
                                        %cu: tensor<?xi32>) -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) {
  // CHECK: cbc.state.conv1d %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} bias(%{{[a-z0-9_#]+}}) initial(%{{[a-z0-9_#]+}}), {{.*}} {layer = 0 : i64, state = "g"} : (tensor<?x8xf32>, tensor<8x4x2xbf16>, tensor<8xbf16>, tensor<8xbf16>,
  %0 = cbc.state.conv1d %x, %w bias(%b) initial(%b), %cu, %cu, %cu, %cu {layer = 0 : i64, state = "g"} : (tensor<?x8xf32>, tensor<8x4x2xbf16>, tensor<8xbf16>, tensor<8xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  // CHECK: cbc.state.shift %{{[a-z0-9_#]+}} initial(%{{[a-z0-9_#]+}}), {{.*}} {layer = 0 : i64} : (tensor<?x8xf32>, tensor<8xbf16>,
  %1 = cbc.state.shift %0 initial(%b), %cu, %cu, %cu, %cu {layer = 0 : i64} : (tensor<?x8xf32>, tensor<8xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  // CHECK: cbc.state.shift %{{[a-z0-9_#]+}}, {{.*}} {layer = 1 : i64, state = "s"} : (tensor<?x8xf32>, tensor<?xi32>,
  %2 = cbc.state.shift %1, %cu, %cu, %cu, %cu {layer = 1 : i64, state = "s"} : (tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return %0, %1, %2 : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
}

// A weight factor of one entry per group of columns (a learned temperature per head).
// CHECK-LABEL: func.func @mul_per_group_weight
func.func @mul_per_group_weight(%x: tensor<?x8xf32>, %g: tensor<2xbf16>) -> tensor<?x8xf32> {
  // CHECK: cbc.math.mul %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} : tensor<?x8xf32>, tensor<2xbf16> -> tensor<?x8xf32>
  %0 = cbc.math.mul %x, %g : tensor<?x8xf32>, tensor<2xbf16> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// A gated delta scan: 2 key heads of 4 and 4 value heads of 2, so q and k are [T, 8], v is
// [T, 8], a and b are [T, 4], and the result is [T, 8].
// CHECK-LABEL: func.func @state_scan
func.func @state_scan(%q: tensor<?x8xf32>, %k: tensor<?x8xf32>, %v: tensor<?x8xf32>, %a: tensor<?x4xf32>,
                      %b: tensor<?x4xf32>, %alog: tensor<4xf32>, %dt: tensor<4xbf16>, %cu: tensor<?xi32>,
                      %slots: tensor<?xi32>, %init: tensor<?xi32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  // CHECK: %{{[a-z0-9_#]+}} = cbc.state.gated_delta %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {k_dim = 4 : i64, layer = 0 : i64, num_k_heads = 2 : i64, num_v_heads = 4 : i64, qk_l2norm, v_dim = 2 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  %0 = cbc.state.gated_delta %q, %k, %v, %a, %b, %alog, %dt, %cu, %slots, %slots, %init {layer = 0 : i64, num_k_heads = 2 : i64, num_v_heads = 4 : i64, k_dim = 4 : i64, v_dim = 2 : i64, qk_l2norm, beta_scale = 1.0 : f64, state = "recurrent"} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  // Without the l2 norm, with a beta scale of 2 (negative eigenvalues) and another state name.
  // CHECK: %{{[a-z0-9_#]+}} = cbc.state.gated_delta %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {beta_scale = 2.000000e+00 : f64, k_dim = 4 : i64, layer = 5 : i64, num_k_heads = 2 : i64, num_v_heads = 4 : i64, state = "ssm", v_dim = 2 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  %1 = cbc.state.gated_delta %0, %k, %v, %a, %b, %alog, %dt, %cu, %slots, %slots, %init {layer = 5 : i64, num_k_heads = 2 : i64, num_v_heads = 4 : i64, k_dim = 4 : i64, v_dim = 2 : i64, beta_scale = 2.0 : f64, state = "ssm"} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return %0, %1 : tensor<?x8xf32>, tensor<?x8xf32>
}

// A lightning scan: 2 heads of 4, one decay rate each (0 is allowed: no decay).
// CHECK-LABEL: func.func @lightning_scan
func.func @lightning_scan(%q: tensor<?x8xf32>, %cu: tensor<?xi32>, %slots: tensor<?xi32>, %init: tensor<?xi32>) -> tensor<?x8xf32> {
  // CHECK: cbc.state.lightning %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {decay = array<f64: 5.000000e-01, 0.000000e+00>, head_dim = 4 : i64, layer = 3 : i64, num_heads = 2 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  %0 = cbc.state.lightning %q, %q, %q, %cu, %slots, %slots, %init {layer = 3 : i64, num_heads = 2 : i64, head_dim = 4 : i64, decay = array<f64: 0.5, 0.0>} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}


// A KDA scan: 2 heads, k_dim 4 and v_dim 3, so q, k and f are [T, 8], v is [T, 6], b is [T, 2],
// dt_bias has a bias per key channel and the result is [T, 6].
// CHECK-LABEL: func.func @kda_scan
func.func @kda_scan(%q: tensor<?x8xf32>, %v: tensor<?x6xf32>, %b: tensor<?x2xf32>, %alog: tensor<2xf32>,
                    %dt: tensor<8xf32>, %cu: tensor<?xi32>, %slots: tensor<?xi32>, %init: tensor<?xi32>) -> (tensor<?x6xf32>, tensor<?x6xf32>) {
  // CHECK: cbc.state.kda {{.*}} {gate = #cbc.decay_gate<softplus>, k_dim = 4 : i64, layer = 0 : i64, num_heads = 2 : i64, v_dim = 3 : i64}
  %0 = cbc.state.kda %q, %q, %v, %q, %b, %alog, %dt, %cu, %slots, %slots, %init {layer = 0 : i64, num_heads = 2 : i64, k_dim = 4 : i64, v_dim = 3 : i64, gate = #cbc.decay_gate<softplus>} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x6xf32>, tensor<?x8xf32>, tensor<?x2xf32>, tensor<2xf32>, tensor<8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x6xf32>
  // The bounded gate with its lower bound.
  // CHECK: cbc.state.kda {{.*}} {gate = #cbc.decay_gate<bounded_sigmoid>, k_dim = 4 : i64, layer = 2 : i64, lower_bound = -5.000000e+00 : f64, num_heads = 2 : i64, v_dim = 3 : i64}
  %1 = cbc.state.kda %q, %q, %v, %q, %b, %alog, %dt, %cu, %slots, %slots, %init {layer = 2 : i64, num_heads = 2 : i64, k_dim = 4 : i64, v_dim = 3 : i64, gate = #cbc.decay_gate<bounded_sigmoid>, lower_bound = -5.0 : f64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x6xf32>, tensor<?x8xf32>, tensor<?x2xf32>, tensor<2xf32>, tensor<8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x6xf32>
  return %0, %1 : tensor<?x6xf32>, tensor<?x6xf32>
}

// Weight transforms for per-head projections and constant multipliers: zamba's x_proj_weight
// [2, 6, 4] on a block diagonal [12, 8], its rows regrouped per head; Falcon-H1's muP factors
// on runs of rows (a multiplier on k only, one on the whole output).
// CHECK-LABEL: func.func @weight_transforms
func.func @weight_transforms() -> (tensor<12x8xbf16>, tensor<12x8xbf16>, tensor<8xbf16>) {
  // CHECK: %{{[a-z0-9_#]+}} = cbc.weight.ref "x_proj" {block_diag = 2 : i64, regroup = array<i64: 2, 2, 2, 2>, sources = {{\[\[}}"mamba.x_proj_weight"]]} : tensor<12x8xbf16>
  %0 = cbc.weight.ref "x_proj" {sources = [["mamba.x_proj_weight"]], block_diag = 2 : i64, regroup = array<i64: 2, 2, 2, 2>} : tensor<12x8xbf16>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.weight.ref "qkv" {row_scales = array<f64: 4.000000e+00, 1.500000e+00, 4.000000e+00, 7.500000e-01, 4.000000e+00, 1.500000e+00>, sources = {{\[\[}}"q.weight", "k.weight", "v.weight"]]} : tensor<12x8xbf16>
  %1 = cbc.weight.ref "qkv" {sources = [["q.weight", "k.weight", "v.weight"]], row_scales = array<f64: 4.0, 1.5, 4.0, 0.75, 4.0, 1.5>} : tensor<12x8xbf16>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.weight.ref "o_bias" {row_scales = array<f64: 8.000000e+00, 7.500000e-01>, sources = {{\[\[}}"o.bias"]]} : tensor<8xbf16>
  %2 = cbc.weight.ref "o_bias" {sources = [["o.bias"]], row_scales = array<f64: 8.0, 0.75>} : tensor<8xbf16>
  return %0, %1, %2 : tensor<12x8xbf16>, tensor<12x8xbf16>, tensor<8xbf16>
}

// Columns side by side (Zamba's [h | embeddings]); one input is a plain copy.
// CHECK-LABEL: func.func @concat
func.func @concat(%x: tensor<?x8xf32>, %e: tensor<?x4xf32>) -> (tensor<?x12xf32>, tensor<?x8xf32>) {
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.concat %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} : tensor<?x8xf32>, tensor<?x4xf32> -> tensor<?x12xf32>
  %0 = cbc.math.concat %x, %e : tensor<?x8xf32>, tensor<?x4xf32> -> tensor<?x12xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.concat %{{[a-z0-9_#]+}} : tensor<?x8xf32> -> tensor<?x8xf32>
  %1 = cbc.math.concat %x : tensor<?x8xf32> -> tensor<?x8xf32>
  return %0, %1 : tensor<?x12xf32>, tensor<?x8xf32>
}

// Ungated experts (Nemotron-H): gate_up holds only up [E, I, H]; optional biases [E, I], [E, H].
// CHECK-LABEL: func.func @experts_ungated
func.func @experts_ungated(%x: tensor<?x8xf32>, %ids: tensor<?x2xi32>, %w: tensor<?x2xf32>, %u: tensor<4x6x8xbf16>,
                           %d: tensor<4x8x6xbf16>, %ub: tensor<4x6xbf16>, %db: tensor<4x8xbf16>) -> tensor<?x8xf32> {
  // CHECK: %{{[a-z0-9_#]+}} = cbc.moe.experts %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {act = #cbc.act<relu2>, ungated} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x6x8xbf16>, tensor<4x8x6xbf16>) -> tensor<?x8xf32>
  %y = cbc.moe.experts %x, %ids, %w, %u, %d {act = #cbc.act<relu2>, ungated} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x6x8xbf16>, tensor<4x8x6xbf16>) -> tensor<?x8xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.moe.experts %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} bias(%{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}) {act = #cbc.act<silu>, ungated} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x6x8xbf16>, tensor<4x8x6xbf16>, tensor<4x6xbf16>, tensor<4x8xbf16>) -> tensor<?x8xf32>
  %y2 = cbc.moe.experts %y, %ids, %w, %u, %d bias(%ub, %db) {act = #cbc.act<silu>, ungated} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x6x8xbf16>, tensor<4x8x6xbf16>, tensor<4x6xbf16>, tensor<4x8xbf16>) -> tensor<?x8xf32>
  return %y2 : tensor<?x8xf32>
}

// The state-space scans (cbc.state.ssd, cbc.state.selective_scan), cbc.math.act,
// cbc.math.rms_norm_gated with one weight entry per row feature, and sigmoid routing with a
// selection bias. Attributes equal to their defaults (dt_min 0, dt_max inf, state "recurrent",
// scale 1) are not printed.

// cbc.state.ssd with 4 heads of head_dim 2 (x [T, 8], dt [T, 4]) and 2 groups of state size 3
// (B and C [T, 6]); A_log, dt_bias and D have one entry per head.
// CHECK-LABEL: func.func @ssd
func.func @ssd(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %c: tensor<?x6xf32>,
                      %alog: tensor<4xf32>, %dtb: tensor<4xf32>, %d: tensor<4xbf16>, %cu: tensor<?xi32>,
                      %slots: tensor<?xi32>, %init: tensor<?xi32>)
    -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) {
  // dt limits from time_step_limit [0.001, 0.1].
  // CHECK: %{{[a-z0-9_#]+}} = cbc.state.ssd %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {dt_max = 1.000000e-01 : f64, dt_min = 1.000000e-03 : f64, head_dim = 2 : i64, layer = 0 : i64, n_groups = 2 : i64, num_heads = 4 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  %0 = cbc.state.ssd %x, %dt, %b, %c, %alog, %dtb, %d, %cu, %slots, %slots, %init {layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64, dt_min = 0.001 : f64, dt_max = 0.1 : f64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  // The default limits (0, inf) written out are elided, as is the default state name.
  // CHECK: %{{[a-z0-9_#]+}} = cbc.state.ssd %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {head_dim = 2 : i64, layer = 1 : i64, n_groups = 2 : i64, num_heads = 4 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  %1 = cbc.state.ssd %0, %dt, %b, %c, %alog, %dtb, %d, %cu, %slots, %slots, %init {layer = 1 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64, dt_min = 0.0 : f64, dt_max = 0x7FF0000000000000 : f64, state = "recurrent"} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  // Only a lower limit (nemotron_h's time_step_min): dt_max stays the default; another state name.
  // CHECK: %{{[a-z0-9_#]+}} = cbc.state.ssd %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {dt_min = 1.000000e-03 : f64, head_dim = 2 : i64, layer = 2 : i64, n_groups = 2 : i64, num_heads = 4 : i64, state = "ssm", state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  %2 = cbc.state.ssd %1, %dt, %b, %c, %alog, %dtb, %d, %cu, %slots, %slots, %init {layer = 2 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64, dt_min = 0.001 : f64, state = "ssm"} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  // One group for all heads, a limit of equal ends, and 1-element weights of any static shape.
  // CHECK: %{{[a-z0-9_#]+}}:2 = cbc.math.split %{{[a-z0-9_#]+}} : tensor<?x4xf32> -> tensor<?x1xf32>, tensor<?x3xf32>
  %dt1:2 = cbc.math.split %dt : tensor<?x4xf32> -> tensor<?x1xf32>, tensor<?x3xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.weight.ref "w1" {sources = {{\[\[}}"w1"]]} : tensor<1xf32>
  %w1 = cbc.weight.ref "w1" {sources = [["w1"]]} : tensor<1xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.weight.ref "w11" {sources = {{\[\[}}"w11"]]} : tensor<1x1xf32>
  %w11 = cbc.weight.ref "w11" {sources = [["w11"]]} : tensor<1x1xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.state.ssd %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {dt_max = 5.000000e-01 : f64, dt_min = 5.000000e-01 : f64, head_dim = 8 : i64, layer = 3 : i64, n_groups = 1 : i64, num_heads = 1 : i64, state_size = 6 : i64} : (tensor<?x8xf32>, tensor<?x1xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<1xf32>, tensor<1x1xf32>, tensor<1xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  %3 = cbc.state.ssd %2, %dt1#0, %b, %c, %w1, %w11, %w1, %cu, %slots, %slots, %init {layer = 3 : i64, num_heads = 1 : i64, head_dim = 8 : i64, n_groups = 1 : i64, state_size = 6 : i64, dt_min = 0.5 : f64, dt_max = 0.5 : f64} : (tensor<?x8xf32>, tensor<?x1xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<1xf32>, tensor<1x1xf32>, tensor<1xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return %0, %1, %2, %3 : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
}

// cbc.state.selective_scan over 8 channels with state size 3: x and dt [T, 8], B and C [T, 3] (one
// group) or [T, 6] (two groups, Zamba's multi-head form), A_log [8, 3], dt_bias and D [8], and
// the optional gate z [T, 8] after D.
// CHECK-LABEL: func.func @selective_scan
func.func @selective_scan(%x: tensor<?x8xf32>, %dt: tensor<?x8xf32>, %b: tensor<?x3xf32>, %c: tensor<?x3xf32>,
                            %b2: tensor<?x6xf32>, %alog: tensor<8x3xf32>, %dtb: tensor<8xf32>, %d: tensor<8xf32>,
                            %z: tensor<?x8xf32>, %cu: tensor<?xi32>, %slots: tensor<?xi32>, %init: tensor<?xi32>,
                            %alog3: tensor<2x4x3xf32>)
    -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) {
  // With the gate z: eleven operands.
  // CHECK: %{{[a-z0-9_#]+}} = cbc.state.selective_scan %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} gate(%{{[a-z0-9_#]+}}), %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {layer = 0 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  %0 = cbc.state.selective_scan %x, %dt, %b, %c, %alog, %dtb, %d gate(%z), %cu, %slots, %slots, %init {layer = 0 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  // Without z: ten operands, the metadata right after D.
  // CHECK: %{{[a-z0-9_#]+}} = cbc.state.selective_scan %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {layer = 1 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  %1 = cbc.state.selective_scan %0, %dt, %b, %c, %alog, %dtb, %d, %cu, %slots, %slots, %init {layer = 1 : i64, n_groups = 1 : i64, state_size = 3 : i64, state = "recurrent"} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  // Two groups of 4 channels each (B and C [T, 2 x 3]); A_log as [heads, head_dim, state]
  // (8 x 3 elements); another state name.
  // CHECK: %{{[a-z0-9_#]+}} = cbc.state.selective_scan %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} gate(%{{[a-z0-9_#]+}}), %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {layer = 2 : i64, n_groups = 2 : i64, state = "ssm", state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<2x4x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  %2 = cbc.state.selective_scan %1, %dt, %b2, %b2, %alog3, %dtb, %d gate(%z), %cu, %slots, %slots, %init {layer = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64, state = "ssm"} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<2x4x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return %0, %1, %2 : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
}

// Every activation of cbc.math.act, with and without a scale; scale 1 is the default.
// CHECK-LABEL: func.func @act
func.func @act(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // A plain constant factor (Granite's residual_multiplier, 1 / logits_scaling).
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.act %{{[a-z0-9_#]+}} {act = #cbc.act<none>, scale = 5.000000e-01 : f64} : tensor<?x8xf32>
  %0 = cbc.math.act %x {act = #cbc.act<none>, scale = 0.5 : f64} : tensor<?x8xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.act %{{[a-z0-9_#]+}} {act = #cbc.act<silu>} : tensor<?x8xf32>
  %1 = cbc.math.act %0 {act = #cbc.act<silu>, scale = 1.0 : f64} : tensor<?x8xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.act %{{[a-z0-9_#]+}} {act = #cbc.act<gelu_tanh>, scale = 2.000000e+00 : f64} : tensor<?x8xf32>
  %2 = cbc.math.act %1 {act = #cbc.act<gelu_tanh>, scale = 2.0 : f64} : tensor<?x8xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.act %{{[a-z0-9_#]+}} {act = #cbc.act<gelu>} : tensor<?x8xf32>
  %3 = cbc.math.act %2 {act = #cbc.act<gelu>} : tensor<?x8xf32>
  // A negative scale is finite, so allowed.
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.act %{{[a-z0-9_#]+}} {act = #cbc.act<relu>, scale = -2.500000e-01 : f64} : tensor<?x8xf32>
  %4 = cbc.math.act %3 {act = #cbc.act<relu>, scale = -0.25 : f64} : tensor<?x8xf32>
  // Squared ReLU (Nemotron-H's MLP).
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.act %{{[a-z0-9_#]+}} {act = #cbc.act<relu2>} : tensor<?x8xf32>
  %5 = cbc.math.act %4 {act = #cbc.act<relu2>} : tensor<?x8xf32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.act %{{[a-z0-9_#]+}} {act = #cbc.act<none>, scale = 0.000000e+00 : f64} : tensor<?x8xf32>
  %6 = cbc.math.act %5 {act = #cbc.act<none>, scale = 0.0 : f64} : tensor<?x8xf32>
  return %6 : tensor<?x8xf32>
}

// Mamba2's gated norm: gate first, RMS over groups of I / G = 4 features, and a weight with one
// entry per feature of the whole row (16), not per group.
// CHECK-LABEL: func.func @rms_norm_gated_per_row
func.func @rms_norm_gated_per_row(%x: tensor<?x16xf32>, %z: tensor<?x16xf32>, %w: tensor<16xbf16>)
    -> (tensor<?x16xf32>, tensor<?x16xf32>) {
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.rms_norm_gated %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {eps = 1.000000e-05 : f64, group = 4 : i64, order = #cbc.order<gate_norm>} : tensor<?x16xf32>, tensor<?x16xf32>, tensor<16xbf16> -> tensor<?x16xf32>
  %0 = cbc.math.rms_norm_gated %x, %z, %w {eps = 1.0e-5 : f64, group = 4 : i64, order = #cbc.order<gate_norm>, act = #cbc.act<silu>, offset = 0.0 : f64} : tensor<?x16xf32>, tensor<?x16xf32>, tensor<16xbf16> -> tensor<?x16xf32>
  // Per-row weight, norm first, sigmoid gate, an offset.
  // CHECK: %{{[a-z0-9_#]+}} = cbc.math.rms_norm_gated %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {act = #cbc.act<sigmoid>, eps = 9.9999999999999995E-7 : f64, group = 8 : i64, offset = 1.000000e+00 : f64} : tensor<?x16xf32>, tensor<?x16xf32>, tensor<16xbf16> -> tensor<?x16xf32>
  %1 = cbc.math.rms_norm_gated %x, %z, %w {eps = 1.0e-6 : f64, group = 8 : i64, act = #cbc.act<sigmoid>, offset = 1.0 : f64} : tensor<?x16xf32>, tensor<?x16xf32>, tensor<16xbf16> -> tensor<?x16xf32>
  return %0, %1 : tensor<?x16xf32>, tensor<?x16xf32>
}

// Sigmoid scores with a selection bias (one entry per expert): chosen by score + bias, weighted
// by the unbiased score.
// CHECK-LABEL: func.func @route_sigmoid_bias
func.func @route_sigmoid_bias(%logits: tensor<?x4xf32>, %bias: tensor<4xf32>, %bias16: tensor<4xbf16>)
    -> (tensor<?x2xf32>, tensor<?x2xi32>, tensor<?x1xf32>, tensor<?x1xi32>) {
  // CHECK: %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} = cbc.moe.route %{{[a-z0-9_#]+}} bias(%{{[a-z0-9_#]+}} : tensor<4xf32>) {k = 2 : i64, renorm = true, renorm_eps = 9.9999999999999995E-21 : f64, scaling = 2.500000e+00 : f64, score = #cbc.score<sigmoid>} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  %w, %ids = cbc.moe.route %logits bias(%bias : tensor<4xf32>) {k = 2 : i64, score = #cbc.score<sigmoid>, renorm = true, renorm_eps = 1.0e-20 : f64, scaling = 2.5 : f64} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  // A bf16 bias, no renormalisation (the defaults renorm false, eps 0, scaling 1 are elided).
  // CHECK: %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} = cbc.moe.route %{{[a-z0-9_#]+}} bias(%{{[a-z0-9_#]+}} : tensor<4xbf16>) {k = 1 : i64, score = #cbc.score<sigmoid>} : tensor<?x4xf32> -> tensor<?x1xf32>, tensor<?x1xi32>
  %w1, %ids1 = cbc.moe.route %logits bias(%bias16 : tensor<4xbf16>) {k = 1 : i64, score = #cbc.score<sigmoid>, renorm = false, renorm_eps = 0.0 : f64, scaling = 1.0 : f64} : tensor<?x4xf32> -> tensor<?x1xf32>, tensor<?x1xi32>
  // Softmax scores take a selection bias too.
  // CHECK: %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} = cbc.moe.route %{{[a-z0-9_#]+}} bias(%{{[a-z0-9_#]+}} : tensor<4xf32>) {k = 2 : i64, score = #cbc.score<softmax>} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  %w2, %ids2 = cbc.moe.route %logits bias(%bias : tensor<4xf32>) {k = 2 : i64, score = #cbc.score<softmax>} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return %w, %ids, %w1, %ids1 : tensor<?x2xf32>, tensor<?x2xi32>, tensor<?x1xf32>, tensor<?x1xi32>
}

// Group-limited routing (the default-free bundle prints every field), and identity experts:
// the router scores the 4 experts of gate_up and 2 identity experts.
// CHECK-LABEL: func.func @route_groups_identity
func.func @route_groups_identity(%logits: tensor<?x8xf32>, %bias: tensor<8xf32>, %l6: tensor<?x6xf32>,
    %x: tensor<?x8xf32>, %gu: tensor<4x12x8xbf16>, %down: tensor<4x8x6xbf16>)
    -> (tensor<?x3xf32>, tensor<?x3xi32>, tensor<?x2xf32>, tensor<?x2xi32>, tensor<?x8xf32>) {
  // CHECK: %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} = cbc.moe.route %{{[a-z0-9_#]+}} bias(%{{[a-z0-9_#]+}} : tensor<8xf32>) {groups = #cbc.route_groups<count = 4, keep = 2, score = top2_sum, fill = neg_inf>, k = 3 : i64, renorm = true, score = #cbc.score<sigmoid>} : tensor<?x8xf32> -> tensor<?x3xf32>, tensor<?x3xi32>
  %w, %ids = cbc.moe.route %logits bias(%bias : tensor<8xf32>) {k = 3 : i64, score = #cbc.score<sigmoid>, renorm = true, groups = #cbc.route_groups<count = 4, keep = 2, score = top2_sum, fill = neg_inf>} : tensor<?x8xf32> -> tensor<?x3xf32>, tensor<?x3xi32>
  // CHECK: %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} = cbc.moe.route %{{[a-z0-9_#]+}} {groups = #cbc.route_groups<count = 3, keep = 1, score = max, fill = zero>, k = 2 : i64, score = #cbc.score<softmax>} : tensor<?x6xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  %w1, %ids1 = cbc.moe.route %l6 {k = 2 : i64, score = #cbc.score<softmax>, groups = #cbc.route_groups<count = 3, keep = 1, score = max, fill = zero>} : tensor<?x6xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  // CHECK: %{{[a-z0-9_#]+}} = cbc.moe.experts %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {act = #cbc.act<silu>, identity_experts = 2 : i64} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x12x8xbf16>, tensor<4x8x6xbf16>) -> tensor<?x8xf32>
  %y = cbc.moe.experts %x, %ids1, %w1, %gu, %down {act = #cbc.act<silu>, identity_experts = 2 : i64} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x12x8xbf16>, tensor<4x8x6xbf16>) -> tensor<?x8xf32>
  // The routing weight scales the experts' input (Llama 4).
  // CHECK: %{{[a-z0-9_#]+}} = cbc.moe.experts %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {act = #cbc.act<silu>, identity_experts = 2 : i64, scale_input} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x12x8xbf16>, tensor<4x8x6xbf16>) -> tensor<?x8xf32>
  %y2 = cbc.moe.experts %y, %ids1, %w1, %gu, %down {act = #cbc.act<silu>, identity_experts = 2 : i64, scale_input} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x12x8xbf16>, tensor<4x8x6xbf16>) -> tensor<?x8xf32>
  return %w, %ids, %w1, %ids1, %y2 : tensor<?x3xf32>, tensor<?x3xi32>, tensor<?x2xf32>, tensor<?x2xi32>, tensor<?x8xf32>
}

// Inkling: the relative-position distance bias on attention, the log_ratio position scale, sink
// routing, a learned scalar factor and a flattened weight.
// CHECK-LABEL: func.func @relative_bias_sinks
func.func @relative_bias_sinks(%q: tensor<?x16xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %b: tensor<?x32xf32>,
    %l: tensor<?x6xf32>, %bias: tensor<4xf32>, %s: tensor<1xf32>)
    -> (tensor<?x16xf32>, tensor<?x4xf32>, tensor<?x4xi32>, tensor<6x32x64xbf16>) {
  // CHECK: cbc.math.position_scale %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {beta = 3.000000e-01 : f64, form = #cbc.position_scale_form<log_ratio>, offset = 1 : i64, period = 16 : i64} : tensor<?x32xf32>, tensor<?xi32> -> tensor<?x32xf32>
  %bs = cbc.math.position_scale %b, %p {beta = 0.3 : f64, period = 16 : i64, offset = 1 : i64, form = #cbc.position_scale_form<log_ratio>} : tensor<?x32xf32>, tensor<?xi32> -> tensor<?x32xf32>
  // CHECK: cbc.kv.attention %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} distance_bias(%{{[a-z0-9_#]+}}) {bias_extent = 8 : i64, head_dim = 4 : i64, layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 2.500000e-01 : f64}
  %o = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt distance_bias(%bs) {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.25 : f64, bias_extent = 8 : i64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<?x32xf32> -> tensor<?x16xf32>
  // CHECK: cbc.moe.route %{{[a-z0-9_#]+}} bias(%{{[a-z0-9_#]+}} : tensor<4xf32>) {k = 2 : i64, scaling = 1.500000e+00 : f64, score = #cbc.score<sigmoid>, sinks = 2 : i64} : tensor<?x6xf32> -> tensor<?x4xf32>, tensor<?x4xi32>
  %w, %ids = cbc.moe.route %l bias(%bias : tensor<4xf32>) {k = 2 : i64, score = #cbc.score<sigmoid>, scaling = 1.5 : f64, sinks = 2 : i64} : tensor<?x6xf32> -> tensor<?x4xf32>, tensor<?x4xi32>
  // CHECK: cbc.math.mul %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} : tensor<?x4xf32>, tensor<1xf32> -> tensor<?x4xf32>
  %ws = cbc.math.mul %w, %s : tensor<?x4xf32>, tensor<1xf32> -> tensor<?x4xf32>
  // CHECK: cbc.weight.ref "gate_up" {flatten, regroup = array<i64: 2, 16, 16>, sources = {{\[\[}}"sg", "su", "gu"]]} : tensor<6x32x64xbf16>
  %gu = cbc.weight.ref "gate_up" {sources = [["sg", "su", "gu"]], regroup = array<i64: 2, 16, 16>, flatten} : tensor<6x32x64xbf16>
  return %o, %ws, %ids, %gu : tensor<?x16xf32>, tensor<?x4xf32>, tensor<?x4xi32>, tensor<6x32x64xbf16>
}

// A residual short conv: x + conv(x) in one op.
// CHECK-LABEL: func.func @residual_conv
func.func @residual_conv(%x: tensor<?x8xf32>, %w: tensor<8x1x4xf32>, %i: tensor<?xi32>) -> tensor<?x8xf32> {
  // CHECK: cbc.state.conv1d %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {layer = 0 : i64, residual, state = "k_conv"}
  %y = cbc.state.conv1d %x, %w, %i, %i, %i, %i {layer = 0 : i64, residual, state = "k_conv"} : (tensor<?x8xf32>, tensor<8x1x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// Inkling 2's pieces: L2 clips with and without a learned scale, learned queries attending over
// a token's sources, a dynamic conv (taps per token, lag order, an output scale, a [C, K] weight),
// per-token sink logits and the soft-capped SwiGLU.
// CHECK-LABEL: func.func @clips_sources_dynamic_conv
func.func @clips_sources_dynamic_conv(%x: tensor<?x8xf32>, %s: tensor<8xf32>, %src: tensor<?x24xf32>,
                                      %q3: tensor<3x8xf32>, %q1: tensor<8xf32>, %w: tensor<8x4xf32>,
                                      %taps: tensor<?x8xf32>, %i: tensor<?xi32>, %bt: tensor<?x?x?xi32>,
                                      %sl: tensor<?x2xf32>, %gu: tensor<?x16xf32>) -> tensor<?x8xf32> {
  // CHECK: cbc.math.l2_clip %{{[a-z0-9_#]+}} scale(%{{[a-z0-9_#]+}}) {group = 4 : i64, threshold = 2.000000e+00 : f64} : tensor<?x8xf32>, tensor<8xf32> -> tensor<?x8xf32>
  %a = cbc.math.l2_clip %x scale(%s) {group = 4 : i64, threshold = 2.0 : f64} : tensor<?x8xf32>, tensor<8xf32> -> tensor<?x8xf32>
  // CHECK: cbc.math.l2_clip %{{[a-z0-9_#]+}} {eps = 0.000000e+00 : f64, group = 8 : i64, threshold = 1.000000e+00 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
  %b = cbc.math.l2_clip %a {group = 8 : i64, threshold = 1.0 : f64, eps = 0.0 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
  // CHECK: cbc.stream.attend %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {count = 3 : i64} : tensor<?x24xf32>, tensor<3x8xf32> -> tensor<?x24xf32>
  %c = cbc.stream.attend %src, %q3 {count = 3 : i64} : tensor<?x24xf32>, tensor<3x8xf32> -> tensor<?x24xf32>
  // CHECK: cbc.stream.attend %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} {count = 3 : i64} : tensor<?x24xf32>, tensor<8xf32> -> tensor<?x8xf32>
  %d = cbc.stream.attend %c, %q1 {count = 3 : i64} : tensor<?x24xf32>, tensor<8xf32> -> tensor<?x8xf32>
  // CHECK: cbc.state.conv1d %{{[a-z0-9_#]+}}, %{{[a-z0-9_#]+}} taps(%{{[a-z0-9_#]+}}), {{.*}} {lag_order, layer = 1 : i64, residual, scale = 5.000000e-01 : f64} : (tensor<?x8xf32>, tensor<8x4xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  %e = cbc.state.conv1d %d, %w taps(%taps), %i, %i, %i, %i {layer = 1 : i64, residual, lag_order, scale = 0.5 : f64} : (tensor<?x8xf32>, tensor<8x4xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  // CHECK: cbc.kv.attention {{.*}} sink_logits(%{{[a-z0-9_#]+}}) {{{.*}}num_heads = 2 : i64{{.*}}} : {{.*}}, tensor<?x2xf32> -> tensor<?x8xf32>
  %f = cbc.kv.attention %e, %i, %i, %i, %i, %i, %bt sink_logits(%sl) {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, scale = 0.5 : f64} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<?x2xf32> -> tensor<?x8xf32>
  // CHECK: cbc.math.glu %{{[a-z0-9_#]+}} {act = #cbc.softcapped_swiglu<gate_cap = 4.000000e+00, up_cap = 2.500000e+01>, layout = #cbc.glu_layout<interleaved>} : tensor<?x16xf32> -> tensor<?x8xf32>
  %g = cbc.math.glu %gu {act = #cbc.softcapped_swiglu<gate_cap = 4.0, up_cap = 25.0>, layout = #cbc.glu_layout<interleaved>} : tensor<?x16xf32> -> tensor<?x8xf32>
  %h = cbc.math.add %f, %g : tensor<?x8xf32>
  %k = cbc.math.add %h, %b : tensor<?x8xf32>
  return %k : tensor<?x8xf32>
}
