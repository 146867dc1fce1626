// RUN: cbc-opt %inputs/shard-gated-delta.mlir --cbc-shard-recurrent=ranks=2 | FileCheck %s --check-prefix=TP2
// RUN: cbc-opt %inputs/shard-gated-delta.mlir --cbc-shard-recurrent=ranks=2 | cbc-opt | FileCheck %s --check-prefix=TP2
// RUN: cbc-opt %inputs/shard-gated-delta.mlir --cbc-shard-recurrent=ranks=4 --cbc-plan-cache | FileCheck %s --check-prefix=TP4
// RUN: not cbc-opt %inputs/shard-gated-delta.mlir --cbc-shard-recurrent=ranks=3 2>&1 | FileCheck %s --check-prefix=BAD

// Qwen3-Next's mixer: 2 key heads with 2 value heads each (k and v of 16), fed by two linears
// (q|k|v|z regrouped segment-first, and b|a). On 2 ranks each holds one key head and its two
// value heads: every part of both linears cut on its own, the conv's q, k and v channels, A_log
// and dt_bias, the output's columns; an all-reduce sums the output.
// TP2: cbc.weight.ref "layers.0.gdn.qkvz" {regroup = array<i64: 2, 16, 16, 32, 32>, shard = #cbc.shard<ranks = 2, dim = 0, segments = [32, 32, 64, 64], pieces = [2, 2, 2, 2]>, {{.*}} : tensor<96x64xbf16>
// TP2: cbc.weight.ref "layers.0.gdn.ba" {regroup = array<i64: 2, 2, 2>, shard = #cbc.shard<ranks = 2, dim = 0, segments = [4, 4], pieces = [2, 2]>, {{.*}} : tensor<4x64xbf16>
// TP2: cbc.math.split %{{.*}} : tensor<?x96xf32> -> tensor<?x64xf32>, tensor<?x32xf32>
// TP2: cbc.math.split %{{.*}} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xf32>
// TP2: cbc.weight.ref "layers.0.gdn.conv" {shard = #cbc.shard<ranks = 2, dim = 0, segments = [32, 32, 64], pieces = [2, 2, 2]>, {{.*}} : tensor<64x1x4xbf16>
// TP2: cbc.math.split %{{.*}} : tensor<?x64xf32> -> tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x32xf32>
// TP2: cbc.weight.ref "layers.0.gdn.A_log" {shard = #cbc.shard<ranks = 2, dim = 0, segments = [4], pieces = [2]>, {{.*}} : tensor<2xf32>
// TP2: cbc.state.gated_delta {{.*}}num_k_heads = 1 : i64, num_v_heads = 2 : i64
// TP2: cbc.math.rms_norm_gated {{.*}} -> tensor<?x32xf32>
// TP2: cbc.weight.ref "layers.0.gdn.out" {shard = #cbc.shard<ranks = 2, dim = 1, segments = [64], pieces = [2]>, {{.*}} : tensor<64x32xbf16>
// TP2: %[[PART:[0-9]+]] = cbc.math.linear %{{.*}} : tensor<?x32xf32>, tensor<64x32xbf16> -> tensor<?x64xf32>
// TP2-NEXT: cbc.comm.all_reduce %[[PART]] {ranks = 2 : i64}

// On 4 ranks the 2 key heads are copied to two ranks each (q and k cut in 2 pieces, v, z, a, b
// in 4), and each rank keeps a quarter of the recurrent state and 48 of the conv's 128 channels.
// TP4: cbc.state_decl<layer = 0, name = "conv", shape = [48, 3], bytes = 576>
// TP4-SAME: cbc.state_decl<layer = 0, name = "recurrent", shape = [1, 16, 16], bytes = 1024>
// TP4: shard = #cbc.shard<ranks = 4, dim = 0, segments = [32, 32, 64, 64], pieces = [2, 2, 4, 4]>

// BAD: error: --tp 3 does not divide the 4 gated-delta value heads of layer 0; tensor-parallel sizes this model can take: 1, 2, 4

