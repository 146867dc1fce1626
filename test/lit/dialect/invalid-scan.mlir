// RUN: cbc-opt %s -split-input-file -verify-diagnostics

// One case (or more) per verifier message of cbc.state.scan's ssd_mamba2 and selective_mamba1
// kinds (StateScanOp::verifySsd, ::verifySelective), of cbc.math.act (ActOp::verify), and of the
// per-row weight of cbc.math.rms_norm_gated, with the edges of each check (zero, negative,
// NaN and infinite values, wrong element types, dynamic shapes). The gated_delta kind's messages
// are covered in invalid.mlir.
//
// ssd_mamba2 cases use 4 heads of head_dim 2 and 2 groups of state size 3 unless they say
// otherwise: x [T, 8], dt [T, 4], B and C [T, 6], A_log, dt_bias and D [4], then cu_seqlens,
// slots and has_initial_state. selective_mamba1 cases use 8 channels, 1 group and state size 3:
// x and dt [T, 8], B and C [T, 3], A_log [8, 3], dt_bias and D [8], z [T, 8], then the metadata.

//===----------------------------------------------------------------------===//
// cbc.state.scan, kind ssd_mamba2
//===----------------------------------------------------------------------===//

// The ssd kind checks the metadata first as well: slots as i64.
func.func @ssd_metadata_type(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>, %l: tensor<?xi64>) {
  // expected-error @+1 {{'cbc.state.scan' op the last three operands must be cu_seqlens, slots and has_initial_state}}
  %0 = cbc.state.scan %x, %dt, %b, %b, %w, %w, %w, %i, %l, %i {kind = "ssd_mamba2", layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi64>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// D is missing: nine operands.
func.func @ssd_no_d(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op kind 'ssd_mamba2' takes x, dt, B, C, A_log, dt_bias, D and the metadata}}
  %0 = cbc.state.scan %x, %dt, %b, %b, %w, %w, %i, %i, %i {kind = "ssd_mamba2", layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// A gate after D (as selective_mamba1 takes): eleven operands.
func.func @ssd_with_z(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op kind 'ssd_mamba2' takes x, dt, B, C, A_log, dt_bias, D and the metadata}}
  %0 = cbc.state.scan %x, %dt, %b, %b, %w, %w, %w, %x, %i, %i, %i {kind = "ssd_mamba2", layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// Without num_heads.
func.func @ssd_no_num_heads(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op kind 'ssd_mamba2' needs num_heads, head_dim, n_groups and state_size}}
  %0 = cbc.state.scan %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i {kind = "ssd_mamba2", layer = 0 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// Without head_dim.
func.func @ssd_no_head_dim(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op kind 'ssd_mamba2' needs num_heads, head_dim, n_groups and state_size}}
  %0 = cbc.state.scan %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i {kind = "ssd_mamba2", layer = 0 : i64, num_heads = 4 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// Without n_groups.
func.func @ssd_no_n_groups(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op kind 'ssd_mamba2' needs num_heads, head_dim, n_groups and state_size}}
  %0 = cbc.state.scan %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i {kind = "ssd_mamba2", layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// Without state_size.
func.func @ssd_no_state_size(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op kind 'ssd_mamba2' needs num_heads, head_dim, n_groups and state_size}}
  %0 = cbc.state.scan %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i {kind = "ssd_mamba2", layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// 4 heads in 3 groups (B and C [T, 3 x 2]).
func.func @ssd_heads_not_multiple(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op num_heads must be a positive multiple of n_groups}}
  %0 = cbc.state.scan %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i {kind = "ssd_mamba2", layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 3 : i64, state_size = 2 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// num_heads 0.
func.func @ssd_num_heads_0(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op num_heads must be a positive multiple of n_groups}}
  %0 = cbc.state.scan %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i {kind = "ssd_mamba2", layer = 0 : i64, num_heads = 0 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// head_dim 0.
func.func @ssd_head_dim_0(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op num_heads must be a positive multiple of n_groups}}
  %0 = cbc.state.scan %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i {kind = "ssd_mamba2", layer = 0 : i64, num_heads = 4 : i64, head_dim = 0 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// n_groups 0.
func.func @ssd_n_groups_0(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op num_heads must be a positive multiple of n_groups}}
  %0 = cbc.state.scan %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i {kind = "ssd_mamba2", layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 0 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// state_size 0.
func.func @ssd_state_size_0(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op num_heads must be a positive multiple of n_groups}}
  %0 = cbc.state.scan %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i {kind = "ssd_mamba2", layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 0 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// head_dim -2.
func.func @ssd_head_dim_neg2(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op num_heads must be a positive multiple of n_groups}}
  %0 = cbc.state.scan %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i {kind = "ssd_mamba2", layer = 0 : i64, num_heads = 4 : i64, head_dim = -2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// n_groups -2.
func.func @ssd_n_groups_neg2(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op num_heads must be a positive multiple of n_groups}}
  %0 = cbc.state.scan %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i {kind = "ssd_mamba2", layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = -2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// state_size -3.
func.func @ssd_state_size_neg3(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op num_heads must be a positive multiple of n_groups}}
  %0 = cbc.state.scan %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i {kind = "ssd_mamba2", layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = -3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// x of 6 columns for 4 heads of 2.
func.func @ssd_x_width(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>, %x6: tensor<?x6xf32>) {
  // expected-error @+1 {{'cbc.state.scan' op x must be [T, num_heads * head_dim] and dt [T, num_heads]}}
  %0 = cbc.state.scan %x6, %dt, %b, %b, %w, %w, %w, %i, %i, %i {kind = "ssd_mamba2", layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x6xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// x as bf16 rows.
func.func @ssd_x_bf16(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>, %xb: tensor<?x8xbf16>) {
  // expected-error @+1 {{'cbc.state.scan' op x must be [T, num_heads * head_dim] and dt [T, num_heads]}}
  %0 = cbc.state.scan %xb, %dt, %b, %b, %w, %w, %w, %i, %i, %i {kind = "ssd_mamba2", layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xbf16>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// x with a static row count is not packed rows.
func.func @ssd_x_static(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>, %xs: tensor<5x8xf32>) {
  // expected-error @+1 {{'cbc.state.scan' op x must be [T, num_heads * head_dim] and dt [T, num_heads]}}
  %0 = cbc.state.scan %xs, %dt, %b, %b, %w, %w, %w, %i, %i, %i {kind = "ssd_mamba2", layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<5x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// dt with one column per channel (Mamba1's layout) instead of per head.
func.func @ssd_dt_width(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op x must be [T, num_heads * head_dim] and dt [T, num_heads]}}
  %0 = cbc.state.scan %x, %x, %b, %b, %w, %w, %w, %i, %i, %i {kind = "ssd_mamba2", layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// B of one group only.
func.func @ssd_b_width(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>, %b3: tensor<?x3xf32>) {
  // expected-error @+1 {{'cbc.state.scan' op B and C must be [T, n_groups * state_size]}}
  %0 = cbc.state.scan %x, %dt, %b3, %b, %w, %w, %w, %i, %i, %i {kind = "ssd_mamba2", layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x3xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// C of one group only.
func.func @ssd_c_width(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>, %b3: tensor<?x3xf32>) {
  // expected-error @+1 {{'cbc.state.scan' op B and C must be [T, n_groups * state_size]}}
  %0 = cbc.state.scan %x, %dt, %b, %b3, %w, %w, %w, %i, %i, %i {kind = "ssd_mamba2", layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// C as a vector.
func.func @ssd_c_rank(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>, %v: tensor<6xf32>) {
  // expected-error @+1 {{'cbc.state.scan' op B and C must be [T, n_groups * state_size]}}
  %0 = cbc.state.scan %x, %dt, %b, %v, %w, %w, %w, %i, %i, %i {kind = "ssd_mamba2", layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// A_log with one entry per channel.
func.func @ssd_alog_entries(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>, %w8: tensor<8xf32>) {
  // expected-error @+1 {{'cbc.state.scan' op A_log, dt_bias and D must have num_heads entries}}
  %0 = cbc.state.scan %x, %dt, %b, %b, %w8, %w, %w, %i, %i, %i {kind = "ssd_mamba2", layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// dt_bias of 2 entries.
func.func @ssd_dt_bias_entries(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>, %w2: tensor<2xf32>) {
  // expected-error @+1 {{'cbc.state.scan' op A_log, dt_bias and D must have num_heads entries}}
  %0 = cbc.state.scan %x, %dt, %b, %b, %w, %w2, %w, %i, %i, %i {kind = "ssd_mamba2", layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<2xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// D per channel.
func.func @ssd_d_entries(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>, %w8: tensor<8xbf16>) {
  // expected-error @+1 {{'cbc.state.scan' op A_log, dt_bias and D must have num_heads entries}}
  %0 = cbc.state.scan %x, %dt, %b, %b, %w, %w, %w8, %i, %i, %i {kind = "ssd_mamba2", layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// D of dynamic size.
func.func @ssd_d_dynamic(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>, %wd: tensor<?xf32>) {
  // expected-error @+1 {{'cbc.state.scan' op A_log, dt_bias and D must have num_heads entries}}
  %0 = cbc.state.scan %x, %dt, %b, %b, %w, %w, %wd, %i, %i, %i {kind = "ssd_mamba2", layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// A result of one head's width.
func.func @ssd_result_width(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op result width must be num_heads * head_dim}}
  %0 = cbc.state.scan %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i {kind = "ssd_mamba2", layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2xf32>
  return
}

// -----

// time_step_limit [0.2, 0.1].
func.func @ssd_dt_min_above_max(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op dt limits must satisfy 0 <= dt_min <= dt_max}}
  %0 = cbc.state.scan %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i {kind = "ssd_mamba2", layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64, dt_min = 0.2 : f64, dt_max = 0.1 : f64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// A negative lower limit.
func.func @ssd_dt_min_negative(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op dt limits must satisfy 0 <= dt_min <= dt_max}}
  %0 = cbc.state.scan %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i {kind = "ssd_mamba2", layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64, dt_min = -0.001 : f64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// A negative upper limit with the default lower one (0).
func.func @ssd_dt_max_negative(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op dt limits must satisfy 0 <= dt_min <= dt_max}}
  %0 = cbc.state.scan %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i {kind = "ssd_mamba2", layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64, dt_max = -1.0 : f64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// A NaN lower limit.
func.func @ssd_dt_min_nan(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op dt limits must satisfy 0 <= dt_min <= dt_max}}
  %0 = cbc.state.scan %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i {kind = "ssd_mamba2", layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64, dt_min = 0x7FF8000000000000 : f64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// A NaN upper limit.
func.func @ssd_dt_max_nan(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op dt limits must satisfy 0 <= dt_min <= dt_max}}
  %0 = cbc.state.scan %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i {kind = "ssd_mamba2", layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64, dt_max = 0x7FF8000000000000 : f64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// An infinite lower limit is above any finite upper limit.
func.func @ssd_dt_min_inf(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op dt limits must satisfy 0 <= dt_min <= dt_max}}
  %0 = cbc.state.scan %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i {kind = "ssd_mamba2", layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64, dt_min = 0x7FF0000000000000 : f64, dt_max = 1.0 : f64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// dt_max -inf.
func.func @ssd_dt_max_neg_inf(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %w: tensor<4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op dt limits must satisfy 0 <= dt_min <= dt_max}}
  %0 = cbc.state.scan %x, %dt, %b, %b, %w, %w, %w, %i, %i, %i {kind = "ssd_mamba2", layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64, dt_max = 0xFFF0000000000000 : f64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// cbc.state.scan, kind selective_mamba1
//===----------------------------------------------------------------------===//

// has_initial_state as packed rows.
func.func @sel_metadata_type(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>, %h: tensor<?x1xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op the last three operands must be cu_seqlens, slots and has_initial_state}}
  %0 = cbc.state.scan %x, %x, %b, %b, %a, %w, %w, %x, %i, %i, %h {kind = "selective_mamba1", layer = 0 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?x1xi32>) -> tensor<?x8xf32>
  return
}

// -----

// Without z and without D: nine operands.
func.func @sel_no_d(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op kind 'selective_mamba1' takes x, dt, B, C, A_log, dt_bias, D, an optional z and the metadata}}
  %0 = cbc.state.scan %x, %x, %b, %b, %a, %w, %i, %i, %i {kind = "selective_mamba1", layer = 0 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// z twice: twelve operands.
func.func @sel_two_gates(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op kind 'selective_mamba1' takes x, dt, B, C, A_log, dt_bias, D, an optional z and the metadata}}
  %0 = cbc.state.scan %x, %x, %b, %b, %a, %w, %w, %x, %x, %i, %i, %i {kind = "selective_mamba1", layer = 0 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// Without n_groups.
func.func @sel_no_n_groups(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op kind 'selective_mamba1' needs n_groups and state_size}}
  %0 = cbc.state.scan %x, %x, %b, %b, %a, %w, %w, %x, %i, %i, %i {kind = "selective_mamba1", layer = 0 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// Without state_size (the ssd attributes do not stand in for it).
func.func @sel_no_state_size(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op kind 'selective_mamba1' needs n_groups and state_size}}
  %0 = cbc.state.scan %x, %x, %b, %b, %a, %w, %w, %x, %i, %i, %i {kind = "selective_mamba1", layer = 0 : i64, n_groups = 1 : i64, num_heads = 8 : i64, head_dim = 1 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// dt of 4 columns (Mamba2's per-head dt).
func.func @sel_dt_width(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>, %d4: tensor<?x4xf32>) {
  // expected-error @+1 {{'cbc.state.scan' op x, dt and z must be [T, channels]}}
  %0 = cbc.state.scan %x, %d4, %b, %b, %a, %w, %w, %x, %i, %i, %i {kind = "selective_mamba1", layer = 0 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// z of 4 columns.
func.func @sel_z_width(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>, %z4: tensor<?x4xf32>) {
  // expected-error @+1 {{'cbc.state.scan' op x, dt and z must be [T, channels]}}
  %0 = cbc.state.scan %x, %x, %b, %b, %a, %w, %w, %z4, %i, %i, %i {kind = "selective_mamba1", layer = 0 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// z as bf16 rows.
func.func @sel_z_bf16(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>, %zb: tensor<?x8xbf16>) {
  // expected-error @+1 {{'cbc.state.scan' op x, dt and z must be [T, channels]}}
  %0 = cbc.state.scan %x, %x, %b, %b, %a, %w, %w, %zb, %i, %i, %i {kind = "selective_mamba1", layer = 0 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// x as bf16 rows: no channel count at all.
func.func @sel_x_bf16(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>, %xb: tensor<?x8xbf16>) {
  // expected-error @+1 {{'cbc.state.scan' op x, dt and z must be [T, channels]}}
  %0 = cbc.state.scan %xb, %x, %b, %b, %a, %w, %w, %x, %i, %i, %i {kind = "selective_mamba1", layer = 0 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xbf16>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// x of zero channels.
func.func @sel_x_empty(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>, %x0: tensor<?x0xf32>, %a0: tensor<0x3xf32>, %w0: tensor<0xf32>) {
  // expected-error @+1 {{'cbc.state.scan' op x, dt and z must be [T, channels]}}
  %0 = cbc.state.scan %x0, %x0, %b, %b, %a0, %w0, %w0, %i, %i, %i {kind = "selective_mamba1", layer = 0 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x0xf32>, tensor<?x0xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<0x3xf32>, tensor<0xf32>, tensor<0xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x0xf32>
  return
}

// -----

// 3 groups over 8 channels (B and C [T, 3 x 1]).
func.func @sel_groups_not_dividing(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op n_groups must divide the channel count}}
  %0 = cbc.state.scan %x, %x, %b, %b, %a, %w, %w, %x, %i, %i, %i {kind = "selective_mamba1", layer = 0 : i64, n_groups = 3 : i64, state_size = 1 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// n_groups 0.
func.func @sel_groups_zero(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op n_groups must divide the channel count}}
  %0 = cbc.state.scan %x, %x, %b, %b, %a, %w, %w, %x, %i, %i, %i {kind = "selective_mamba1", layer = 0 : i64, n_groups = 0 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// state_size 0.
func.func @sel_state_zero(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op n_groups must divide the channel count}}
  %0 = cbc.state.scan %x, %x, %b, %b, %a, %w, %w, %x, %i, %i, %i {kind = "selective_mamba1", layer = 0 : i64, n_groups = 1 : i64, state_size = 0 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// state_size -3.
func.func @sel_state_negative(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op n_groups must divide the channel count}}
  %0 = cbc.state.scan %x, %x, %b, %b, %a, %w, %w, %x, %i, %i, %i {kind = "selective_mamba1", layer = 0 : i64, n_groups = 1 : i64, state_size = -3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// B for two groups while n_groups is 1.
func.func @sel_b_width(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>, %b6: tensor<?x6xf32>) {
  // expected-error @+1 {{'cbc.state.scan' op B and C must be [T, n_groups * state_size]}}
  %0 = cbc.state.scan %x, %x, %b6, %b, %a, %w, %w, %x, %i, %i, %i {kind = "selective_mamba1", layer = 0 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x6xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// C of 2 columns.
func.func @sel_c_width(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>, %c2: tensor<?x2xf32>) {
  // expected-error @+1 {{'cbc.state.scan' op B and C must be [T, n_groups * state_size]}}
  %0 = cbc.state.scan %x, %x, %b, %c2, %a, %w, %w, %x, %i, %i, %i {kind = "selective_mamba1", layer = 0 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x2xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// A_log with one entry per channel (Mamba2's per-head layout).
func.func @sel_alog_per_channel(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op A_log must be [channels, state_size]}}
  %0 = cbc.state.scan %x, %x, %b, %b, %w, %w, %w, %x, %i, %i, %i {kind = "selective_mamba1", layer = 0 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// A_log of dynamic shape.
func.func @sel_alog_dynamic(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>, %ad: tensor<8x?xf32>) {
  // expected-error @+1 {{'cbc.state.scan' op A_log must be [channels, state_size]}}
  %0 = cbc.state.scan %x, %x, %b, %b, %ad, %w, %w, %x, %i, %i, %i {kind = "selective_mamba1", layer = 0 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x?xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// dt_bias of 4 entries.
func.func @sel_dt_bias_entries(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>, %w4: tensor<4xf32>) {
  // expected-error @+1 {{'cbc.state.scan' op dt_bias and D must have one entry per channel}}
  %0 = cbc.state.scan %x, %x, %b, %b, %a, %w4, %w, %x, %i, %i, %i {kind = "selective_mamba1", layer = 0 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<4xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// D of 16 entries, without z.
func.func @sel_d_entries(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>, %w16: tensor<16xf32>) {
  // expected-error @+1 {{'cbc.state.scan' op dt_bias and D must have one entry per channel}}
  %0 = cbc.state.scan %x, %x, %b, %b, %a, %w, %w16, %i, %i, %i {kind = "selective_mamba1", layer = 0 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// A result of 16 columns.
func.func @sel_result_width(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op result width must equal the channel count}}
  %0 = cbc.state.scan %x, %x, %b, %b, %a, %w, %w, %x, %i, %i, %i {kind = "selective_mamba1", layer = 0 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x16xf32>
  return
}

// -----

// A result of 4 columns, without z.
func.func @sel_result_width_no_z(%x: tensor<?x8xf32>, %b: tensor<?x3xf32>, %a: tensor<8x3xf32>, %w: tensor<8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'cbc.state.scan' op result width must equal the channel count}}
  %0 = cbc.state.scan %x, %x, %b, %b, %a, %w, %w, %i, %i, %i {kind = "selective_mamba1", layer = 0 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// cbc.math.act
//===----------------------------------------------------------------------===//

// Activation 'sigmoid'.
func.func @act_unknown_sigmoid(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.act' op unknown activation 'sigmoid'}}
  %0 = cbc.math.act %x {act = "sigmoid"} : tensor<?x8xf32>
  return
}

// -----

// Activation 'gpt_oss'.
func.func @act_unknown_gpt_oss(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.act' op unknown activation 'gpt_oss'}}
  %0 = cbc.math.act %x {act = "gpt_oss"} : tensor<?x8xf32>
  return
}

// -----

// Activation 'gelu_pytorch_tanh'.
func.func @act_unknown_gelu_pytorch_tanh(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.act' op unknown activation 'gelu_pytorch_tanh'}}
  %0 = cbc.math.act %x {act = "gelu_pytorch_tanh"} : tensor<?x8xf32>
  return
}

// -----

// Activation 'SiLU'.
func.func @act_unknown_SiLU(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.act' op unknown activation 'SiLU'}}
  %0 = cbc.math.act %x {act = "SiLU"} : tensor<?x8xf32>
  return
}

// -----

// Activation ''.
func.func @act_unknown_empty(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.act' op unknown activation ''}}
  %0 = cbc.math.act %x {act = ""} : tensor<?x8xf32>
  return
}

// -----

// A scale of inf.
func.func @act_scale_inf(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.act' op scale must be finite}}
  %0 = cbc.math.act %x {act = "none", scale = 0x7FF0000000000000 : f64} : tensor<?x8xf32>
  return
}

// -----

// A scale of neg inf.
func.func @act_scale_neg_inf(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.act' op scale must be finite}}
  %0 = cbc.math.act %x {act = "none", scale = 0xFFF0000000000000 : f64} : tensor<?x8xf32>
  return
}

// -----

// A scale of nan.
func.func @act_scale_nan(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cbc.math.act' op scale must be finite}}
  %0 = cbc.math.act %x {act = "none", scale = 0x7FF8000000000000 : f64} : tensor<?x8xf32>
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

// Operand and result are packed f32 rows of one type.
func.func @act_type(%x: tensor<?x8xbf16>) {
  // expected-error @+1 {{'cbc.math.act' op operand #0 must be packed rows (tensor<?xNxf32>), but got 'tensor<?x8xbf16>'}}
  %0 = cbc.math.act %x {act = "silu"} : tensor<?x8xbf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// cbc.math.rms_norm_gated, per-row weight
//===----------------------------------------------------------------------===//

// Groups of 4 over 16 features: the weight has 4 or 16 entries, not 8.
func.func @rng_weight_neither(%x: tensor<?x16xf32>, %w: tensor<8xbf16>) {
  // expected-error @+1 {{'cbc.math.rms_norm_gated' op weight must have one entry per feature of a group or of the row}}
  %0 = cbc.math.rms_norm_gated %x, %x, %w {eps = 1.0e-5 : f64, group = 4 : i64, order = "gate_norm"} : tensor<?x16xf32>, tensor<?x16xf32>, tensor<8xbf16> -> tensor<?x16xf32>
  return
}

// -----

// A per-row weight of 16 elements as [4, 4].
func.func @rng_weight_row_rank(%x: tensor<?x16xf32>, %w: tensor<4x4xbf16>) {
  // expected-error @+1 {{'cbc.math.rms_norm_gated' op weight must have one entry per feature of a group or of the row}}
  %0 = cbc.math.rms_norm_gated %x, %x, %w {eps = 1.0e-5 : f64, group = 4 : i64, order = "gate_norm"} : tensor<?x16xf32>, tensor<?x16xf32>, tensor<4x4xbf16> -> tensor<?x16xf32>
  return
}

// -----

// More entries than the row (32 for 16 features).
func.func @rng_weight_too_long(%x: tensor<?x16xf32>, %w: tensor<32xbf16>) {
  // expected-error @+1 {{'cbc.math.rms_norm_gated' op weight must have one entry per feature of a group or of the row}}
  %0 = cbc.math.rms_norm_gated %x, %x, %w {eps = 1.0e-5 : f64, group = 4 : i64} : tensor<?x16xf32>, tensor<?x16xf32>, tensor<32xbf16> -> tensor<?x16xf32>
  return
}
