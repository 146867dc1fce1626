// A one-layer DeepSeek-V3-like step (cbc-translate --import-hf-config of the deepseek_v3
// fixture's config cut to one dense layer): the latent-attention input of cbc-shard-attention.
module attributes {cbc.model = #cbc.model<model_type = "deepseek_v3", vocab_size = 256, hidden_size = 64, num_layers = 1, max_positions = 16384, eos_token_ids = [2], bos_token_id = 1, checkpoint_dtype = "bfloat16">} {
  func.func @step(%arg0: tensor<?xi32> {cbc.name = "tokens"}, %arg1: tensor<?xi32> {cbc.name = "positions"}, %arg2: tensor<?xi32> {cbc.name = "seq_ids"}, %arg3: tensor<?xi32> {cbc.name = "cu_seqlens"}, %arg4: tensor<?xi32> {cbc.name = "kv_lens"}, %arg5: tensor<?x?x?xi32> {cbc.name = "block_tables"}, %arg6: tensor<?xi32> {cbc.name = "logit_rows"}, %arg7: tensor<?xi32> {cbc.name = "prompt_lens"}, %arg8: tensor<?xi32> {cbc.name = "slots"}, %arg9: tensor<?xi32> {cbc.name = "has_initial_state"}, %arg10: tensor<?xi32> {cbc.name = "state_in"}, %arg11: tensor<?xi32> {cbc.name = "state_out"}) -> tensor<?x256xf32> {
    %0 = cbc.weight.ref "embed" {sources = [["model.embed_tokens.weight"]]} : tensor<256x64xbf16>
    %1 = cbc.math.embed %arg0, %0 : tensor<?xi32>, tensor<256x64xbf16> -> tensor<?x64xf32>
    %2 = cbc.weight.ref "layers.0.input_layernorm" {sources = [["model.layers.0.input_layernorm.weight"]]} : tensor<64xbf16>
    %3 = cbc.math.rms_norm %1, %2 {eps = 9.9999999999999995E-7 : f64} : tensor<?x64xf32>, tensor<64xbf16> -> tensor<?x64xf32>
    %4 = cbc.weight.ref "layers.0.attn.q_a" {sources = [["model.layers.0.self_attn.q_a_proj.weight"]]} : tensor<32x64xbf16>
    %5 = cbc.math.linear %3, %4 : tensor<?x64xf32>, tensor<32x64xbf16> -> tensor<?x32xf32>
    %6 = cbc.weight.ref "layers.0.attn.q_a_norm" {sources = [["model.layers.0.self_attn.q_a_layernorm.weight"]]} : tensor<32xbf16>
    %7 = cbc.math.rms_norm %5, %6 {eps = 9.9999999999999995E-7 : f64} : tensor<?x32xf32>, tensor<32xbf16> -> tensor<?x32xf32>
    %8 = cbc.weight.ref "layers.0.attn.q_b" {regroup = array<i64: 4, 16, 8>, sources = [["model.layers.0.self_attn.q_b_proj.weight"]]} : tensor<96x32xbf16>
    %9 = cbc.math.linear %7, %8 : tensor<?x32xf32>, tensor<96x32xbf16> -> tensor<?x96xf32>
    %10:2 = cbc.math.split %9 : tensor<?x96xf32> -> tensor<?x64xf32>, tensor<?x32xf32>
    %11 = cbc.weight.ref "layers.0.attn.kv_a" {sources = [["model.layers.0.self_attn.kv_a_proj_with_mqa.weight"]]} : tensor<40x64xbf16>
    %12 = cbc.math.linear %3, %11 : tensor<?x64xf32>, tensor<40x64xbf16> -> tensor<?x40xf32>
    %13:2 = cbc.math.split %12 : tensor<?x40xf32> -> tensor<?x32xf32>, tensor<?x8xf32>
    %14 = cbc.weight.ref "layers.0.attn.kv_a_norm" {sources = [["model.layers.0.self_attn.kv_a_layernorm.weight"]]} : tensor<32xbf16>
    %15 = cbc.math.rms_norm %13#0, %14 {eps = 9.9999999999999995E-7 : f64} : tensor<?x32xf32>, tensor<32xbf16> -> tensor<?x32xf32>
    %16 = cbc.math.rope %10#1, %arg1, %arg2, %arg7 {rope = #cbc.rope<head_dim = 8, rotary_dim = 8, pairing = interleaved, inv_freq = array<f32: 1.000000e+00, 1.000000e-01, 0.00624999962, 2.500000e-04>, attention_factor = 1.036992729910394>} : tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32xf32>
    %17 = cbc.math.rope %13#1, %arg1, %arg2, %arg7 {rope = #cbc.rope<head_dim = 8, rotary_dim = 8, pairing = interleaved, inv_freq = array<f32: 1.000000e+00, 1.000000e-01, 0.00624999962, 2.500000e-04>, attention_factor = 1.036992729910394>} : tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
    cbc.kv.append %15, %17, %arg1, %arg2, %arg8, %arg5 {head_dim = 32 : i64, latent, layer = 0 : i64, num_kv_heads = 1 : i64} : tensor<?x32xf32>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32>
    %18 = cbc.weight.ref "layers.0.attn.kv_b" {sources = [["model.layers.0.self_attn.kv_b_proj.weight"]]} : tensor<112x32xbf16>
    %19 = cbc.math.head_linear %10#0, %18 {heads = 4 : i64, offset = 0 : i64, rows = 16 : i64, transpose} : tensor<?x64xf32>, tensor<112x32xbf16> -> tensor<?x128xf32>
    %20 = cbc.kv.latent_attention %19, %16, %arg1, %arg2, %arg3, %arg4, %arg8, %arg5 {latent_dim = 32 : i64, layer = 0 : i64, num_heads = 4 : i64, rope_dim = 8 : i64, scale = 0.24609782191507457 : f64} : tensor<?x128xf32>, tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?x?xi32> -> tensor<?x128xf32>
    %21 = cbc.math.head_linear %20, %18 {heads = 4 : i64, offset = 16 : i64, rows = 12 : i64} : tensor<?x128xf32>, tensor<112x32xbf16> -> tensor<?x48xf32>
    %22 = cbc.weight.ref "layers.0.attn.o" {sources = [["model.layers.0.self_attn.o_proj.weight"]]} : tensor<64x48xbf16>
    %23 = cbc.math.linear %21, %22 : tensor<?x48xf32>, tensor<64x48xbf16> -> tensor<?x64xf32>
    %24 = cbc.math.add %1, %23 : tensor<?x64xf32>
    %25 = cbc.weight.ref "layers.0.post_attention_layernorm" {sources = [["model.layers.0.post_attention_layernorm.weight"]]} : tensor<64xbf16>
    %26 = cbc.math.rms_norm %24, %25 {eps = 9.9999999999999995E-7 : f64} : tensor<?x64xf32>, tensor<64xbf16> -> tensor<?x64xf32>
    %27 = cbc.weight.ref "layers.0.mlp.gate_up" {sources = [["model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.up_proj.weight"]]} : tensor<128x64xbf16>
    %28 = cbc.math.linear %26, %27 : tensor<?x64xf32>, tensor<128x64xbf16> -> tensor<?x128xf32>
    %29 = cbc.math.glu %28 {act = #cbc.act<silu>} : tensor<?x128xf32> -> tensor<?x64xf32>
    %30 = cbc.weight.ref "layers.0.mlp.down" {sources = [["model.layers.0.mlp.down_proj.weight"]]} : tensor<64x64xbf16>
    %31 = cbc.math.linear %29, %30 : tensor<?x64xf32>, tensor<64x64xbf16> -> tensor<?x64xf32>
    %32 = cbc.math.add %24, %31 : tensor<?x64xf32>
    %33 = cbc.rows.gather %32, %arg6 : tensor<?x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
    %34 = cbc.weight.ref "final_norm" {sources = [["model.norm.weight"]]} : tensor<64xbf16>
    %35 = cbc.math.rms_norm %33, %34 {eps = 9.9999999999999995E-7 : f64} : tensor<?x64xf32>, tensor<64xbf16> -> tensor<?x64xf32>
    %36 = cbc.weight.ref "lm_head" {sources = [["lm_head.weight"]]} : tensor<256x64xbf16>
    %37 = cbc.math.linear %35, %36 : tensor<?x64xf32>, tensor<256x64xbf16> -> tensor<?x256xf32>
    return %37 : tensor<?x256xf32>
  }
}