// xLSTM's mLSTM layers (the oracle fixture: 4 heads, dqk 16, dv 32). On 2 ranks each keeps two
// heads: their rows of q, k, v and o and of both gates (bias included), their half of the
// per-head norm's weight, the output's columns, summed by an all-reduce; the state halves.
// RUN: cbc-translate --import-hf-config %fixtures/xlstm/config.json | cbc-opt --cbc-shard-recurrent=ranks=2 | FileCheck %s --check-prefix=MLSTM2
// RUN: cbc-translate --import-hf-config %fixtures/xlstm/config.json | cbc-opt --cbc-shard-recurrent=ranks=4 --cbc-plan-cache | FileCheck %s --check-prefix=MLSTM4
// RUN: cbc-translate --import-hf-config %fixtures/xlstm/config.json | not cbc-opt --cbc-shard-recurrent=ranks=8 2>&1 | FileCheck %s --check-prefix=MLSTMBAD
// MLSTM2: cbc.weight.ref "layers.0.mlstm.qkvo" {shard = #cbc.shard<ranks = 2, dim = 0, segments = [64, 64, 128, 128], pieces = [2, 2, 2, 2]>, {{.*}} : tensor<192x32xbf16>
// MLSTM2: cbc.math.split %{{.*}} : tensor<?x192xf32> -> tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x64xf32>, tensor<?x64xf32>
// MLSTM2: cbc.weight.ref "layers.0.mlstm.gates" {shard = #cbc.shard<ranks = 2, dim = 0, segments = [4, 4], pieces = [2, 2]>, {{.*}} : tensor<4x32xbf16>
// MLSTM2: cbc.weight.ref "layers.0.mlstm.gates_bias" {shard = #cbc.shard<ranks = 2, dim = 0, segments = [4, 4], pieces = [2, 2]>, {{.*}} : tensor<4xbf16>
// MLSTM2: cbc.math.split %{{.*}} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xf32>
// MLSTM2: cbc.state.mlstm {{.*}}num_heads = 2 : i64{{.*}} -> tensor<?x64xf32>
// MLSTM2: cbc.weight.ref "layers.0.mlstm.multihead_norm" {shard = #cbc.shard<ranks = 2, dim = 0, segments = [128], pieces = [2]>, {{.*}} : tensor<64xbf16>
// MLSTM2: cbc.math.layer_norm {{.*}}group = 32 : i64} : tensor<?x64xf32>, tensor<64xbf16> -> tensor<?x64xf32>
// MLSTM2: cbc.weight.ref "layers.0.mlstm.out_proj" {shard = #cbc.shard<ranks = 2, dim = 1, segments = [128], pieces = [2]>, {{.*}} : tensor<32x64xbf16>
// MLSTM2: %[[PART:[0-9]+]] = cbc.math.linear %{{.*}} : tensor<?x64xf32>, tensor<32x64xbf16> -> tensor<?x32xf32>
// MLSTM2-NEXT: cbc.comm.all_reduce %[[PART]] {ranks = 2 : i64}
// MLSTM4: cbc.state_decl<layer = 0, name = "recurrent", shape = [1, 529], bytes = 2116>
// MLSTMBAD: error: --tp 8 does not divide the 4 mLSTM heads of layer 0; tensor-parallel sizes this model can take: 1, 2, 4

// RWKV's time mix (the oracle fixture: 48 channels): key, value and receptance column-parallel,
// time_decay and time_first by channel, the output row-parallel with an all-reduce; each rank
// keeps its channels' WKV state.
// RUN: cbc-translate --import-hf-config %fixtures/rwkv/config.json | cbc-opt --cbc-shard-recurrent=ranks=2 | FileCheck %s --check-prefix=WKV2
// RUN: cbc-translate --import-hf-config %fixtures/rwkv/config.json | cbc-opt --cbc-shard-recurrent=ranks=4 --cbc-plan-cache | FileCheck %s --check-prefix=WKV4
// RUN: cbc-translate --import-hf-config %fixtures/rwkv/config.json | not cbc-opt --cbc-shard-recurrent=ranks=5 2>&1 | FileCheck %s --check-prefix=WKVBAD
// WKV2: cbc.weight.ref "layers.0.attention.key" {shard = #cbc.shard<ranks = 2, dim = 0, segments = [48], pieces = [2]>, {{.*}} : tensor<24x48xbf16>
// WKV2: cbc.weight.ref "layers.0.attention.value" {shard = #cbc.shard<ranks = 2, dim = 0, segments = [48], pieces = [2]>
// WKV2: cbc.weight.ref "layers.0.attention.receptance" {shard = #cbc.shard<ranks = 2, dim = 0, segments = [48], pieces = [2]>
// WKV2: cbc.weight.ref "layers.0.attention.time_decay" {shard = #cbc.shard<ranks = 2, dim = 0, segments = [48], pieces = [2]>, {{.*}} : tensor<24xf32>
// WKV2: cbc.state.wkv {{.*}} -> tensor<?x24xf32>
// WKV2: cbc.weight.ref "layers.0.attention.output" {shard = #cbc.shard<ranks = 2, dim = 1, segments = [48], pieces = [2]>, {{.*}} : tensor<48x24xbf16>
// WKV2: %[[PART:[0-9]+]] = cbc.math.linear %{{.*}} : tensor<?x24xf32>, tensor<48x24xbf16> -> tensor<?x48xf32>
// WKV2-NEXT: cbc.comm.all_reduce %[[PART]] {ranks = 2 : i64}
// WKV4: cbc.state_decl<layer = 0, name = "wkv", shape = [3, 12], bytes = 144>
// WKVBAD: error: --tp 5 does not divide the 48 WKV channels of layer 0; tensor-parallel sizes this model can take: 1, 2, 3, 4, 6, 8, 12, 16, 24, 48

