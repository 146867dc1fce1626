// RUN: cbc-opt %s | cbc-opt | FileCheck %s
// RUN: cbc-opt %s --mlir-print-op-generic | cbc-opt | FileCheck %s

// Every op of the cbc dialect, parsed, printed and parsed again. The second RUN line goes
// through the generic form, so the custom printers and parsers must agree with it.

// CHECK-LABEL: func.func @weights
func.func @weights() -> (tensor<8x4xbf16>, tensor<2x6x4xbf16>, tensor<1x4x6xf32>) {
  // CHECK: cbc.weight.ref "w" {sources = {{\[\[}}"a.weight", "b.weight"]]} : tensor<8x4xbf16>
  %0 = cbc.weight.ref "w" {sources = [["a.weight", "b.weight"]]} : tensor<8x4xbf16>
  // CHECK: cbc.weight.ref "experts" {combine = "stack", sources = {{\[\[}}"e0.w1", "e0.w3"], ["e1.w1", "e1.w3"]]} : tensor<2x6x4xbf16>
  %1 = cbc.weight.ref "experts" {combine = "stack", sources = [["e0.w1", "e0.w3"], ["e1.w1", "e1.w3"]]} : tensor<2x6x4xbf16>
  // CHECK: cbc.weight.ref "fused" {sources = {{\[\[}}"fused.proj"]], transpose} : tensor<1x4x6xf32>
  %2 = cbc.weight.ref "fused" {combine = "none", sources = [["fused.proj"]], transpose} : tensor<1x4x6xf32>
  return %0, %1, %2 : tensor<8x4xbf16>, tensor<2x6x4xbf16>, tensor<1x4x6xf32>
}

