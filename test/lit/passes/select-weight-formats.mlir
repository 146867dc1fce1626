// RUN: cbc-opt %s -split-input-file -verify-diagnostics -cbc-select-weight-formats | FileCheck %s

// Every quantised weight is dequantised at load: its type becomes plain. An MXFP4 weight tells
// the loader to expand its [blocks, scales] pairs; a plain weight is left alone.
// CHECK-LABEL: func.func @mxfp4
// CHECK: cbc.weight.ref "experts" {dequant = #cbc.dequant<mxfp4>, {{.*}} : tensor<2x8x64xbf16>{{$}}
// CHECK: cbc.weight.ref "plain" {{.*}} : tensor<8x64xbf16>{{$}}
func.func @mxfp4() {
  %0 = cbc.weight.ref "experts" {sources = [["e.blocks", "e.scales"]]} : tensor<2x8x64xbf16, #cbc.quant<mxfp4, block = [1, 32], scale = f8E8M0FNU>>
  %1 = cbc.weight.ref "plain" {sources = [["p"]]} : tensor<8x64xbf16>
  return
}

// -----

// Block-scaled FP8 needs nothing per weight: the loader dequantises every F8_E4M3 tensor of a
// model whose metadata gives the same block.
module attributes {cbc.model = #cbc.model<model_type = "llama", vocab_size = 8, hidden_size = 4, num_layers = 1, max_positions = 8, checkpoint_dtype = "bfloat16", quantization = "fp8", fp8_block = [2, 2]>} {
  // CHECK-LABEL: func.func @fp8
  // CHECK: cbc.weight.ref "qkv" {sources = {{.*}} : tensor<12x4xf32>{{$}}
  func.func @fp8() {
    %0 = cbc.weight.ref "qkv" {sources = [["q", "k", "v"]]} : tensor<12x4xf32, #cbc.quant<fp8_e4m3, block = [2, 2], scale = f32>>
    return
  }
}

// -----

// A block the model's metadata does not give would not be dequantised.
module attributes {cbc.model = #cbc.model<model_type = "llama", vocab_size = 8, hidden_size = 4, num_layers = 1, max_positions = 8, checkpoint_dtype = "bfloat16", quantization = "fp8", fp8_block = [2, 2]>} {
  func.func @fp8_block() {
    // expected-error @+1 {{'cbc.weight.ref' op is block-scaled FP8 in blocks of [4, 4], but the module's #cbc.model does not say quantization "fp8" with that fp8_block, so the loader would not dequantise it}}
    %0 = cbc.weight.ref "qkv" {sources = [["q"]]} : tensor<12x4xbf16, #cbc.quant<fp8_e4m3, block = [4, 4], scale = f32>>
    return
  }
}

// -----

// Nor would a model without FP8 quantization.
func.func @fp8_no_model() {
  // expected-error @+1 {{'cbc.weight.ref' op is block-scaled FP8 in blocks of [2, 2], but the module's #cbc.model}}
  %0 = cbc.weight.ref "qkv" {sources = [["q"]]} : tensor<12x4xbf16, #cbc.quant<fp8_e4m3, block = [2, 2], scale = f32>>
  return
}
