// RUN: cbc-opt %s --cbc-fuse-attention-inputs | FileCheck %s
// The output is valid IR that parses again.
// RUN: cbc-opt %s --cbc-fuse-attention-inputs | cbc-opt | FileCheck %s

// Shapes: 2 query heads and 1 kv head of head_dim 4, so q|k|v rows are 8 + 4 + 4 = 16 wide.
// Every step input is its own argument so that the fused op's operands can be told apart:
// qkv, positions, seq_ids, cu_seqlens, kv_lens, prompt_lens, slots, block_tables.

// The llama chain: split, rope q and rope k with the same schedule, append of rope(k) and v.
// It becomes one rope_append (qkv, positions, seq_ids, prompt_lens, slots, block_tables) whose
// result, the rotated q, feeds the attention. layer, group and the rope attributes carry over.
// CHECK-LABEL: func.func @llama
// CHECK-SAME: (%[[QKV:[^:]+]]: tensor<?x16xf32>, %[[POS:[^:]+]]: tensor<?xi32>, %[[SEQ:[^:]+]]: tensor<?xi32>, %[[CU:[^:]+]]: tensor<?xi32>, %[[KVL:[^:]+]]: tensor<?xi32>, %[[PLEN:[^:]+]]: tensor<?xi32>, %[[SLOTS:[^:]+]]: tensor<?xi32>, %[[BT:[^:]+]]: tensor<?x?x?xi32>)
// CHECK-NEXT: %[[Q:[0-9]+]] = cbc.kv.rope_append %[[QKV]], %[[POS]], %[[SEQ]], %[[PLEN]], %[[SLOTS]], %[[BT]] {group = 3 : i64, head_dim = 4 : i64, layer = 5 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.000000e+00, 0.00999999977>>} : (tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x8xf32>
// CHECK-NEXT: %[[O:[0-9]+]] = cbc.kv.attention %[[Q]], %[[POS]], %[[SEQ]], %[[CU]], %[[KVL]], %[[SLOTS]], %[[BT]] {group = 3 : i64,
// CHECK-NEXT: return %[[O]]
func.func @llama(%qkv: tensor<?x16xf32>, %pos: tensor<?xi32>, %seq: tensor<?xi32>, %cu: tensor<?xi32>,
                 %kvl: tensor<?xi32>, %plen: tensor<?xi32>, %slots: tensor<?xi32>, %bt: tensor<?x?x?xi32>) -> tensor<?x8xf32> {
  %s:3 = cbc.math.split %qkv : tensor<?x16xf32> -> tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  %q = cbc.math.rope %s#0, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  %k = cbc.math.rope %s#1, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4xf32>
  cbc.kv.append %k, %s#2, %pos, %seq, %slots, %bt {layer = 5 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, group = 3 : i64} : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  %o = cbc.kv.attention %q, %pos, %seq, %cu, %kvl, %slots, %bt {layer = 5 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, scale = 0.5 : f64, group = 3 : i64} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x8xf32>
  return %o : tensor<?x8xf32>
}

// A windowed layer with partial, interleaved rotary, an attention factor and the longrope
// frequencies: the window comes from the append, the rest from the ropes.
// CHECK-LABEL: func.func @window_longrope
// CHECK-NEXT: %[[Q:[0-9]+]] = cbc.kv.rope_append %arg0, %arg1, %arg2, %arg5, %arg6, %arg7 {head_dim = 4 : i64, layer = 1 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, retention = #cbc.retention<window, 128>, rope = #cbc.rope<head_dim = 4, rotary_dim = 2, pairing = interleaved, inv_freq = array<f32: 5.000000e-01>, attention_factor = 1.190000e+00, inv_freq_long = array<f32: 2.500000e-01>, long_after = 4096>} : (tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>) -> tensor<?x8xf32>
// CHECK-NEXT: cbc.kv.attention %[[Q]],
func.func @window_longrope(%qkv: tensor<?x16xf32>, %pos: tensor<?xi32>, %seq: tensor<?xi32>, %cu: tensor<?xi32>,
                           %kvl: tensor<?xi32>, %plen: tensor<?xi32>, %slots: tensor<?xi32>, %bt: tensor<?x?x?xi32>) -> tensor<?x8xf32> {
  %s:3 = cbc.math.split %qkv : tensor<?x16xf32> -> tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  %q = cbc.math.rope %s#0, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 2, pairing = interleaved, inv_freq = array<f32: 0.5>, attention_factor = 1.19, inv_freq_long = array<f32: 0.25>, long_after = 4096>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  %k = cbc.math.rope %s#1, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 2, pairing = interleaved, inv_freq = array<f32: 0.5>, attention_factor = 1.19, inv_freq_long = array<f32: 0.25>, long_after = 4096>} : tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4xf32>
  cbc.kv.append %k, %s#2, %pos, %seq, %slots, %bt {layer = 1 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, retention = #cbc.retention<window, 128>} : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  %o = cbc.kv.attention %q, %pos, %seq, %cu, %kvl, %slots, %bt {layer = 1 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, scale = 0.5 : f64, retention = #cbc.retention<window, 128>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x8xf32>
  return %o : tensor<?x8xf32>
}