// CHECK-LABEL: func.func @dense
// CHECK-SAME: (%[[TOK:.*]]: tensor<?xi32>, %[[TABLE:.*]]: tensor<16x8xbf16>, %[[W:.*]]: tensor<12x8xbf16>, %[[B:.*]]: tensor<12xbf16>, %[[NW:.*]]: tensor<8xbf16>, %[[HW:.*]]: tensor<4xbf16>)
func.func @dense(%tok: tensor<?xi32>, %table: tensor<16x8xbf16>, %w: tensor<12x8xbf16>,
                 %b: tensor<12xbf16>, %nw: tensor<8xbf16>, %hw: tensor<4xbf16>) -> tensor<?x8xf32> {
  // CHECK: %[[E:.*]] = cbc.math.embed %[[TOK]], %[[TABLE]] : tensor<?xi32>, tensor<16x8xbf16> -> tensor<?x8xf32>
  %e = cbc.math.embed %tok, %table : tensor<?xi32>, tensor<16x8xbf16> -> tensor<?x8xf32>
  // CHECK: %[[ES:.*]] = cbc.math.embed %[[TOK]], %[[TABLE]] {scale = 4.800000e+01 : f64} : tensor<?xi32>, tensor<16x8xbf16> -> tensor<?x8xf32>
  %es = cbc.math.embed %tok, %table {scale = 48.0 : f64} : tensor<?xi32>, tensor<16x8xbf16> -> tensor<?x8xf32>
  // CHECK: cbc.math.linear %[[E]], %[[W]] : tensor<?x8xf32>, tensor<12x8xbf16> -> tensor<?x12xf32>
  %l = cbc.math.linear %e, %w : tensor<?x8xf32>, tensor<12x8xbf16> -> tensor<?x12xf32>
  // CHECK: %[[LB:.*]] = cbc.math.linear %[[E]], %[[W]], %[[B]] : tensor<?x8xf32>, tensor<12x8xbf16>, tensor<12xbf16> -> tensor<?x12xf32>
  %lb = cbc.math.linear %e, %w, %b : tensor<?x8xf32>, tensor<12x8xbf16>, tensor<12xbf16> -> tensor<?x12xf32>
  // CHECK: %[[N:.*]] = cbc.math.rms_norm %[[ES]], %[[NW]] {eps = 9.9999999999999995E-7 : f64} : tensor<?x8xf32>, tensor<8xbf16> -> tensor<?x8xf32>
  %n = cbc.math.rms_norm %es, %nw {eps = 1.0e-6 : f64} : tensor<?x8xf32>, tensor<8xbf16> -> tensor<?x8xf32>
  // CHECK: cbc.math.rms_norm %[[N]], %[[HW]] {eps = 9.9999999999999995E-7 : f64, group = 4 : i64, offset = 1.000000e+00 : f64} : tensor<?x8xf32>, tensor<4xbf16> -> tensor<?x8xf32>
  %g = cbc.math.rms_norm %n, %hw {eps = 1.0e-6 : f64, group = 4 : i64, offset = 1.0 : f64} : tensor<?x8xf32>, tensor<4xbf16> -> tensor<?x8xf32>
  // CHECK: cbc.math.rms_norm %{{.*}} {eps = 1.000000e-05 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
  %u = cbc.math.rms_norm %g {eps = 1.0e-5 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
  // CHECK: cbc.math.add %[[E]], %{{.*}} : tensor<?x8xf32>
  %a = cbc.math.add %e, %u : tensor<?x8xf32>
  // CHECK: %[[S:.*]]:3 = cbc.math.split %[[LB]] : tensor<?x12xf32> -> tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  %s:3 = cbc.math.split %lb : tensor<?x12xf32> -> tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  // CHECK: cbc.math.glu %[[A:.*]] {act = "silu"} : tensor<?x8xf32> -> tensor<?x4xf32>
  %h = cbc.math.glu %a {act = "silu"} : tensor<?x8xf32> -> tensor<?x4xf32>
  // CHECK: cbc.math.glu %[[A]] {act = "gelu_tanh", layout = "interleaved"} : tensor<?x8xf32> -> tensor<?x4xf32>
  %h2 = cbc.math.glu %a {act = "gelu_tanh", layout = "interleaved"} : tensor<?x8xf32> -> tensor<?x4xf32>
  // CHECK: cbc.math.glu %[[A]] {act = "gelu"} : tensor<?x8xf32> -> tensor<?x4xf32>
  %h3 = cbc.math.glu %a {act = "gelu", layout = "halves"} : tensor<?x8xf32> -> tensor<?x4xf32>
  // CHECK: cbc.math.glu %[[A]] {act = "gpt_oss", alpha = 1.702000e+00 : f64, layout = "interleaved", limit = 7.000000e+00 : f64} : tensor<?x8xf32> -> tensor<?x4xf32>
  %h4 = cbc.math.glu %a {act = "gpt_oss", layout = "interleaved", limit = 7.0 : f64, alpha = 1.702 : f64} : tensor<?x8xf32> -> tensor<?x4xf32>
  // CHECK: %[[C:.*]] = cbc.math.softcap %[[A]] {cap = 3.000000e+01 : f64} : tensor<?x8xf32>
  %c = cbc.math.softcap %a {cap = 30.0 : f64} : tensor<?x8xf32>
  // CHECK: cbc.math.gate %[[C]], %[[C]] : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  %gt = cbc.math.gate %c, %c : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  // CHECK: cbc.math.gate %{{.*}}, %{{[0-9]+}}#0 : tensor<?x8xf32>, tensor<?x1xf32> -> tensor<?x8xf32>
  %g1:2 = cbc.math.split %a : tensor<?x8xf32> -> tensor<?x1xf32>, tensor<?x7xf32>
  %gt1 = cbc.math.gate %gt, %g1#0 {act = "sigmoid"} : tensor<?x8xf32>, tensor<?x1xf32> -> tensor<?x8xf32>
  return %gt1 : tensor<?x8xf32>
}

// CHECK-LABEL: func.func @rope
func.func @rope(%x: tensor<?x8xf32>, %pos: tensor<?xi32>, %seq: tensor<?xi32>, %plen: tensor<?xi32>) -> tensor<?x8xf32> {
  // CHECK: cbc.math.rope %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {head_dim = 4 : i64, inv_freq = array<f32: 1.000000e+00, 0.00999999977>, rotary_dim = 4 : i64} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  %0 = cbc.math.rope %x, %pos, %seq, %plen {head_dim = 4 : i64, rotary_dim = 4 : i64, inv_freq = array<f32: 1.0, 0.01>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  // Partial rotary, interleaved pairs and the longrope frequencies.
  // CHECK: cbc.math.rope
  // CHECK-SAME: attention_factor = 1.190000e+00 : f64
  // CHECK-SAME: inv_freq = array<f32: 5.000000e-01>
  // CHECK-SAME: inv_freq_long = array<f32: 2.500000e-01>
  // CHECK-SAME: long_after = 4096 : i64
  // CHECK-SAME: pairing = "interleaved"
  // CHECK-SAME: rotary_dim = 2 : i64
  %1 = cbc.math.rope %0, %pos, %seq, %plen {head_dim = 4 : i64, rotary_dim = 2 : i64, pairing = "interleaved", inv_freq = array<f32: 0.5>, attention_factor = 1.19 : f64, inv_freq_long = array<f32: 0.25>, long_after = 4096 : i64} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  // Dynamic NTK.
  // CHECK: cbc.math.rope
  // CHECK-SAME: dynamic_base = 1.000000e+04 : f64, dynamic_factor = 2.000000e+00 : f64, dynamic_max_positions = 2048 : i64
  %2 = cbc.math.rope %1, %pos, %seq, %plen {head_dim = 4 : i64, rotary_dim = 4 : i64, inv_freq = array<f32: 1.0, 0.01>, dynamic_base = 10000.0 : f64, dynamic_factor = 2.0 : f64, dynamic_max_positions = 2048 : i64} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  return %2 : tensor<?x8xf32>
}

// CHECK-LABEL: func.func @cache
func.func @cache(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %v: tensor<?x8xf32>,
                 %pos: tensor<?xi32>, %seq: tensor<?xi32>, %cu: tensor<?xi32>, %kvl: tensor<?xi32>,
                 %bt: tensor<?x?x?xi32>, %sinks: tensor<4xbf16>) -> tensor<?x16xf32> {
  // CHECK: cbc.kv.append %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {head_dim = 4 : i64, layer = 0 : i64, num_kv_heads = 2 : i64} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  cbc.kv.append %k, %v, %pos, %seq, %seq, %bt {layer = 0 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  // CHECK: cbc.kv.append
  // CHECK-SAME: group = 1 : i64, head_dim = 4 : i64, layer = 1 : i64, num_kv_heads = 2 : i64, window = 4096 : i64
  cbc.kv.append %k, %v, %pos, %seq, %seq, %bt {layer = 1 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, window = 4096 : i64, group = 1 : i64} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  // CHECK: cbc.kv.append
  // CHECK-SAME: chunk = 8192 : i64
  cbc.kv.append %k, %v, %pos, %seq, %seq, %bt {layer = 2 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, chunk = 8192 : i64} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  // CHECK: %[[O:.*]] = cbc.kv.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {head_dim = 4 : i64, layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 5.000000e-01 : f64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  %o = cbc.kv.attention %q, %pos, %seq, %cu, %kvl, %seq, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  // Sinks are an optional trailing operand.
  // CHECK: cbc.kv.attention %[[O]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {group = 1 : i64, head_dim = 4 : i64, layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 5.000000e-01 : f64, softcap = 5.000000e+01 : f64, window = 4096 : i64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<4xbf16> -> tensor<?x16xf32>
  %o1 = cbc.kv.attention %o, %pos, %seq, %cu, %kvl, %seq, %bt, %sinks {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64, window = 4096 : i64, softcap = 50.0 : f64, group = 1 : i64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<4xbf16> -> tensor<?x16xf32>
  // CHECK: cbc.kv.attention
  // CHECK-SAME: chunk = 8192 : i64
  %o2 = cbc.kv.attention %o1, %pos, %seq, %cu, %kvl, %seq, %bt {layer = 2 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64, chunk = 8192 : i64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  return %o2 : tensor<?x16xf32>
}

// CHECK-LABEL: func.func @rows
func.func @rows(%x: tensor<?x8xf32>, %rows: tensor<?xi32>) -> tensor<?x8xf32> {
  // CHECK: cbc.rows.gather %{{.*}}, %{{.*}} : tensor<?x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %0 = cbc.rows.gather %x, %rows : tensor<?x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// CHECK-LABEL: func.func @moe
func.func @moe(%x: tensor<?x8xf32>, %logits: tensor<?x4xf32>, %gu: tensor<4x12x8xbf16>,
               %down: tensor<4x8x6xbf16>, %gub: tensor<4x12xbf16>, %db: tensor<4x8xbf16>) -> tensor<?x8xf32> {
  // CHECK: %[[W:.*]], %[[IDS:.*]] = cbc.moe.route %{{.*}} {k = 2 : i64, score = "softmax"} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  %w, %ids = cbc.moe.route %logits {k = 2 : i64, score = "softmax"} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  // CHECK: cbc.moe.route %{{.*}} {k = 2 : i64, renorm = true, scaling = 2.500000e+00 : f64, score = "softmax"}
  %w1, %ids1 = cbc.moe.route %logits {k = 2 : i64, score = "softmax", renorm = true, scaling = 2.5 : f64} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  // CHECK: cbc.moe.route %{{.*}} {k = 4 : i64, score = "topk_softmax"} : tensor<?x4xf32> -> tensor<?x4xf32>, tensor<?x4xi32>
  %w2, %ids2 = cbc.moe.route %logits {k = 4 : i64, score = "topk_softmax"} : tensor<?x4xf32> -> tensor<?x4xf32>, tensor<?x4xi32>
  // CHECK: %[[Y:.*]] = cbc.moe.experts %{{.*}}, %[[IDS]], %[[W]], %{{.*}}, %{{.*}} {act = "silu"} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x12x8xbf16>, tensor<4x8x6xbf16>) -> tensor<?x8xf32>
  %y = cbc.moe.experts %x, %ids, %w, %gu, %down {act = "silu"} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x12x8xbf16>, tensor<4x8x6xbf16>) -> tensor<?x8xf32>
  // CHECK: cbc.moe.experts %[[Y]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} bias(%{{.*}}, %{{.*}}) {act = "gpt_oss", alpha = 1.702000e+00 : f64, layout = "interleaved", limit = 7.000000e+00 : f64} : (tensor<?x8xf32>, tensor<?x4xi32>, tensor<?x4xf32>, tensor<4x12x8xbf16>, tensor<4x8x6xbf16>, tensor<4x12xbf16>, tensor<4x8xbf16>) -> tensor<?x8xf32>
  %y2 = cbc.moe.experts %y, %ids2, %w2, %gu, %down bias(%gub, %db) {act = "gpt_oss", layout = "interleaved", limit = 7.0 : f64, alpha = 1.702 : f64} : (tensor<?x8xf32>, tensor<?x4xi32>, tensor<?x4xf32>, tensor<4x12x8xbf16>, tensor<4x8x6xbf16>, tensor<4x12xbf16>, tensor<4x8xbf16>) -> tensor<?x8xf32>
  return %y2 : tensor<?x8xf32>
}

// The fused ops formed by cbc-fuse-add-norm and cbc-fuse-attention-inputs.

// CHECK-LABEL: func.func @add_rms_norm
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x8xf32>, %[[Y:[^:]+]]: tensor<?x8xf32>, %[[W:[^:]+]]: tensor<8xbf16>)
func.func @add_rms_norm(%x: tensor<?x8xf32>, %y: tensor<?x8xf32>, %w: tensor<8xbf16>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  // CHECK: %[[S:[a-z0-9_]+]], %[[N:[a-z0-9_]+]] = cbc.math.add_rms_norm %[[X]], %[[Y]], %[[W]] {eps = 9.9999999999999995E-7 : f64, offset = 1.000000e+00 : f64} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<8xbf16> -> tensor<?x8xf32>, tensor<?x8xf32>
  %s, %n = cbc.math.add_rms_norm %x, %y, %w {eps = 1.0e-6 : f64, offset = 1.0 : f64} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<8xbf16> -> tensor<?x8xf32>, tensor<?x8xf32>
  // Without a weight; the default offset is not printed.
  // CHECK: %[[S2:[a-z0-9_]+]], %[[N2:[a-z0-9_]+]] = cbc.math.add_rms_norm %[[S]], %[[N]] {eps = 1.000000e-05 : f64} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>, tensor<?x8xf32>
  %s2, %n2 = cbc.math.add_rms_norm %s, %n {eps = 1.0e-5 : f64, offset = 0.0 : f64} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>, tensor<?x8xf32>
  // CHECK: return %[[S2]], %[[N2]]
  return %s2, %n2 : tensor<?x8xf32>, tensor<?x8xf32>
}

// 4 query heads, 2 kv heads of head_dim 4: q|k|v rows of 16 + 8 + 8 = 32.
// CHECK-LABEL: func.func @rope_append
// CHECK-SAME: (%[[QKV:[^:]+]]: tensor<?x32xf32>, %[[POS:[^:]+]]: tensor<?xi32>, %[[SEQ:[^:]+]]: tensor<?xi32>, %[[PLEN:[^:]+]]: tensor<?xi32>, %[[SLOTS:[^:]+]]: tensor<?xi32>, %[[BT:[^:]+]]: tensor<?x?x?xi32>, %[[QN:[^:]+]]: tensor<4xbf16>, %[[KN:[^:]+]]: tensor<4xbf16>)
func.func @rope_append(%qkv: tensor<?x32xf32>, %pos: tensor<?xi32>, %seq: tensor<?xi32>, %plen: tensor<?xi32>,
                       %slots: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %qn: tensor<4xbf16>, %kn: tensor<4xbf16>)
    -> (tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>) {
  // Without norms.
  // CHECK: cbc.kv.rope_append %[[QKV]], %[[POS]], %[[SEQ]], %[[PLEN]], %[[SLOTS]], %[[BT]] {head_dim = 4 : i64, inv_freq = array<f32: 1.000000e+00, 0.00999999977>, layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, rotary_dim = 4 : i64} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x16xf32>
  %0 = cbc.kv.rope_append %qkv, %pos, %seq, %plen, %slots, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, rotary_dim = 4 : i64, inv_freq = array<f32: 1.0, 0.01>} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x16xf32>
  // With q/k norms, their eps and offset, and a cache group.
  // CHECK: cbc.kv.rope_append %[[QKV]], %[[POS]], %[[SEQ]], %[[PLEN]], %[[SLOTS]], %[[BT]] norms(%[[QN]], %[[KN]]) {eps = 9.9999999999999995E-7 : f64, group = 1 : i64, head_dim = 4 : i64, inv_freq = array<f32: 1.000000e+00, 0.00999999977>, layer = 1 : i64, norm_offset = 1.000000e+00 : f64, num_heads = 4 : i64, num_kv_heads = 2 : i64, rotary_dim = 4 : i64} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<4xbf16>, tensor<4xbf16>) -> tensor<?x16xf32>
  %1 = cbc.kv.rope_append %qkv, %pos, %seq, %plen, %slots, %bt norms(%qn, %kn) {layer = 1 : i64, group = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, eps = 1.0e-6 : f64, norm_offset = 1.0 : f64, rotary_dim = 4 : i64, inv_freq = array<f32: 1.0, 0.01>} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<4xbf16>, tensor<4xbf16>) -> tensor<?x16xf32>
  // A sliding-window layer.
  // CHECK: cbc.kv.rope_append
  // CHECK-SAME: layer = 2 : i64
  // CHECK-SAME: window = 4096 : i64}
  %2 = cbc.kv.rope_append %qkv, %pos, %seq, %plen, %slots, %bt {layer = 2 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, window = 4096 : i64, rotary_dim = 4 : i64, inv_freq = array<f32: 1.0, 0.01>} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x16xf32>
  // Longrope: partial interleaved rotary, the long frequencies and the attention factor; and a
  // chunked layer.
  // CHECK: cbc.kv.rope_append
  // CHECK-SAME: {attention_factor = 1.190000e+00 : f64, chunk = 8192 : i64, head_dim = 4 : i64, inv_freq = array<f32: 5.000000e-01>, inv_freq_long = array<f32: 2.500000e-01>, layer = 3 : i64, long_after = 4096 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, pairing = "interleaved", rotary_dim = 2 : i64}
  %3 = cbc.kv.rope_append %qkv, %pos, %seq, %plen, %slots, %bt {layer = 3 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, chunk = 8192 : i64, rotary_dim = 2 : i64, pairing = "interleaved", inv_freq = array<f32: 0.5>, attention_factor = 1.19 : f64, inv_freq_long = array<f32: 0.25>, long_after = 4096 : i64} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x16xf32>
  // Dynamic NTK.
  // CHECK: cbc.kv.rope_append
  // CHECK-SAME: dynamic_base = 1.000000e+04 : f64, dynamic_factor = 2.000000e+00 : f64, dynamic_max_positions = 2048 : i64
  %4 = cbc.kv.rope_append %qkv, %pos, %seq, %plen, %slots, %bt {layer = 4 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, rotary_dim = 4 : i64, inv_freq = array<f32: 1.0, 0.01>, dynamic_base = 10000.0 : f64, dynamic_factor = 2.0 : f64, dynamic_max_positions = 2048 : i64} : (tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x16xf32>
  return %0, %1, %2, %3, %4 : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>
}

// Per-request state ops and the gated norm that follows a gated delta net.

// q_proj of a gated attention interleaves [q | gate] per head: 2 heads of 4 rows each, viewed
// as [2][4, 4] and regrouped segment first.
// CHECK-LABEL: func.func @regroup
func.func @regroup() -> (tensor<16x8xbf16>, tensor<20x8xbf16>) {
  // CHECK: cbc.weight.ref "q" {regroup = array<i64: 2, 4, 4>, sources = {{\[\[}}"q.weight"]]} : tensor<16x8xbf16>
  %0 = cbc.weight.ref "q" {sources = [["q.weight"]], regroup = array<i64: 2, 4, 4>} : tensor<16x8xbf16>
  // Rows past the regrouped ones (k and v here) stay in place; several segments per group.
  // CHECK: cbc.weight.ref "qkvz" {regroup = array<i64: 2, 1, 1, 2, 2>, sources = {{\[\[}}"qkvz.weight", "extra.weight"]]} : tensor<20x8xbf16>
  %1 = cbc.weight.ref "qkvz" {combine = "none", sources = [["qkvz.weight", "extra.weight"]], regroup = array<i64: 2, 1, 1, 2, 2>} : tensor<20x8xbf16>
  return %0, %1 : tensor<16x8xbf16>, tensor<20x8xbf16>
}

// CHECK-LABEL: func.func @gate_none
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x8xf32>, %[[G:[^:]+]]: tensor<?x8xf32>, %[[G1:[^:]+]]: tensor<?x1xf32>)
func.func @gate_none(%x: tensor<?x8xf32>, %g: tensor<?x8xf32>, %g1: tensor<?x1xf32>) -> tensor<?x8xf32> {
  // A plain product (LFM2's B * x and C * conv); "none" is not the default, so it is printed.
  // CHECK: %[[P:[0-9]+]] = cbc.math.gate %[[X]], %[[G]] {act = "none"} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  %0 = cbc.math.gate %x, %g {act = "none"} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  // CHECK: cbc.math.gate %[[P]], %[[G1]] {act = "none"} : tensor<?x8xf32>, tensor<?x1xf32> -> tensor<?x8xf32>
  %1 = cbc.math.gate %0, %g1 {act = "none"} : tensor<?x8xf32>, tensor<?x1xf32> -> tensor<?x8xf32>
  return %1 : tensor<?x8xf32>
}

