// The closed sets of ModelSpec. The parser and the family files turn config strings into these
// once; the lowering maps each onto the cbc dialect's enum once (lower/dialect_enums.h). A plain
// header: the parser also builds without MLIR (the fuzz tree).
#ifndef CBC_FRONTENDS_HF_CONFIG_SPEC_ENUMS_H
#define CBC_FRONTENDS_HF_CONFIG_SPEC_ENUMS_H

namespace cbc::hf {

// How a rope dictionary's frequencies are derived (its rope_type).
enum class RopeType { Default, Linear, Dynamic, Yarn, Llama3, LongRope, Proportional };

// Which features a rotation pairs.
enum class RotaryPairing {
  Half,        // i with i + rotary_dim / 2 (rotate_half)
  Interleaved, // 2i with 2i + 1
};

// A feed-forward block's activation: the dense MLP's, the experts' and the shared expert's.
enum class FfnActivation {
  Silu,
  Gelu,     // the exact, erf form
  GeluTanh, // the tanh approximation
  Relu,
  Relu2,         // squared ReLU
  ClampedSwiglu, // gpt-oss's gated unit with MoeSpec::limit and alpha; gated experts only
  SoftcappedSwiglu, // Inkling 2's: soft caps MoeSpec::limit on the gate's linear factor, alpha on up; experts only
  Xielu,         // xIELU, its parameters learned per MLP (under <mlp>.act_fn); ungated dense MLPs only
};

// How the gate and up projections share a fused gate_up tensor's rows.
enum class GateUpLayout {
  Halves,      // [gate | up]
  Interleaved, // gate, up, gate, up, ...
};

// How a router turns its logits into the scores it selects experts by.
enum class ExpertScoring {
  Softmax,     // over all experts, then the top k
  TopkSoftmax, // the top k logits, then a softmax over them
  Sigmoid,
  Sparsemixer, // the top k logits, each weighted by a softmax masked by a relative threshold
  SqrtSoftplus, // sqrt(softplus(logit)) per expert (DeepSeek-V4)
};

// How group-limited routing scores a group of experts.
enum class GroupScoring {
  Top2Sum, // the sum of the group's two best selection scores
  Max,     // the group's best selection score
};

// The selection score of the experts in the groups routing drops.
enum class DroppedGroupFill { NegInf, Zero };

// How the queries of position-free layers scale with the position n = p + 1 (temperature
// tuning): 1 + beta * log(1 + floor(n / period)) (Llama 4), or (1 + n / period) ^ beta (Beam).
enum class QueryTemperature { LogFloor, Power };

// The decoder's own norms (the layers' and the final one).
enum class NormKind {
  Rms,   // RMSNorm, w * x / rms(x) (with ModelSpec::norm_offset)
  Layer, // LayerNorm, (x - mean) / std * w + b, weight and bias as ModelSpec says
};

// Absolute position embeddings added to the token embeddings.
enum class AbsolutePositions {
  None,
  Learned,    // a trained [rows, hidden] table indexed by position (GPT-2, OPT)
  Sinusoidal, // fixed sines and cosines computed from the position (XGLM)
};

// A checkpoint format the loader undoes.
enum class Quantization {
  None,
  Mxfp4, // gpt-oss's experts, MXFP4 [blocks, scales] pairs
  Fp8,   // block-scaled e4m3 weights (ModelSpec::fp8_block)
  // BitNet's BitLinear layers: ternary weights packed four to a byte with a weight_scale each,
  // and every linear layer's input quantised per row to int8 (cbc.math.act_quant).
  BitNet,
};

} // namespace cbc::hf

#endif
