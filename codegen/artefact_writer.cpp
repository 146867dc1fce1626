#include "codegen/artefact_writer.h"

#include "codegen/step_values.h"

#include "dialects/cbc/CbcOps.h"
#include "runtime/schema/integrity.h"
#include "runtime/schema/model_generated.h"
#include "runtime/schema/opcodes.h"
#include "runtime/schema/step_abi.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/TypeSwitch.h"

#include <map>
#include <optional>

namespace cbc::codegen {

using namespace mlir;
namespace fbs = flatbuffers;

namespace {

fb::DType dtypeOf(Type t) {
  if (t.isBF16()) return fb::DType::BF16;
  if (t.isF16()) return fb::DType::F16;
  if (t.isInteger(32)) return fb::DType::I32;
  return fb::DType::F32;
}

fb::DType dtypeOf(StorageType t) {
  switch (t) {
  case StorageType::bf16: return fb::DType::BF16;
  case StorageType::f16: return fb::DType::F16;
  case StorageType::f32: return fb::DType::F32;
  }
  llvm_unreachable("unknown storage type");
}

// The program's type of a value, which the artefact's program records: the step computes in
// f32 whatever the device holds, and a weight is what the front end declared it as.
fb::DType programDtypeOf(Value v) {
  Type element = llvm::cast<RankedTensorType>(v.getType()).getElementType();
  if (auto w = v.getDefiningOp<WeightRefOp>())
    return dtypeOf(w.getDeclaredAttr() ? *w.getDeclared() : element);
  return element.isInteger(32) ? fb::DType::I32 : fb::DType::F32;
}

std::vector<int64_t> shapeOf(Type t) {
  auto tt = llvm::cast<RankedTensorType>(t);
  std::vector<int64_t> shape;
  for (int64_t d : tt.getShape())
    shape.push_back(ShapedType::isDynamic(d) ? -1 : d);
  return shape;
}

// ---- the dialect's enums as the schema's --------------------------------------------------

fb::Activation toFb(Activation a) {
  switch (a) {
  case Activation::none: return fb::Activation::None;
  case Activation::silu: return fb::Activation::Silu;
  case Activation::gelu: return fb::Activation::Gelu;
  case Activation::gelu_tanh: return fb::Activation::GeluTanh;
  case Activation::relu: return fb::Activation::Relu;
  case Activation::relu2: return fb::Activation::Relu2;
  case Activation::sigmoid: return fb::Activation::Sigmoid;
  case Activation::softplus: return fb::Activation::Softplus;
  case Activation::exp: return fb::Activation::Exp;
  case Activation::signed_sqrt: return fb::Activation::SignedSqrt;
  }
  llvm_unreachable("unknown activation");
}

fb::Retention toFb(RetentionKind r) {
  switch (r) {
  case RetentionKind::all: return fb::Retention::All;
  case RetentionKind::window: return fb::Retention::Window;
  case RetentionKind::chunk: return fb::Retention::Chunk;
  case RetentionKind::compressed: return fb::Retention::Compressed;
  }
  llvm_unreachable("unknown retention");
}

fb::CacheKind toFb(CacheKind k) {
  switch (k) {
  case CacheKind::paged: return fb::CacheKind::Paged;
  case CacheKind::state: return fb::CacheKind::State;
  case CacheKind::static_rows: return fb::CacheKind::Static;
  }
  llvm_unreachable("unknown cache kind");
}

fb::PositionScaleForm toFb(PositionScaleForm f) {
  switch (f) {
  case PositionScaleForm::log1p_floor: return fb::PositionScaleForm::Log1pFloor;
  case PositionScaleForm::log_ratio: return fb::PositionScaleForm::LogRatio;
  case PositionScaleForm::power: return fb::PositionScaleForm::Power;
  }
  llvm_unreachable("unknown position scale form");
}

fb::HcKind toFb(HcKind k) {
  switch (k) {
  case HcKind::collapse: return fb::HcKind::Collapse;
  case HcKind::independent: return fb::HcKind::Independent;
  case HcKind::manifold: return fb::HcKind::Manifold;
  }
  llvm_unreachable("unknown hyper-connection kind");
}

fb::RouteScore toFb(RouteScore s) {
  switch (s) {
  case RouteScore::softmax: return fb::RouteScore::Softmax;
  case RouteScore::topk_softmax: return fb::RouteScore::TopkSoftmax;
  case RouteScore::sigmoid: return fb::RouteScore::Sigmoid;
  case RouteScore::sparsemixer: return fb::RouteScore::Sparsemixer;
  case RouteScore::sqrt_softplus: return fb::RouteScore::SqrtSoftplus;
  }
  llvm_unreachable("unknown route score");
}

double f64(FloatAttr a) { return a.getValueAsDouble(); }
double f64(const llvm::APFloat &a) { return a.convertToDouble(); }

// ---- parameter tables ---------------------------------------------------------------------

// The table an instruction carries, with its union tag.
struct Params {
  fb::OpParams type = fb::OpParams::NONE;
  fbs::Offset<void> table;
};
template <typename T> Params params(fb::OpParams type, fbs::Offset<T> table) { return {type, table.Union()}; }

fbs::Offset<fb::RopeParams> writeRope(fbs::FlatBufferBuilder &fbb, RopeAttr r) {
  auto freq = fbb.CreateVector(r.getInvFreq().asArrayRef().data(), r.getInvFreq().size());
  fbs::Offset<fbs::Vector<float>> freqLong;
  if (r.getInvFreqLong())
    freqLong = fbb.CreateVector(r.getInvFreqLong().asArrayRef().data(), r.getInvFreqLong().size());
  fbs::Offset<fbs::Vector<int8_t>> sections;
  if (!r.getSections().empty()) {
    std::vector<int8_t> s(r.getSections().begin(), r.getSections().end());
    sections = fbb.CreateVector(s);
  }
  return fb::CreateRopeParams(
      fbb, r.getHeadDim(), r.getRotaryDim(),
      r.getPairing() == RopePairing::interleaved ? fb::RopePairing::Interleaved : fb::RopePairing::Half, freq,
      f64(r.getAttentionFactor()), freqLong, r.getLongAfter(), f64(r.getDynamicBase()), f64(r.getDynamicFactor()),
      r.getDynamicMaxPositions(), sections, r.getRotaryOffset());
}

fbs::Offset<fb::GluParams> writeGlu(fbs::FlatBufferBuilder &fbb, Attribute act, GluLayout layout) {
  auto fbLayout = layout == GluLayout::interleaved ? fb::GluLayout::Interleaved : fb::GluLayout::Halves;
  if (auto clamp = llvm::dyn_cast<ClampedSwigluAttr>(act)) {
    fb::SwigluClamp c(f64(clamp.getLimit()), f64(clamp.getAlpha()), f64(clamp.getUpOffset()));
    return fb::CreateGluParams(fbb, fb::Activation::Silu, fbLayout, &c);
  }
  if (auto cap = llvm::dyn_cast<SoftcappedSwigluAttr>(act)) {
    fb::SwigluSoftcap c(f64(cap.getGateCap()), f64(cap.getUpCap()));
    return fb::CreateGluParams(fbb, fb::Activation::Silu, fbLayout, nullptr, &c);
  }
  return fb::CreateGluParams(fbb, toFb(llvm::cast<ActivationAttr>(act).getValue()), fbLayout);
}

fb::CacheSite cacheSite(int64_t layer, IntegerAttr group, RetentionAttr r) {
  return fb::CacheSite((int32_t)layer, group ? (int32_t)group.getInt() : -1, toFb(r.getKind()), r.getTokens());
}

// A state op's site: its layer and the name of its state.
fbs::Offset<fb::StateSite> stateSite(fbs::FlatBufferBuilder &fbb, StatefulOpInterface op) {
  return fb::CreateStateSite(fbb, (int32_t)op.getStateLayer(), fbb.CreateString(op.getStateName().str()));
}

fbs::Offset<fb::NormParams> writeNorm(fbs::FlatBufferBuilder &fbb, FloatAttr eps, FloatAttr offset,
                                      IntegerAttr group) {
  return fb::CreateNormParams(fbb, f64(eps), f64(offset), group ? group.getInt() : 0);
}

// The sparse (indexed) attention ops' tables: the indexer's key row, its selection and the key's
// LayerNorm; any other op carries no table.
Params writeSparseAttentionParams(fbs::FlatBufferBuilder &fbb, Operation &op) {
  using P = fb::OpParams;
  return llvm::TypeSwitch<Operation *, Params>(&op)
      .Case([&](LayerNormOp o) {
        return params(P::NormParams, fb::CreateNormParams(fbb, f64(o.getEpsAttr()), f64(o.getOffsetAttr()),
                                                          o.getGroupAttr() ? o.getGroupAttr().getInt() : 0));
      })
      .Case([&](KvIndexAppendOp o) {
        fb::CacheSite site = cacheSite(o.getLayer(), o.getGroupAttr(), o.getRetention());
        return params(P::KvIndexAppendParams, fb::CreateKvIndexAppendParams(fbb, &site, o.getHeadDim()));
      })
      .Case([&](KvBlockSelectOp o) {
        fb::CacheSite site = cacheSite(o.getLayer(), o.getGroupAttr(), RetentionAttr::all(o.getContext()));
        return params(P::KvBlockSelectParams,
                      fb::CreateKvBlockSelectParams(fbb, &site, o.getNumHeads(), o.getHeadDim(), o.getBlock(),
                                                    o.getTopk(), o.getLocal()));
      })
      .Case([&](KvPoolSelectOp o) {
        fb::CacheSite site = cacheSite(o.getLayer(), o.getGroupAttr(), RetentionAttr::all(o.getContext()));
        return params(P::KvPoolSelectParams,
                      fb::CreateKvPoolSelectParams(
                          fbb, &site, o.getNumHeads(), o.getHeadDim(), o.getPools(), o.getPool(),
                          f64(o.getKeyScaleAttr()), f64(o.getWeightScaleAttr()), (bool)o.getWeights(),
                          (bool)o.getApe(), (bool)o.getKeyNorm(), o.getEpsAttr() ? f64(o.getEpsAttr()) : 0.0,
                          f64(o.getNormOffsetAttr()),
                          o.getKeyFreqs() ? fbb.CreateVector(o.getKeyFreqs()->data(), o.getKeyFreqs()->size())
                                          : fbs::Offset<fbs::Vector<float>>(),
                          o.getBlocks()));
      })
      .Case([&](KvIndexSelectOp o) {
        fb::CacheSite site = cacheSite(o.getLayer(), o.getGroupAttr(), o.getRetention());
        return params(P::KvIndexSelectParams,
                      fb::CreateKvIndexSelectParams(fbb, &site, o.getNumHeads(), o.getHeadDim(), o.getTopk(),
                                                    f64(o.getKeyScaleAttr()), f64(o.getWeightScaleAttr())));
      })
      .Default([](Operation *) { return Params{}; });
}

// The state mixers' tables (each names its state); any other op goes on to the sparse attention ops.
Params writeStateParams(fbs::FlatBufferBuilder &fbb, Operation &op) {
  using P = fb::OpParams;
  return llvm::TypeSwitch<Operation *, Params>(&op)
      .Case([&](StateConv1dOp o) {
        return params(P::Conv1dParams,
                      fb::CreateConv1dParams(fbb, stateSite(fbb, o), toFb(o.getAct()), o.getResidual(),
                                             (bool)o.getInitial(), (bool)o.getTaps(), o.getLagOrder(),
                                             f64(o.getScaleAttr()), o.getDilation()));
      })
      .Case([&](NgramEmbedOp o) {
        std::vector<int64_t> mult(o.getMultipliers().begin(), o.getMultipliers().end());
        std::vector<int64_t> primes(o.getPrimes().begin(), o.getPrimes().end());
        return params(P::NgramEmbedParams,
                      fb::CreateNgramEmbedParams(fbb, stateSite(fbb, o), o.getEos(), o.getHeadsPerNgram(),
                                                 fbb.CreateVector(mult), fbb.CreateVector(primes)));
      })
      .Case([&](StateShiftOp o) {
        return params(P::ShiftParams, fb::CreateShiftParams(fbb, stateSite(fbb, o)));
      })
      .Case([&](WindowPoolOp o) {
        auto rope = o.getRopeAttr() ? writeRope(fbb, o.getRopeAttr()) : fbs::Offset<fb::RopeParams>();
        return params(P::WindowPoolParams,
                      fb::CreateWindowPoolParams(fbb, stateSite(fbb, o), o.getRate(), o.getDim(), o.getOverlap(),
                                                 (bool)o.getNorm(), f64(o.getEpsAttr()), rope));
      })
      .Case([&](WkvOp o) {
        return params(P::WkvParams, fb::CreateWkvParams(fbb, stateSite(fbb, o)));
      })
      .Case([&](RgLruOp o) {
        return params(P::RgLruParams, fb::CreateRgLruParams(fbb, stateSite(fbb, o)));
      })
      .Case([&](MlstmOp o) {
        return params(P::MlstmParams, fb::CreateMlstmParams(fbb, stateSite(fbb, o), o.getNumHeads(), o.getKDim(),
                                                            o.getVDim(), o.getEps().convertToDouble()));
      })
      .Case([&](GatedDeltaOp o) {
        return params(P::GatedDeltaParams,
                      fb::CreateGatedDeltaParams(fbb, stateSite(fbb, o),
                                                 o.getNumKHeads(), o.getNumVHeads(), o.getKDim(), o.getVDim(),
                                                 f64(o.getBetaScaleAttr()), o.getQkL2norm()));
      })
      .Case([&](KdaOp o) {
        auto gate = o.getGate() == DecayGate::bounded_sigmoid ? fb::DecayGate::BoundedSigmoid : fb::DecayGate::Softplus;
        return params(P::KdaParams,
                      fb::CreateKdaParams(fbb, stateSite(fbb, o), o.getNumHeads(),
                                          o.getKDim(), o.getVDim(), gate,
                                          o.getLowerBoundAttr() ? f64(o.getLowerBoundAttr()) : 0.0));
      })
      .Case([&](SsdOp o) {
        return params(P::SsdParams,
                      fb::CreateSsdParams(fbb, stateSite(fbb, o), o.getNumHeads(),
                                          o.getHeadDim(), o.getNGroups(), o.getStateSize(), f64(o.getDtMinAttr()),
                                          f64(o.getDtMaxAttr())));
      })
      .Case([&](SelectiveScanOp o) {
        return params(P::SelectiveScanParams,
                      fb::CreateSelectiveScanParams(fbb, stateSite(fbb, o),
                                                    o.getNGroups(), o.getStateSize()));
      })
      .Case([&](LightningOp o) {
        return params(P::LightningParams,
                      fb::CreateLightningParams(fbb, stateSite(fbb, o),
                                                o.getNumHeads(), o.getHeadDim(),
                                                fbb.CreateVector(o.getDecay().data(), o.getDecay().size()),
                                                o.getRanks()));
      })
      .Default([&](Operation *other) { return writeSparseAttentionParams(fbb, *other); });
}

// The residual-stream and collective ops' tables; any other op goes on to the state mixers.
Params writeStreamParams(fbs::FlatBufferBuilder &fbb, Operation &op) {
  using P = fb::OpParams;
  return llvm::TypeSwitch<Operation *, Params>(&op)
      .Case([&](AllReduceOp o) { return params(P::CommParams, fb::CreateCommParams(fbb, o.getRanks())); })
      .Case([&](AllGatherOp o) { return params(P::CommParams, fb::CreateCommParams(fbb, o.getRanks())); })
      .Case([&](StreamHcWeightsOp o) {
        return params(P::HcWeightsParams,
                      fb::CreateHcWeightsParams(fbb, toFb(o.getKind()), o.getStreams(), f64(o.getMagnitudeAttr()),
                                                f64(o.getEpsAttr()), f64(o.getPostEpsAttr()), o.getSinkhornIters()));
      })
      .Case([&](StreamCollapseOp o) {
        return params(P::StreamParams, fb::CreateStreamParams(fbb, o.getCount(), o.getOffset(), false));
      })
      .Case([&](StreamExpandOp o) {
        return params(P::StreamParams, fb::CreateStreamParams(fbb, o.getCount(), o.getOffset(), o.getComb()));
      })
      .Case([&](GroupDotOp o) {
        return params(P::GroupDotParams,
                      fb::CreateGroupDotParams(fbb, o.getGroups(), f64(o.getScaleAttr()), toFb(o.getAct())));
      })
      .Case([&](StreamAttendOp o) {
        return params(P::StreamAttendParams, fb::CreateStreamAttendParams(fbb, o.getCount(), f64(o.getEpsAttr())));
      })
      .Default([&](Operation *other) { return writeStateParams(fbb, *other); });
}

// One case per op with attributes; the others carry no table.
Params writeParams(fbs::FlatBufferBuilder &fbb, Operation &op) {
  using P = fb::OpParams;
  return llvm::TypeSwitch<Operation *, Params>(&op)
      .Case([&](EmbedOp o) {
        auto oov = o.getOovRowAttr();
        return params(P::EmbedParams, fb::CreateEmbedParams(fbb, f64(o.getScaleAttr()), o.getOffset(), (bool)oov,
                                                            oov ? oov.getInt() : 0, o.getVocabRanks()));
      })
      .Case([&](RmsNormOp o) {
        return params(P::NormParams, writeNorm(fbb, o.getEpsAttr(), o.getOffsetAttr(), o.getGroupAttr()));
      })
      .Case([&](AddRmsNormOp o) {
        return params(P::NormParams, writeNorm(fbb, o.getEpsAttr(), o.getOffsetAttr(), IntegerAttr()));
      })
      .Case([&](GluOp o) { return params(P::GluParams, writeGlu(fbb, o.getAct(), o.getLayout())); })
      .Case([&](RopeOp o) { return params(P::RopeParams, writeRope(fbb, o.getRope())); })
      .Case([&](ActOp o) {
        return params(P::ActParams, fb::CreateActParams(fbb, toFb(o.getAct()), f64(o.getScaleAttr())));
      })
      .Case([&](SoftcapOp o) { return params(P::SoftcapParams, fb::CreateSoftcapParams(fbb, f64(o.getCapAttr()))); })
      .Case([&](ClampOp o) { return params(P::ClampParams, fb::CreateClampParams(fbb, f64(o.getLimitAttr()))); })
      .Case([&](MatchRmsOp o) { return params(P::MatchRmsParams, fb::CreateMatchRmsParams(fbb, f64(o.getFloorAttr()))); })
      .Case([&](L2ClipOp o) {
        return params(P::L2ClipParams,
                      fb::CreateL2ClipParams(fbb, o.getGroup(), f64(o.getThresholdAttr()), f64(o.getEpsAttr())));
      })
      .Case([&](HeadPadOp o) {
        return params(P::HeadPadParams, fb::CreateHeadPadParams(fbb, o.getHeads(), o.getWidth(), f64(o.getValueAttr())));
      })
      .Case([&](GaussianTopkOp o) {
        return params(P::GaussianTopkParams, fb::CreateGaussianTopkParams(fbb, f64(o.getMultiplierAttr())));
      })
      .Case([&](DiffHeadsOp o) {
        return params(P::DiffHeadsParams, fb::CreateDiffHeadsParams(fbb, f64(o.getLambdaInitAttr())));
      })
      .Case([&](RmsNormGatedOp o) {
        auto norm = writeNorm(fbb, o.getEpsAttr(), o.getOffsetAttr(), o.getGroupAttr());
        auto order = o.getOrder() == NormGateOrder::gate_norm ? fb::NormGateOrder::GateNorm : fb::NormGateOrder::NormGate;
        return params(P::GatedNormParams, fb::CreateGatedNormParams(fbb, norm, toFb(o.getAct()), order));
      })
      .Case([&](KvAppendOp o) {
        fb::CacheSite site = cacheSite(o.getLayer(), o.getGroupAttr(), o.getRetention());
        return params(P::KvAppendParams, fb::CreateKvAppendParams(fbb, &site, o.getNumKvHeads(), o.getHeadDim()));
      })
      .Case([&](KvAttentionOp o) {
        fb::CacheSite site = cacheSite(o.getLayer(), o.getGroupAttr(), o.getRetention());
        auto slopes = o.getAlibiSlopes() ? fbb.CreateVector(o.getAlibiSlopes()->data(), o.getAlibiSlopes()->size())
                                         : fbs::Offset<fbs::Vector<float>>();
        return params(P::KvAttentionParams,
                      fb::CreateKvAttentionParams(fbb, &site, o.getNumHeads(), o.getNumKvHeads(), o.getHeadDim(),
                                                  f64(o.getScaleAttr()),
                                                  o.getSoftcapAttr() ? f64(o.getSoftcapAttr()) : 0.0,
                                                  o.getBiasExtent(), o.getSelectionHeads(), o.getSelectionBlock(),
                                                  slopes, (bool)o.getKeyEnds(), (bool)o.getSinkLogits()));
      })
      .Case([&](KvLatentAttentionOp o) {
        fb::CacheSite site = cacheSite(o.getLayer(), o.getGroupAttr(), o.getRetention());
        std::optional<fb::CacheSite> entries;
        if (o.getEntriesRate() > 0)
          entries = cacheSite(*o.getEntriesLayer(), o.getEntriesGroupAttr(),
                              RetentionAttr::get(o.getContext(), RetentionKind::compressed, o.getEntriesRate()));
        return params(P::KvLatentAttentionParams,
                      fb::CreateKvLatentAttentionParams(fbb, &site, o.getNumHeads(), o.getLatentDim(), o.getRopeDim(),
                                                        f64(o.getScaleAttr()), entries ? &*entries : nullptr,
                                                        (bool)o.getEntrySelection()));
      })
      .Case([&](HeadLinearOp o) {
        return params(P::HeadLinearParams,
                      fb::CreateHeadLinearParams(fbb, o.getHeads(), o.getOffset(), o.getRows(), o.getTranspose()));
      })
      .Case([&](PositionScaleOp o) {
        return params(P::PositionScaleParams,
                      fb::CreatePositionScaleParams(fbb, f64(o.getBetaAttr()), o.getPeriod(), o.getOffset(),
                                                    toFb(o.getForm())));
      })
      .Case([&](SinusoidalPositionOp o) {
        IntegerAttr pad = o.getPaddingRowAttr();
        return params(P::SinusoidalPositionParams,
                      fb::CreateSinusoidalPositionParams(fbb, o.getOffsetAttr().getInt(), f64(o.getBaseAttr()),
                                                         (bool)pad, pad ? pad.getInt() : 0,
                                                         o.getForm() == SinusoidForm::power ? fb::SinusoidForm::Power
                                                                                            : fb::SinusoidForm::LogStep));
      })
      .Case([&](KvRopeAppendOp o) {
        fb::CacheSite site = cacheSite(o.getLayer(), o.getGroupAttr(), o.getRetention());
        auto rope = writeRope(fbb, o.getRope());
        return params(P::KvRopeAppendParams,
                      fb::CreateKvRopeAppendParams(fbb, &site, o.getNumHeads(), o.getNumKvHeads(), o.getHeadDim(),
                                                   o.getEpsAttr() ? f64(o.getEpsAttr()) : 1e-6,
                                                   f64(o.getNormOffsetAttr()), rope));
      })
      .Case([&](MoeRouteOp o) {
        std::optional<fb::RouteGroups> groups;
        if (auto g = o.getGroupsAttr())
          groups.emplace(g.getCount(), g.getKeep(),
                         g.getScore() == GroupScore::max ? fb::GroupScore::Max : fb::GroupScore::Top2Sum,
                         g.getFill() == GroupFill::zero ? fb::GroupFill::Zero : fb::GroupFill::NegInf);
        return params(P::MoeRouteParams,
                      fb::CreateMoeRouteParams(fbb, o.getK(), toFb(o.getScore()), o.getRenorm(),
                                               f64(o.getRenormEpsAttr()), f64(o.getScalingAttr()),
                                               groups ? &*groups : nullptr, o.getSinks(),
                                               f64(o.getThresholdAttr()), o.getBiasOnLogits(), (bool)o.getTable()));
      })
      .Case([&](MoeExpertsOp o) {
        auto glu = writeGlu(fbb, o.getAct(), o.getLayout());
        return params(P::MoeExpertsParams,
                      fb::CreateMoeExpertsParams(fbb, glu, o.getUngated(), o.getIdentityExperts(),
                                                 o.getScaleInput(), o.getNullExperts(), o.getExpertRanks()));
      })
      .Default([&](Operation *other) { return writeStreamParams(fbb, *other); });
}

// ---- the program --------------------------------------------------------------------------

// A weight that some norm multiplies by: random weights for it centre on 1, not 0.
bool isNormScale(Value w) {
  return llvm::any_of(w.getUsers(), [&](Operation *user) {
    if (auto n = dyn_cast<RmsNormOp>(user))
      return n.getWeight() == w;
    if (auto n = dyn_cast<AddRmsNormOp>(user))
      return n.getWeight() == w;
    if (auto n = dyn_cast<RmsNormGatedOp>(user))
      return n.getWeight() == w;
    if (auto r = dyn_cast<KvRopeAppendOp>(user))
      return r.getQNorm() == w || r.getKNorm() == w;
    return false;
  });
}

struct ProgramWriter {
  fbs::FlatBufferBuilder &fbb;
  std::vector<fbs::Offset<fb::WeightEntry>> &weights;
  const StepValueIds &ids; // the order in which values are written
  std::vector<fbs::Offset<fb::Value>> values;
  std::map<std::string, int> weightIndex;