// Kimi Linear's KDA mixers (the oracle fixture: 2 heads of 16, low-rank f and g gates, A_log
// [1, 1, H, 1]). On 2 ranks each keeps one head: its rows of q, k, v and b, the low-rank gates'
// first projections whole and their second projections' rows, the conv's channels, A_log (along
// its head dimension) and dt_bias, the output's columns, summed by an all-reduce.
// RUN: cbc-translate --import-hf-config %fixtures/kimi_linear/config.json | cbc-opt --cbc-shard-recurrent=ranks=2 | FileCheck %s --check-prefix=KDA2
// RUN: cbc-translate --import-hf-config %fixtures/kimi_linear/config.json | cbc-opt --cbc-shard-recurrent=ranks=2 --cbc-plan-cache | FileCheck %s --check-prefix=KDAPLAN
// RUN: cbc-translate --import-hf-config %fixtures/kimi_linear/config.json | not cbc-opt --cbc-shard-recurrent=ranks=4 2>&1 | FileCheck %s --check-prefix=KDABAD
// KDA2: cbc.weight.ref "layers.0.kda.in" {shard = #cbc.shard<ranks = 2, dim = 0, segments = [32, 32, 32, 16, 2, 16], pieces = [2, 2, 2, 1, 2, 1]>, {{.*}} : tensor<81x64xbf16>
// KDA2: cbc.math.split %{{.*}} : tensor<?x81xf32> -> tensor<?x48xf32>, tensor<?x16xf32>, tensor<?x1xf32>, tensor<?x16xf32>
// KDA2: cbc.weight.ref "layers.0.kda.f_b" {shard = #cbc.shard<ranks = 2, dim = 0, segments = [32], pieces = [2]>, {{.*}} : tensor<16x16xbf16>
// KDA2: cbc.weight.ref "layers.0.kda.conv" {shard = #cbc.shard<ranks = 2, dim = 0, segments = [32, 32, 32], pieces = [2, 2, 2]>, {{.*}} : tensor<48x1x4xbf16>
// KDA2: cbc.weight.ref "layers.0.kda.A_log" {shard = #cbc.shard<ranks = 2, dim = 2, segments = [2], pieces = [2]>, {{.*}} : tensor<1x1x1x1xf32>
// KDA2: cbc.state.kda {{.*}}num_heads = 1 : i64
// KDA2: cbc.weight.ref "layers.0.kda.out" {shard = #cbc.shard<ranks = 2, dim = 1, segments = [32], pieces = [2]>, {{.*}} : tensor<64x16xbf16>
// KDA2: %[[PART:[0-9]+]] = cbc.math.linear %{{.*}} : tensor<?x16xf32>, tensor<64x16xbf16> -> tensor<?x64xf32>
// KDA2-NEXT: cbc.comm.all_reduce %[[PART]] {ranks = 2 : i64}
// KDAPLAN: cbc.state_decl<layer = 0, name = "conv", shape = [48, 3], bytes = 576>, #cbc.state_decl<layer = 0, name = "recurrent", shape = [1, 16, 16], bytes = 1024>
// KDABAD: error: --tp 4 does not divide the 2 KDA heads of layer 0; tensor-parallel sizes this model can take: 1, 2

