// Group-limited routing and identity experts from IR to the artefact and the generated
// kernels, on a hand-written step with two MoE blocks (no family lowers to these yet). Layer 0:
// sigmoid scores with a selection bias, 4 experts in 2 groups scored by their top-2 sum, 1 kept,
// -inf fill. Layer 1: softmax over 6 router columns (4 experts and 2 identity experts) in 3
// groups scored by their max, 2 kept, zero fill.
// REQUIRES: cuda

// RUN: cbc-opt %s --cbc-pipeline -o %t.mlir
// RUN: cbc-translate --cbc-to-artefact %t.mlir -o %t.fb
// RUN: cbc dump %t.fb --program | FileCheck %s --check-prefix=PROGRAM
// PROGRAM: cbc.moe.route %{{[0-9]+}}, %{{[0-9]+}}(layers.0.moe.selection_bias)  { k: 2, score: Sigmoid, renorm: true, renorm_eps: 0.0, scaling: 2.5, groups: { count: 2, keep: 1, score: Top2Sum, fill: NegInf }, sinks: 0, threshold: 0.0, bias_on_logits: false, table: false }
// PROGRAM: cbc.moe.experts {{.*}}(layers.0.moe.down)  { glu: { act: Silu, layout: Halves }, ungated: false, identity_experts: 0, scale_input: false, null_experts: 0, expert_ranks: 1 }
// PROGRAM: cbc.moe.route %{{[0-9]+}}  { k: 2, score: Softmax, renorm: false, renorm_eps: 0.0, scaling: 6.0, groups: { count: 3, keep: 2, score: Max, fill: Zero }, sinks: 0, threshold: 0.0, bias_on_logits: false, table: false }
// PROGRAM: cbc.moe.experts {{.*}}(layers.1.moe.down)  { glu: { act: Silu, layout: Halves }, ungated: false, identity_experts: 2, scale_input: false, null_experts: 0, expert_ranks: 1 }

// The CPU backend serves it (random weights).
// RUN: echo '[5, 6, 7, 8]' > %t.prompts
// RUN: cbc run %t.fb --random-weights --prompts %t.prompts --max-new-tokens 3 --backend cpu --quiet | FileCheck %s --check-prefix=SERVE
// SERVE: "finish_reason":"length","generated_tokens":3,

// The groups are template arguments of the router kernel; the identity experts the combine's
// count and the input's element type. The other expert kernels are the ones without either,
// and layer 1 reuses layer 0's.
// RUN: cbc-translate --cbc-to-cuda %t.mlir | FileCheck %s --check-prefix=CUDA
// CUDA: cbc::moe_route<float, float, 4, 2, cbc::Score::sigmoid, true, 2, 1, cbc::GroupScore::top2_sum, cbc::GroupFill::neg_inf, false>(a); }
// CUDA-NEXT: cbc::moe_plan<4, 2>(a); }
// CUDA-NEXT: cbc::moe_gate_up<bf16, bf16, void, bf16, 4, 32, 64, 2, cbc::Glu::halves, cbc::Unit::gated, cbc::Act::silu, false>(a); }
// CUDA-NEXT: cbc::moe_down<bf16, bf16, void, 4, 32, 64>(a); }
// CUDA-NEXT: cbc::moe_combine<bf16, 4, 2, 64, 0, bf16, false, 0>(a); }
// CUDA:      cbc::moe_route<float, void, 6, 2, cbc::Score::softmax, false, 3, 2, cbc::GroupScore::max, cbc::GroupFill::zero, false>(a); }
// CUDA-NEXT: cbc::moe_combine<bf16, 4, 2, 64, 2, bf16, false, 0>(a); }

// NVRTC compiles them for both targets without spills.
// RUN: cbc-translate --cbc-to-artefact --targets sm_80,sm_90 %t.mlir -o %t.cuda.fb
// RUN: cbc dump %t.cuda.fb --kernels | FileCheck %s --check-prefix=KERNELS --implicit-check-not='{{spills +[1-9-]}}'
// KERNELS: target sm_80: cubin
// KERNELS: {{^  cbc_moe_route_1 +regs +[0-9]+  spills   0}}
// KERNELS: {{^  cbc_moe_route_7 +regs +[0-9]+  spills   0}}
// KERNELS-NEXT: {{^  cbc_moe_combine_8 +regs +[0-9]+  spills   0}}
// KERNELS: target sm_90: cubin
// KERNELS: {{^  cbc_moe_route_7 +regs +[0-9]+  spills   0}}
// KERNELS-NEXT: {{^  cbc_moe_combine_8 +regs +[0-9]+  spills   0}}