// 16 features in groups of 4 (one value head each) or as a whole row.
// CHECK-LABEL: func.func @rms_norm_gated
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x16xf32>, %[[Z:[^:]+]]: tensor<?x16xf32>, %[[W4:[^:]+]]: tensor<4xbf16>, %[[W16:[^:]+]]: tensor<16xf32>)
func.func @rms_norm_gated(%x: tensor<?x16xf32>, %z: tensor<?x16xf32>, %w4: tensor<4xbf16>, %w16: tensor<16xf32>)
    -> (tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>) {
  // Gated delta net: norm, then silu gate; the defaults (act, order, offset) are not printed.
  // CHECK: cbc.math.rms_norm_gated %[[X]], %[[Z]], %[[W4]] {eps = 9.9999999999999995E-7 : f64, group = 4 : i64} : tensor<?x16xf32>, tensor<?x16xf32>, tensor<4xbf16> -> tensor<?x16xf32>
  %0 = cbc.math.rms_norm_gated %x, %z, %w4 {eps = 1.0e-6 : f64, group = 4 : i64, act = "silu", order = "norm_gate", offset = 0.0 : f64} : tensor<?x16xf32>, tensor<?x16xf32>, tensor<4xbf16> -> tensor<?x16xf32>
  // Mamba2 style: gate first, over the whole row, with a zero-centred weight.
  // CHECK: cbc.math.rms_norm_gated %[[X]], %[[Z]], %[[W16]] {eps = 1.000000e-05 : f64, offset = 1.000000e+00 : f64, order = "gate_norm"} : tensor<?x16xf32>, tensor<?x16xf32>, tensor<16xf32> -> tensor<?x16xf32>
  %1 = cbc.math.rms_norm_gated %x, %z, %w16 {eps = 1.0e-5 : f64, order = "gate_norm", offset = 1.0 : f64} : tensor<?x16xf32>, tensor<?x16xf32>, tensor<16xf32> -> tensor<?x16xf32>
  // Without a weight, a sigmoid gate.
  // CHECK: cbc.math.rms_norm_gated %[[X]], %[[Z]] {act = "sigmoid", eps = 9.9999999999999995E-7 : f64, group = 8 : i64} : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  %2 = cbc.math.rms_norm_gated %x, %z {eps = 1.0e-6 : f64, group = 8 : i64, act = "sigmoid"} : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  // CHECK: cbc.math.rms_norm_gated %[[X]], %[[Z]] {act = "sigmoid", eps = 9.9999999999999995E-7 : f64, order = "gate_norm"} : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  %3 = cbc.math.rms_norm_gated %x, %z {eps = 1.0e-6 : f64, act = "sigmoid", order = "gate_norm"} : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  return %0, %1, %2, %3 : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>
}

