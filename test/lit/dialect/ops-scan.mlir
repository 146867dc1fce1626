// RUN: cbc-opt %s | cbc-opt | FileCheck %s
// RUN: cbc-opt %s --mlir-print-op-generic | cbc-opt | FileCheck %s

// The Mamba ops of the cbc dialect (the ssd_mamba2 and selective_mamba1 kinds of
// cbc.state.scan, cbc.math.act, cbc.math.rms_norm_gated with one weight entry per row feature)
// and sigmoid routing with a selection bias, parsed, printed and parsed again, once through the
// generic form. Attributes equal to their defaults (dt_min 0, dt_max inf, state "recurrent",
// scale 1) are not printed.

// ssd_mamba2 with 4 heads of head_dim 2 (x [T, 8], dt [T, 4]) and 2 groups of state size 3
// (B and C [T, 6]); A_log, dt_bias and D have one entry per head.
// CHECK-LABEL: func.func @ssd_mamba2
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x8xf32>, %[[DT:[^:]+]]: tensor<?x4xf32>, %[[B:[^:]+]]: tensor<?x6xf32>, %[[C:[^:]+]]: tensor<?x6xf32>, %[[ALOG:[^:]+]]: tensor<4xf32>, %[[DTB:[^:]+]]: tensor<4xf32>, %[[D:[^:]+]]: tensor<4xbf16>, %[[CU:[^:]+]]: tensor<?xi32>, %[[SLOTS:[^:]+]]: tensor<?xi32>, %[[INIT:[^:]+]]: tensor<?xi32>)
func.func @ssd_mamba2(%x: tensor<?x8xf32>, %dt: tensor<?x4xf32>, %b: tensor<?x6xf32>, %c: tensor<?x6xf32>,
                      %alog: tensor<4xf32>, %dtb: tensor<4xf32>, %d: tensor<4xbf16>, %cu: tensor<?xi32>,
                      %slots: tensor<?xi32>, %init: tensor<?xi32>)
    -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) {
  // dt limits from time_step_limit [0.001, 0.1].
  // CHECK: %[[S0:[0-9]+]] = cbc.state.scan %[[X]], %[[DT]], %[[B]], %[[C]], %[[ALOG]], %[[DTB]], %[[D]], %[[CU]], %[[SLOTS]], %[[INIT]] {dt_max = 1.000000e-01 : f64, dt_min = 1.000000e-03 : f64, head_dim = 2 : i64, kind = "ssd_mamba2", layer = 0 : i64, n_groups = 2 : i64, num_heads = 4 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  %0 = cbc.state.scan %x, %dt, %b, %c, %alog, %dtb, %d, %cu, %slots, %init {kind = "ssd_mamba2", layer = 0 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64, dt_min = 0.001 : f64, dt_max = 0.1 : f64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  // The default limits (0, inf) written out are elided, as is the default state name.
  // CHECK: cbc.state.scan %[[S0]], %[[DT]], %[[B]], %[[C]], %[[ALOG]], %[[DTB]], %[[D]], %[[CU]], %[[SLOTS]], %[[INIT]] {head_dim = 2 : i64, kind = "ssd_mamba2", layer = 1 : i64, n_groups = 2 : i64, num_heads = 4 : i64, state_size = 3 : i64} : (tensor<?x8xf32>,
  %1 = cbc.state.scan %0, %dt, %b, %c, %alog, %dtb, %d, %cu, %slots, %init {kind = "ssd_mamba2", layer = 1 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64, dt_min = 0.0 : f64, dt_max = 0x7FF0000000000000 : f64, state = "recurrent"} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  // Only a lower limit (nemotron_h's time_step_min): dt_max stays the default; another state name.
  // CHECK: cbc.state.scan {{.*}} {dt_min = 1.000000e-03 : f64, head_dim = 2 : i64, kind = "ssd_mamba2", layer = 2 : i64, n_groups = 2 : i64, num_heads = 4 : i64, state = "ssm", state_size = 3 : i64} :
  %2 = cbc.state.scan %1, %dt, %b, %c, %alog, %dtb, %d, %cu, %slots, %init {kind = "ssd_mamba2", layer = 2 : i64, num_heads = 4 : i64, head_dim = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64, dt_min = 0.001 : f64, state = "ssm"} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  // One group for all heads, a limit of equal ends, and 1-element weights of any static shape.
  // CHECK: cbc.state.scan {{.*}} {dt_max = 5.000000e-01 : f64, dt_min = 5.000000e-01 : f64, head_dim = 8 : i64, kind = "ssd_mamba2", layer = 3 : i64, n_groups = 1 : i64, num_heads = 1 : i64, state_size = 6 : i64} : (tensor<?x8xf32>, tensor<?x1xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<1xf32>, tensor<1x1xf32>, tensor<1xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  %dt1:2 = cbc.math.split %dt : tensor<?x4xf32> -> tensor<?x1xf32>, tensor<?x3xf32>
  %w1 = cbc.weight.ref "w1" {sources = [["w1"]]} : tensor<1xf32>
  %w11 = cbc.weight.ref "w11" {sources = [["w11"]]} : tensor<1x1xf32>
  %3 = cbc.state.scan %2, %dt1#0, %b, %c, %w1, %w11, %w1, %cu, %slots, %init {kind = "ssd_mamba2", layer = 3 : i64, num_heads = 1 : i64, head_dim = 8 : i64, n_groups = 1 : i64, state_size = 6 : i64, dt_min = 0.5 : f64, dt_max = 0.5 : f64} : (tensor<?x8xf32>, tensor<?x1xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<1xf32>, tensor<1x1xf32>, tensor<1xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return %0, %1, %2, %3 : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
}