// Mamba2's SSD mixers (the oracle fixture: 8 heads of 16 in 2 groups, state 16). On 2 ranks each
// keeps a group with its 4 heads: its rows of z, x, B, C and dt in the input linear, the conv's
// x, B and C channels, A_log, dt_bias and D, the norm's weight (its groups unchanged), the
// output's columns, summed by an all-reduce; the conv and recurrent states are halved. On 4
// ranks each group is copied to 2 ranks, each keeping 2 of its heads; the group's norm spans two
// ranks, so the scan's rows and the gate are gathered, and the norm and the output stay whole.
// RUN: cbc-translate --import-hf-config %fixtures/mamba2/config.json | cbc-opt --cbc-shard-recurrent=ranks=2 --cbc-plan-cache | FileCheck %s --check-prefix=SSD2
// RUN: cbc-translate --import-hf-config %fixtures/mamba2/config.json | cbc-opt --cbc-shard-recurrent=ranks=4 --cbc-plan-cache | FileCheck %s --check-prefix=SSD4
// SSD2: cbc.state_decl<layer = 0, name = "conv", shape = [96, 3], bytes = 1152>, #cbc.state_decl<layer = 0, name = "recurrent", shape = [4, 16, 16], bytes = 4096>
// SSD2: cbc.weight.ref "layers.0.mamba.in" {shard = #cbc.shard<ranks = 2, dim = 0, segments = [128, 128, 32, 32, 8], pieces = [2, 2, 2, 2, 2]>, {{.*}} : tensor<164x64xbf16>
// SSD2: cbc.weight.ref "layers.0.mamba.conv" {shard = #cbc.shard<ranks = 2, dim = 0, segments = [128, 32, 32], pieces = [2, 2, 2]>, {{.*}} : tensor<96x1x4xbf16>
// SSD2: cbc.weight.ref "layers.0.mamba.D" {shard = #cbc.shard<ranks = 2, dim = 0, segments = [8], pieces = [2]>, {{.*}} : tensor<4xf32>
// SSD2: cbc.state.ssd {{.*}} {head_dim = 16 : i64, layer = 0 : i64, n_groups = 1 : i64, num_heads = 4 : i64, state_size = 16 : i64}
// SSD2: cbc.math.rms_norm_gated {{.*}} {eps = 1.000000e-05 : f64, group = 64 : i64, {{.*}} -> tensor<?x64xf32>
// SSD2: cbc.weight.ref "layers.0.mamba.out" {shard = #cbc.shard<ranks = 2, dim = 1, segments = [128], pieces = [2]>, {{.*}} : tensor<64x64xbf16>
// SSD2: %[[PART:[0-9]+]] = cbc.math.linear %{{.*}} : tensor<?x64xf32>, tensor<64x64xbf16> -> tensor<?x64xf32>
// SSD2-NEXT: cbc.comm.all_reduce %[[PART]] {ranks = 2 : i64}
// SSD4: cbc.state_decl<layer = 0, name = "conv", shape = [64, 3], bytes = 768>, #cbc.state_decl<layer = 0, name = "recurrent", shape = [2, 16, 16], bytes = 2048>
// SSD4: cbc.weight.ref "layers.0.mamba.in" {shard = #cbc.shard<ranks = 4, dim = 0, segments = [128, 128, 32, 32, 8], pieces = [4, 4, 2, 2, 4]>, {{.*}} : tensor<98x64xbf16>
// SSD4: %[[SCAN:[0-9]+]] = cbc.state.ssd {{.*}} {head_dim = 16 : i64, layer = 0 : i64, n_groups = 1 : i64, num_heads = 2 : i64, state_size = 16 : i64}
// SSD4: cbc.weight.ref "layers.0.mamba.norm" {sources = {{.*}} : tensor<128xbf16>
// SSD4-NEXT: %[[ROWS:[0-9]+]] = cbc.comm.all_gather %[[SCAN]] {ranks = 4 : i64} : tensor<?x32xf32> -> tensor<?x128xf32>
// SSD4-NEXT: %[[GATE:[0-9]+]] = cbc.comm.all_gather %{{.*}} {ranks = 4 : i64} : tensor<?x32xf32> -> tensor<?x128xf32>
// SSD4-NEXT: cbc.math.rms_norm_gated %[[ROWS]], %[[GATE]], {{.*}} -> tensor<?x128xf32>
// SSD4-NEXT: cbc.weight.ref "layers.0.mamba.out" {sources = {{.*}} : tensor<64x128xbf16>

// MiniMax's lightning mixers (the oracle fixture: 4 heads of 16). On 2 ranks each keeps 2 heads:
// their rows of q, k and v in the input linear (after the checkpoint's per-head layout is
// regrouped), the scan over them with the rates of rank r's heads (`ranks`: decay keeps all four),
// half the state; the scan's rows are gathered for the norm over every head, which with the gate
// and the output stays whole.
// RUN: cbc-translate --import-hf-config %fixtures/minimax/config.json | cbc-opt --cbc-shard-recurrent=ranks=2 --cbc-plan-cache | FileCheck %s --check-prefix=LIGHT2
// LIGHT2: cbc.state_decl<layer = 1, name = "recurrent", shape = [2, 16, 16], bytes = 2048>
// LIGHT2: cbc.weight.ref "layers.1.lightning.qkv" {regroup = array<i64: 4, 16, 16, 16>, shard = #cbc.shard<ranks = 2, dim = 0, segments = [64, 64, 64], pieces = [2, 2, 2]>, {{.*}} : tensor<96x64xbf16>
// LIGHT2: %[[SCAN:[0-9]+]] = cbc.state.lightning {{.*}} {decay = array<f64: {{[^,]+}}, {{[^,]+}}, {{[^,]+}}, {{[^>]+}}>, head_dim = 16 : i64, layer = 1 : i64, num_heads = 2 : i64, ranks = 2 : i64} {{.*}} -> tensor<?x32xf32>
// LIGHT2-NEXT: cbc.comm.all_gather %[[SCAN]] {ranks = 2 : i64} : tensor<?x32xf32> -> tensor<?x64xf32>
// LIGHT2: cbc.weight.ref "layers.1.lightning.out" {sources = {{.*}} : tensor<64x64xbf16>
