// RUN: cbc-opt %s -split-input-file -verify-diagnostics -cbc-plan-cache | FileCheck %s
// RUN: cbc-opt %s -split-input-file -verify-diagnostics -cbc-plan-cache="kv-dtype=f32 block-size=32" | FileCheck %s --check-prefix=F32
// RUN: cbc-opt %s -split-input-file -verify-diagnostics -cbc-plan-cache="kv-dtype=f16" | FileCheck %s --check-prefix=F16
// RUN: not cbc-opt %s -split-input-file -cbc-plan-cache="kv-dtype=fp8" 2>&1 | FileCheck %s --check-prefix=DTYPE
// RUN: not cbc-opt %s -split-input-file -cbc-plan-cache="block-size=0" 2>&1 | FileCheck %s --check-prefix=BLOCK

// DTYPE: for the --kv-dtype option: Cannot find option named 'fp8'
// BLOCK: error: cbc-plan-cache: block-size must be positive

// Six layers with four retentions: all tokens (0, 2), a 4096-token window (1, 3), an 8192-token
// chunk (4) and a 128-token window (5). Groups are numbered in order of their first layer, so
// windows of different lengths get different groups. Layer 2 keeps wider v rows (v_head_dim 8
// against head_dim 4), which its group's bytes per token must include.
//
// Rows per token and layer: k 2x4 = 8 elements; v 8 elements, or 16 for layer 2.
//   group 0 (all):         layer 0 (8+8) + layer 2 (8+16) = 40 elements
//   group 1 (window 4096): layer 1 (8+8) + layer 3 (8+8)  = 32 elements
//   group 2 (chunk 8192):  layer 4 (8+8)                  = 16 elements
//   group 3 (window 128):  layer 5 (8+8)                  = 16 elements
// at 2 bytes (bf16, f16) or 4 bytes (f32) per element.

// CHECK-LABEL: module attributes {cbc.cache_plan = #cbc.cache_plan<
// CHECK-SAME: block_size = 16, kv_dtype = bf16
// CHECK-SAME: groups = [
// CHECK-SAME: #cbc.cache_group<id = 0, retention = <all>, layers = [0, 2], bytes_per_token = 80>,
// CHECK-SAME: #cbc.cache_group<id = 1, retention = <window, 4096>, layers = [1, 3], bytes_per_token = 64>,
// CHECK-SAME: #cbc.cache_group<id = 2, retention = <chunk, 8192>, layers = [4], bytes_per_token = 32>,
// CHECK-SAME: #cbc.cache_group<id = 3, retention = <window, 128>, layers = [5], bytes_per_token = 32>]
// CHECK-SAME: layers = [
// CHECK-SAME: #cbc.cache_layer<layer = 0, group = 0, rows = [#cbc.cache_row<"k", 8>, #cbc.cache_row<"v", 8>]>,
// CHECK-SAME: #cbc.cache_layer<layer = 1, group = 1, rows = [#cbc.cache_row<"k", 8>, #cbc.cache_row<"v", 8>]>,
// CHECK-SAME: #cbc.cache_layer<layer = 2, group = 0, rows = [#cbc.cache_row<"k", 8>, #cbc.cache_row<"v", 16>]>,
// CHECK-SAME: #cbc.cache_layer<layer = 3, group = 1, rows = [#cbc.cache_row<"k", 8>, #cbc.cache_row<"v", 8>]>,
// CHECK-SAME: #cbc.cache_layer<layer = 4, group = 2, rows = [#cbc.cache_row<"k", 8>, #cbc.cache_row<"v", 8>]>,
// CHECK-SAME: #cbc.cache_layer<layer = 5, group = 3, rows = [#cbc.cache_row<"k", 8>, #cbc.cache_row<"v", 8>]>]>}

// F32-LABEL: module attributes {cbc.cache_plan = #cbc.cache_plan<
// F32-SAME: block_size = 32, kv_dtype = f32
// F32-SAME: #cbc.cache_group<id = 0, retention = <all>, layers = [0, 2], bytes_per_token = 160>
// F32-SAME: #cbc.cache_group<id = 1, retention = <window, 4096>, layers = [1, 3], bytes_per_token = 128>
// F32-SAME: #cbc.cache_group<id = 2, retention = <chunk, 8192>, layers = [4], bytes_per_token = 64>
// F32-SAME: #cbc.cache_group<id = 3, retention = <window, 128>, layers = [5], bytes_per_token = 64>

// F16-LABEL: module attributes {cbc.cache_plan = #cbc.cache_plan<
// F16-SAME: block_size = 16, kv_dtype = f16
// F16-SAME: #cbc.cache_group<id = 0, retention = <all>, layers = [0, 2], bytes_per_token = 80>