// A depthwise conv over 8 channels with kernel 4 (weight [C, 1, K], as torch stores it).
// CHECK-LABEL: func.func @state_conv1d
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x8xf32>, %[[W:[^:]+]]: tensor<8x1x4xbf16>, %[[B:[^:]+]]: tensor<8xbf16>, %[[CU:[^:]+]]: tensor<?xi32>, %[[SLOTS:[^:]+]]: tensor<?xi32>, %[[INIT:[^:]+]]: tensor<?xi32>)
func.func @state_conv1d(%x: tensor<?x8xf32>, %w: tensor<8x1x4xbf16>, %b: tensor<8xbf16>, %cu: tensor<?xi32>,
                        %slots: tensor<?xi32>, %init: tensor<?xi32>) -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) {
  // Without a bias; act "none" and state "conv" are the defaults.
  // CHECK: %[[C0:[0-9]+]] = cbc.state.conv1d %[[X]], %[[W]], %[[CU]], %[[SLOTS]], %[[INIT]] {layer = 0 : i64} : (tensor<?x8xf32>, tensor<8x1x4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  %0 = cbc.state.conv1d %x, %w, %cu, %slots, %init {layer = 0 : i64, act = "none", state = "conv"} : (tensor<?x8xf32>, tensor<8x1x4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  // With a bias and silu (the gated delta net's conv).
  // CHECK: cbc.state.conv1d %[[C0]], %[[W]] bias(%[[B]]), %[[CU]], %[[SLOTS]], %[[INIT]] {act = "silu", layer = 3 : i64} : (tensor<?x8xf32>, tensor<8x1x4xbf16>, tensor<8xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  %1 = cbc.state.conv1d %0, %w bias(%b), %cu, %slots, %init {layer = 3 : i64, act = "silu"} : (tensor<?x8xf32>, tensor<8x1x4xbf16>, tensor<8xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  // With a bias, act none, and a state name other than the default.
  // CHECK: cbc.state.conv1d %[[X]], %[[W]] bias(%[[B]]), %[[CU]], %[[SLOTS]], %[[INIT]] {layer = 1 : i64, state = "conv_b"} : (tensor<?x8xf32>, tensor<8x1x4xbf16>, tensor<8xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  %2 = cbc.state.conv1d %x, %w bias(%b), %cu, %slots, %init {layer = 1 : i64, state = "conv_b"} : (tensor<?x8xf32>, tensor<8x1x4xbf16>, tensor<8xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return %0, %1, %2 : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
}

