// RUN: cbc-opt %inputs/shard-tiny.mlir --cbc-shard-attention=ranks=2 | FileCheck %s --check-prefix=TP2
// RUN: cbc-opt %inputs/shard-tiny.mlir --cbc-shard-attention=ranks=4 | FileCheck %s --check-prefix=TP4
// The output parses and verifies again.
// RUN: cbc-opt %inputs/shard-tiny.mlir --cbc-shard-attention=ranks=4 | cbc-opt | FileCheck %s --check-prefix=TP4
// One rank: nothing changes.
// RUN: cbc-opt %inputs/shard-tiny.mlir --cbc-shard-attention=ranks=1 | FileCheck %s --check-prefix=ONE --implicit-check-not=shard --implicit-check-not=cbc.comm
// A size that does not divide the heads names the sizes that do.
// RUN: not cbc-opt %inputs/shard-tiny.mlir --cbc-shard-attention=ranks=3 2>&1 | FileCheck %s --check-prefix=BAD

// Two ranks: each holds 2 of the 4 query heads and 1 of the 2 KV heads, the q|k|v rows of its
// own heads (three segments cut in two), and the output projection's matching columns, whose
// partial product an all-reduce sums. Per-head q/k norms and RoPE run on the rank's heads.
// TP2: module attributes {{.*}}cbc.ranks = 2 : i64
// TP2: cbc.weight.ref "layers.0.attn.qkv" {shard = #cbc.shard<ranks = 2, dim = 0, segments = [32, 16, 16], pieces = [2, 2, 2]>, {{.*}} : tensor<32x32xbf16>
// TP2: cbc.math.split %{{.*}} : tensor<?x32xf32> -> tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>
// TP2: cbc.math.rms_norm {{.*}}group = 8 : i64} : tensor<?x16xf32>, tensor<8xbf16> -> tensor<?x16xf32>
// TP2: cbc.kv.append {{.*}}num_kv_heads = 1 : i64}
// TP2: cbc.kv.attention {{.*}}num_heads = 2 : i64, num_kv_heads = 1 : i64{{.*}} -> tensor<?x16xf32>
// TP2: cbc.weight.ref "layers.0.attn.o" {shard = #cbc.shard<ranks = 2, dim = 1, segments = [32], pieces = [2]>, {{.*}} : tensor<32x16xbf16>
// TP2: %[[PART:[0-9]+]] = cbc.math.linear %{{.*}} : tensor<?x16xf32>, tensor<32x16xbf16> -> tensor<?x32xf32>
// TP2-NEXT: %[[SUM:[0-9]+]] = cbc.comm.all_reduce %[[PART]] {ranks = 2 : i64} : tensor<?x32xf32>
// TP2-NEXT: cbc.math.add %{{.*}}, %[[SUM]]
// The MLP and the LM head are other passes' work.
// TP2: cbc.weight.ref "layers.0.mlp.gate_up" {sources
// TP2-NOT: cbc.comm

// Four ranks outnumber the 2 KV heads: each KV head is copied to two ranks (2 pieces of the k
// and v segments for 4 ranks), each rank holding one query head.
// TP4: cbc.weight.ref "layers.0.attn.qkv" {shard = #cbc.shard<ranks = 4, dim = 0, segments = [32, 16, 16], pieces = [4, 2, 2]>, {{.*}} : tensor<24x32xbf16>
// TP4: cbc.kv.append {{.*}}num_kv_heads = 1 : i64}
// TP4: cbc.kv.attention {{.*}}num_heads = 1 : i64, num_kv_heads = 1 : i64{{.*}} -> tensor<?x8xf32>
// TP4: cbc.comm.all_reduce %{{.*}} {ranks = 4 : i64} : tensor<?x32xf32>

// ONE: cbc.kv.attention {{.*}}num_heads = 4 : i64, num_kv_heads = 2 : i64

// BAD: error: --tp 3 does not divide the 4 attention heads of layer 0; tensor-parallel sizes this model can take: 1, 2, 4

// Latent attention: the heads divide, the latent cache does not. Each of 2 ranks holds its 2
// heads' no-RoPE and RoPE query rows (q_b after its regroup: two segments), its heads' block
// of kv_b (one copy, read by both head_linears, the whole weight gone), and the output's
// matching columns; q_a, kv_a and their norms, and the cache append, stay whole.
// RUN: cbc-opt %inputs/shard-mla.mlir --cbc-shard-attention=ranks=2 | FileCheck %s --check-prefix=MLA
// RUN: cbc-opt %inputs/shard-mla.mlir --cbc-shard-attention=ranks=2 | cbc-opt | FileCheck %s --check-prefix=MLA
// RUN: not cbc-opt %inputs/shard-mla.mlir --cbc-shard-attention=ranks=8 2>&1 | FileCheck %s --check-prefix=MLA-BAD
// MLA: cbc.weight.ref "layers.0.attn.q_a" {sources
// MLA: cbc.weight.ref "layers.0.attn.q_b" {regroup = array<i64: 4, 16, 8>, shard = #cbc.shard<ranks = 2, dim = 0, segments = [64, 32], pieces = [2, 2]>, {{.*}} : tensor<48x32xbf16>
// MLA: cbc.math.split %{{.*}} : tensor<?x48xf32> -> tensor<?x32xf32>, tensor<?x16xf32>
// MLA: cbc.weight.ref "layers.0.attn.kv_a" {sources
// MLA: cbc.kv.append {{.*}}latent, layer = 0 : i64, num_kv_heads = 1 : i64}
// MLA-NOT: "layers.0.attn.kv_b"
// MLA: %[[KVB:[0-9]+]] = cbc.weight.ref "layers.0.attn.kv_b.tp" {shard = #cbc.shard<ranks = 2, dim = 0, segments = [112], pieces = [2]>, {{.*}} : tensor<56x32xbf16>
// MLA: cbc.math.head_linear %{{.*}}, %[[KVB]] {heads = 2 : i64, offset = 0 : i64, rows = 16 : i64, transpose}
// MLA: cbc.kv.latent_attention {{.*}}num_heads = 2 : i64
// MLA: cbc.math.head_linear %{{.*}}, %[[KVB]] {heads = 2 : i64, offset = 16 : i64, rows = 12 : i64} : tensor<?x64xf32>, tensor<56x32xbf16> -> tensor<?x24xf32>
// MLA: cbc.weight.ref "layers.0.attn.o" {shard = #cbc.shard<ranks = 2, dim = 1, segments = [48], pieces = [2]>, {{.*}} : tensor<64x24xbf16>
// MLA: cbc.comm.all_reduce
// MLA-BAD: error: --tp 8 does not divide the 4 latent-attention heads of layer 0; tensor-parallel sizes this model can take: 1, 2, 4