// Dynamic NTK and a chunked layer.
// CHECK-LABEL: func.func @dynamic_chunk
// CHECK-NEXT: cbc.kv.rope_append
// CHECK-SAME: retention = #cbc.retention<chunk, 8192>, rope = #cbc.rope<{{.*}}dynamic_base = 1.000000e+04, dynamic_factor = 2.000000e+00, dynamic_max_positions = 2048>
// CHECK-NEXT: cbc.kv.attention
func.func @dynamic_chunk(%qkv: tensor<?x16xf32>, %pos: tensor<?xi32>, %seq: tensor<?xi32>, %cu: tensor<?xi32>,
                         %kvl: tensor<?xi32>, %plen: tensor<?xi32>, %slots: tensor<?xi32>, %bt: tensor<?x?x?xi32>) -> tensor<?x8xf32> {
  %s:3 = cbc.math.split %qkv : tensor<?x16xf32> -> tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  %q = cbc.math.rope %s#0, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>, dynamic_base = 10000.0, dynamic_factor = 2.0, dynamic_max_positions = 2048>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  %k = cbc.math.rope %s#1, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>, dynamic_base = 10000.0, dynamic_factor = 2.0, dynamic_max_positions = 2048>} : tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4xf32>
  cbc.kv.append %k, %s#2, %pos, %seq, %slots, %bt {layer = 0 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, retention = #cbc.retention<chunk, 8192>} : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  %o = cbc.kv.attention %q, %pos, %seq, %cu, %kvl, %slots, %bt {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, scale = 0.5 : f64, retention = #cbc.retention<chunk, 8192>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x8xf32>
  return %o : tensor<?x8xf32>
}