// A gated delta scan: 2 key heads of 4 and 4 value heads of 2, so q and k are [T, 8], v is
// [T, 8], a and b are [T, 4], and the result is [T, 8].
// CHECK-LABEL: func.func @state_scan
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x8xf32>, %[[K:[^:]+]]: tensor<?x8xf32>, %[[V:[^:]+]]: tensor<?x8xf32>, %[[A:[^:]+]]: tensor<?x4xf32>, %[[B:[^:]+]]: tensor<?x4xf32>, %[[ALOG:[^:]+]]: tensor<4xf32>, %[[DT:[^:]+]]: tensor<4xbf16>, %[[CU:[^:]+]]: tensor<?xi32>, %[[SLOTS:[^:]+]]: tensor<?xi32>, %[[INIT:[^:]+]]: tensor<?xi32>)
func.func @state_scan(%q: tensor<?x8xf32>, %k: tensor<?x8xf32>, %v: tensor<?x8xf32>, %a: tensor<?x4xf32>,
                      %b: tensor<?x4xf32>, %alog: tensor<4xf32>, %dt: tensor<4xbf16>, %cu: tensor<?xi32>,
                      %slots: tensor<?xi32>, %init: tensor<?xi32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  // CHECK: %[[O:[0-9]+]] = cbc.state.scan %[[Q]], %[[K]], %[[V]], %[[A]], %[[B]], %[[ALOG]], %[[DT]], %[[CU]], %[[SLOTS]], %[[INIT]] {k_dim = 4 : i64, kind = "gated_delta", layer = 0 : i64, num_k_heads = 2 : i64, num_v_heads = 4 : i64, qk_l2norm, v_dim = 2 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  %0 = cbc.state.scan %q, %k, %v, %a, %b, %alog, %dt, %cu, %slots, %init {kind = "gated_delta", layer = 0 : i64, num_k_heads = 2 : i64, num_v_heads = 4 : i64, k_dim = 4 : i64, v_dim = 2 : i64, qk_l2norm, beta_scale = 1.0 : f64, state = "recurrent"} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  // Without the l2 norm, with a beta scale of 2 (negative eigenvalues) and another state name.
  // CHECK: cbc.state.scan %[[O]], %[[K]], %[[V]], %[[A]], %[[B]], %[[ALOG]], %[[DT]], %[[CU]], %[[SLOTS]], %[[INIT]] {beta_scale = 2.000000e+00 : f64, k_dim = 4 : i64, kind = "gated_delta", layer = 5 : i64, num_k_heads = 2 : i64, num_v_heads = 4 : i64, state = "ssm", v_dim = 2 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  %1 = cbc.state.scan %0, %k, %v, %a, %b, %alog, %dt, %cu, %slots, %init {kind = "gated_delta", layer = 5 : i64, num_k_heads = 2 : i64, num_v_heads = 4 : i64, k_dim = 4 : i64, v_dim = 2 : i64, beta_scale = 2.0 : f64, state = "ssm"} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return %0, %1 : tensor<?x8xf32>, tensor<?x8xf32>
}