  void addValue(Value v, fb::ValueKind kind, uint8_t arg, int weight, int arena, int64_t offset) {
    if (ids.at(v) != (int)values.size())
      llvm::report_fatal_error("cbc codegen: the step's values are written out of their numbering");
    auto shape = fbb.CreateVector(shapeOf(v.getType()));
    fb::ValueBuilder vb(fbb);
    vb.add_kind(kind);
    vb.add_dtype(programDtypeOf(v));
    vb.add_shape(shape);
    vb.add_arg(arg);
    vb.add_weight(weight);
    vb.add_arena((int8_t)arena);
    vb.add_offset(offset);
    values.push_back(vb.Finish());
  }

  // Weights are values, not instructions; one manifest entry per name.
  FailureOr<int> weightEntry(WeightRefOp w) {
    std::string name = w.getName().str();
    if (auto it = weightIndex.find(name); it != weightIndex.end())
      return it->second;
    if (auto format = llvm::cast<RankedTensorType>(w.getType()).getEncoding())
      return w.emitOpError("is still quantised (") << format
             << "), which the weight manifest cannot describe; run cbc-select-weight-formats first";
    std::vector<fbs::Offset<fb::WeightPart>> parts;
    for (Attribute part : w.getSources()) {
      std::vector<std::string> names;
      for (Attribute n : llvm::cast<ArrayAttr>(part))
        names.push_back(llvm::cast<StringAttr>(n).str());
      parts.push_back(fb::CreateWeightPart(fbb, fbb.CreateVectorOfStrings(names)));
    }
    auto type = llvm::cast<RankedTensorType>(w.getType());
    std::vector<int64_t> regroup;
    if (auto r = w.getRegroupAttr())
      regroup.assign(r.asArrayRef().begin(), r.asArrayRef().end());
    std::vector<double> rowScales;
    if (auto r = w.getRowScalesAttr())
      rowScales.assign(r.asArrayRef().begin(), r.asArrayRef().end());
    int64_t blockDiag = w.getBlockDiagAttr() ? w.getBlockDiagAttr().getInt() : 0;
    fbs::Offset<fb::Shard> shard;
    if (ShardAttr sh = w.getShardAttr())
      shard = fb::CreateShard(fbb, sh.getRanks(), (int32_t)sh.getDim(), fbb.CreateVector(sh.getSegments().vec()),
                              fbb.CreateVector(sh.getPieces().vec()));
    auto entry = fb::CreateWeightEntry(
        fbb, fbb.CreateString(name), programDtypeOf(w.getResult()), fbb.CreateVector(shapeOf(type)),
        fbb.CreateVector(parts), w.getCombine() == WeightCombine::stack ? fb::Combine::Stack : fb::Combine::None,
        w.getTranspose(), w.getDequant() ? fb::Dequant::Mxfp4 : fb::Dequant::None, fbb.CreateVector(regroup),
        blockDiag, rowScales.empty() ? 0 : fbb.CreateVector(rowScales), isNormScale(w.getResult()), w.getFlatten(), shard);
    weights.push_back(entry);
    return weightIndex[name] = (int)weights.size() - 1;
  }