// The qwen3 / gemma3 chain: per-head RMS norms of q and k between the split and the ropes. The
// norm weights become the norms(q, k) operands; eps and the offset become eps and norm_offset.
// CHECK-LABEL: func.func @qk_norm
// CHECK-SAME: (%[[QKV:[^:]+]]: tensor<?x16xf32>, %[[POS:[^:]+]]: tensor<?xi32>, %[[SEQ:[^:]+]]: tensor<?xi32>, %[[CU:[^:]+]]: tensor<?xi32>, %[[KVL:[^:]+]]: tensor<?xi32>, %[[PLEN:[^:]+]]: tensor<?xi32>, %[[SLOTS:[^:]+]]: tensor<?xi32>, %[[BT:[^:]+]]: tensor<?x?x?xi32>, %[[QN:[^:]+]]: tensor<4xbf16>, %[[KN:[^:]+]]: tensor<4xbf16>)
// CHECK-NEXT: %[[Q:[0-9]+]] = cbc.kv.rope_append %[[QKV]], %[[POS]], %[[SEQ]], %[[PLEN]], %[[SLOTS]], %[[BT]] norms(%[[QN]], %[[KN]]) {eps = 9.9999999999999995E-7 : f64, group = 0 : i64, head_dim = 4 : i64, layer = 0 : i64, norm_offset = 1.000000e+00 : f64, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.000000e+00, 0.00999999977>>} : (tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<4xbf16>, tensor<4xbf16>) -> tensor<?x8xf32>
// CHECK-NEXT: %[[O:[0-9]+]] = cbc.kv.attention %[[Q]], %[[POS]], %[[SEQ]], %[[CU]], %[[KVL]], %[[SLOTS]], %[[BT]]
// CHECK-NEXT: return %[[O]]
func.func @qk_norm(%qkv: tensor<?x16xf32>, %pos: tensor<?xi32>, %seq: tensor<?xi32>, %cu: tensor<?xi32>,
                   %kvl: tensor<?xi32>, %plen: tensor<?xi32>, %slots: tensor<?xi32>, %bt: tensor<?x?x?xi32>,
                   %qw: tensor<4xbf16>, %kw: tensor<4xbf16>) -> tensor<?x8xf32> {
  %s:3 = cbc.math.split %qkv : tensor<?x16xf32> -> tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  %qn = cbc.math.rms_norm %s#0, %qw {eps = 1.0e-6 : f64, group = 4 : i64, offset = 1.0 : f64} : tensor<?x8xf32>, tensor<4xbf16> -> tensor<?x8xf32>
  %kn = cbc.math.rms_norm %s#1, %kw {eps = 1.0e-6 : f64, group = 4 : i64, offset = 1.0 : f64} : tensor<?x4xf32>, tensor<4xbf16> -> tensor<?x4xf32>
  %q = cbc.math.rope %qn, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  %k = cbc.math.rope %kn, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4xf32>
  cbc.kv.append %k, %s#2, %pos, %seq, %slots, %bt {layer = 0 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, group = 0 : i64} : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  %o = cbc.kv.attention %q, %pos, %seq, %cu, %kvl, %slots, %bt {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, scale = 0.5 : f64, group = 0 : i64} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x8xf32>
  return %o : tensor<?x8xf32>
}

// Two layers in one function: each chain fuses on its own, the second reading the first's
// attention through its own projection input.
// CHECK-LABEL: func.func @two_layers
// CHECK-NEXT: %[[Q0:[0-9]+]] = cbc.kv.rope_append %arg0, {{.*}}layer = 0 : i64
// CHECK-NEXT: %[[O0:[0-9]+]] = cbc.kv.attention %[[Q0]], {{.*}}layer = 0 : i64
// CHECK-NEXT: %[[Q1:[0-9]+]] = cbc.kv.rope_append %arg8, {{.*}}layer = 1 : i64
// CHECK-NEXT: %[[O1:[0-9]+]] = cbc.kv.attention %[[Q1]], {{.*}}layer = 1 : i64
// CHECK-NEXT: return %[[O0]], %[[O1]]
func.func @two_layers(%qkv: tensor<?x16xf32>, %pos: tensor<?xi32>, %seq: tensor<?xi32>, %cu: tensor<?xi32>,
                      %kvl: tensor<?xi32>, %plen: tensor<?xi32>, %slots: tensor<?xi32>, %bt: tensor<?x?x?xi32>,
                      %qkv1: tensor<?x16xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %s:3 = cbc.math.split %qkv : tensor<?x16xf32> -> tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  %q = cbc.math.rope %s#0, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  %k = cbc.math.rope %s#1, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4xf32>
  cbc.kv.append %k, %s#2, %pos, %seq, %slots, %bt {layer = 0 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64} : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  %o = cbc.kv.attention %q, %pos, %seq, %cu, %kvl, %slots, %bt {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, scale = 0.5 : f64} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x8xf32>
  %s1:3 = cbc.math.split %qkv1 : tensor<?x16xf32> -> tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  %q1 = cbc.math.rope %s1#0, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  %k1 = cbc.math.rope %s1#1, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4xf32>
  cbc.kv.append %k1, %s1#2, %pos, %seq, %slots, %bt {layer = 1 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64} : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  %o1 = cbc.kv.attention %q1, %pos, %seq, %cu, %kvl, %slots, %bt {layer = 1 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, scale = 0.5 : f64} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x8xf32>
  return %o, %o1 : tensor<?x8xf32>, tensor<?x8xf32>
}

//===----------------------------------------------------------------------===//
// Chains that must be left alone: each function keeps its split, ropes and append.
//===----------------------------------------------------------------------===//

