// RUN: cbc-opt %inputs/shard-tiny.mlir --cbc-shard-vocab=ranks=4 | FileCheck %s
// RUN: cbc-opt %inputs/shard-tiny.mlir --cbc-shard-vocab=ranks=4 | cbc-opt | FileCheck %s
// A vocabulary the ranks do not divide leaves the head whole (no error: only not divided).
// RUN: cbc-opt %inputs/shard-tiny.mlir --cbc-shard-vocab=ranks=3 | FileCheck %s --check-prefix=WHOLE --implicit-check-not=cbc.comm

// The LM head ties the embedding: the embedding keeps the whole table and the head reads a
// copy of the weight, renamed, of which each rank holds 16 of the 64 vocabulary rows. The
// ranks' logits are gathered, not summed: exact.
// CHECK: module attributes {{.*}}cbc.ranks = 4 : i64
// CHECK: %[[HEAD:[0-9]+]] = cbc.weight.ref "embed.vocab" {shard = #cbc.shard<ranks = 4, dim = 0, segments = [64], pieces = [4]>, {{.*}} : tensor<16x32xbf16>
// CHECK: %[[TABLE:[0-9]+]] = cbc.weight.ref "embed" {sources
// CHECK-SAME: tensor<64x32xbf16>
// CHECK: cbc.math.embed %arg0, %[[TABLE]]
// CHECK: %[[PART:[0-9]+]] = cbc.math.linear %{{.*}}, %[[HEAD]] : tensor<?x32xf32>, tensor<16x32xbf16> -> tensor<?x16xf32>
// CHECK-NEXT: %[[ALL:[0-9]+]] = cbc.comm.all_gather %[[PART]] {ranks = 4 : i64} : tensor<?x16xf32> -> tensor<?x64xf32>
// CHECK-NEXT: return %[[ALL]]

// WHOLE: cbc.math.linear %{{[0-9]+}}, %0 : tensor<?x32xf32>, tensor<64x32xbf16> -> tensor<?x64xf32>
// WHOLE-NEXT: return
