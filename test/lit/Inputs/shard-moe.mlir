// A one-layer Qwen3-MoE-like step (cbc-translate --import-hf-config): 4 experts of 16
// intermediate features, top-2: the input of the cbc-shard-experts test.
module attributes {cbc.model = #cbc.model<model_type = "qwen3_moe", vocab_size = 64, hidden_size = 32, num_layers = 1, max_positions = 64, eos_token_ids = [2], bos_token_id = 1, checkpoint_dtype = "bfloat16">} {
  func.func @step(%arg0: tensor<?xi32> {cbc.name = "tokens"}, %arg1: tensor<?xi32> {cbc.name = "positions"}, %arg2: tensor<?xi32> {cbc.name = "seq_ids"}, %arg3: tensor<?xi32> {cbc.name = "cu_seqlens"}, %arg4: tensor<?xi32> {cbc.name = "kv_lens"}, %arg5: tensor<?x?x?xi32> {cbc.name = "block_tables"}, %arg6: tensor<?xi32> {cbc.name = "logit_rows"}, %arg7: tensor<?xi32> {cbc.name = "prompt_lens"}, %arg8: tensor<?xi32> {cbc.name = "slots"}, %arg9: tensor<?xi32> {cbc.name = "has_initial_state"}, %arg10: tensor<?xi32> {cbc.name = "state_in"}, %arg11: tensor<?xi32> {cbc.name = "state_out"}) -> tensor<?x64xf32> {
    %0 = cbc.weight.ref "embed" {sources = [["model.embed_tokens.weight"]]} : tensor<64x32xbf16>
    %1 = cbc.math.embed %arg0, %0 : tensor<?xi32>, tensor<64x32xbf16> -> tensor<?x32xf32>
    %2 = cbc.weight.ref "layers.0.input_layernorm" {sources = [["model.layers.0.input_layernorm.weight"]]} : tensor<32xbf16>
    %3 = cbc.math.rms_norm %1, %2 {eps = 9.9999999999999995E-7 : f64} : tensor<?x32xf32>, tensor<32xbf16> -> tensor<?x32xf32>
    %4 = cbc.weight.ref "layers.0.attn.qkv" {sources = [["model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight", "model.layers.0.self_attn.v_proj.weight"]]} : tensor<64x32xbf16>
    %5 = cbc.math.linear %3, %4 : tensor<?x32xf32>, tensor<64x32xbf16> -> tensor<?x64xf32>
    %6:3 = cbc.math.split %5 : tensor<?x64xf32> -> tensor<?x32xf32>, tensor<?x16xf32>, tensor<?x16xf32>
    %7 = cbc.weight.ref "layers.0.attn.q_norm" {sources = [["model.layers.0.self_attn.q_norm.weight"]]} : tensor<8xbf16>
    %8 = cbc.math.rms_norm %6#0, %7 {eps = 9.9999999999999995E-7 : f64, group = 8 : i64} : tensor<?x32xf32>, tensor<8xbf16> -> tensor<?x32xf32>
    %9 = cbc.weight.ref "layers.0.attn.k_norm" {sources = [["model.layers.0.self_attn.k_norm.weight"]]} : tensor<8xbf16>
    %10 = cbc.math.rms_norm %6#1, %9 {eps = 9.9999999999999995E-7 : f64, group = 8 : i64} : tensor<?x16xf32>, tensor<8xbf16> -> tensor<?x16xf32>
    %11 = cbc.math.rope %8, %arg1, %arg2, %arg7 {rope = #cbc.rope<head_dim = 8, rotary_dim = 8, inv_freq = array<f32: 1.000000e+00, 0.0316227786, 1.000000e-03, 3.16227743E-5>>} : tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32xf32>
    %12 = cbc.math.rope %10, %arg1, %arg2, %arg7 {rope = #cbc.rope<head_dim = 8, rotary_dim = 8, inv_freq = array<f32: 1.000000e+00, 0.0316227786, 1.000000e-03, 3.16227743E-5>>} : tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16xf32>
    cbc.kv.append %12, %6#2, %arg1, %arg2, %arg8, %arg5 {head_dim = 8 : i64, layer = 0 : i64, num_kv_heads = 2 : i64} : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
    %13 = cbc.kv.attention %11, %arg1, %arg2, %arg3, %arg4, %arg8, %arg5 {head_dim = 8 : i64, layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.35355339059327373 : f64} : tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x32xf32>
    %14 = cbc.weight.ref "layers.0.attn.o" {sources = [["model.layers.0.self_attn.o_proj.weight"]]} : tensor<32x32xbf16>
    %15 = cbc.math.linear %13, %14 : tensor<?x32xf32>, tensor<32x32xbf16> -> tensor<?x32xf32>
    %16 = cbc.math.add %1, %15 : tensor<?x32xf32>
    %17 = cbc.weight.ref "layers.0.post_attention_layernorm" {sources = [["model.layers.0.post_attention_layernorm.weight"]]} : tensor<32xbf16>
    %18 = cbc.math.rms_norm %16, %17 {eps = 9.9999999999999995E-7 : f64} : tensor<?x32xf32>, tensor<32xbf16> -> tensor<?x32xf32>
    %19 = cbc.weight.ref "layers.0.moe.router" {sources = [["model.layers.0.mlp.gate.weight"]]} : tensor<4x32xbf16>
    %20 = cbc.math.linear %18, %19 : tensor<?x32xf32>, tensor<4x32xbf16> -> tensor<?x4xf32>
    %weights, %ids = cbc.moe.route %20 {k = 2 : i64, renorm = true, score = #cbc.score<softmax>} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
    %21 = cbc.weight.ref "layers.0.moe.gate_up" {combine = #cbc.combine<stack>, sources = [["model.layers.0.mlp.experts.0.gate_proj.weight", "model.layers.0.mlp.experts.0.up_proj.weight"], ["model.layers.0.mlp.experts.1.gate_proj.weight", "model.layers.0.mlp.experts.1.up_proj.weight"], ["model.layers.0.mlp.experts.2.gate_proj.weight", "model.layers.0.mlp.experts.2.up_proj.weight"], ["model.layers.0.mlp.experts.3.gate_proj.weight", "model.layers.0.mlp.experts.3.up_proj.weight"]]} : tensor<4x32x32xbf16>
    %22 = cbc.weight.ref "layers.0.moe.down" {combine = #cbc.combine<stack>, sources = [["model.layers.0.mlp.experts.0.down_proj.weight"], ["model.layers.0.mlp.experts.1.down_proj.weight"], ["model.layers.0.mlp.experts.2.down_proj.weight"], ["model.layers.0.mlp.experts.3.down_proj.weight"]]} : tensor<4x32x16xbf16>
    %23 = cbc.moe.experts %18, %ids, %weights, %21, %22 {act = #cbc.act<silu>} : (tensor<?x32xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<4x32x32xbf16>, tensor<4x32x16xbf16>) -> tensor<?x32xf32>
    %24 = cbc.math.add %16, %23 : tensor<?x32xf32>
    %25 = cbc.rows.gather %24, %arg6 : tensor<?x32xf32>, tensor<?xi32> -> tensor<?x32xf32>
    %26 = cbc.weight.ref "final_norm" {sources = [["model.norm.weight"]]} : tensor<32xbf16>
    %27 = cbc.math.rms_norm %25, %26 {eps = 9.9999999999999995E-7 : f64} : tensor<?x32xf32>, tensor<32xbf16> -> tensor<?x32xf32>
    %28 = cbc.weight.ref "lm_head" {sources = [["lm_head.weight"]]} : tensor<64x32xbf16>
    %29 = cbc.math.linear %27, %28 : tensor<?x32xf32>, tensor<64x32xbf16> -> tensor<?x64xf32>
    return %29 : tensor<?x64xf32>
  }
}
