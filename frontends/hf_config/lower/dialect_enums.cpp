#include "frontends/hf_config/lower/dialect_enums.h"

#include "llvm/Support/ErrorHandling.h"

namespace cbc::hf::lower {

Activation toDialect(FfnActivation a) {
  switch (a) {
  case FfnActivation::Silu: return Activation::silu;
  case FfnActivation::Gelu: return Activation::gelu;
  case FfnActivation::GeluTanh: return Activation::gelu_tanh;
  case FfnActivation::Relu: return Activation::relu;
  case FfnActivation::Relu2: return Activation::relu2;
  case FfnActivation::ClampedSwiglu: // the parsers give these to gated experts alone
  case FfnActivation::SoftcappedSwiglu: break;
  case FfnActivation::Xielu: break;         // an op of its own with weights (StepBuilder::denseMlp)
  }
  llvm_unreachable("the clamped and soft-capped SwiGLUs and xIELU have no cbc.math.act kind");
}

RopePairing toDialect(RotaryPairing p) {
  switch (p) {
  case RotaryPairing::Half: return RopePairing::half;
  case RotaryPairing::Interleaved: return RopePairing::interleaved;
  }
  llvm_unreachable("unknown rotary pairing");
}

GluLayout toDialect(GateUpLayout l) {
  switch (l) {
  case GateUpLayout::Halves: return GluLayout::halves;
  case GateUpLayout::Interleaved: return GluLayout::interleaved;
  }
  llvm_unreachable("unknown gate/up layout");
}

RouteScore toDialect(ExpertScoring s) {
  switch (s) {
  case ExpertScoring::Softmax: return RouteScore::softmax;
  case ExpertScoring::TopkSoftmax: return RouteScore::topk_softmax;
  case ExpertScoring::Sigmoid: return RouteScore::sigmoid;
  case ExpertScoring::Sparsemixer: return RouteScore::sparsemixer;
  case ExpertScoring::SqrtSoftplus: return RouteScore::sqrt_softplus;
  }
  llvm_unreachable("unknown expert scoring");
}

GroupScore toDialect(GroupScoring s) {
  switch (s) {
  case GroupScoring::Top2Sum: return GroupScore::top2_sum;
  case GroupScoring::Max: return GroupScore::max;
  }
  llvm_unreachable("unknown group scoring");
}

PositionScaleForm toDialect(QueryTemperature t) {
  switch (t) {
  case QueryTemperature::LogFloor: return PositionScaleForm::log1p_floor;
  case QueryTemperature::Power: return PositionScaleForm::power;
  }
  llvm_unreachable("unknown query temperature");
}

GroupFill toDialect(DroppedGroupFill f) {
  switch (f) {
  case DroppedGroupFill::NegInf: return GroupFill::neg_inf;
  case DroppedGroupFill::Zero: return GroupFill::zero;
  }
  llvm_unreachable("unknown group fill");
}

llvm::StringRef toDialect(Quantization q) {
  switch (q) {
  case Quantization::None: return "";
  case Quantization::Mxfp4: return "mxfp4";
  case Quantization::Fp8: return "fp8";
  case Quantization::BitNet: return "ternary";
  }
  llvm_unreachable("unknown quantization");
}

} // namespace cbc::hf::lower