// q and k rotated with different frequencies.
// CHECK-LABEL: func.func @different_inv_freq
// CHECK-NOT: rope_append
// CHECK: cbc.math.split
// CHECK-NEXT: cbc.math.rope {{.*}}inv_freq = array<f32: 1.000000e+00, 0.00999999977>
// CHECK-NEXT: cbc.math.rope {{.*}}inv_freq = array<f32: 1.000000e+00, 2.000000e-02>
// CHECK-NEXT: cbc.kv.append
// CHECK-NEXT: return
func.func @different_inv_freq(%qkv: tensor<?x16xf32>, %pos: tensor<?xi32>, %seq: tensor<?xi32>, %plen: tensor<?xi32>, %slots: tensor<?xi32>, %bt: tensor<?x?x?xi32>) -> tensor<?x8xf32> {
  %s:3 = cbc.math.split %qkv : tensor<?x16xf32> -> tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  %q = cbc.math.rope %s#0, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  %k = cbc.math.rope %s#1, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.02>>} : tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4xf32>
  cbc.kv.append %k, %s#2, %pos, %seq, %slots, %bt {layer = 0 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64} : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  return %q : tensor<?x8xf32>
}

// The ropes rotate at other positions than those the append writes.
// CHECK-LABEL: func.func @different_positions
// CHECK-NOT: rope_append
// CHECK: cbc.math.split
// CHECK-NEXT: cbc.math.rope
// CHECK-NEXT: cbc.math.rope
// CHECK-NEXT: cbc.kv.append
func.func @different_positions(%qkv: tensor<?x16xf32>, %pos: tensor<?xi32>, %seq: tensor<?xi32>, %plen: tensor<?xi32>, %slots: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %pos2: tensor<?xi32>) -> tensor<?x8xf32> {
  %s:3 = cbc.math.split %qkv : tensor<?x16xf32> -> tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  %q = cbc.math.rope %s#0, %pos2, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  %k = cbc.math.rope %s#1, %pos2, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4xf32>
  cbc.kv.append %k, %s#2, %pos, %seq, %slots, %bt {layer = 0 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64} : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  return %q : tensor<?x8xf32>
}

// v is not the third result of the split (an unrelated value), and, in the second function,
// k and v come from swapped split results.
// CHECK-LABEL: func.func @v_not_from_split
// CHECK-NOT: rope_append
// CHECK: cbc.math.split
// CHECK-NEXT: cbc.math.rope
// CHECK-NEXT: cbc.math.rope
// CHECK-NEXT: cbc.kv.append %{{[0-9]+}}, %arg6,
func.func @v_not_from_split(%qkv: tensor<?x16xf32>, %pos: tensor<?xi32>, %seq: tensor<?xi32>, %plen: tensor<?xi32>, %slots: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %v: tensor<?x4xf32>) -> (tensor<?x8xf32>, tensor<?x4xf32>) {
  %s:3 = cbc.math.split %qkv : tensor<?x16xf32> -> tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  %q = cbc.math.rope %s#0, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  %k = cbc.math.rope %s#1, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4xf32>
  cbc.kv.append %k, %v, %pos, %seq, %slots, %bt {layer = 0 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64} : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  return %q, %s#2 : tensor<?x8xf32>, tensor<?x4xf32>
}

// CHECK-LABEL: func.func @k_v_swapped
// CHECK-NOT: rope_append
// CHECK: %[[S:[0-9]+]]:3 = cbc.math.split
// CHECK-NEXT: cbc.math.rope %[[S]]#0,
// CHECK-NEXT: %[[K:[0-9]+]] = cbc.math.rope %[[S]]#2,
// CHECK-NEXT: cbc.kv.append %[[K]], %[[S]]#1,
func.func @k_v_swapped(%qkv: tensor<?x16xf32>, %pos: tensor<?xi32>, %seq: tensor<?xi32>, %plen: tensor<?xi32>, %slots: tensor<?xi32>, %bt: tensor<?x?x?xi32>) -> tensor<?x8xf32> {
  %s:3 = cbc.math.split %qkv : tensor<?x16xf32> -> tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  %q = cbc.math.rope %s#0, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  %k = cbc.math.rope %s#2, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4xf32>
  cbc.kv.append %k, %s#1, %pos, %seq, %slots, %bt {layer = 0 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64} : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  return %q : tensor<?x8xf32>
}