  FailureOr<fbs::Offset<fb::Instr>> instr(Operation &op) {
    std::optional<fb::Opcode> opcode = opcodeNamed(op.getName().getStringRef());
    if (!opcode)
      return op.emitError("the artefact has no opcode for ") << op.getName();
    Params p = writeParams(fbb, op);
    if (p.type != opcodeInfo(*opcode).params)
      return op.emitError("internal error: no parameter table written for ") << op.getName();
    std::vector<int> inputs, outputs;
    for (Value v : op.getOperands()) {
      if (!ids.contains(v) || ids.at(v) >= (int)values.size())
        return op.emitError("operand defined outside the step");
      inputs.push_back(ids.at(v));
    }
    for (Value r : op.getResults()) {
      std::optional<BufferSlot> slot = bufferSlot(r);
      if (!slot)
        return op.emitError("op has no buffer plan; run cbc-schedule-step first");
      outputs.push_back(ids.at(r));
      addValue(r, fb::ValueKind::Activation, 0, -1, (int)slot->rows, slot->offset);
    }
    return fb::CreateInstr(fbb, *opcode, p.type, p.table, fbb.CreateVector(inputs), fbb.CreateVector(outputs));
  }

  FailureOr<fbs::Offset<fb::Program>> program(ModuleOp module, func::FuncOp func) {
    Block &block = func.getBody().front();
    for (BlockArgument arg : block.getArguments()) {
      auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "cbc.name");
      std::optional<StepArg> which = name ? stepArgNamed(name.getValue()) : std::nullopt;
      if (!which || (int)*which != (int)arg.getArgNumber())
        return func.emitError("step argument ") << arg.getArgNumber() << " is not the step ABI's "
                                                << stepArgName((StepArg)std::min<int>(arg.getArgNumber(), kNumStepArgs - 1));
      addValue(arg, fb::ValueKind::Argument, (uint8_t)*which, -1, -1, 0);
    }
    std::vector<fbs::Offset<fb::Instr>> instrs;
    int output = -1;
    for (Operation &op : block) {
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        if (ret.getNumOperands() != 1)
          return ret.emitError("the step must return exactly the logits");
        output = ids.at(ret.getOperand(0));
      } else if (auto w = dyn_cast<WeightRefOp>(op)) {
        FailureOr<int> entry = weightEntry(w);
        if (failed(entry))
          return failure();
        addValue(w.getResult(), fb::ValueKind::Weight, 0, *entry, -1, 0);
      } else {
        auto in = instr(op);
        if (failed(in))
          return failure();
        instrs.push_back(*in);
      }
    }
    auto arena = module->getAttrOfType<ArenaAttr>("cbc.arena");
    if (!arena)
      return module.emitError("module has no cbc.arena; run cbc-schedule-step first");
    return fb::CreateProgram(fbb, fbb.CreateVector(values), fbb.CreateVector(instrs), output,
                             arena.getTokenRowElems(), arena.getRequestRowElems());
  }
};

