// A one-layer Qwen3-Next-like step (cbc-translate --import-hf-config of the qwen3_next fixture's
// config cut to one gated-delta layer with a dense MLP): the input of the cbc-shard-recurrent test.
module attributes {cbc.model = #cbc.model<model_type = "qwen3_next", vocab_size = 256, hidden_size = 64, num_layers = 1, max_positions = 256, eos_token_ids = [2], bos_token_id = 1, checkpoint_dtype = "bfloat16">} {
  func.func @step(%arg0: tensor<?xi32> {cbc.name = "tokens"}, %arg1: tensor<?xi32> {cbc.name = "positions"}, %arg2: tensor<?xi32> {cbc.name = "seq_ids"}, %arg3: tensor<?xi32> {cbc.name = "cu_seqlens"}, %arg4: tensor<?xi32> {cbc.name = "kv_lens"}, %arg5: tensor<?x?x?xi32> {cbc.name = "block_tables"}, %arg6: tensor<?xi32> {cbc.name = "logit_rows"}, %arg7: tensor<?xi32> {cbc.name = "prompt_lens"}, %arg8: tensor<?xi32> {cbc.name = "slots"}, %arg9: tensor<?xi32> {cbc.name = "has_initial_state"}, %arg10: tensor<?xi32> {cbc.name = "state_in"}, %arg11: tensor<?xi32> {cbc.name = "state_out"}) -> tensor<?x256xf32> {
    %0 = cbc.weight.ref "embed" {sources = [["model.embed_tokens.weight"]]} : tensor<256x64xbf16>
    %1 = cbc.math.embed %arg0, %0 : tensor<?xi32>, tensor<256x64xbf16> -> tensor<?x64xf32>
    %2 = cbc.weight.ref "layers.0.input_layernorm" {sources = [["model.layers.0.input_layernorm.weight"]]} : tensor<64xbf16>
    %3 = cbc.math.rms_norm %1, %2 {eps = 9.9999999999999995E-7 : f64, offset = 1.000000e+00 : f64} : tensor<?x64xf32>, tensor<64xbf16> -> tensor<?x64xf32>
    %4 = cbc.weight.ref "layers.0.gdn.qkvz" {regroup = array<i64: 2, 16, 16, 32, 32>, sources = [["model.layers.0.linear_attn.in_proj_qkvz.weight"]]} : tensor<192x64xbf16>
    %5 = cbc.weight.ref "layers.0.gdn.ba" {regroup = array<i64: 2, 2, 2>, sources = [["model.layers.0.linear_attn.in_proj_ba.weight"]]} : tensor<8x64xbf16>
    %6 = cbc.math.linear %3, %4 : tensor<?x64xf32>, tensor<192x64xbf16> -> tensor<?x192xf32>
    %7:2 = cbc.math.split %6 : tensor<?x192xf32> -> tensor<?x128xf32>, tensor<?x64xf32>
    %8 = cbc.math.linear %3, %5 : tensor<?x64xf32>, tensor<8x64xbf16> -> tensor<?x8xf32>
    %9:2 = cbc.math.split %8 : tensor<?x8xf32> -> tensor<?x4xf32>, tensor<?x4xf32>
    %10 = cbc.weight.ref "layers.0.gdn.conv" {sources = [["model.layers.0.linear_attn.conv1d.weight"]]} : tensor<128x1x4xbf16>
    %11 = cbc.state.conv1d %7#0, %10, %arg3, %arg10, %arg11, %arg9 {act = #cbc.act<silu>, layer = 0 : i64} : (tensor<?x128xf32>, tensor<128x1x4xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x128xf32>
    %12:3 = cbc.math.split %11 : tensor<?x128xf32> -> tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x64xf32>
    %13 = cbc.weight.ref "layers.0.gdn.A_log" {sources = [["model.layers.0.linear_attn.A_log"]]} : tensor<4xf32>
    %14 = cbc.weight.ref "layers.0.gdn.dt_bias" {sources = [["model.layers.0.linear_attn.dt_bias"]]} : tensor<4xf32>
    %15 = cbc.state.gated_delta %12#0, %12#1, %12#2, %9#1, %9#0, %13, %14, %arg3, %arg10, %arg11, %arg9 {k_dim = 16 : i64, layer = 0 : i64, num_k_heads = 2 : i64, num_v_heads = 4 : i64, qk_l2norm, v_dim = 16 : i64} : (tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x64xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xf32>
    %16 = cbc.weight.ref "layers.0.gdn.norm" {sources = [["model.layers.0.linear_attn.norm.weight"]]} : tensor<16xbf16>
    %17 = cbc.math.rms_norm_gated %15, %7#1, %16 {eps = 9.9999999999999995E-7 : f64, group = 16 : i64} : tensor<?x64xf32>, tensor<?x64xf32>, tensor<16xbf16> -> tensor<?x64xf32>
    %18 = cbc.weight.ref "layers.0.gdn.out" {sources = [["model.layers.0.linear_attn.out_proj.weight"]]} : tensor<64x64xbf16>
    %19 = cbc.math.linear %17, %18 : tensor<?x64xf32>, tensor<64x64xbf16> -> tensor<?x64xf32>
    %20 = cbc.math.add %1, %19 : tensor<?x64xf32>
    %21 = cbc.weight.ref "layers.0.post_attention_layernorm" {sources = [["model.layers.0.post_attention_layernorm.weight"]]} : tensor<64xbf16>
    %22 = cbc.math.rms_norm %20, %21 {eps = 9.9999999999999995E-7 : f64, offset = 1.000000e+00 : f64} : tensor<?x64xf32>, tensor<64xbf16> -> tensor<?x64xf32>
    %23 = cbc.weight.ref "layers.0.mlp.gate_up" {sources = [["model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.up_proj.weight"]]} : tensor<192x64xbf16>
    %24 = cbc.math.linear %22, %23 : tensor<?x64xf32>, tensor<192x64xbf16> -> tensor<?x192xf32>
    %25 = cbc.math.glu %24 {act = #cbc.act<silu>} : tensor<?x192xf32> -> tensor<?x96xf32>
    %26 = cbc.weight.ref "layers.0.mlp.down" {sources = [["model.layers.0.mlp.down_proj.weight"]]} : tensor<64x96xbf16>
    %27 = cbc.math.linear %25, %26 : tensor<?x96xf32>, tensor<64x96xbf16> -> tensor<?x64xf32>
    %28 = cbc.math.add %20, %27 : tensor<?x64xf32>
    %29 = cbc.rows.gather %28, %arg6 : tensor<?x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
    %30 = cbc.weight.ref "final_norm" {sources = [["model.norm.weight"]]} : tensor<64xbf16>
    %31 = cbc.math.rms_norm %29, %30 {eps = 9.9999999999999995E-7 : f64, offset = 1.000000e+00 : f64} : tensor<?x64xf32>, tensor<64xbf16> -> tensor<?x64xf32>
    %32 = cbc.weight.ref "lm_head" {sources = [["lm_head.weight"]]} : tensor<256x64xbf16>
    %33 = cbc.math.linear %31, %32 : tensor<?x64xf32>, tensor<256x64xbf16> -> tensor<?x256xf32>
    return %33 : tensor<?x256xf32>
  }
}
