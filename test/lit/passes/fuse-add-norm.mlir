// RUN: cbc-opt %s --cbc-fuse-add-norm | FileCheck %s
// The output is valid IR that parses again.
// RUN: cbc-opt %s --cbc-fuse-add-norm | cbc-opt | FileCheck %s
// Without the pass nothing is fused.
// RUN: cbc-opt %s | FileCheck %s --check-prefix=NOFUSE --implicit-check-not=add_rms_norm

// Two residual blocks: each add feeds a whole-row norm and becomes one add_rms_norm. The sum
// stays the residual stream: the second add reads the first sum, and the last op reads the
// second sum; the normalised rows go where the norms' results went. eps and offset carry over.
// CHECK-LABEL: func.func @basic
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x8xf32>, %[[A:[^:]+]]: tensor<?x8xf32>, %[[B:[^:]+]]: tensor<?x8xf32>, %[[W1:[^:]+]]: tensor<8xbf16>, %[[W2:[^:]+]]: tensor<8xbf16>)
// CHECK-NEXT: %[[S1:[a-z0-9_]+]], %[[N1:[a-z0-9_]+]] = cbc.math.add_rms_norm %[[X]], %[[A]], %[[W1]] {eps = 9.9999999999999995E-7 : f64, offset = 1.000000e+00 : f64} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<8xbf16> -> tensor<?x8xf32>, tensor<?x8xf32>
// CHECK-NEXT: %[[H:[0-9]+]] = cbc.math.softcap %[[N1]] {cap = 3.000000e+01 : f64} : tensor<?x8xf32>
// CHECK-NEXT: %[[S2:[a-z0-9_]+]], %[[N2:[a-z0-9_]+]] = cbc.math.add_rms_norm %[[S1]], %[[H]], %[[W2]] {eps = 1.000000e-05 : f64} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<8xbf16> -> tensor<?x8xf32>, tensor<?x8xf32>
// CHECK-NEXT: %[[G:[0-9]+]] = cbc.math.gate %[[S2]], %[[N2]] : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
// CHECK-NEXT: %[[R:[0-9]+]] = cbc.math.add %[[S2]], %[[G]] : tensor<?x8xf32>
// CHECK-NEXT: return %[[R]], %[[S1]] : tensor<?x8xf32>, tensor<?x8xf32>
// NOFUSE-LABEL: func.func @basic
// NOFUSE-COUNT-3: cbc.math.add
// NOFUSE-COUNT-2: cbc.math.rms_norm
func.func @basic(%x: tensor<?x8xf32>, %a: tensor<?x8xf32>, %b: tensor<?x8xf32>,
                 %w1: tensor<8xbf16>, %w2: tensor<8xbf16>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %s1 = cbc.math.add %x, %a : tensor<?x8xf32>
  %n1 = cbc.math.rms_norm %s1, %w1 {eps = 1.0e-6 : f64, offset = 1.0 : f64} : tensor<?x8xf32>, tensor<8xbf16> -> tensor<?x8xf32>
  %h = cbc.math.softcap %n1 {cap = 30.0 : f64} : tensor<?x8xf32>
  %s2 = cbc.math.add %s1, %h : tensor<?x8xf32>
  %n2 = cbc.math.rms_norm %s2, %w2 {eps = 1.0e-5 : f64} : tensor<?x8xf32>, tensor<8xbf16> -> tensor<?x8xf32>
  %g = cbc.math.gate %s2, %n2 : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  // No norm reads this add: it stays.
  %r = cbc.math.add %s2, %g : tensor<?x8xf32>
  return %r, %s1 : tensor<?x8xf32>, tensor<?x8xf32>
}

// A group equal to the row width is a whole-row norm: it fuses too.
// CHECK-LABEL: func.func @group_is_row
// CHECK-NEXT: %[[S:[a-z0-9_]+]], %[[N:[a-z0-9_]+]] = cbc.math.add_rms_norm %arg0, %arg1, %arg2 {eps = 9.9999999999999995E-7 : f64} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<8xbf16> -> tensor<?x8xf32>, tensor<?x8xf32>
// CHECK-NEXT: return %[[N]], %[[S]]
func.func @group_is_row(%x: tensor<?x8xf32>, %a: tensor<?x8xf32>, %w: tensor<8xbf16>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %s = cbc.math.add %x, %a : tensor<?x8xf32>
  %n = cbc.math.rms_norm %s, %w {eps = 1.0e-6 : f64, group = 8 : i64} : tensor<?x8xf32>, tensor<8xbf16> -> tensor<?x8xf32>
  return %n, %s : tensor<?x8xf32>, tensor<?x8xf32>
}