// The length above which some RoPE schedule of the step switches with the sequence's length
// (0: none does): the cached rows of a longer sequence are not those of its prefix.
int64_t lengthDependentAbove(ModuleOp module) {
  int64_t above = 0;
  auto lower = [&](int64_t at) { above = above == 0 ? at : std::min(above, at); };
  module.walk([&](Operation *op) {
    for (NamedAttribute a : op->getAttrs())
      if (auto r = llvm::dyn_cast<RopeAttr>(a.getValue())) {
        if (r.getInvFreqLong())
          lower(std::max<int64_t>(1, r.getLongAfter()));
        if (f64(r.getDynamicBase()) != 0)
          lower(std::max<int64_t>(1, r.getDynamicMaxPositions()));
      }
  });
  return above;
}

FailureOr<fbs::Offset<fb::CachePlan>> writeCachePlan(fbs::FlatBufferBuilder &fbb, ModuleOp module) {
  auto plan = module->getAttrOfType<CachePlanAttr>("cbc.cache_plan");
  if (!plan)
    return module.emitError("module has no cbc.cache_plan; run cbc-plan-cache first");
  std::vector<fbs::Offset<fb::CacheGroup>> groups;
  for (CacheGroupAttr g : plan.getGroups()) {
    std::vector<int> layers(g.getLayers().begin(), g.getLayers().end());
    groups.push_back(fb::CreateCacheGroup(fbb, (int)g.getId(), toFb(g.getRetention().getKind()),
                                          g.getRetention().getTokens(), fbb.CreateVector(layers),
                                          g.getBytesPerToken(), toFb(g.getKind()), g.getBytesPerUnit()));
  }
  std::vector<fbs::Offset<fb::CacheLayer>> layers;
  for (CacheLayerAttr l : plan.getLayers()) {
    std::vector<fbs::Offset<fb::CacheRow>> rows;
    for (CacheRowAttr r : l.getRows())
      rows.push_back(fb::CreateCacheRow(fbb, fbb.CreateString(r.getName().str()), r.getElems()));
    layers.push_back(fb::CreateCacheLayer(fbb, (int)l.getLayer(), (int)l.getGroup(), fbb.CreateVector(rows)));
  }
  std::vector<fbs::Offset<fb::StateDecl>> states;
  for (StateDeclAttr s : plan.getStates())
    states.push_back(fb::CreateStateDecl(fbb, (int)s.getLayer(), fbb.CreateString(s.getName().str()),
                                         fbb.CreateVector(std::vector<int64_t>(s.getShape().begin(), s.getShape().end())),
                                         fb::DType::F32, s.getBytes()));
  return fb::CreateCachePlan(fbb, (int)plan.getBlockSize(), dtypeOf(plan.getKvDtype()), fbb.CreateVector(groups),
                             fbb.CreateVector(layers), fbb.CreateVector(states), lengthDependentAbove(module));
}