// Every cache op of a layer carries its layer's group, the attention included.
// CHECK-LABEL: func.func @mixed
// CHECK: cbc.kv.append {{.*}} {group = 0 : i64, {{.*}}layer = 0 : i64
// CHECK: cbc.kv.attention {{.*}} {group = 0 : i64, {{.*}}layer = 0 : i64
// CHECK: cbc.kv.append {{.*}} {group = 1 : i64, {{.*}}layer = 1 : i64, {{.*}}retention = #cbc.retention<window, 4096>}
// CHECK: cbc.kv.attention {{.*}} {group = 1 : i64, {{.*}}layer = 1 : i64, {{.*}}retention = #cbc.retention<window, 4096>
// CHECK: cbc.kv.append {{.*}} {group = 0 : i64, {{.*}}layer = 2 : i64
// CHECK: cbc.kv.attention {{.*}} {group = 0 : i64, {{.*}}layer = 2 : i64
// CHECK: cbc.kv.append {{.*}} {group = 1 : i64, {{.*}}layer = 3 : i64
// CHECK: cbc.kv.attention {{.*}} {group = 1 : i64, {{.*}}layer = 3 : i64
// CHECK: cbc.kv.append {{.*}} {group = 2 : i64, {{.*}}layer = 4 : i64, {{.*}}retention = #cbc.retention<chunk, 8192>
// CHECK: cbc.kv.attention {{.*}} {group = 2 : i64, {{.*}}layer = 4 : i64, {{.*}}retention = #cbc.retention<chunk, 8192>
// CHECK: cbc.kv.append {{.*}} {group = 3 : i64, {{.*}}layer = 5 : i64, {{.*}}retention = #cbc.retention<window, 128>}
// CHECK: cbc.kv.attention {{.*}} {group = 3 : i64, {{.*}}layer = 5 : i64, {{.*}}retention = #cbc.retention<window, 128>
func.func @mixed(%k: tensor<?x8xf32>, %v: tensor<?x16xf32>, %q: tensor<?x16xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  cbc.kv.append %k, %k, %p, %p, %p, %bt {layer = 0 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  %a0 = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  cbc.kv.append %k, %k, %p, %p, %p, %bt {layer = 1 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, retention = #cbc.retention<window, 4096>} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  %a1 = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64, retention = #cbc.retention<window, 4096>} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  cbc.kv.append %k, %v, %p, %p, %p, %bt {layer = 2 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64} : tensor<?x8xf32>, tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  %a2 = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt {layer = 2 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  cbc.kv.append %k, %k, %p, %p, %p, %bt {layer = 3 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, retention = #cbc.retention<window, 4096>} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  %a3 = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt {layer = 3 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64, retention = #cbc.retention<window, 4096>} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  cbc.kv.append %k, %k, %p, %p, %p, %bt {layer = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, retention = #cbc.retention<chunk, 8192>} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  %a4 = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt {layer = 4 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64, retention = #cbc.retention<chunk, 8192>} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  cbc.kv.append %k, %k, %p, %p, %p, %bt {layer = 5 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, retention = #cbc.retention<window, 128>} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  %a5 = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt {layer = 5 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64, retention = #cbc.retention<window, 128>} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  return
}

// -----

// Groups follow layer numbers, not program order: layer 3 (window) is appended first but
// layer 1 (all tokens) owns group 0.
// CHECK-LABEL: module attributes {cbc.cache_plan = #cbc.cache_plan<
// CHECK-SAME: groups = [#cbc.cache_group<id = 0, retention = <all>, layers = [1], bytes_per_token = 32>, #cbc.cache_group<id = 1, retention = <window, 512>, layers = [3], bytes_per_token = 32>]
// CHECK-LABEL: func.func @layer_order
// CHECK: cbc.kv.append {{.*}} {group = 1 : i64, {{.*}}layer = 3 : i64
// CHECK: cbc.kv.append {{.*}} {group = 0 : i64, {{.*}}layer = 1 : i64
func.func @layer_order(%k: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  cbc.kv.append %k, %k, %p, %p, %p, %bt {layer = 3 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, retention = #cbc.retention<window, 512>} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  cbc.kv.append %k, %k, %p, %p, %p, %bt {layer = 1 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  return
}

// -----

// A module without cache ops still gets an (empty) plan.
// CHECK-LABEL: module attributes {cbc.cache_plan = #cbc.cache_plan<block_size = 16, kv_dtype = bf16>}
// CHECK-LABEL: func.func @no_cache
func.func @no_cache() {
  return
}

// -----

func.func @unwritten_layer(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  cbc.kv.append %k, %k, %p, %p, %p, %bt {layer = 0 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  // expected-error @+1 {{'cbc.kv.attention' op reads layer 7, which no cbc.kv.append writes}}
  %0 = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt {layer = 7 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @window_missing_on_attention(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  cbc.kv.append %k, %k, %p, %p, %p, %bt {layer = 0 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, retention = #cbc.retention<window, 4096>} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  // expected-error @+1 {{'cbc.kv.attention' op retention differs from the cbc.kv.append of layer 0}}
  %0 = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @window_length_differs(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  cbc.kv.append %k, %k, %p, %p, %p, %bt {layer = 2 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, retention = #cbc.retention<window, 4096>} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  // expected-error @+1 {{'cbc.kv.attention' op retention differs from the cbc.kv.append of layer 2}}
  %0 = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt {layer = 2 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64, retention = #cbc.retention<window, 128>} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @chunk_instead_of_window(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  cbc.kv.append %k, %k, %p, %p, %p, %bt {layer = 0 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, retention = #cbc.retention<window, 4096>} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  // expected-error @+1 {{'cbc.kv.attention' op retention differs from the cbc.kv.append of layer 0}}
  %0 = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64, retention = #cbc.retention<chunk, 4096>} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @chunk_missing_on_attention(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  cbc.kv.append %k, %k, %p, %p, %p, %bt {layer = 0 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, retention = #cbc.retention<chunk, 8192>} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  // expected-error @+1 {{'cbc.kv.attention' op retention differs from the cbc.kv.append of layer 0}}
  %0 = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  return
}

// -----

// A latent-attention layer keeps its normed latent and its shared roped key, named as such:
// (8 + 4) elements x 2 bytes = 24 bytes per token. The latent attention gets the group.
// CHECK-LABEL: module attributes {cbc.cache_plan = #cbc.cache_plan<
// CHECK-SAME: groups = [#cbc.cache_group<id = 0, retention = <all>, layers = [0], bytes_per_token = 24>]
// CHECK-SAME: layers = [#cbc.cache_layer<layer = 0, group = 0, rows = [#cbc.cache_row<"latent", 8>, #cbc.cache_row<"k_rope", 4>]>]
// CHECK-LABEL: func.func @latent
// CHECK: cbc.kv.latent_attention {{.*}} {group = 0 : i64, {{.*}}layer = 0 : i64
func.func @latent(%lat: tensor<?x8xf32>, %kr: tensor<?x4xf32>, %ql: tensor<?x16xf32>, %qr: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  cbc.kv.append %lat, %kr, %p, %p, %p, %bt {layer = 0 : i64, num_kv_heads = 1 : i64, head_dim = 8 : i64, latent} : tensor<?x8xf32>, tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  %o = cbc.kv.latent_attention %ql, %qr, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 2 : i64, latent_dim = 8 : i64, rope_dim = 4 : i64, scale = 0.25 : f64} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  return
}

// -----

// A sparse (indexed) attention layer keeps an index_key row after its latent rows:
// (8 + 4 + 6) elements x 2 bytes = 36 bytes per token. The indexer ops get the group.
// CHECK-LABEL: module attributes {cbc.cache_plan = #cbc.cache_plan<
// CHECK-SAME: groups = [#cbc.cache_group<id = 0, retention = <all>, layers = [0], bytes_per_token = 36>]
// CHECK-SAME: layers = [#cbc.cache_layer<layer = 0, group = 0, rows = [#cbc.cache_row<"latent", 8>, #cbc.cache_row<"k_rope", 4>, #cbc.cache_row<"index_key", 6>]>]
// CHECK-LABEL: func.func @indexed
// CHECK: cbc.kv.index_append {{.*}} {group = 0 : i64, head_dim = 6 : i64, layer = 0 : i64}
// CHECK: cbc.kv.index_select {{.*}} {group = 0 : i64, {{.*}}layer = 0 : i64
// CHECK: cbc.kv.latent_attention {{.*}} selection({{.*}}) {group = 0 : i64,
func.func @indexed(%lat: tensor<?x8xf32>, %kr: tensor<?x4xf32>, %ik: tensor<?x6xf32>, %iq: tensor<?x12xf32>, %iw: tensor<?x2xf32>, %ql: tensor<?x16xf32>, %qr: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  cbc.kv.append %lat, %kr, %p, %p, %p, %bt {layer = 0 : i64, num_kv_heads = 1 : i64, head_dim = 8 : i64, latent} : tensor<?x8xf32>, tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  cbc.kv.index_append %ik, %p, %p, %p, %bt {layer = 0 : i64, head_dim = 6 : i64} : tensor<?x6xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  %sel = cbc.kv.index_select %iq, %iw, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 2 : i64, head_dim = 6 : i64, topk = 3 : i64, key_scale = 0.5 : f64, weight_scale = 0.7 : f64} : tensor<?x12xf32>, tensor<?x2xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x3xi32>
  %o = cbc.kv.latent_attention %ql, %qr, %p, %p, %p, %p, %p, %bt selection(%sel) {layer = 0 : i64, num_heads = 2 : i64, latent_dim = 8 : i64, rope_dim = 4 : i64, scale = 0.25 : f64} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<?x3xi32> -> tensor<?x16xf32>
  return
}

// -----

// A plain attention layer may keep an index_key row too (block-sparse attention): its rows are
// k | v | index_key.
// CHECK-LABEL: func.func @block_indexed
// CHECK: cbc.kv.index_append {{.*}} {group = 0 : i64, head_dim = 4 : i64, layer = 0 : i64}
// CHECK: cbc.kv.block_select {{.*}}group = 0 : i64
// CHECK: cbc.kv.attention {{.*}} blocks({{.*}}) {group = 0 : i64
func.func @block_indexed(%k: tensor<?x8xf32>, %ik: tensor<?x4xf32>, %iq: tensor<?x8xf32>, %q: tensor<?x16xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  cbc.kv.append %k, %k, %p, %p, %p, %bt {layer = 0 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  cbc.kv.index_append %ik, %p, %p, %p, %bt {layer = 0 : i64, head_dim = 4 : i64} : tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  %sel = cbc.kv.block_select %iq, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 2 : i64, head_dim = 4 : i64, block = 4 : i64, topk = 2 : i64} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x4xi32>
  %o = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt blocks(%sel) {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64, selection_heads = 2 : i64, selection_block = 4 : i64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<?x4xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @block_select_without_index(%iq: tensor<?x8xf32>, %k: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  cbc.kv.append %k, %k, %p, %p, %p, %bt {layer = 0 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  // expected-error @+1 {{'cbc.kv.block_select' op reads index keys of layer 0, which no cbc.kv.index_append of head_dim 4 writes}}
  %sel = cbc.kv.block_select %iq, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 2 : i64, head_dim = 4 : i64, block = 4 : i64, topk = 2 : i64} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x4xi32>
  return
}

// -----

func.func @index_append_windowed(%k: tensor<?x8xf32>, %ik: tensor<?x6xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  cbc.kv.append %k, %k, %p, %p, %p, %bt {layer = 1 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, retention = #cbc.retention<window, 8>} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  // expected-error @+1 {{'cbc.kv.index_append' op layer 1 has no cbc.kv.append of the index keys' retention}}
  cbc.kv.index_append %ik, %p, %p, %p, %bt {layer = 1 : i64, head_dim = 6 : i64} : tensor<?x6xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  return
}

// -----

// Latent sharing (Mistral Large 4): layer 0 keeps a latent without RoPE (no k_rope row), layer
// 1 reads it and keeps its own indexer's keys alone: an index_key row is the whole of its rows.
// CHECK-LABEL: module attributes {cbc.cache_plan = #cbc.cache_plan<
// CHECK-SAME: groups = [#cbc.cache_group<id = 0, retention = <all>, layers = [0, 1], bytes_per_token = 28>]
// CHECK-SAME: layers = [#cbc.cache_layer<layer = 0, group = 0, rows = [#cbc.cache_row<"latent", 8>]>, #cbc.cache_layer<layer = 1, group = 0, rows = [#cbc.cache_row<"index_key", 6>]>]
// CHECK-LABEL: func.func @index_only_layer
// CHECK: cbc.kv.index_append {{.*}} {group = 0 : i64, head_dim = 6 : i64, layer = 1 : i64}
// CHECK: cbc.kv.index_select {{.*}} {group = 0 : i64, {{.*}}layer = 1 : i64
// CHECK: cbc.kv.latent_attention {{.*}} selection({{.*}}) {group = 0 : i64, latent_dim = 8 : i64, layer = 0 : i64
func.func @index_only_layer(%lat: tensor<?x8xf32>, %kr: tensor<?x0xf32>, %ik: tensor<?x6xf32>, %iq: tensor<?x12xf32>, %iw: tensor<?x2xf32>, %ql: tensor<?x16xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  cbc.kv.append %lat, %kr, %p, %p, %p, %bt {layer = 0 : i64, num_kv_heads = 1 : i64, head_dim = 8 : i64, latent} : tensor<?x8xf32>, tensor<?x0xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  cbc.kv.index_append %ik, %p, %p, %p, %bt {layer = 1 : i64, head_dim = 6 : i64} : tensor<?x6xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  %sel = cbc.kv.index_select %iq, %iw, %p, %p, %p, %p, %p, %bt {layer = 1 : i64, num_heads = 2 : i64, head_dim = 6 : i64, topk = 3 : i64, key_scale = 0.5 : f64, weight_scale = 0.7 : f64} : tensor<?x12xf32>, tensor<?x2xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x3xi32>
  %o = cbc.kv.latent_attention %ql, %kr, %p, %p, %p, %p, %p, %bt selection(%sel) {layer = 0 : i64, num_heads = 2 : i64, latent_dim = 8 : i64, rope_dim = 0 : i64, scale = 0.25 : f64} : tensor<?x16xf32>, tensor<?x0xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>, tensor<?x3xi32> -> tensor<?x16xf32>
  return
}

// -----

// The k-pooled indexer reads rows of [k | g], twice its head_dim.
// CHECK-LABEL: func.func @pooled_index
// CHECK: cbc.kv.pool_select {{.*}} {group = 0 : i64, head_dim = 4 : i64, {{.*}}layer = 0 : i64
func.func @pooled_index(%lat: tensor<?x8xf32>, %kr: tensor<?x0xf32>, %row: tensor<?x8xf32>, %q: tensor<?x8xf32>, %w: tensor<?x2xf32>, %ape: tensor<2x4xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  cbc.kv.append %lat, %kr, %p, %p, %p, %bt {layer = 0 : i64, num_kv_heads = 1 : i64, head_dim = 8 : i64, latent} : tensor<?x8xf32>, tensor<?x0xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  cbc.kv.index_append %row, %p, %p, %p, %bt {layer = 0 : i64, head_dim = 8 : i64} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  %s = cbc.kv.pool_select %q weights(%w : tensor<?x2xf32>), %p, %p, %p, %p, %p, %bt ape(%ape : tensor<2x4xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 4 : i64, pools = 2 : i64, pool = 2 : i64, key_scale = 0.5 : f64, weight_scale = 0.7 : f64} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x5xi32>
  return
}

// -----

func.func @pooled_index_width(%lat: tensor<?x8xf32>, %kr: tensor<?x0xf32>, %row: tensor<?x4xf32>, %q: tensor<?x8xf32>, %w: tensor<?x2xf32>, %ape: tensor<2x4xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  cbc.kv.append %lat, %kr, %p, %p, %p, %bt {layer = 0 : i64, num_kv_heads = 1 : i64, head_dim = 8 : i64, latent} : tensor<?x8xf32>, tensor<?x0xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  cbc.kv.index_append %row, %p, %p, %p, %bt {layer = 0 : i64, head_dim = 4 : i64} : tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  // expected-error @+1 {{'cbc.kv.pool_select' op reads index keys of layer 0, which no cbc.kv.index_append of head_dim 8 writes}}
  %s = cbc.kv.pool_select %q weights(%w : tensor<?x2xf32>), %p, %p, %p, %p, %p, %bt ape(%ape : tensor<2x4xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 4 : i64, pools = 2 : i64, pool = 2 : i64, key_scale = 0.5 : f64, weight_scale = 0.7 : f64} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x5xi32>
  return
}

// -----

// A reader of an index-only layer's rows reads no latent.
func.func @latent_read_of_index_only_layer(%ik: tensor<?x6xf32>, %ql: tensor<?x16xf32>, %kr: tensor<?x0xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  cbc.kv.index_append %ik, %p, %p, %p, %bt {layer = 1 : i64, head_dim = 6 : i64} : tensor<?x6xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  // expected-error @+1 {{'cbc.kv.latent_attention' op reads layer 1, whose rows are not latent}}
  %o = cbc.kv.latent_attention %ql, %kr, %p, %p, %p, %p, %p, %bt {layer = 1 : i64, num_heads = 2 : i64, latent_dim = 8 : i64, rope_dim = 0 : i64, scale = 0.25 : f64} : tensor<?x16xf32>, tensor<?x0xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @index_appended_twice(%lat: tensor<?x8xf32>, %kr: tensor<?x4xf32>, %ik: tensor<?x6xf32>, %iq: tensor<?x12xf32>, %iw: tensor<?x2xf32>, %ql: tensor<?x16xf32>, %qr: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  cbc.kv.append %lat, %kr, %p, %p, %p, %bt {layer = 0 : i64, num_kv_heads = 1 : i64, head_dim = 8 : i64, latent} : tensor<?x8xf32>, tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  cbc.kv.index_append %ik, %p, %p, %p, %bt {layer = 0 : i64, head_dim = 6 : i64} : tensor<?x6xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  // expected-error @+1 {{'cbc.kv.index_append' op layer 0 appends index keys twice}}
  cbc.kv.index_append %ik, %p, %p, %p, %bt {layer = 0 : i64, head_dim = 6 : i64} : tensor<?x6xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  return
}

// -----

func.func @index_select_without_keys(%lat: tensor<?x8xf32>, %kr: tensor<?x4xf32>, %ik: tensor<?x6xf32>, %iq: tensor<?x12xf32>, %iw: tensor<?x2xf32>, %ql: tensor<?x16xf32>, %qr: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  cbc.kv.append %lat, %kr, %p, %p, %p, %bt {layer = 0 : i64, num_kv_heads = 1 : i64, head_dim = 8 : i64, latent} : tensor<?x8xf32>, tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  // expected-error @+1 {{'cbc.kv.index_select' op reads index keys of layer 0, which no cbc.kv.index_append of head_dim 6 writes}}
  %sel = cbc.kv.index_select %iq, %iw, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 2 : i64, head_dim = 6 : i64, topk = 3 : i64, key_scale = 0.5 : f64, weight_scale = 0.7 : f64} : tensor<?x12xf32>, tensor<?x2xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x3xi32>
  return
}

// -----

func.func @latent_reads_kv(%lat: tensor<?x8xf32>, %kr: tensor<?x4xf32>, %ql: tensor<?x16xf32>, %qr: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  cbc.kv.append %lat, %lat, %p, %p, %p, %bt {layer = 0 : i64, num_kv_heads = 1 : i64, head_dim = 8 : i64} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  // expected-error @+1 {{'cbc.kv.latent_attention' op reads layer 0, whose rows are not latent}}
  %o = cbc.kv.latent_attention %ql, %qr, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 2 : i64, latent_dim = 8 : i64, rope_dim = 4 : i64, scale = 0.25 : f64} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @kv_reads_latent(%lat: tensor<?x8xf32>, %kr: tensor<?x4xf32>, %q: tensor<?x16xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  cbc.kv.append %lat, %kr, %p, %p, %p, %bt {layer = 0 : i64, num_kv_heads = 1 : i64, head_dim = 8 : i64, latent} : tensor<?x8xf32>, tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  // expected-error @+1 {{'cbc.kv.attention' op reads layer 0, whose rows are latent}}
  %0 = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 8 : i64, scale = 0.5 : f64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @appended_twice(%k: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  cbc.kv.append %k, %k, %p, %p, %p, %bt {layer = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  // expected-error @+1 {{'cbc.kv.append' op layer 4 appends to the cache twice}}
  cbc.kv.append %k, %k, %p, %p, %p, %bt {layer = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  return
}

// -----

// Per-request states. Each stateful op declares one fp32 state of its layer, by name, whatever
// the kv dtype; the plan lists them in program order with their bytes, and they form the state
// group (after the paged ones), whose unit, one snapshot of them all, is what a request holds.
// Layers 0 and 2 are gated delta nets
// (2 key heads of 4, 4 value heads of 2), layer 1 attention, layer 3 an LFM2 short conv and
// layer 4 a conv of kernel 1, which keeps no inputs and so declares no state.
//
//   conv channels q|k|v = 2x4 + 2x4 + 4x2 = 24, kernel 4: conv [24, 3] = 72 x 4 = 288 bytes
//   recurrent [v_heads, k_dim, v_dim] = [4, 4, 2]       = 32 x 4 = 128 bytes
//   short conv over 8 channels, kernel 3: conv [8, 2]   = 16 x 4 =  64 bytes
//   per unit: 2 x (288 + 128) + 64 = 896 bytes
// The attention layer keeps (8 + 8) x 2 = 32 bytes per token (bf16), 64 (f32).

// CHECK-LABEL: module attributes {cbc.cache_plan = #cbc.cache_plan<
// CHECK-SAME: groups = [#cbc.cache_group<id = 0, retention = <all>, layers = [1], bytes_per_token = 32>,
// CHECK-SAME: #cbc.cache_group<id = 1, kind = state, retention = <all>, layers = [0, 2, 3], bytes_per_unit = 896>]
// CHECK-SAME: layers = [#cbc.cache_layer<layer = 1, group = 0, rows = [#cbc.cache_row<"k", 8>, #cbc.cache_row<"v", 8>]>]
// CHECK-SAME: states = [
// CHECK-SAME: #cbc.state_decl<layer = 0, name = "conv", shape = [24, 3], bytes = 288>,
// CHECK-SAME: #cbc.state_decl<layer = 0, name = "recurrent", shape = [4, 4, 2], bytes = 128>,
// CHECK-SAME: #cbc.state_decl<layer = 2, name = "conv", shape = [24, 3], bytes = 288>,
// CHECK-SAME: #cbc.state_decl<layer = 2, name = "recurrent", shape = [4, 4, 2], bytes = 128>,
// The list closes after layer 3: nothing for layer 4.
// CHECK-SAME: #cbc.state_decl<layer = 3, name = "conv", shape = [8, 2], bytes = 64>]>}
// CHECK-LABEL: func.func @states
// The state ops themselves are left as they are.
// CHECK: cbc.state.conv1d {{.*}} {act = #cbc.act<silu>, layer = 0 : i64}
// CHECK: cbc.state.gated_delta {{.*}}layer = 0 : i64
// CHECK: cbc.kv.append {{.*}} {group = 0 : i64, {{.*}}layer = 1 : i64
// CHECK: cbc.kv.attention {{.*}} {group = 0 : i64, {{.*}}layer = 1 : i64

// States are fp32 whatever the kv dtype: the same bytes under kv-dtype=f32.
// F32: module attributes {cbc.cache_plan = #cbc.cache_plan<block_size = 32, kv_dtype = f32, groups = [#cbc.cache_group<id = 0, retention = <all>, layers = [1], bytes_per_token = 64>, #cbc.cache_group<id = 1, kind = state, retention = <all>, layers = [0, 2, 3], bytes_per_unit = 896>],
// F32-SAME: states = [#cbc.state_decl<layer = 0, name = "conv", shape = [24, 3], bytes = 288>,
// F32-LABEL: func.func @states
func.func @states(%x: tensor<?x8xf32>, %q: tensor<?x16xf32>, %qkv: tensor<?x24xf32>, %ab: tensor<?x4xf32>,
                  %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>,
                  %cw: tensor<24x1x4xbf16>, %alog: tensor<4xf32>, %dt: tensor<4xbf16>,
                  %sw: tensor<8x1x3xbf16>, %w1: tensor<8x1x1xbf16>) {
  // Layer 0: gated delta net.
  %c0 = cbc.state.conv1d %qkv, %cw, %p, %p, %p, %p {layer = 0 : i64, act = #cbc.act<silu>} : (tensor<?x24xf32>, tensor<24x1x4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x24xf32>
  %s0:3 = cbc.math.split %c0 : tensor<?x24xf32> -> tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
  %o0 = cbc.state.gated_delta %s0#0, %s0#1, %s0#2, %ab, %ab, %alog, %dt, %p, %p, %p, %p {layer = 0 : i64, num_k_heads = 2 : i64, num_v_heads = 4 : i64, k_dim = 4 : i64, v_dim = 2 : i64, qk_l2norm} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  // Layer 1: attention.
  cbc.kv.append %x, %x, %p, %p, %p, %bt {layer = 1 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  %a1 = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  // Layer 2: gated delta net, the same state names in another layer.
  %c2 = cbc.state.conv1d %qkv, %cw, %p, %p, %p, %p {layer = 2 : i64, act = #cbc.act<silu>} : (tensor<?x24xf32>, tensor<24x1x4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x24xf32>
  %s2:3 = cbc.math.split %c2 : tensor<?x24xf32> -> tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
  %o2 = cbc.state.gated_delta %s2#0, %s2#1, %s2#2, %ab, %ab, %alog, %dt, %p, %p, %p, %p {layer = 2 : i64, num_k_heads = 2 : i64, num_v_heads = 4 : i64, k_dim = 4 : i64, v_dim = 2 : i64, qk_l2norm} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  // Layer 3: short conv.
  %c3 = cbc.state.conv1d %x, %sw, %p, %p, %p, %p {layer = 3 : i64} : (tensor<?x8xf32>, tensor<8x1x3xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  // Layer 4: kernel 1.
  %c4 = cbc.state.conv1d %x, %w1, %p, %p, %p, %p {layer = 4 : i64} : (tensor<?x8xf32>, tensor<8x1x1xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// Convs of kernel 1 declare nothing, so the plan has no states at all, and two of them in one
// layer do not clash.
// CHECK-LABEL: module attributes {cbc.cache_plan = #cbc.cache_plan<block_size = 16, kv_dtype = bf16>}
// CHECK-LABEL: func.func @kernel_one
func.func @kernel_one(%x: tensor<?x8xf32>, %w1: tensor<8x1x1xbf16>, %p: tensor<?xi32>) {
  %0 = cbc.state.conv1d %x, %w1, %p, %p, %p, %p {layer = 0 : i64} : (tensor<?x8xf32>, tensor<8x1x1xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  %1 = cbc.state.conv1d %x, %w1, %p, %p, %p, %p {layer = 0 : i64} : (tensor<?x8xf32>, tensor<8x1x1xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// An attention-only module declares no states: the plan prints none.
// CHECK-LABEL: module attributes {cbc.cache_plan = #cbc.cache_plan<block_size = 16, kv_dtype = bf16, groups = [#cbc.cache_group<id = 0, retention = <all>, layers = [0], bytes_per_token = 32>], layers = [#cbc.cache_layer<layer = 0, group = 0, rows = [#cbc.cache_row<"k", 8>, #cbc.cache_row<"v", 8>]>]>}
// CHECK-LABEL: func.func @attention_only
func.func @attention_only(%k: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  cbc.kv.append %k, %k, %p, %p, %p, %bt {layer = 0 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  return
}

// -----

// Two convs name the same state in one layer.
func.func @state_twice(%x: tensor<?x8xf32>, %w: tensor<8x1x4xbf16>, %p: tensor<?xi32>) {
  %0 = cbc.state.conv1d %x, %w, %p, %p, %p, %p {layer = 5 : i64} : (tensor<?x8xf32>, tensor<8x1x4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  // expected-error @+1 {{'cbc.state.conv1d' op declares state 'conv' of layer 5 twice}}
  %1 = cbc.state.conv1d %0, %w, %p, %p, %p, %p {layer = 5 : i64, act = #cbc.act<silu>} : (tensor<?x8xf32>, tensor<8x1x4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// Names are shared across op kinds: a conv whose state is called "recurrent" clashes with the
// scan of its layer.
func.func @state_name_clash(%x: tensor<?x8xf32>, %a: tensor<?x4xf32>, %cw: tensor<8x1x4xbf16>, %w: tensor<4xf32>, %p: tensor<?xi32>) {
  %0 = cbc.state.conv1d %x, %cw, %p, %p, %p, %p {layer = 2 : i64, state = "recurrent"} : (tensor<?x8xf32>, tensor<8x1x4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  // expected-error @+1 {{'cbc.state.gated_delta' op declares state 'recurrent' of layer 2 twice}}
  %1 = cbc.state.gated_delta %0, %x, %x, %a, %a, %w, %w, %p, %p, %p, %p {layer = 2 : i64, num_k_heads = 2 : i64, num_v_heads = 4 : i64, k_dim = 4 : i64, v_dim = 2 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// Mamba states. Layer 0 is a Mamba2 mixer: 4 heads of head_dim 2, 2 groups of state size 3, so
// the conv runs over x|B|C = 4 x 2 + 2 x 2 x 3 = 20 channels with kernel 4, and the SSD scan
// keeps one head_dim x state_size matrix per head. Layer 1 is a Mamba1 mixer over 8 channels
// with state size 3 and kernel 4: the scan keeps state_size values per channel. Layer 2 is a
// selective scan without z and with 2 groups (Zamba): the state is still [channels, state].
//
//   layer 0: conv [20, 3]  = 60 x 4 = 240 bytes; recurrent [heads, head_dim, state] = [4, 2, 3] = 24 x 4 = 96 bytes
//   layer 1: conv [8, 3]   = 24 x 4 =  96 bytes; recurrent [channels, state]        = [8, 3]    = 24 x 4 = 96 bytes
//   layer 2: recurrent [8, 3] = 96 bytes
//   per unit: 240 + 96 + 96 + 96 + 96 = 624 bytes, whatever the kv dtype; the state group alone.

// CHECK-LABEL: module attributes {cbc.cache_plan = #cbc.cache_plan<block_size = 16, kv_dtype = bf16,
// CHECK-SAME: groups = [#cbc.cache_group<id = 0, kind = state, retention = <all>, layers = [0, 1, 2], bytes_per_unit = 624>]
// CHECK-SAME: states = [
// CHECK-SAME: #cbc.state_decl<layer = 0, name = "conv", shape = [20, 3], bytes = 240>,
// CHECK-SAME: #cbc.state_decl<layer = 0, name = "recurrent", shape = [4, 2, 3], bytes = 96>,
// CHECK-SAME: #cbc.state_decl<layer = 1, name = "conv", shape = [8, 3], bytes = 96>,
// CHECK-SAME: #cbc.state_decl<layer = 1, name = "recurrent", shape = [8, 3], bytes = 96>,
// CHECK-SAME: #cbc.state_decl<layer = 2, name = "recurrent", shape = [8, 3], bytes = 96>]>}
// CHECK-LABEL: func.func @mamba_states
// CHECK: cbc.state.ssd {{.*}}layer = 0 : i64
// CHECK: cbc.state.selective_scan {{.*}}layer = 1 : i64
// CHECK: cbc.state.selective_scan {{.*}}layer = 2 : i64
// F32: module attributes {cbc.cache_plan = #cbc.cache_plan<block_size = 32, kv_dtype = f32, groups = [#cbc.cache_group<id = 0, kind = state, retention = <all>, layers = [0, 1, 2], bytes_per_unit = 624>], states = [#cbc.state_decl<layer = 0, name = "conv", shape = [20, 3], bytes = 240>, #cbc.state_decl<layer = 0, name = "recurrent", shape = [4, 2, 3], bytes = 96>, #cbc.state_decl<layer = 1, name = "conv", shape = [8, 3], bytes = 96>, #cbc.state_decl<layer = 1, name = "recurrent", shape = [8, 3], bytes = 96>, #cbc.state_decl<layer = 2, name = "recurrent", shape = [8, 3], bytes = 96>]>}
// F32-LABEL: func.func @mamba_states
func.func @mamba_states(%xbc: tensor<?x20xf32>, %dt: tensor<?x4xf32>, %h: tensor<4xf32>, %cw: tensor<20x1x4xbf16>,
                        %x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %b2: tensor<?x6xf32>, %alog: tensor<8x3xf32>,
                        %c: tensor<8xf32>, %cw1: tensor<8x1x4xbf16>, %p: tensor<?xi32>) {
  // Layer 0: an SSD mixer.
  %c0 = cbc.state.conv1d %xbc, %cw, %p, %p, %p, %p {layer = 0 : i64, act = #cbc.act<silu>} : (tensor<?x20xf32>, tensor<20x1x4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x20xf32>
  %s0:3 = cbc.math.split %c0 : tensor<?x20xf32> -> tensor<?x8xf32>, tensor<?x6xf32>, tensor<?x6xf32>
  %o0 = cbc.state.ssd %s0#0, %dt, %s0#1, %s0#2, %h, %h, %h, %p, %p, %p, %p {layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64, dt_min = 0.001 : f64, dt_max = 0.1 : f64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  // Layer 1: a selective scan with its gate.
  %c1 = cbc.state.conv1d %x, %cw1, %p, %p, %p, %p {layer = 1 : i64, act = #cbc.act<silu>} : (tensor<?x8xf32>, tensor<8x1x4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  %o1 = cbc.state.selective_scan %c1, %x, %b, %b, %alog, %c, %c gate(%x), %p, %p, %p, %p {layer = 1 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  // Layer 2: two groups, no z.
  %o2 = cbc.state.selective_scan %x, %x, %b2, %b2, %alog, %c, %c, %p, %p, %p, %p {layer = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// An SSD scan and its conv name the same state of a layer.
func.func @mamba_state_clash(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %h: tensor<4xf32>, %cw: tensor<8x1x4xbf16>, %p: tensor<?xi32>) {
  %0 = cbc.state.conv1d %x, %cw, %p, %p, %p, %p {layer = 3 : i64, state = "ssm"} : (tensor<?x8xf32>, tensor<8x1x4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  // expected-error @+1 {{'cbc.state.ssd' op declares state 'ssm' of layer 3 twice}}
  %1 = cbc.state.ssd %0, %dt, %b, %b, %h, %h, %h, %p, %p, %p, %p {layer = 3 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64, state = "ssm"} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @entries_not_compressed(%q: tensor<?x16xf32>, %r: tensor<?x0xf32>, %k: tensor<?x8xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  cbc.kv.append %k, %r, %p, %p, %p, %bt {layer = 0 : i64, num_kv_heads = 1 : i64, head_dim = 8 : i64, latent, retention = #cbc.retention<window, 8>} : tensor<?x8xf32>, tensor<?x0xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  cbc.kv.append %k, %r, %p, %p, %p, %bt {layer = 2 : i64, num_kv_heads = 1 : i64, head_dim = 8 : i64, latent, retention = #cbc.retention<window, 8>} : tensor<?x8xf32>, tensor<?x0xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  // expected-error @+1 {{'cbc.kv.latent_attention' op reads entries of layer 2, which no latent cbc.kv.append of retention #cbc.retention<compressed, 4> writes}}
  %o = cbc.kv.latent_attention %q, %r, %p, %p, %p, %p, %p, %bt {layer = 0 : i64, num_heads = 2 : i64, latent_dim = 8 : i64, rope_dim = 0 : i64, scale = 0.5 : f64, retention = #cbc.retention<window, 8>, entries_rate = 4 : i64, entries_layer = 2 : i64} : tensor<?x16xf32>, tensor<?x0xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @index_select_retention(%k: tensor<?x8xf32>, %r: tensor<?x0xf32>, %ik: tensor<?x6xf32>, %iq: tensor<?x12xf32>, %iw: tensor<?x2xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  cbc.kv.append %k, %r, %p, %p, %p, %bt {layer = 1 : i64, num_kv_heads = 1 : i64, head_dim = 8 : i64, latent, retention = #cbc.retention<compressed, 4>} : tensor<?x8xf32>, tensor<?x0xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  cbc.kv.index_append %ik, %p, %p, %p, %bt {layer = 1 : i64, head_dim = 6 : i64, retention = #cbc.retention<compressed, 4>} : tensor<?x6xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  // expected-error @+1 {{'cbc.kv.index_select' op retention differs from the cbc.kv.index_append of layer 1}}
  %o = cbc.kv.index_select %iq, %iw, %p, %p, %p, %p, %p, %bt {layer = 1 : i64, num_heads = 2 : i64, head_dim = 6 : i64, topk = 3 : i64, key_scale = 0.5 : f64, weight_scale = 0.7 : f64} : tensor<?x12xf32>, tensor<?x2xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x3xi32>
  return
}
