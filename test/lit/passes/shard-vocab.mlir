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

// A hashed n-gram table is divided by columns: each of 2 ranks holds 2 of the 4 columns of every
// row, looks up its columns of both heads, and the gathered row ([rank][head][column]) is put
// back head-major. A width the ranks do not divide stays whole.
// RUN: cbc-opt %s --cbc-shard-vocab=ranks=2 | FileCheck %s --check-prefix=NGRAM
// RUN: cbc-opt %s --cbc-shard-vocab=ranks=3 | FileCheck %s --check-prefix=NGRAM-WHOLE --implicit-check-not=cbc.comm
// NGRAM: %[[T:[0-9]+]] = cbc.weight.ref "ngram" {shard = #cbc.shard<ranks = 2, dim = 1, segments = [4], pieces = [2]>, {{.*}} : tensor<32x2xbf16>
// NGRAM: %[[E:[0-9]+]] = cbc.state.ngram_embed %arg0, %[[T]], {{.*}} -> tensor<?x4xf32>
// NGRAM-NEXT: %[[G:[0-9]+]] = cbc.comm.all_gather %[[E]] {ranks = 2 : i64} : tensor<?x4xf32> -> tensor<?x8xf32>
// NGRAM-NEXT: %[[P:[0-9]+]]:4 = cbc.math.split %[[G]] : tensor<?x8xf32> -> tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>
// NGRAM-NEXT: %[[J:[0-9]+]] = cbc.math.concat %[[P]]#0, %[[P]]#2, %[[P]]#1, %[[P]]#3 : {{.*}} -> tensor<?x8xf32>
// NGRAM-NEXT: return %[[J]]
// NGRAM-WHOLE: cbc.state.ngram_embed {{.*}} -> tensor<?x8xf32>
module {
  func.func @step(%tok: tensor<?xi32>, %m: tensor<?xi32>) -> tensor<?x8xf32> {
    %t = cbc.weight.ref "ngram" {sources = [["table"]]} : tensor<32x4xbf16>
    %e = cbc.state.ngram_embed %tok, %t, %m, %m, %m, %m {layer = 0 : i64, eos = 2 : i64, heads_per_ngram = 1 : i64, multipliers = array<i64: 3, 5, 7>, primes = array<i64: 11, 13>} : (tensor<?xi32>, tensor<32x4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
    return %e : tensor<?x8xf32>
  }
}