FailureOr<fbs::Offset<fb::ModelMeta>> writeMeta(fbs::FlatBufferBuilder &fbb, ModuleOp module) {
  auto meta = module->getAttrOfType<ModelAttr>("cbc.model");
  if (!meta)
    return module.emitError("module has no cbc.model metadata");
  std::vector<fbs::Offset<fb::AliasPair>> aliases;
  for (WeightAliasAttr a : meta.getWeightAliases())
    aliases.push_back(fb::CreateAliasPair(fbb, fbb.CreateString(a.getFrom().str()), fbb.CreateString(a.getTo().str())));
  std::vector<int64_t> eos(meta.getEosTokenIds().begin(), meta.getEosTokenIds().end());
  return fb::CreateModelMeta(fbb, fbb.CreateString(meta.getModelType().str()), meta.getVocabSize(),
                             meta.getHiddenSize(), meta.getNumLayers(), meta.getMaxPositions(), fbb.CreateVector(eos),
                             meta.getBosTokenId(), fbb.CreateString(meta.getCheckpointDtype().str()),
                             fbb.CreateString(meta.getQuantization().str()), fbb.CreateVector(aliases),
                             meta.getFp8Block().empty() ? 0 : meta.getFp8Block()[0],
                             meta.getFp8Block().empty() ? 0 : meta.getFp8Block()[1], meta.getInjectedToken());
}