// The rotated k is read by another op as well as the append.
// CHECK-LABEL: func.func @k_used_elsewhere
// CHECK-NOT: rope_append
// CHECK: cbc.math.split
// CHECK-NEXT: cbc.math.rope
// CHECK-NEXT: %[[K:[0-9]+]] = cbc.math.rope
// CHECK-NEXT: cbc.kv.append %[[K]],
// CHECK-NEXT: cbc.math.softcap %[[K]]
func.func @k_used_elsewhere(%qkv: tensor<?x16xf32>, %pos: tensor<?xi32>, %seq: tensor<?xi32>, %plen: tensor<?xi32>, %slots: tensor<?xi32>, %bt: tensor<?x?x?xi32>) -> (tensor<?x8xf32>, tensor<?x4xf32>) {
  %s:3 = cbc.math.split %qkv : tensor<?x16xf32> -> tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  %q = cbc.math.rope %s#0, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  %k = cbc.math.rope %s#1, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4xf32>
  cbc.kv.append %k, %s#2, %pos, %seq, %slots, %bt {layer = 0 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64} : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  %c = cbc.math.softcap %k {cap = 30.0 : f64} : tensor<?x4xf32>
  return %q, %c : tensor<?x8xf32>, tensor<?x4xf32>
}

// The rotated q is read before the append: the fused op would come after that reader.
// CHECK-LABEL: func.func @q_read_before_append
// CHECK-NOT: rope_append
// CHECK: cbc.math.split
// CHECK-NEXT: %[[Q:[0-9]+]] = cbc.math.rope
// CHECK-NEXT: cbc.math.rope
// CHECK-NEXT: cbc.math.softcap %[[Q]]
// CHECK-NEXT: cbc.kv.append
func.func @q_read_before_append(%qkv: tensor<?x16xf32>, %pos: tensor<?xi32>, %seq: tensor<?xi32>, %plen: tensor<?xi32>, %slots: tensor<?xi32>, %bt: tensor<?x?x?xi32>) -> tensor<?x8xf32> {
  %s:3 = cbc.math.split %qkv : tensor<?x16xf32> -> tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  %q = cbc.math.rope %s#0, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  %k = cbc.math.rope %s#1, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4xf32>
  %c = cbc.math.softcap %q {cap = 30.0 : f64} : tensor<?x8xf32>
  cbc.kv.append %k, %s#2, %pos, %seq, %slots, %bt {layer = 0 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64} : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  return %c : tensor<?x8xf32>
}

// Only k has a q/k norm.
// CHECK-LABEL: func.func @k_norm_only
// CHECK-NOT: rope_append
// CHECK: cbc.math.split
// CHECK-NEXT: cbc.math.rms_norm
// CHECK-NEXT: cbc.math.rope
// CHECK-NEXT: cbc.math.rope
// CHECK-NEXT: cbc.kv.append
func.func @k_norm_only(%qkv: tensor<?x16xf32>, %pos: tensor<?xi32>, %seq: tensor<?xi32>, %plen: tensor<?xi32>, %slots: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %kw: tensor<4xbf16>) -> tensor<?x8xf32> {
  %s:3 = cbc.math.split %qkv : tensor<?x16xf32> -> tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  %kn = cbc.math.rms_norm %s#1, %kw {eps = 1.0e-6 : f64, group = 4 : i64} : tensor<?x4xf32>, tensor<4xbf16> -> tensor<?x4xf32>
  %q = cbc.math.rope %s#0, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  %k = cbc.math.rope %kn, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4xf32>
  cbc.kv.append %k, %s#2, %pos, %seq, %slots, %bt {layer = 0 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64} : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  return %q : tensor<?x8xf32>
}

