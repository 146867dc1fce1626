// RUN: cbc-opt %s -split-input-file -verify-diagnostics -cbc-schedule-step | FileCheck %s

// Liveness: a buffer is free again once the instruction after its last reader starts, so an
// instruction never writes over one of its own operands. Offsets are in 4-byte elements of a
// row and every buffer is rounded up to 16 elements.
//
//   idx  value             class  width  live (def..last use)  offset
//    1   %x    embed        T      16     1..7                  0
//    3   %a    rms_norm     T      16     3..4                  16
//    4   %b    rms_norm     T      16     4..5                  32   (%a is still read here)
//    5   %c    rms_norm     T      16     5..6                  16   (%a is dead: reused)
//    6   %d    rms_norm     T      16     6..7                  32   (%b is dead: reused)
//    7   %e    add          T      16     7..10                 16   (%c is dead: reused)
//    8   %s#0  split        T      4->16  8..8 (never read)     0    (%x, %d are dead)
//    8   %s#1  split        T      12->16 8..8 (never read)     32
//   10   %att  attention    T      16     10..11                0    (unread %s died at 8)
//   11   %g    rows.gather  R      16     11..12                R+0
//   12   %h    rms_norm     R      16     12..13                R+16
//   13   %lg   linear       R      32     13..14                R+32 (R+0..16 is too small)
// Peaks: 3 token buffers (48 elements) and 64 request elements.