// selective_mamba1 over 8 channels with state size 3: x and dt [T, 8], B and C [T, 3] (one
// group) or [T, 6] (two groups, Zamba's multi-head form), A_log [8, 3], dt_bias and D [8], and
// the optional gate z [T, 8] after D.
// CHECK-LABEL: func.func @selective_mamba1
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x8xf32>, %[[DT:[^:]+]]: tensor<?x8xf32>, %[[B:[^:]+]]: tensor<?x3xf32>, %[[C:[^:]+]]: tensor<?x3xf32>, %[[B2:[^:]+]]: tensor<?x6xf32>, %[[ALOG:[^:]+]]: tensor<8x3xf32>, %[[DTB:[^:]+]]: tensor<8xf32>, %[[D:[^:]+]]: tensor<8xf32>, %[[Z:[^:]+]]: tensor<?x8xf32>, %[[CU:[^:]+]]: tensor<?xi32>, %[[SLOTS:[^:]+]]: tensor<?xi32>, %[[INIT:[^:]+]]: tensor<?xi32>, %[[ALOG3:[^:]+]]: tensor<2x4x3xf32>)
func.func @selective_mamba1(%x: tensor<?x8xf32>, %dt: tensor<?x8xf32>, %b: tensor<?x3xf32>, %c: tensor<?x3xf32>,
                            %b2: tensor<?x6xf32>, %alog: tensor<8x3xf32>, %dtb: tensor<8xf32>, %d: tensor<8xf32>,
                            %z: tensor<?x8xf32>, %cu: tensor<?xi32>, %slots: tensor<?xi32>, %init: tensor<?xi32>,
                            %alog3: tensor<2x4x3xf32>)
    -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) {
  // With z (Mamba, Jamba): eleven operands.
  // CHECK: %[[S0:[0-9]+]] = cbc.state.scan %[[X]], %[[DT]], %[[B]], %[[C]], %[[ALOG]], %[[DTB]], %[[D]], %[[Z]], %[[CU]], %[[SLOTS]], %[[INIT]] {kind = "selective_mamba1", layer = 0 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  %0 = cbc.state.scan %x, %dt, %b, %c, %alog, %dtb, %d, %z, %cu, %slots, %init {kind = "selective_mamba1", layer = 0 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  // Without z: ten operands, the metadata right after D.
  // CHECK: %[[S1:[0-9]+]] = cbc.state.scan %[[S0]], %[[DT]], %[[B]], %[[C]], %[[ALOG]], %[[DTB]], %[[D]], %[[CU]], %[[SLOTS]], %[[INIT]] {kind = "selective_mamba1", layer = 1 : i64, n_groups = 1 : i64, state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  %1 = cbc.state.scan %0, %dt, %b, %c, %alog, %dtb, %d, %cu, %slots, %init {kind = "selective_mamba1", layer = 1 : i64, n_groups = 1 : i64, state_size = 3 : i64, state = "recurrent"} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  // Two groups of 4 channels each (B and C [T, 2 x 3]); A_log as [heads, head_dim, state]
  // (8 x 3 elements); another state name.
  // CHECK: cbc.state.scan %[[S1]], %[[DT]], %[[B2]], %[[B2]], %[[ALOG3]], %[[DTB]], %[[D]], %[[Z]], %[[CU]], %[[SLOTS]], %[[INIT]] {kind = "selective_mamba1", layer = 2 : i64, n_groups = 2 : i64, state = "ssm", state_size = 3 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<2x4x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  %2 = cbc.state.scan %1, %dt, %b2, %b2, %alog3, %dtb, %d, %z, %cu, %slots, %init {kind = "selective_mamba1", layer = 2 : i64, n_groups = 2 : i64, state_size = 3 : i64, state = "ssm"} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<2x4x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return %0, %1, %2 : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
}