// The q and k norms differ in eps.
// CHECK-LABEL: func.func @norm_eps_differs
// CHECK-NOT: rope_append
// CHECK: cbc.math.split
// CHECK-NEXT: cbc.math.rms_norm
// CHECK-NEXT: cbc.math.rms_norm
// CHECK-NEXT: cbc.math.rope
// CHECK-NEXT: cbc.math.rope
// CHECK-NEXT: cbc.kv.append
func.func @norm_eps_differs(%qkv: tensor<?x16xf32>, %pos: tensor<?xi32>, %seq: tensor<?xi32>, %plen: tensor<?xi32>, %slots: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %qw: tensor<4xbf16>, %kw: tensor<4xbf16>) -> tensor<?x8xf32> {
  %s:3 = cbc.math.split %qkv : tensor<?x16xf32> -> tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  %qn = cbc.math.rms_norm %s#0, %qw {eps = 1.0e-6 : f64, group = 4 : i64} : tensor<?x8xf32>, tensor<4xbf16> -> tensor<?x8xf32>
  %kn = cbc.math.rms_norm %s#1, %kw {eps = 1.0e-5 : f64, group = 4 : i64} : tensor<?x4xf32>, tensor<4xbf16> -> tensor<?x4xf32>
  %q = cbc.math.rope %qn, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  %k = cbc.math.rope %kn, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4xf32>
  cbc.kv.append %k, %s#2, %pos, %seq, %slots, %bt {layer = 0 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64} : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  return %q : tensor<?x8xf32>
}

// A whole-row k norm is not a per-head q/k norm.
// CHECK-LABEL: func.func @k_norm_whole_row
// CHECK-NOT: rope_append
// CHECK: cbc.math.split
// CHECK-NEXT: cbc.math.rms_norm
// CHECK-NEXT: cbc.math.rms_norm
// CHECK-NEXT: cbc.math.rope
// CHECK-NEXT: cbc.math.rope
// CHECK-NEXT: cbc.kv.append
func.func @k_norm_whole_row(%qkv: tensor<?x16xf32>, %pos: tensor<?xi32>, %seq: tensor<?xi32>, %plen: tensor<?xi32>, %slots: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %qw: tensor<8xbf16>, %kw: tensor<4xbf16>) -> tensor<?x8xf32> {
  %s:3 = cbc.math.split %qkv : tensor<?x16xf32> -> tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  %qn = cbc.math.rms_norm %s#0, %qw {eps = 1.0e-6 : f64} : tensor<?x8xf32>, tensor<8xbf16> -> tensor<?x8xf32>
  %kn = cbc.math.rms_norm %s#1, %kw {eps = 1.0e-6 : f64} : tensor<?x4xf32>, tensor<4xbf16> -> tensor<?x4xf32>
  %q = cbc.math.rope %qn, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  %k = cbc.math.rope %kn, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4xf32>
  cbc.kv.append %k, %s#2, %pos, %seq, %slots, %bt {layer = 0 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64} : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  return %q : tensor<?x8xf32>
}

// Regressions: chains that fused into invalid IR or a different computation before the pass
// checked for them.

// The q norm has no weight while the k norm has one (rope_append takes both or neither).
// CHECK-LABEL: func.func @q_norm_without_weight
// CHECK-NOT: rope_append
// CHECK: cbc.math.split
// CHECK-NEXT: cbc.math.rms_norm
// CHECK-NEXT: cbc.math.rms_norm
// CHECK-NEXT: cbc.math.rope
// CHECK-NEXT: cbc.math.rope
// CHECK-NEXT: cbc.kv.append
func.func @q_norm_without_weight(%qkv: tensor<?x16xf32>, %pos: tensor<?xi32>, %seq: tensor<?xi32>, %plen: tensor<?xi32>, %slots: tensor<?xi32>, %bt: tensor<?x?x?xi32>, %kw: tensor<4xbf16>) -> tensor<?x8xf32> {
  %s:3 = cbc.math.split %qkv : tensor<?x16xf32> -> tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  %qn = cbc.math.rms_norm %s#0 {eps = 1.0e-6 : f64, group = 4 : i64} : tensor<?x8xf32> -> tensor<?x8xf32>
  %kn = cbc.math.rms_norm %s#1, %kw {eps = 1.0e-6 : f64, group = 4 : i64} : tensor<?x4xf32>, tensor<4xbf16> -> tensor<?x4xf32>
  %q = cbc.math.rope %qn, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  %k = cbc.math.rope %kn, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4xf32>
  cbc.kv.append %k, %s#2, %pos, %seq, %slots, %bt {layer = 0 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64} : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  return %q : tensor<?x8xf32>
}

