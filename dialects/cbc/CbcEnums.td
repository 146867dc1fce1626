//===- CbcEnums.td - the closed sets of the cbc dialect --------------*- tablegen -*-===//
//
// Every closed set an op takes is an enum attribute, so that the verifier, the artefact writer
// and the backends switch on a value rather than compare strings.
//
//===----------------------------------------------------------------------------------===//

#ifndef CBC_ENUMS_TD
#define CBC_ENUMS_TD

include "dialects/cbc/CbcBase.td"
include "mlir/IR/EnumAttr.td"

class Cbc_Enum<string name, string summary, list<I32EnumAttrCase> cases> :
    I32EnumAttr<name, summary, cases> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::cbc";
}

class Cbc_EnumAttr<Cbc_Enum enumInfo, string mnemonic> :
    EnumAttr<Cbc_Dialect, enumInfo, mnemonic> {
  let assemblyFormat = "`<` $value `>`";
}

// An enum parameter of a parameter bundle, with a default that the printer elides.
class Cbc_EnumParameter<Cbc_Enum enumInfo, string default> : EnumParameter<enumInfo> {
  let defaultValue = enumInfo.cppNamespace # "::" # enumInfo.className # "::" # default;
}

def Cbc_Activation : Cbc_Enum<"Activation", "an elementwise activation", [
    I32EnumAttrCase<"none", 0>,
    I32EnumAttrCase<"silu", 1>,
    I32EnumAttrCase<"gelu", 2>,      // the exact, erf form
    I32EnumAttrCase<"gelu_tanh", 3>, // the tanh approximation
    I32EnumAttrCase<"relu", 4>,
    I32EnumAttrCase<"relu2", 5>,     // squared ReLU
    I32EnumAttrCase<"sigmoid", 6>,
    I32EnumAttrCase<"softplus", 7>,  // log(1 + e^x), x itself above 20 (torch's threshold)
    I32EnumAttrCase<"exp", 8>,
    I32EnumAttrCase<"signed_sqrt", 9>]>; // sign(x) * sqrt(max(|x|, 1e-6)); 0 at 0
def Cbc_ActivationAttr : Cbc_EnumAttr<Cbc_Activation, "act">;

def Cbc_GluLayout : Cbc_Enum<"GluLayout", "where a GLU's gate and up columns sit", [
    I32EnumAttrCase<"halves", 0>,       // [gate | up]
    I32EnumAttrCase<"interleaved", 1>]>; // gate, up, gate, up, ...
def Cbc_GluLayoutAttr : Cbc_EnumAttr<Cbc_GluLayout, "glu_layout">;

def Cbc_RopePairing : Cbc_Enum<"RopePairing", "which features a rotation pairs", [
    I32EnumAttrCase<"half", 0>,         // i with i + rotary_dim / 2 (rotate_half)
    I32EnumAttrCase<"interleaved", 1>]>; // 2i with 2i + 1

def Cbc_RouteScore : Cbc_Enum<"RouteScore", "how a router scores experts", [
    I32EnumAttrCase<"softmax", 0>,
    I32EnumAttrCase<"topk_softmax", 1>,
    I32EnumAttrCase<"sigmoid", 2>,
    I32EnumAttrCase<"sparsemixer", 3>,  // k rounds of argmax, each weighted by a masked softmax
    I32EnumAttrCase<"sqrt_softplus", 4>]>; // sqrt(softplus(logit)) per expert
def Cbc_RouteScoreAttr : Cbc_EnumAttr<Cbc_RouteScore, "score">;

// The factor cbc.math.position_scale applies at position p (offset o, period n, strength beta).
def Cbc_PositionScaleForm : Cbc_Enum<"PositionScaleForm", "how a position scale grows with the position", [
    I32EnumAttrCase<"log1p_floor", 0>,  // 1 + beta * log(1 + floor((p + o) / n))
    I32EnumAttrCase<"log_ratio", 1>,    // 1 + beta * log(max((p + o) / n, 1)), a real quotient
    I32EnumAttrCase<"power", 2>]>;      // (1 + (p + o) / n) ^ beta, a real quotient
def Cbc_PositionScaleFormAttr : Cbc_EnumAttr<Cbc_PositionScaleForm, "position_scale_form">;

// The frequencies f_i (i < D / 2) of cbc.math.sinusoidal_position's sines and cosines.
def Cbc_SinusoidForm : Cbc_Enum<"SinusoidForm", "how sinusoidal positions space their frequencies", [
    I32EnumAttrCase<"log_step", 0>,  // exp(-i * ln(base) / (D / 2 - 1)) (tensor2tensor: XGLM)
    I32EnumAttrCase<"power", 1>]>;   // 1 / base ^ (2i / D) (the original Transformer's: CTRL)
def Cbc_SinusoidFormAttr : Cbc_EnumAttr<Cbc_SinusoidForm, "sinusoid_form">;