fbs::Offset<fb::Launch> writeLaunch(fbs::FlatBufferBuilder &fbb, const LaunchOut &l) {
  std::vector<fbs::Offset<fb::GridDim>> grid;
  for (const GridDimOut &g : l.grid)
    grid.push_back(fb::CreateGridDim(fbb, g.var ? (int8_t)*g.var : (int8_t)-1, g.mul, g.div, g.add));
  std::vector<fbs::Offset<fb::KernelArg>> args;
  for (const KernelArgOut &a : l.args)
    args.push_back(fb::CreateKernelArg(fbb, (fb::ArgKind)a.kind, a.index, fbb.CreateString(a.name), a.i, a.f));
  fbs::Offset<fb::Gemm> gemm;
  if (l.gemm)
    gemm = fb::CreateGemm(fbb, l.gemm_x, l.gemm_w, l.gemm_bias, l.gemm_out);
  fbs::Offset<fb::Gather> gather;
  if (l.gather_x >= 0)
    gather = fb::CreateGather(fbb, l.gather_x, l.gather_workspace);
  return fb::CreateLaunch(fbb, l.instr, l.kernel, fbb.CreateVector(grid), l.block, l.smem, fbb.CreateVector(args),
                          gemm, gather);
}

fbs::Offset<fb::KernelBundle> writeKernels(fbs::FlatBufferBuilder &fbb, const KernelBundleOut &k) {
  std::vector<fbs::Offset<fb::Cubin>> cubins;
  for (const KernelImageOut &c : k.cubins)
    cubins.push_back(fb::CreateCubin(fbb, fbb.CreateString(c.arch), fbb.CreateVector(c.image),
                                     fbb.CreateVector(c.registers), fbb.CreateVector(c.spills),
                                     fbb.CreateVector(c.shared_bytes)));
  std::vector<fbs::Offset<fb::Launch>> launches;
  for (const LaunchOut &l : k.launches)
    launches.push_back(writeLaunch(fbb, l));
  std::vector<fbs::Offset<fb::Workspace>> workspaces;
  for (const WorkspaceOut &w : k.workspaces)
    workspaces.push_back(fb::CreateWorkspace(fbb, fbb.CreateString(w.name), w.bytes_per_token, w.bytes_fixed));
  std::vector<int8_t> dtypes(k.value_dtypes.begin(), k.value_dtypes.end());
  return fb::CreateKernelBundle(
      fbb, fbb.CreateString(k.source), fbb.CreateVectorOfStrings(k.names), fbb.CreateVector(cubins),
      fbb.CreateString(k.ptx), fbb.CreateString(k.ptx_arch), fbb.CreateString(k.source_hash),
      fbb.CreateVector(launches), fbb.CreateVector(workspaces),
      fbb.CreateVector(reinterpret_cast<const fb::DType *>(dtypes.data()), dtypes.size()), k.argmax_kernel);
}

} // namespace