// v rows wider than k rows (v_head_dim 8 against head_dim 4): rope_append has one head_dim.
// CHECK-LABEL: func.func @v_wider_than_k
// CHECK-NOT: rope_append
// CHECK: cbc.math.split
// CHECK-NEXT: cbc.math.rope
// CHECK-NEXT: cbc.math.rope
// CHECK-NEXT: cbc.kv.append
func.func @v_wider_than_k(%qkv: tensor<?x20xf32>, %pos: tensor<?xi32>, %seq: tensor<?xi32>, %plen: tensor<?xi32>, %slots: tensor<?xi32>, %bt: tensor<?x?x?xi32>) -> tensor<?x8xf32> {
  %s:3 = cbc.math.split %qkv : tensor<?x20xf32> -> tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x8xf32>
  %q = cbc.math.rope %s#0, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  %k = cbc.math.rope %s#1, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4xf32>
  cbc.kv.append %k, %s#2, %pos, %seq, %slots, %bt {layer = 0 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64} : tensor<?x4xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  return %q : tensor<?x8xf32>
}

// The ropes rotate heads of 2 features while the cache has heads of 4: fusing would rotate
// 4-feature heads instead.
// CHECK-LABEL: func.func @rope_head_dim_differs
// CHECK-NOT: rope_append
// CHECK: cbc.math.split
// CHECK-NEXT: cbc.math.rope {{.*}}#cbc.rope<head_dim = 2,
// CHECK-NEXT: cbc.math.rope {{.*}}#cbc.rope<head_dim = 2,
// CHECK-NEXT: cbc.kv.append {{.*}}head_dim = 4 : i64
func.func @rope_head_dim_differs(%qkv: tensor<?x16xf32>, %pos: tensor<?xi32>, %seq: tensor<?xi32>, %plen: tensor<?xi32>, %slots: tensor<?xi32>, %bt: tensor<?x?x?xi32>) -> tensor<?x8xf32> {
  %s:3 = cbc.math.split %qkv : tensor<?x16xf32> -> tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  %q = cbc.math.rope %s#0, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 2, rotary_dim = 2, inv_freq = array<f32: 1.0>>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  %k = cbc.math.rope %s#1, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 2, rotary_dim = 2, inv_freq = array<f32: 1.0>>} : tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4xf32>
  cbc.kv.append %k, %s#2, %pos, %seq, %slots, %bt {layer = 0 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64} : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  return %q : tensor<?x8xf32>
}

// Three query heads over two kv heads: not whole GQA groups, which rope_append requires.
// CHECK-LABEL: func.func @partial_gqa_group
// CHECK-NOT: rope_append
// CHECK: cbc.math.split
// CHECK-NEXT: cbc.math.rope
// CHECK-NEXT: cbc.math.rope
// CHECK-NEXT: cbc.kv.append
func.func @partial_gqa_group(%qkv: tensor<?x28xf32>, %pos: tensor<?xi32>, %seq: tensor<?xi32>, %plen: tensor<?xi32>, %slots: tensor<?xi32>, %bt: tensor<?x?x?xi32>) -> tensor<?x12xf32> {
  %s:3 = cbc.math.split %qkv : tensor<?x28xf32> -> tensor<?x12xf32>, tensor<?x8xf32>, tensor<?x8xf32>
  %q = cbc.math.rope %s#0, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x12xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x12xf32>
  %k = cbc.math.rope %s#1, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  cbc.kv.append %k, %s#2, %pos, %seq, %slots, %bt {layer = 0 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  return %q : tensor<?x12xf32>
}

