// RUN: cbc-opt %inputs/shard-moe.mlir --cbc-shard-experts="ranks=2 expert-parallel=1" | FileCheck %s --check-prefix=EP
// RUN: cbc-opt %inputs/shard-moe.mlir --cbc-shard-experts="ranks=2 expert-parallel=1" | cbc-opt | FileCheck %s --check-prefix=EP
// RUN: cbc-opt %inputs/shard-moe.mlir --cbc-shard-experts=ranks=2 | FileCheck %s --check-prefix=TP
// RUN: not cbc-opt %inputs/shard-moe.mlir --cbc-shard-experts="ranks=3 expert-parallel=1" 2>&1 | FileCheck %s --check-prefix=BAD

// Expert parallelism: each of 2 ranks holds 2 of the 4 experts whole (the stacked weights cut
// along the expert dimension); the op runs the ids of its own experts, the router still scores
// all 4, and an all-reduce adds the ranks' partial mixtures.
// EP: cbc.moe.route {{.*}} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
// EP: cbc.weight.ref "layers.0.moe.gate_up" {combine = #cbc.combine<stack>, shard = #cbc.shard<ranks = 2, dim = 0, segments = [4], pieces = [2]>, {{.*}} : tensor<2x32x32xbf16>
// EP: cbc.weight.ref "layers.0.moe.down" {combine = #cbc.combine<stack>, shard = #cbc.shard<ranks = 2, dim = 0, segments = [4], pieces = [2]>, {{.*}} : tensor<2x32x16xbf16>
// EP: %[[PART:[0-9]+]] = cbc.moe.experts {{.*}}expert_ranks = 2 : i64{{.*}} -> tensor<?x32xf32>
// EP-NEXT: cbc.comm.all_reduce %[[PART]] {ranks = 2 : i64} : tensor<?x32xf32>

// Tensor parallelism of the experts: every rank holds every expert's 8 of 16 gate and up rows
// and the matching down columns.
// TP: cbc.weight.ref "layers.0.moe.gate_up" {combine = #cbc.combine<stack>, shard = #cbc.shard<ranks = 2, dim = 1, segments = [16, 16], pieces = [2, 2]>, {{.*}} : tensor<4x16x32xbf16>
// TP: cbc.weight.ref "layers.0.moe.down" {combine = #cbc.combine<stack>, shard = #cbc.shard<ranks = 2, dim = 2, segments = [16], pieces = [2]>, {{.*}} : tensor<4x32x8xbf16>
// TP: %[[PART:[0-9]+]] = cbc.moe.experts
// TP-NOT: expert_ranks
// TP-NEXT: cbc.comm.all_reduce %[[PART]] {ranks = 2 : i64} : tensor<?x32xf32>

// BAD: error: --tp 3 does not divide the 4 experts of 'layers.0.moe.down'; tensor-parallel sizes this model can take: 1, 2, 4
