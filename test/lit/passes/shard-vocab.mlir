// RUN: cbc-opt %inputs/shard-tiny.mlir --cbc-shard-vocab=ranks=4 | FileCheck %s
// RUN: cbc-opt %inputs/shard-tiny.mlir --cbc-shard-vocab=ranks=4 | cbc-opt | FileCheck %s
// A vocabulary the ranks do not divide leaves the head and the embedding whole (no error: only
// not divided).
// RUN: cbc-opt %inputs/shard-tiny.mlir --cbc-shard-vocab=ranks=3 | FileCheck %s --check-prefix=WHOLE --implicit-check-not=cbc.comm

// The LM head ties the embedding, and both are divided: each of 4 ranks holds 16 of the 64
// vocabulary rows of each (the embedding's a renamed copy of the weight, as the manifest keys
// weights by name). The embedding looks up its rows (zeros for the other ranks' ids) and an
// all-reduce adds each token's one non-zero row; the ranks' logits are gathered. Both exact.
// CHECK: module attributes {{.*}}cbc.ranks = 4 : i64
// CHECK: %[[TABLE:[0-9]+]] = cbc.weight.ref "embed.vocab" {shard = #cbc.shard<ranks = 4, dim = 0, segments = [64], pieces = [4]>, {{.*}} : tensor<16x32xbf16>
// CHECK: %[[HEAD:[0-9]+]] = cbc.weight.ref "embed" {shard = #cbc.shard<ranks = 4, dim = 0, segments = [64], pieces = [4]>, {{.*}} : tensor<16x32xbf16>
// CHECK: %[[ROWS:[0-9]+]] = cbc.math.embed %arg0, %[[TABLE]] {vocab_ranks = 4 : i64} : tensor<?xi32>, tensor<16x32xbf16> -> tensor<?x32xf32>
// CHECK-NEXT: cbc.comm.all_reduce %[[ROWS]] {ranks = 4 : i64} : tensor<?x32xf32>
// CHECK: %[[PART:[0-9]+]] = cbc.math.linear %{{.*}}, %[[HEAD]] : tensor<?x32xf32>, tensor<16x32xbf16> -> tensor<?x16xf32>
// CHECK-NEXT: %[[ALL:[0-9]+]] = cbc.comm.all_gather %[[PART]] {ranks = 4 : i64} : tensor<?x16xf32> -> tensor<?x64xf32>
// CHECK-NEXT: return %[[ALL]]

// WHOLE: cbc.math.linear %{{[0-9]+}}, %0 : tensor<?x32xf32>, tensor<64x32xbf16> -> tensor<?x64xf32>
// WHOLE-NEXT: return