// Weight transforms for per-head projections and constant multipliers: zamba's x_proj_weight
// [2, 6, 4] on a block diagonal [12, 8], its rows regrouped per head; Falcon-H1's muP factors
// on runs of rows (a multiplier on k only, one on the whole output).
// CHECK-LABEL: func.func @weight_transforms
func.func @weight_transforms() -> (tensor<12x8xbf16>, tensor<12x8xbf16>, tensor<8xbf16>) {
  // CHECK: cbc.weight.ref "x_proj" {block_diag = 2 : i64, regroup = array<i64: 2, 2, 2, 2>, sources = {{\[\[}}"mamba.x_proj_weight"]]} : tensor<12x8xbf16>
  %0 = cbc.weight.ref "x_proj" {sources = [["mamba.x_proj_weight"]], block_diag = 2 : i64, regroup = array<i64: 2, 2, 2, 2>} : tensor<12x8xbf16>
  // CHECK: cbc.weight.ref "qkv" {row_scales = array<f64: 4.000000e+00, 1.500000e+00, 4.000000e+00, 7.500000e-01, 4.000000e+00, 1.500000e+00>, sources = {{\[\[}}"q.weight", "k.weight", "v.weight"]]} : tensor<12x8xbf16>
  %1 = cbc.weight.ref "qkv" {sources = [["q.weight", "k.weight", "v.weight"]], row_scales = array<f64: 4.0, 1.5, 4.0, 0.75, 4.0, 1.5>} : tensor<12x8xbf16>
  // CHECK: cbc.weight.ref "o_bias" {row_scales = array<f64: 8.000000e+00, 7.500000e-01>, sources = {{\[\[}}"o.bias"]]} : tensor<8xbf16>
  %2 = cbc.weight.ref "o_bias" {sources = [["o.bias"]], row_scales = array<f64: 8.0, 0.75>} : tensor<8xbf16>
  return %0, %1, %2 : tensor<12x8xbf16>, tensor<12x8xbf16>, tensor<8xbf16>
}

