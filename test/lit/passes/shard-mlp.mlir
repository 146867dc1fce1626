// RUN: cbc-opt %inputs/shard-tiny.mlir --cbc-shard-mlp=ranks=4 | FileCheck %s
// RUN: cbc-opt %inputs/shard-tiny.mlir --cbc-shard-mlp=ranks=4 | cbc-opt | FileCheck %s
// RUN: not cbc-opt %inputs/shard-tiny.mlir --cbc-shard-mlp=ranks=5 2>&1 | FileCheck %s --check-prefix=BAD

// The 48 intermediate features over 4 ranks: each keeps 12 gate rows and the same 12 up rows
// (two segments, so the halves layout holds on every rank), the down projection's 12 matching
// columns, and an all-reduce sums the partial products. Attention is another pass's work.
// CHECK: module attributes {{.*}}cbc.ranks = 4 : i64
// CHECK: cbc.kv.attention {{.*}}num_heads = 4 : i64, num_kv_heads = 2 : i64
// CHECK-NOT: cbc.comm
// CHECK: cbc.weight.ref "layers.0.mlp.gate_up" {shard = #cbc.shard<ranks = 4, dim = 0, segments = [48, 48], pieces = [4, 4]>, {{.*}} : tensor<24x32xbf16>
// CHECK: cbc.math.linear %{{.*}} -> tensor<?x24xf32>
// CHECK: cbc.math.glu %{{.*}} {act = #cbc.act<silu>} : tensor<?x24xf32> -> tensor<?x12xf32>
// CHECK: cbc.weight.ref "layers.0.mlp.down" {shard = #cbc.shard<ranks = 4, dim = 1, segments = [48], pieces = [4]>, {{.*}} : tensor<32x12xbf16>
// CHECK: %[[PART:[0-9]+]] = cbc.math.linear %{{.*}} : tensor<?x12xf32>, tensor<32x12xbf16> -> tensor<?x32xf32>
// CHECK-NEXT: %[[SUM:[0-9]+]] = cbc.comm.all_reduce %[[PART]] {ranks = 4 : i64} : tensor<?x32xf32>
// CHECK-NEXT: cbc.math.add %{{.*}}, %[[SUM]]

// BAD: error: --tp 5 does not divide the 48 intermediate features of the MLP 'layers.0.mlp.down'; tensor-parallel sizes this model can take: 1, 2, 3, 4, 6, 8, 12, 16, 24, 48
