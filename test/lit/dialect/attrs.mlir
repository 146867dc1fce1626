// RUN: cbc-opt %s | cbc-opt | FileCheck %s
// RUN: cbc-opt %s --mlir-print-op-generic | cbc-opt | FileCheck %s

// The parameter bundles of the cbc dialect, parsed, printed and parsed again: fields equal to
// their defaults are not printed, and floats round-trip exactly (the RoPE frequencies in full
// f32 precision).

// CHECK-LABEL: module attributes
// CHECK-SAME: cbc.arena = #cbc.arena<token_row_elems = 128, request_row_elems = 32>
// CHECK-SAME: cbc.cache_plan = #cbc.cache_plan<block_size = 16, kv_dtype = bf16, groups = [#cbc.cache_group<id = 0, retention = <all>, layers = [0, 2], bytes_per_token = 64>, #cbc.cache_group<id = 1, retention = <window, 4096>, layers = [1], bytes_per_token = 32>, #cbc.cache_group<id = 2, kind = static, retention = <all>, layers = [4], bytes_per_token = 16>, #cbc.cache_group<id = 3, kind = state, retention = <all>, layers = [3], bytes_per_unit = 96>], layers = [#cbc.cache_layer<layer = 0, group = 0, rows = [#cbc.cache_row<"k", 8>, #cbc.cache_row<"v", 8>]>], states = [#cbc.state_decl<layer = 3, name = "conv", shape = [8, 3], bytes = 96>]>
// CHECK-SAME: cbc.model = #cbc.model<model_type = "llama", vocab_size = 256, hidden_size = 64, num_layers = 4, max_positions = 2048, eos_token_ids = [2, 7], checkpoint_dtype = "bfloat16", weight_aliases = [#cbc.weight_alias<"model.", "language_model.model.">]>
// CHECK-SAME: test.clamp = #cbc.clamped_swiglu<limit = 7.000000e+00, alpha = 1.702000e+00>
// CHECK-SAME: test.fp8 = #cbc.model<model_type = "llama", vocab_size = 8, hidden_size = 8, num_layers = 1, max_positions = 8, checkpoint_dtype = "bfloat16", quantization = "fp8", fp8_block = [128, 64]>
// CHECK-SAME: test.kv_f32 = #cbc.cache_plan<block_size = 8, kv_dtype = f32>
// CHECK-SAME: test.outer = #cbc.model<model_type = "gemma3_text", outer_model_type = "gemma3", vocab_size = 8, hidden_size = 8, num_layers = 1, max_positions = 8, bos_token_id = 2, checkpoint_dtype = "float32", quantization = "mxfp4">
// CHECK-SAME: test.rope = #cbc.rope<head_dim = 8, rotary_dim = 4, pairing = interleaved, inv_freq = array<f32: 1.000000e+00, 1.000000e-01>, attention_factor = 1.100000e+00, inv_freq_long = array<f32: 5.000000e-01, 5.000000e-02>, long_after = 4096, dynamic_base = 1.000000e+04, dynamic_factor = 2.000000e+00, dynamic_max_positions = 2048>
// CHECK-SAME: test.rope_default = #cbc.rope<head_dim = 4, rotary_dim = 4, inv_freq = array<f32: 1.000000e+00, 0.00999999977>>
module attributes {
  cbc.arena = #cbc.arena<token_row_elems = 128, request_row_elems = 32>,
  cbc.cache_plan = #cbc.cache_plan<block_size = 16, kv_dtype = bf16,
      groups = [#cbc.cache_group<id = 0, retention = #cbc.retention<all>, layers = [0, 2], bytes_per_token = 64>,
                #cbc.cache_group<id = 1, retention = #cbc.retention<window, 4096>, layers = [1], bytes_per_token = 32>,
                #cbc.cache_group<id = 2, kind = static, retention = #cbc.retention<all>, layers = [4],
                                 bytes_per_token = 16>,
                #cbc.cache_group<id = 3, kind = state, retention = #cbc.retention<all>, layers = [3], bytes_per_unit = 96>],
      layers = [#cbc.cache_layer<layer = 0, group = 0, rows = [#cbc.cache_row<"k", 8>, #cbc.cache_row<"v", 8>]>],
      states = [#cbc.state_decl<layer = 3, name = "conv", shape = [8, 3], bytes = 96>]>,
  cbc.model = #cbc.model<model_type = "llama", vocab_size = 256, hidden_size = 64, num_layers = 4,
      max_positions = 2048, eos_token_ids = [2, 7], checkpoint_dtype = "bfloat16",
      weight_aliases = [#cbc.weight_alias<"model.", "language_model.model.">]>,
  test.clamp = #cbc.clamped_swiglu<limit = 7.0, alpha = 1.702>,
  test.fp8 = #cbc.model<model_type = "llama", vocab_size = 8, hidden_size = 8, num_layers = 1, max_positions = 8,
      checkpoint_dtype = "bfloat16", quantization = "fp8", fp8_block = [128, 64]>,
  test.kv_f32 = #cbc.cache_plan<block_size = 8, kv_dtype = f32>,
  test.outer = #cbc.model<model_type = "gemma3_text", outer_model_type = "gemma3", vocab_size = 8, hidden_size = 8,
      num_layers = 1, max_positions = 8, bos_token_id = 2, checkpoint_dtype = "float32", quantization = "mxfp4">,
  test.rope = #cbc.rope<head_dim = 8, rotary_dim = 4, pairing = interleaved, inv_freq = array<f32: 1.0, 0.1>,
      attention_factor = 1.1, inv_freq_long = array<f32: 0.5, 0.05>, long_after = 4096, dynamic_base = 10000.0,
      dynamic_factor = 2.0, dynamic_max_positions = 2048>,
  test.rope_default = #cbc.rope<head_dim = 4, rotary_dim = 4, pairing = half, inv_freq = array<f32: 1.0, 0.01>,
      attention_factor = 1.0>
} {}