// One sum read by two norms: the first fuses with the add, the second reads the fused op's sum.
// CHECK-LABEL: func.func @two_norms
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x8xf32>, %[[A:[^:]+]]: tensor<?x8xf32>, %[[W1:[^:]+]]: tensor<8xbf16>, %[[W2:[^:]+]]: tensor<8xbf16>)
// CHECK-NEXT: %[[S:[a-z0-9_]+]], %[[N1:[a-z0-9_]+]] = cbc.math.add_rms_norm %[[X]], %[[A]], %[[W1]] {eps = 9.9999999999999995E-7 : f64}
// CHECK-NEXT: %[[N2:[0-9]+]] = cbc.math.rms_norm %[[S]], %[[W2]] {eps = 9.9999999999999995E-7 : f64, offset = 1.000000e+00 : f64} : tensor<?x8xf32>, tensor<8xbf16> -> tensor<?x8xf32>
// CHECK-NEXT: return %[[N1]], %[[N2]], %[[S]]
func.func @two_norms(%x: tensor<?x8xf32>, %a: tensor<?x8xf32>, %w1: tensor<8xbf16>, %w2: tensor<8xbf16>) -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) {
  %s = cbc.math.add %x, %a : tensor<?x8xf32>
  %n1 = cbc.math.rms_norm %s, %w1 {eps = 1.0e-6 : f64} : tensor<?x8xf32>, tensor<8xbf16> -> tensor<?x8xf32>
  %n2 = cbc.math.rms_norm %s, %w2 {eps = 1.0e-6 : f64, offset = 1.0 : f64} : tensor<?x8xf32>, tensor<8xbf16> -> tensor<?x8xf32>
  return %n1, %n2, %s : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
}

// A per-head norm (group 4 of a row of 8) is not a whole-row norm: nothing fuses.
// CHECK-LABEL: func.func @grouped
// CHECK-NOT: add_rms_norm
// CHECK: %[[S:[0-9]+]] = cbc.math.add %arg0, %arg1 : tensor<?x8xf32>
// CHECK-NEXT: %[[N:[0-9]+]] = cbc.math.rms_norm %[[S]], %arg2 {eps = 9.9999999999999995E-7 : f64, group = 4 : i64} : tensor<?x8xf32>, tensor<4xbf16> -> tensor<?x8xf32>
// CHECK-NEXT: return %[[N]], %[[S]]
func.func @grouped(%x: tensor<?x8xf32>, %a: tensor<?x8xf32>, %w: tensor<4xbf16>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %s = cbc.math.add %x, %a : tensor<?x8xf32>
  %n = cbc.math.rms_norm %s, %w {eps = 1.0e-6 : f64, group = 4 : i64} : tensor<?x8xf32>, tensor<4xbf16> -> tensor<?x8xf32>
  return %n, %s : tensor<?x8xf32>, tensor<?x8xf32>
}

// The sum is read by another op before the norm: the fused op would sit at the norm, after that
// reader, so nothing fuses.
// CHECK-LABEL: func.func @read_before_norm
// CHECK-NOT: add_rms_norm
// CHECK: %[[S:[0-9]+]] = cbc.math.add %arg0, %arg1 : tensor<?x8xf32>
// CHECK-NEXT: %[[C:[0-9]+]] = cbc.math.softcap %[[S]]
// CHECK-NEXT: %[[N:[0-9]+]] = cbc.math.rms_norm %[[S]], %arg2 {eps = 9.9999999999999995E-7 : f64}
// CHECK-NEXT: return %[[N]], %[[C]]
func.func @read_before_norm(%x: tensor<?x8xf32>, %a: tensor<?x8xf32>, %w: tensor<8xbf16>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %s = cbc.math.add %x, %a : tensor<?x8xf32>
  %c = cbc.math.softcap %s {cap = 30.0 : f64} : tensor<?x8xf32>
  %n = cbc.math.rms_norm %s, %w {eps = 1.0e-6 : f64} : tensor<?x8xf32>, tensor<8xbf16> -> tensor<?x8xf32>
  return %n, %c : tensor<?x8xf32>, tensor<?x8xf32>
}

// A norm that does not read an add directly (here through a row gather) stays.
// CHECK-LABEL: func.func @not_an_add
// CHECK-NOT: add_rms_norm
// CHECK: cbc.math.add
// CHECK-NEXT: cbc.rows.gather
// CHECK-NEXT: cbc.math.rms_norm
func.func @not_an_add(%x: tensor<?x8xf32>, %a: tensor<?x8xf32>, %rows: tensor<?xi32>, %w: tensor<8xbf16>) -> tensor<?x8xf32> {
  %s = cbc.math.add %x, %a : tensor<?x8xf32>
  %g = cbc.rows.gather %s, %rows : tensor<?x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %n = cbc.math.rms_norm %g, %w {eps = 1.0e-6 : f64} : tensor<?x8xf32>, tensor<8xbf16> -> tensor<?x8xf32>
  return %n : tensor<?x8xf32>
}

// A norm without a weight fuses into an add_rms_norm without a weight operand.
// CHECK-LABEL: func.func @weightless
// CHECK-NEXT: %[[S:[a-z0-9_]+]], %[[N:[a-z0-9_]+]] = cbc.math.add_rms_norm %arg0, %arg1 {eps = 1.000000e-05 : f64} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>, tensor<?x8xf32>
// CHECK-NEXT: return %[[N]], %[[S]]
func.func @weightless(%x: tensor<?x8xf32>, %a: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %s = cbc.math.add %x, %a : tensor<?x8xf32>
  %n = cbc.math.rms_norm %s {eps = 1.0e-5 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
  return %n, %s : tensor<?x8xf32>, tensor<?x8xf32>
}