// Every activation of cbc.math.act, with and without a scale; scale 1 is the default.
// CHECK-LABEL: func.func @act
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x8xf32>)
func.func @act(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // A plain constant factor (Granite's residual_multiplier, 1 / logits_scaling).
  // CHECK: %[[A0:[0-9]+]] = cbc.math.act %[[X]] {act = "none", scale = 5.000000e-01 : f64} : tensor<?x8xf32>
  %0 = cbc.math.act %x {act = "none", scale = 0.5 : f64} : tensor<?x8xf32>
  // CHECK: %[[A1:[0-9]+]] = cbc.math.act %[[A0]] {act = "silu"} : tensor<?x8xf32>
  %1 = cbc.math.act %0 {act = "silu", scale = 1.0 : f64} : tensor<?x8xf32>
  // CHECK: %[[A2:[0-9]+]] = cbc.math.act %[[A1]] {act = "gelu_tanh", scale = 2.000000e+00 : f64} : tensor<?x8xf32>
  %2 = cbc.math.act %1 {act = "gelu_tanh", scale = 2.0 : f64} : tensor<?x8xf32>
  // CHECK: %[[A3:[0-9]+]] = cbc.math.act %[[A2]] {act = "gelu"} : tensor<?x8xf32>
  %3 = cbc.math.act %2 {act = "gelu"} : tensor<?x8xf32>
  // A negative scale is finite, so allowed.
  // CHECK: %[[A4:[0-9]+]] = cbc.math.act %[[A3]] {act = "relu", scale = -2.500000e-01 : f64} : tensor<?x8xf32>
  %4 = cbc.math.act %3 {act = "relu", scale = -0.25 : f64} : tensor<?x8xf32>
  // Squared ReLU (Nemotron-H's MLP).
  // CHECK: %[[A5:[0-9]+]] = cbc.math.act %[[A4]] {act = "relu2"} : tensor<?x8xf32>
  %5 = cbc.math.act %4 {act = "relu2"} : tensor<?x8xf32>
  // CHECK: %[[A6:[0-9]+]] = cbc.math.act %[[A5]] {act = "none", scale = 0.000000e+00 : f64} : tensor<?x8xf32>
  %6 = cbc.math.act %5 {act = "none", scale = 0.0 : f64} : tensor<?x8xf32>
  // CHECK: return %[[A6]]
  return %6 : tensor<?x8xf32>
}