// The q side follows the append and its norm weight is defined after the append: the fused op
// at the append could not use it.
// CHECK-LABEL: func.func @q_norm_weight_after_append
// CHECK-NOT: rope_append
// CHECK: cbc.kv.append
// CHECK-NEXT: cbc.weight.ref "qn"
// CHECK-NEXT: cbc.math.rms_norm
// CHECK-NEXT: cbc.math.rope
// CHECK-NEXT: return
func.func @q_norm_weight_after_append(%qkv: tensor<?x16xf32>, %pos: tensor<?xi32>, %seq: tensor<?xi32>, %plen: tensor<?xi32>, %slots: tensor<?xi32>, %bt: tensor<?x?x?xi32>) -> tensor<?x8xf32> {
  %s:3 = cbc.math.split %qkv : tensor<?x16xf32> -> tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  %kw = cbc.weight.ref "kn" {sources = [["kn"]]} : tensor<4xbf16>
  %kn = cbc.math.rms_norm %s#1, %kw {eps = 1.0e-6 : f64, group = 4 : i64} : tensor<?x4xf32>, tensor<4xbf16> -> tensor<?x4xf32>
  %k = cbc.math.rope %kn, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4xf32>
  cbc.kv.append %k, %s#2, %pos, %seq, %slots, %bt {layer = 0 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64} : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  %qw = cbc.weight.ref "qn" {sources = [["qn"]]} : tensor<4xbf16>
  %qn = cbc.math.rms_norm %s#0, %qw {eps = 1.0e-6 : f64, group = 4 : i64} : tensor<?x8xf32>, tensor<4xbf16> -> tensor<?x8xf32>
  %q = cbc.math.rope %qn, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  return %q : tensor<?x8xf32>
}

// The same order with the q norm weight defined before the append does fuse: the q side may
// follow the append as long as its operands are available there.
// CHECK-LABEL: func.func @q_side_after_append
// CHECK-NEXT: cbc.weight.ref "kn"
// CHECK-NEXT: %[[QW:[0-9]+]] = cbc.weight.ref "qn"
// CHECK-NEXT: %[[Q:[0-9]+]] = cbc.kv.rope_append %arg0, %arg1, %arg2, %arg3, %arg4, %arg5 norms(%[[QW]], %{{[0-9]+}})
// CHECK-NEXT: return %[[Q]]
func.func @q_side_after_append(%qkv: tensor<?x16xf32>, %pos: tensor<?xi32>, %seq: tensor<?xi32>, %plen: tensor<?xi32>, %slots: tensor<?xi32>, %bt: tensor<?x?x?xi32>) -> tensor<?x8xf32> {
  %s:3 = cbc.math.split %qkv : tensor<?x16xf32> -> tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  %kw = cbc.weight.ref "kn" {sources = [["kn"]]} : tensor<4xbf16>
  %qw = cbc.weight.ref "qn" {sources = [["qn"]]} : tensor<4xbf16>
  %kn = cbc.math.rms_norm %s#1, %kw {eps = 1.0e-6 : f64, group = 4 : i64} : tensor<?x4xf32>, tensor<4xbf16> -> tensor<?x4xf32>
  %k = cbc.math.rope %kn, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4xf32>
  cbc.kv.append %k, %s#2, %pos, %seq, %slots, %bt {layer = 0 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64} : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  %qn = cbc.math.rms_norm %s#0, %qw {eps = 1.0e-6 : f64, group = 4 : i64} : tensor<?x8xf32>, tensor<4xbf16> -> tensor<?x8xf32>
  %q = cbc.math.rope %qn, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  return %q : tensor<?x8xf32>
}

// A layer that also keeps an index_key row (block-sparse attention) has pool rows wider than the
// fused op's k | v: its chain stays unfused.
// CHECK-LABEL: func.func @indexed_layer
// CHECK-NOT: cbc.kv.rope_append
// CHECK: cbc.kv.append
func.func @indexed_layer(%qkv: tensor<?x16xf32>, %pos: tensor<?xi32>, %seq: tensor<?xi32>, %cu: tensor<?xi32>,
                         %kvl: tensor<?xi32>, %plen: tensor<?xi32>, %slots: tensor<?xi32>, %bt: tensor<?x?x?xi32>,
                         %ik: tensor<?x4xf32>) -> tensor<?x8xf32> {
  %s:3 = cbc.math.split %qkv : tensor<?x16xf32> -> tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  %q = cbc.math.rope %s#0, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  %k = cbc.math.rope %s#1, %pos, %seq, %plen {rope = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.0, 0.01>>} : tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4xf32>
  cbc.kv.index_append %ik, %pos, %seq, %slots, %bt {layer = 9 : i64, head_dim = 4 : i64} : tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  cbc.kv.append %k, %s#2, %pos, %seq, %slots, %bt {layer = 9 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64} : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  %o = cbc.kv.attention %q, %pos, %seq, %cu, %kvl, %slots, %bt {layer = 9 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, scale = 0.5 : f64} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x8xf32>
  return %o : tensor<?x8xf32>
}
