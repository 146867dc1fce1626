// RUN: cbc-opt %s -split-input-file -cbc-assign-device-types | FileCheck %s
// RUN: cbc-opt %s -split-input-file -cbc-assign-device-types="activation-dtype=f32" | FileCheck %s --check-prefix=F32

// Tests that activations take the activation type, weights their own element type and index
// rows i32, and that the values whose rounding would flip a discrete choice or round twice stay
// f32: the router's logits and its bias (which keeps the type it was declared in), the mixing
// weights, the logits leaving the device and the input of the final softcap.

// CHECK-LABEL: func.func @step
// CHECK: cbc.weight.ref "router" {{.*}} : tensor<4x4xbf16>{{$}}
// CHECK: cbc.weight.ref "router_bias" {declared = bf16, {{.*}} : tensor<4xf32>{{$}}
// CHECK: cbc.weight.ref "head" {{.*}} : tensor<8x4xbf16>{{$}}
// CHECK: cbc.math.embed {{.*}} -> tensor<?x4xbf16>{{$}}
// CHECK: cbc.math.linear {{.*}} -> tensor<?x4xf32>{{$}}
// CHECK: cbc.moe.route {{.*}} -> tensor<?x2xf32>, tensor<?x2xi32>{{$}}
// CHECK: cbc.math.linear {{.*}} -> tensor<?x4xbf16>{{$}}
// CHECK: cbc.math.linear {{.*}} -> tensor<?x8xf32>{{$}}
// CHECK: cbc.math.softcap {{.*}} : tensor<?x8xf32>{{$}}
// F32-LABEL: func.func @step
// F32: cbc.weight.ref "router" {sources = {{.*}} : tensor<4x4xbf16>{{$}}
// F32: cbc.weight.ref "router_bias" {declared = bf16, {{.*}} : tensor<4xf32>{{$}}
// F32: cbc.weight.ref "head" {sources = {{.*}} : tensor<8x4xbf16>{{$}}
// F32: cbc.math.embed {{.*}} -> tensor<?x4xf32>{{$}}
// F32: cbc.math.linear {{.*}} -> tensor<?x4xf32>{{$}}
func.func @step(%tok: tensor<?xi32>) -> tensor<?x8xf32> {
  %table = cbc.weight.ref "embed" {sources = [["embed"]]} : tensor<8x4xbf16>
  %router = cbc.weight.ref "router" {sources = [["router"]]} : tensor<4x4xbf16>
  %rbias = cbc.weight.ref "router_bias" {sources = [["router_bias"]]} : tensor<4xbf16>
  %head = cbc.weight.ref "head" {sources = [["head"]]} : tensor<8x4xbf16>
  %x = cbc.math.embed %tok, %table : tensor<?xi32>, tensor<8x4xbf16> -> tensor<?x4xf32>
  %logits = cbc.math.linear %x, %router, %rbias : tensor<?x4xf32>, tensor<4x4xbf16>, tensor<4xbf16> -> tensor<?x4xf32>
  %w, %ids = cbc.moe.route %logits {k = 2 : i64, score = #cbc.score<softmax>} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  %h = cbc.math.linear %x, %router : tensor<?x4xf32>, tensor<4x4xbf16> -> tensor<?x4xf32>
  %out = cbc.math.linear %h, %head : tensor<?x4xf32>, tensor<8x4xbf16> -> tensor<?x8xf32>
  %capped = cbc.math.softcap %out {cap = 30.0 : f64} : tensor<?x8xf32>
  return %capped : tensor<?x8xf32>
}

// -----

// Tests that the q|k|v input of cbc.kv.rope_append stays f32 when a kernel makes it (here an
// add, which then reads bf16 and writes f32), so that the cached k is rounded once, and keeps
// the activation type from a GEMM.
// CHECK-LABEL: func.func @step
// CHECK: %[[GEMM:.*]] = cbc.math.linear {{.*}} -> tensor<?x12xbf16>{{$}}
// CHECK: cbc.kv.rope_append %[[GEMM]]
// CHECK: %[[SUM:.*]] = cbc.math.add {{.*}} : (tensor<?x12xbf16>, tensor<?x12xbf16>) -> tensor<?x12xf32>{{$}}
// CHECK: cbc.kv.rope_append %[[SUM]]
func.func @step(%x: tensor<?x4xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) -> tensor<?x4xf32> {
  %w = cbc.weight.ref "qkv" {sources = [["qkv"]]} : tensor<12x4xbf16>
  %qkv = cbc.math.linear %x, %w : tensor<?x4xf32>, tensor<12x4xbf16> -> tensor<?x12xf32>
  %q0 = cbc.kv.rope_append %qkv, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.1>>} : (tensor<?x12xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x4xf32>
  %sum = cbc.math.add %qkv, %qkv : tensor<?x12xf32>
  %q1 = cbc.kv.rope_append %sum, %p, %p, %p, %p, %bt {layer = 1 : i64, num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.1>>} : (tensor<?x12xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x4xf32>
  %o = cbc.math.add %q0, %q1 : tensor<?x4xf32>
  return %o : tensor<?x4xf32>
}

// -----

// Tests that a second run leaves the device types, and the type a weight was declared in, as they are.
// CHECK-LABEL: func.func @step
// CHECK: cbc.weight.ref "router_bias" {declared = bf16, {{.*}} : tensor<4xf32>{{$}}
func.func @step(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %router = cbc.weight.ref "router" {sources = [["router"]]} : tensor<4x4xbf16>
  %rbias = cbc.weight.ref "router_bias" {declared = bf16, sources = [["router_bias"]]} : tensor<4xf32>
  %logits = cbc.math.linear %x, %router, %rbias : tensor<?x4xf32>, tensor<4x4xbf16>, tensor<4xf32> -> tensor<?x4xf32>
  %w, %ids = cbc.moe.route %logits {k = 2 : i64, score = #cbc.score<softmax>} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return %logits : tensor<?x4xf32>
}

// -----

// Tests that the weights cbc.moe.slot_linear mixes with stay f32 whatever makes them (here a
// learned scale on the router's, which would otherwise take the activation type), as its
// combine kernel reads them.
// CHECK-LABEL: func.func @step
// CHECK: %[[MIX:.*]] = cbc.math.mul {{.*}} -> tensor<?x2xf32>{{$}}
// CHECK: cbc.moe.slot_linear {{.*}} mix(%[[MIX]] : tensor<?x2xf32>)
func.func @step(%x: tensor<?x4xf32>, %h: tensor<?x8xf32>) -> tensor<?x4xf32> {
  %router = cbc.weight.ref "router" {sources = [["router"]]} : tensor<4x4xbf16>
  %scale = cbc.weight.ref "scale" {sources = [["scale"]]} : tensor<1xbf16>
  %wo = cbc.weight.ref "wo" {sources = [["wo"]]} : tensor<4x4x4xbf16>
  %logits = cbc.math.linear %x, %router : tensor<?x4xf32>, tensor<4x4xbf16> -> tensor<?x4xf32>
  %w, %ids = cbc.moe.route %logits {k = 2 : i64, score = #cbc.score<topk_softmax>} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  %ws = cbc.math.mul %w, %scale : tensor<?x2xf32>, tensor<1xbf16> -> tensor<?x2xf32>
  %o = cbc.moe.slot_linear %h, %ids, %wo mix(%ws : tensor<?x2xf32>) : tensor<?x8xf32>, tensor<?x2xi32>, tensor<4x4x4xbf16> -> tensor<?x4xf32>
  return %o : tensor<?x4xf32>
}

// -----

// Tests that router logits soft-capped before the route stay f32 on both sides of the cap.
// CHECK-LABEL: func.func @step
// CHECK: %[[L:.*]] = cbc.math.linear {{.*}} -> tensor<?x4xf32>{{$}}
// CHECK: cbc.math.softcap %[[L]] {{.*}} : tensor<?x4xf32>{{$}}
func.func @step(%x: tensor<?x4xf32>) -> tensor<?x2xf32> {
  %router = cbc.weight.ref "router" {sources = [["router"]]} : tensor<4x4xbf16>
  %logits = cbc.math.linear %x, %router : tensor<?x4xf32>, tensor<4x4xbf16> -> tensor<?x4xf32>
  %capped = cbc.math.softcap %logits {cap = 2.0 : f64} : tensor<?x4xf32>
  %w, %ids = cbc.moe.route %capped {k = 2 : i64, score = #cbc.score<sigmoid>} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return %w : tensor<?x2xf32>
}

// -----

// Tests that a hyper-connection's coefficients stay f32 from its projection on, with its base
// and scale, while the streams it mixes take the activation type.
// CHECK-LABEL: func.func @step
// CHECK: cbc.weight.ref "base" {declared = bf16, {{.*}} : tensor<8xf32>{{$}}
// CHECK: cbc.weight.ref "scale" {declared = bf16, {{.*}} : tensor<2xf32>{{$}}
// CHECK: %[[M:.*]] = cbc.math.linear {{.*}} -> tensor<?x8xf32>{{$}}
// CHECK: %[[W:.*]] = cbc.stream.hc_weights %[[M]], {{.*}} -> tensor<?x8xf32>{{$}}
// CHECK: cbc.stream.collapse {{.*}} : tensor<?x16xbf16>, tensor<?x8xf32> -> tensor<?x4xf32>{{$}}
func.func @step(%x: tensor<?x16xf32>) -> tensor<?x4xf32> {
  %fn = cbc.weight.ref "fn" {sources = [["fn"]]} : tensor<8x16xbf16>
  %base = cbc.weight.ref "base" {sources = [["base"]]} : tensor<8xbf16>
  %scale = cbc.weight.ref "scale" {sources = [["scale"]]} : tensor<2xbf16>
  %n = cbc.math.rms_norm %x {eps = 1.0e-6 : f64} : tensor<?x16xf32> -> tensor<?x16xf32>
  %m = cbc.math.linear %n, %fn : tensor<?x16xf32>, tensor<8x16xbf16> -> tensor<?x8xf32>
  %w = cbc.stream.hc_weights %m, %base, %scale {kind = #cbc.hc_kind<independent>, streams = 4 : i64, magnitude = 2.0 : f64, eps = 1.0e-6 : f64, post_eps = 1.0e-6 : f64} : tensor<?x8xf32>, tensor<8xbf16>, tensor<2xbf16> -> tensor<?x8xf32>
  %s = cbc.math.add %x, %x : tensor<?x16xf32>
  %c = cbc.stream.collapse %s, %w {count = 4 : i64} : tensor<?x16xf32>, tensor<?x8xf32> -> tensor<?x4xf32>
  return %c : tensor<?x4xf32>
}

// -----

// Tests that the mLSTM cell's operands stay f32 from their projections on, through the gates'
// soft cap and the splits (its denominator |q . n| cancels and its gates enter exponentials),
// with the gate bias read in f32 (the output gate, which is not the cell's, keeps the activation
// type), and that its output stays f32 for the per-head norm after it.
// CHECK-LABEL: func.func @step
// CHECK: cbc.math.linear {{.*}} -> tensor<?x384xf32>{{$}}
// CHECK: cbc.math.split {{.*}} -> tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x128xf32>, tensor<?x128xbf16>{{$}}
// CHECK: cbc.weight.ref "gates_bias" {declared = bf16, {{.*}} : tensor<8xf32>{{$}}
// CHECK: cbc.math.linear {{.*}} -> tensor<?x8xf32>{{$}}
// CHECK: cbc.math.softcap {{.*}} : tensor<?x8xf32>{{$}}
// CHECK: cbc.math.split {{.*}} -> tensor<?x4xf32>, tensor<?x4xf32>{{$}}
// CHECK: cbc.state.mlstm {{.*}} -> tensor<?x128xf32>{{$}}
func.func @step(%x: tensor<?x32xf32>, %p: tensor<?xi32>) -> tensor<?x128xf32> {
  %w = cbc.weight.ref "qkvo" {sources = [["qkvo"]]} : tensor<384x32xbf16>
  %qkvo = cbc.math.linear %x, %w : tensor<?x32xf32>, tensor<384x32xbf16> -> tensor<?x384xf32>
  %s:4 = cbc.math.split %qkvo : tensor<?x384xf32> -> tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x128xf32>, tensor<?x128xf32>
  %gw = cbc.weight.ref "gates" {sources = [["gates"]]} : tensor<8x32xbf16>
  %gb = cbc.weight.ref "gates_bias" {sources = [["gates_bias"]]} : tensor<8xbf16>
  %g = cbc.math.linear %x, %gw, %gb : tensor<?x32xf32>, tensor<8x32xbf16>, tensor<8xbf16> -> tensor<?x8xf32>
  %c = cbc.math.softcap %g {cap = 15.0 : f64} : tensor<?x8xf32>
  %if:2 = cbc.math.split %c : tensor<?x8xf32> -> tensor<?x4xf32>, tensor<?x4xf32>
  %h = cbc.state.mlstm %s#0, %s#1, %s#2, %if#0, %if#1, %p, %p, %p, %p {k_dim = 16 : i64, layer = 0 : i64, num_heads = 4 : i64, v_dim = 32 : i64} : (tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x128xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x128xf32>
  %nw = cbc.weight.ref "norm" {sources = [["norm"]]} : tensor<128xbf16>
  %n = cbc.math.layer_norm %h, %nw {eps = 1.0e-6 : f64, group = 32 : i64} : tensor<?x128xf32>, tensor<128xbf16> -> tensor<?x128xf32>
  return %n : tensor<?x128xf32>
}