// CHECK-LABEL: module attributes {cbc.arena = #cbc.arena<token_row_elems = 48, request_row_elems = 64>}
// CHECK-LABEL: func.func @step
// CHECK-NEXT: %[[TABLE:.*]] = cbc.weight.ref "embed" {cbc.buffers = [array<i64: -1, 0>], cbc.index = 0 : i64
// CHECK-NEXT: %[[X:.*]] = cbc.math.embed {{.*}} {cbc.buffers = [array<i64: 0, 0>], cbc.index = 1 : i64}
// CHECK-NEXT: cbc.weight.ref "norm" {cbc.buffers = [array<i64: -1, 0>], cbc.index = 2 : i64
// CHECK-NEXT: %[[A:.*]] = cbc.math.rms_norm %[[X]], {{.*}} {cbc.buffers = [array<i64: 0, 16>], cbc.index = 3 : i64
// CHECK-NEXT: %[[B:.*]] = cbc.math.rms_norm %[[A]] {cbc.buffers = [array<i64: 0, 32>], cbc.index = 4 : i64
// CHECK-NEXT: %[[C:.*]] = cbc.math.rms_norm %[[B]] {cbc.buffers = [array<i64: 0, 16>], cbc.index = 5 : i64
// CHECK-NEXT: %[[D:.*]] = cbc.math.rms_norm %[[C]] {cbc.buffers = [array<i64: 0, 32>], cbc.index = 6 : i64
// CHECK-NEXT: %[[E:.*]] = cbc.math.add %[[X]], %[[D]] {cbc.buffers = [array<i64: 0, 16>], cbc.index = 7 : i64}
// CHECK-NEXT: cbc.math.split %[[E]] {cbc.buffers = [array<i64: 0, 0>, array<i64: 0, 32>], cbc.index = 8 : i64}
// The cache write has no result, so it gets a number but no buffers.
// CHECK-NEXT: cbc.kv.append %[[E]], %[[E]], {{.*}} {cbc.index = 9 : i64, head_dim
// CHECK-NOT: cbc.buffers
// CHECK-NEXT: %[[ATT:.*]] = cbc.kv.attention %[[E]], {{.*}} {cbc.buffers = [array<i64: 0, 0>], cbc.index = 10 : i64
// CHECK-NEXT: %[[G:.*]] = cbc.rows.gather %[[ATT]], %{{.*}} {cbc.buffers = [array<i64: 1, 0>], cbc.index = 11 : i64}
// CHECK-NEXT: %[[H:.*]] = cbc.math.rms_norm %[[G]] {cbc.buffers = [array<i64: 1, 16>], cbc.index = 12 : i64
// CHECK-NEXT: %[[LG:.*]] = cbc.math.linear %[[H]], %[[TABLE]] {cbc.buffers = [array<i64: 1, 32>], cbc.index = 13 : i64}
// CHECK-NEXT: return {cbc.index = 14 : i64} %[[LG]]
func.func @step(%tokens: tensor<?xi32> {cbc.name = "tokens"}, %pos: tensor<?xi32> {cbc.name = "positions"},
                %bt: tensor<?x?x?xi32> {cbc.name = "block_tables"}, %rows: tensor<?xi32> {cbc.name = "logit_rows"}) -> tensor<?x32xf32> {
  %table = cbc.weight.ref "embed" {sources = [["embed.weight"]]} : tensor<32x16xbf16>
  %x = cbc.math.embed %tokens, %table : tensor<?xi32>, tensor<32x16xbf16> -> tensor<?x16xf32>
  %wn = cbc.weight.ref "norm" {sources = [["norm.weight"]]} : tensor<16xbf16>
  %a = cbc.math.rms_norm %x, %wn {eps = 1.0e-6 : f64} : tensor<?x16xf32>, tensor<16xbf16> -> tensor<?x16xf32>
  %b = cbc.math.rms_norm %a {eps = 1.0e-6 : f64} : tensor<?x16xf32> -> tensor<?x16xf32>
  %c = cbc.math.rms_norm %b {eps = 1.0e-6 : f64} : tensor<?x16xf32> -> tensor<?x16xf32>
  %d = cbc.math.rms_norm %c {eps = 1.0e-6 : f64} : tensor<?x16xf32> -> tensor<?x16xf32>
  %e = cbc.math.add %x, %d : tensor<?x16xf32>
  %s:2 = cbc.math.split %e : tensor<?x16xf32> -> tensor<?x4xf32>, tensor<?x12xf32>
  cbc.kv.append %e, %e, %pos, %pos, %pos, %bt {layer = 0 : i64, num_kv_heads = 2 : i64, head_dim = 8 : i64} : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  %att = cbc.kv.attention %e, %pos, %pos, %pos, %pos, %pos, %bt {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 8 : i64, scale = 0.35 : f64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  %g = cbc.rows.gather %att, %rows : tensor<?x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
  %h = cbc.math.rms_norm %g {eps = 1.0e-6 : f64} : tensor<?x16xf32> -> tensor<?x16xf32>
  %logits = cbc.math.linear %h, %table : tensor<?x16xf32>, tensor<32x16xbf16> -> tensor<?x32xf32>
  return %logits : tensor<?x32xf32>
}

// -----

// Freed neighbours merge, and a free block at the end of the arena is grown rather than
// skipped.
//
//   idx  value        width  live   offset
//    1   %x  embed     16     1..3   0
//    2   %a  rms_norm  16     2..3   16
//    3   %y  add       16     3..5   32
//    5   %l  linear    32     5..7   0    (%x [0,16) and %a [16,32) merged)
//    7   %w  linear    48     7..8   32   (%y's [32,48) is the free tail: grown to 80)
// Without merging %l would land at 48; without tail reuse %w would land at 48 (arena 96).

// CHECK-LABEL: module attributes {cbc.arena = #cbc.arena<token_row_elems = 80, request_row_elems = 0>}
// CHECK-LABEL: func.func @step
// CHECK: cbc.math.embed {{.*}}cbc.buffers = [array<i64: 0, 0>]
// CHECK: cbc.math.rms_norm {{.*}}cbc.buffers = [array<i64: 0, 16>]
// CHECK: cbc.math.add {{.*}}cbc.buffers = [array<i64: 0, 32>]
// CHECK: cbc.math.linear {{.*}}cbc.buffers = [array<i64: 0, 0>]
// CHECK: cbc.math.linear {{.*}}cbc.buffers = [array<i64: 0, 32>]
func.func @step(%tokens: tensor<?xi32> {cbc.name = "tokens"}) -> tensor<?x48xf32> {
  %table = cbc.weight.ref "embed" {sources = [["embed.weight"]]} : tensor<32x16xbf16>
  %x = cbc.math.embed %tokens, %table : tensor<?xi32>, tensor<32x16xbf16> -> tensor<?x16xf32>
  %a = cbc.math.rms_norm %x {eps = 1.0e-6 : f64} : tensor<?x16xf32> -> tensor<?x16xf32>
  %y = cbc.math.add %x, %a : tensor<?x16xf32>
  %w1 = cbc.weight.ref "w1" {sources = [["w1"]]} : tensor<32x16xbf16>
  %l = cbc.math.linear %y, %w1 : tensor<?x16xf32>, tensor<32x16xbf16> -> tensor<?x32xf32>
  %w2 = cbc.weight.ref "w2" {sources = [["w2"]]} : tensor<48x32xbf16>
  %w = cbc.math.linear %l, %w2 : tensor<?x32xf32>, tensor<48x32xbf16> -> tensor<?x48xf32>
  return %w : tensor<?x48xf32>
}

// -----

// Only the "logit_rows" argument is per request; rows gathered with it are R rows and so is
// everything computed from them, while the T arena keeps its own offsets.
// CHECK-LABEL: module attributes {cbc.arena = #cbc.arena<token_row_elems = 16, request_row_elems = 32>}
// CHECK: cbc.rows.gather {{.*}}cbc.buffers = [array<i64: 1, 0>]
// CHECK: cbc.math.softcap {{.*}}cbc.buffers = [array<i64: 1, 16>]
func.func @step(%x: tensor<?x16xf32> {cbc.name = "tokens"}, %rows: tensor<?xi32> {cbc.name = "logit_rows"}) -> tensor<?x16xf32> {
  %n = cbc.math.rms_norm %x {eps = 1.0e-6 : f64} : tensor<?x16xf32> -> tensor<?x16xf32>
  %g = cbc.rows.gather %n, %rows : tensor<?x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
  %c = cbc.math.softcap %g {cap = 30.0 : f64} : tensor<?x16xf32>
  return %c : tensor<?x16xf32>
}

// -----

func.func @step(%q: tensor<?x16xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  // expected-error @+1 {{'cbc.kv.attention' op reads layer 3 before any cbc.kv.append writes it}}
  %0 = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt {layer = 3 : i64, num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 8 : i64, scale = 0.35 : f64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  cbc.kv.append %q, %q, %p, %p, %p, %bt {layer = 3 : i64, num_kv_heads = 2 : i64, head_dim = 8 : i64} : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  return
}

// -----

// Another layer's write does not count.
func.func @step(%q: tensor<?x16xf32>, %p: tensor<?xi32>, %bt: tensor<?x?x?xi32>) {
  cbc.kv.append %q, %q, %p, %p, %p, %bt {layer = 0 : i64, num_kv_heads = 2 : i64, head_dim = 8 : i64} : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
  // expected-error @+1 {{'cbc.kv.attention' op reads layer 1 before any cbc.kv.append writes it}}
  %0 = cbc.kv.attention %q, %p, %p, %p, %p, %p, %bt {layer = 1 : i64, num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 8 : i64, scale = 0.35 : f64} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x16xf32>
  return
}

// -----

// expected-error @+1 {{cbc-schedule-step: the module has no func.func @step}}
module {
  func.func @main() {
    return
  }
}

// -----

module {
  // expected-error @+1 {{cbc-schedule-step: the step must be a single block}}
  func.func @step() {
    return
  ^bb1:
    return
  }
}

// -----

module {
  // expected-error @+1 {{cbc-schedule-step: the step must be a single block}}
  func.func private @step()
}