module attributes {cbc.model = #cbc.model<model_type = "test", vocab_size = 256, hidden_size = 64, num_layers = 2, max_positions = 256, eos_token_ids = [2], bos_token_id = 1, checkpoint_dtype = "bfloat16">} {
  func.func @step(%arg0: tensor<?xi32> {cbc.name = "tokens"}, %arg1: tensor<?xi32> {cbc.name = "positions"}, %arg2: tensor<?xi32> {cbc.name = "seq_ids"}, %arg3: tensor<?xi32> {cbc.name = "cu_seqlens"}, %arg4: tensor<?xi32> {cbc.name = "kv_lens"}, %arg5: tensor<?x?x?xi32> {cbc.name = "block_tables"}, %arg6: tensor<?xi32> {cbc.name = "logit_rows"}, %arg7: tensor<?xi32> {cbc.name = "prompt_lens"}, %arg8: tensor<?xi32> {cbc.name = "slots"}, %arg9: tensor<?xi32> {cbc.name = "has_initial_state"}) -> tensor<?x256xf32> {
    %embed = cbc.weight.ref "embed" {sources = [["embed.weight"]]} : tensor<256x64xbf16>
    %x = cbc.math.embed %arg0, %embed : tensor<?xi32>, tensor<256x64xbf16> -> tensor<?x64xf32>
    %r0 = cbc.weight.ref "layers.0.moe.router" {sources = [["layers.0.router"]]} : tensor<4x64xbf16>
    %b0 = cbc.weight.ref "layers.0.moe.selection_bias" {sources = [["layers.0.bias"]]} : tensor<4xf32>
    %l0 = cbc.math.linear %x, %r0 : tensor<?x64xf32>, tensor<4x64xbf16> -> tensor<?x4xf32>
    %w0, %ids0 = cbc.moe.route %l0 bias(%b0 : tensor<4xf32>) {k = 2 : i64, score = #cbc.score<sigmoid>, renorm = true, scaling = 2.5 : f64, groups = #cbc.route_groups<count = 2, keep = 1, score = top2_sum, fill = neg_inf>} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
    %gu0 = cbc.weight.ref "layers.0.moe.gate_up" {combine = #cbc.combine<stack>, sources = [["e0.gu"], ["e1.gu"], ["e2.gu"], ["e3.gu"]]} : tensor<4x64x64xbf16>
    %d0 = cbc.weight.ref "layers.0.moe.down" {combine = #cbc.combine<stack>, sources = [["e0.d"], ["e1.d"], ["e2.d"], ["e3.d"]]} : tensor<4x64x32xbf16>
    %y0 = cbc.moe.experts %x, %ids0, %w0, %gu0, %d0 {act = #cbc.act<silu>} : (tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x64x64xbf16>, tensor<4x64x32xbf16>) -> tensor<?x64xf32>
    %x1 = cbc.math.add %x, %y0 : tensor<?x64xf32>
    %r1 = cbc.weight.ref "layers.1.moe.router" {sources = [["layers.1.router"]]} : tensor<6x64xbf16>
    %l1 = cbc.math.linear %x1, %r1 : tensor<?x64xf32>, tensor<6x64xbf16> -> tensor<?x6xf32>
    %w1, %ids1 = cbc.moe.route %l1 {k = 2 : i64, score = #cbc.score<softmax>, scaling = 6.0 : f64, groups = #cbc.route_groups<count = 3, keep = 2, score = max, fill = zero>} : tensor<?x6xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
    %gu1 = cbc.weight.ref "layers.1.moe.gate_up" {combine = #cbc.combine<stack>, sources = [["f0.gu"], ["f1.gu"], ["f2.gu"], ["f3.gu"]]} : tensor<4x64x64xbf16>
    %d1 = cbc.weight.ref "layers.1.moe.down" {combine = #cbc.combine<stack>, sources = [["f0.d"], ["f1.d"], ["f2.d"], ["f3.d"]]} : tensor<4x64x32xbf16>
    %y1 = cbc.moe.experts %x1, %ids1, %w1, %gu1, %d1 {act = #cbc.act<silu>, identity_experts = 2 : i64} : (tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x64x64xbf16>, tensor<4x64x32xbf16>) -> tensor<?x64xf32>
    %x2 = cbc.math.add %x1, %y1 : tensor<?x64xf32>
    %g = cbc.rows.gather %x2, %arg6 : tensor<?x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
    %head = cbc.weight.ref "lm_head" {sources = [["lm_head.weight"]]} : tensor<256x64xbf16>
    %logits = cbc.math.linear %g, %head : tensor<?x64xf32>, tensor<256x64xbf16> -> tensor<?x256xf32>
    return %logits : tensor<?x256xf32>
  }
}