FailureOr<std::vector<uint8_t>> writeArtefact(ModuleOp module, const ArtefactInputs &inputs) {
  auto func = module.lookupSymbol<func::FuncOp>("step");
  if (!func)
    return module.emitError("module has no func.func @step");
  fbs::FlatBufferBuilder fbb(1 << 16);
  // Every field is stored, defaults too, so that tests can mutate any of them in place.
  fbb.ForceDefaults(true);
  std::vector<fbs::Offset<fb::WeightEntry>> weights;
  StepValueIds ids(func.getBody().front());
  ProgramWriter writer{fbb, weights, ids, {}, {}};
  auto program = writer.program(module, func);
  if (failed(program))
    return failure();
  auto plan = writeCachePlan(fbb, module);
  if (failed(plan))
    return failure();
  auto meta = writeMeta(fbb, module);
  if (failed(meta))
    return failure();
  auto weightsVec = fbb.CreateVector(weights);
  auto compiler = fbb.CreateString(inputs.compiler);
  auto config = fbb.CreateString(inputs.config_json);
  auto configKeys = fbb.CreateVectorOfStrings(inputs.config_keys);
  auto ir = fbb.CreateString(inputs.ir);
  fbs::Offset<fb::KernelBundle> kernels;
  if (inputs.kernels)
    kernels = writeKernels(fbb, *inputs.kernels);
  fb::ModelBuilder mb(fbb);
  mb.add_format_version(kFormatVersion);
  mb.add_compiler(compiler);
  mb.add_config_json(config);
  mb.add_meta(*meta);
  mb.add_program(*program);
  mb.add_cache_plan(*plan);
  mb.add_weights(weightsVec);
  mb.add_ir(ir);
  if (inputs.kernels)
    mb.add_kernels(kernels);
  mb.add_config_keys(configKeys);
  if (auto ranks = module->getAttrOfType<IntegerAttr>(kRanksAttr))
    mb.add_ranks(ranks.getInt());
  fbb.Finish(mb.Finish(), fb::ModelIdentifier());
  std::vector<uint8_t> bytes(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  sealArtefact(bytes); // every byte the loader reads is covered by the trailer's hash
  return bytes;
}

} // namespace cbc::codegen