// Columns side by side (Zamba's [h | embeddings]); one input is a plain copy.
// CHECK-LABEL: func.func @concat
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x8xf32>, %[[E:[^:]+]]: tensor<?x4xf32>)
func.func @concat(%x: tensor<?x8xf32>, %e: tensor<?x4xf32>) -> (tensor<?x12xf32>, tensor<?x8xf32>) {
  // CHECK: cbc.math.concat %[[X]], %[[E]] : tensor<?x8xf32>, tensor<?x4xf32> -> tensor<?x12xf32>
  %0 = cbc.math.concat %x, %e : tensor<?x8xf32>, tensor<?x4xf32> -> tensor<?x12xf32>
  // CHECK: cbc.math.concat %[[X]] : tensor<?x8xf32> -> tensor<?x8xf32>
  %1 = cbc.math.concat %x : tensor<?x8xf32> -> tensor<?x8xf32>
  return %0, %1 : tensor<?x12xf32>, tensor<?x8xf32>
}

// Ungated experts (Nemotron-H): gate_up holds only up [E, I, H]; optional biases [E, I], [E, H].
// CHECK-LABEL: func.func @experts_ungated
func.func @experts_ungated(%x: tensor<?x8xf32>, %ids: tensor<?x2xi32>, %w: tensor<?x2xf32>, %u: tensor<4x6x8xbf16>,
                           %d: tensor<4x8x6xbf16>, %ub: tensor<4x6xbf16>, %db: tensor<4x8xbf16>) -> tensor<?x8xf32> {
  // CHECK: %[[Y:.*]] = cbc.moe.experts %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {act = "relu2", layout = "ungated"} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x6x8xbf16>, tensor<4x8x6xbf16>) -> tensor<?x8xf32>
  %y = cbc.moe.experts %x, %ids, %w, %u, %d {act = "relu2", layout = "ungated"} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x6x8xbf16>, tensor<4x8x6xbf16>) -> tensor<?x8xf32>
  // CHECK: cbc.moe.experts %[[Y]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} bias(%{{.*}}, %{{.*}}) {act = "silu", layout = "ungated"} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x6x8xbf16>, tensor<4x8x6xbf16>, tensor<4x6xbf16>, tensor<4x8xbf16>) -> tensor<?x8xf32>
  %y2 = cbc.moe.experts %y, %ids, %w, %u, %d bias(%ub, %db) {act = "silu", layout = "ungated"} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x6x8xbf16>, tensor<4x8x6xbf16>, tensor<4x6xbf16>, tensor<4x8xbf16>) -> tensor<?x8xf32>
  return %y2 : tensor<?x8xf32>
}