// Mamba2's gated norm: gate first, RMS over groups of I / G = 4 features, and a weight with one
// entry per feature of the whole row (16), not per group.
// CHECK-LABEL: func.func @rms_norm_gated_per_row
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x16xf32>, %[[Z:[^:]+]]: tensor<?x16xf32>, %[[W:[^:]+]]: tensor<16xbf16>)
func.func @rms_norm_gated_per_row(%x: tensor<?x16xf32>, %z: tensor<?x16xf32>, %w: tensor<16xbf16>)
    -> (tensor<?x16xf32>, tensor<?x16xf32>) {
  // CHECK: cbc.math.rms_norm_gated %[[X]], %[[Z]], %[[W]] {eps = 1.000000e-05 : f64, group = 4 : i64, order = "gate_norm"} : tensor<?x16xf32>, tensor<?x16xf32>, tensor<16xbf16> -> tensor<?x16xf32>
  %0 = cbc.math.rms_norm_gated %x, %z, %w {eps = 1.0e-5 : f64, group = 4 : i64, order = "gate_norm", act = "silu", offset = 0.0 : f64} : tensor<?x16xf32>, tensor<?x16xf32>, tensor<16xbf16> -> tensor<?x16xf32>
  // Per-row weight, norm first, sigmoid gate, an offset.
  // CHECK: cbc.math.rms_norm_gated %[[X]], %[[Z]], %[[W]] {act = "sigmoid", eps = 9.9999999999999995E-7 : f64, group = 8 : i64, offset = 1.000000e+00 : f64} : tensor<?x16xf32>, tensor<?x16xf32>, tensor<16xbf16> -> tensor<?x16xf32>
  %1 = cbc.math.rms_norm_gated %x, %z, %w {eps = 1.0e-6 : f64, group = 8 : i64, act = "sigmoid", offset = 1.0 : f64} : tensor<?x16xf32>, tensor<?x16xf32>, tensor<16xbf16> -> tensor<?x16xf32>
  return %0, %1 : tensor<?x16xf32>, tensor<?x16xf32>
}

// Sigmoid scores with a selection bias (one entry per expert): chosen by score + bias, weighted
// by the unbiased score.
// CHECK-LABEL: func.func @route_sigmoid_bias
// CHECK-SAME: (%[[L:[^:]+]]: tensor<?x4xf32>, %[[BIAS:[^:]+]]: tensor<4xf32>, %[[BIAS16:[^:]+]]: tensor<4xbf16>)
func.func @route_sigmoid_bias(%logits: tensor<?x4xf32>, %bias: tensor<4xf32>, %bias16: tensor<4xbf16>)
    -> (tensor<?x2xf32>, tensor<?x2xi32>, tensor<?x1xf32>, tensor<?x1xi32>) {
  // CHECK: %[[W:[a-z0-9_]+]], %[[IDS:[a-z0-9_]+]] = cbc.moe.route %[[L]] bias(%[[BIAS]] : tensor<4xf32>) {k = 2 : i64, renorm = true, renorm_eps = 9.9999999999999995E-21 : f64, scaling = 2.500000e+00 : f64, score = "sigmoid"} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  %w, %ids = cbc.moe.route %logits bias(%bias : tensor<4xf32>) {k = 2 : i64, score = "sigmoid", renorm = true, renorm_eps = 1.0e-20 : f64, scaling = 2.5 : f64} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  // A bf16 bias, no renormalisation (the defaults renorm false, eps 0, scaling 1 are elided).
  // CHECK: cbc.moe.route %[[L]] bias(%[[BIAS16]] : tensor<4xbf16>) {k = 1 : i64, score = "sigmoid"} : tensor<?x4xf32> -> tensor<?x1xf32>, tensor<?x1xi32>
  %w1, %ids1 = cbc.moe.route %logits bias(%bias16 : tensor<4xbf16>) {k = 1 : i64, score = "sigmoid", renorm = false, renorm_eps = 0.0 : f64, scaling = 1.0 : f64} : tensor<?x4xf32> -> tensor<?x1xf32>, tensor<?x1xi32>
  // Softmax scores take a selection bias too.
  // CHECK: cbc.moe.route %[[L]] bias(%[[BIAS]] : tensor<4xf32>) {k = 2 : i64, score = "softmax"}
  %w2, %ids2 = cbc.moe.route %logits bias(%bias : tensor<4xf32>) {k = 2 : i64, score = "softmax"} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return %w, %ids, %w1, %ids1 : tensor<?x2xf32>, tensor<?x2xi32>, tensor<?x1xf32>, tensor<?x1xi32>
}