def Cbc_GroupScore : Cbc_Enum<"GroupScore", "how group-limited routing scores a group of experts", [
    I32EnumAttrCase<"top2_sum", 0>, // the sum of the group's two best selection scores
    I32EnumAttrCase<"max", 1>]>;     // the group's best selection score

def Cbc_GroupFill : Cbc_Enum<"GroupFill", "the selection score of experts outside the kept groups", [
    I32EnumAttrCase<"neg_inf", 0>,
    I32EnumAttrCase<"zero", 1>]>;

def Cbc_NormGateOrder : Cbc_Enum<"NormGateOrder", "whether a gated norm gates before or after", [
    I32EnumAttrCase<"norm_gate", 0>,
    I32EnumAttrCase<"gate_norm", 1>]>;
def Cbc_NormGateOrderAttr : Cbc_EnumAttr<Cbc_NormGateOrder, "order">;

// cbc.state.kda's forget gate: how the gate pre-activation x = f + dt_bias becomes the log
// decay g of one channel of head h.
def Cbc_DecayGate : Cbc_Enum<"DecayGate", "how a per-channel forget gate maps its input to a log decay", [
    I32EnumAttrCase<"softplus", 0>,         // g = -exp(A_log[h]) * softplus(x)
    I32EnumAttrCase<"bounded_sigmoid", 1>]>; // g = lower_bound * sigmoid(exp(A_log[h]) * x)
def Cbc_DecayGateAttr : Cbc_EnumAttr<Cbc_DecayGate, "decay_gate">;

def Cbc_WeightCombine : Cbc_Enum<"WeightCombine", "how a weight's source parts combine", [
    I32EnumAttrCase<"none", 0>,   // exactly one part
    I32EnumAttrCase<"stack", 1>]>; // parts stacked along a new leading dimension
def Cbc_WeightCombineAttr : Cbc_EnumAttr<Cbc_WeightCombine, "combine">;

// What the loader must be told to expand a weight it cannot recognise by its tensors' dtypes;
// cbc-select-weight-formats sets it on a weight it dequantises at load.
def Cbc_Dequant : Cbc_Enum<"Dequant", "a quantised checkpoint format the loader expands", [
    I32EnumAttrCase<"mxfp4", 0>]>;
def Cbc_DequantAttr : Cbc_EnumAttr<Cbc_Dequant, "dequant">;

// The stored element of a quantised weight (#cbc.quant); int4, int8 and nvfp4 fit the same
// parameters (a block of the last two dimensions, a scale type) when a loader or kernel reads them.
def Cbc_QuantScheme : Cbc_Enum<"QuantScheme", "how a quantised weight stores its elements", [
    I32EnumAttrCase<"fp8_e4m3", 0>, // e4m3fn codes, a scale per block (block-scaled FP8)
    I32EnumAttrCase<"mxfp4", 1>]>;  // e2m1 codes in blocks of 32 with a power-of-two (e8m0) scale

// Which coefficients a hyper-connection computes (cbc.stream.hc_weights).
def Cbc_HcKind : Cbc_Enum<"HcKind", "the coefficients of a hyper-connection", [
    I32EnumAttrCase<"collapse", 0>,     // pre only: the final head
    I32EnumAttrCase<"independent", 1>,  // pre and post (iHC)
    I32EnumAttrCase<"manifold", 2>]>;   // pre, post and the Sinkhorn-normalised comb (mHC)
def Cbc_HcKindAttr : Cbc_EnumAttr<Cbc_HcKind, "hc_kind">;

def Cbc_RetentionKind : Cbc_Enum<"RetentionKind", "which tokens a cache layer keeps", [
    I32EnumAttrCase<"all", 0>,
    I32EnumAttrCase<"window", 1>, // the last `tokens` tokens
    I32EnumAttrCase<"chunk", 2>,   // the current chunk of `tokens` tokens
    I32EnumAttrCase<"compressed", 3>]>; // one row per `tokens` positions, written as each window closes

// The three kinds of cache group: the cache's one memory model (cbc-plan-cache, and the
// runtime's coordinator with one manager per kind).
def Cbc_CacheKind : Cbc_Enum<"CacheKind", "what a cache group holds", [
    I32EnumAttrCase<"paged", 0>,               // rows per token, in blocks through block tables
    I32EnumAttrCase<"state", 1>,               // per-request states; a unit is one snapshot of them
    I32EnumAttrCase<"static_rows", 2, "static">]>; // rows written once per request, in blocks

def Cbc_StorageType : Cbc_Enum<"StorageType", "an element type of the cache", [
    I32EnumAttrCase<"f32", 0>,
    I32EnumAttrCase<"bf16", 1>,
    I32EnumAttrCase<"f16", 2>]>;

#endif // CBC_ENUMS_TD
