#include "dialects/cbc/CbcOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include <cmath>

using namespace mlir;
using namespace cbc;

namespace {
int64_t cols(Value v) { return llvm::cast<RankedTensorType>(v.getType()).getDimSize(1); }
RankedTensorType tensorType(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

LogicalResult verifyGluAct(Operation *op, StringRef act, StringRef layout, bool limit,
                           bool alpha) {
  if (act != "silu" && act != "gelu_tanh" && act != "gelu" && act != "relu" && act != "relu2" && act != "gpt_oss")
    return op->emitOpError("unknown activation '") << act << "'";
  if (layout != "halves" && layout != "interleaved")
    return op->emitOpError("unknown layout '") << layout << "'";
  if (act == "gpt_oss" && (!limit || !alpha))
    return op->emitOpError("activation 'gpt_oss' needs 'limit' and 'alpha'");
  return success();
}
} // namespace

LogicalResult WeightRefOp::verify() {
  if (getName().empty())
    return emitOpError("needs a non-empty name");
  if (getSources().empty())
    return emitOpError("needs at least one source");
  for (Attribute part : getSources()) {
    auto names = llvm::dyn_cast<ArrayAttr>(part);
    if (!names || names.empty() ||
        !llvm::all_of(names, [](Attribute a) { return llvm::isa<StringAttr>(a); }))
      return emitOpError("each source part must be a non-empty list of tensor names");
  }
  auto type = llvm::cast<RankedTensorType>(getType());
  if (auto regroup = getRegroupAttr()) {
    auto r = regroup.asArrayRef();
    if (r.size() < 2 || llvm::any_of(r, [](int64_t v) { return v <= 0; }))
      return emitOpError("regroup must be [outer, segment sizes...] of positive sizes");
    int64_t covered = 0;
    for (int64_t seg : r.drop_front())
      covered += seg;
    if (type.getRank() < 1 || r[0] * covered > type.getDimSize(0))
      return emitOpError("regroup covers ") << r[0] * covered << " rows but the weight has "
                                            << (type.getRank() ? type.getDimSize(0) : 0);
  }
  if (getCombine() == "none") {
    if (getSources().size() != 1)
      return emitOpError("combine 'none' takes exactly one source part");
  } else if (getCombine() == "stack") {
    if (type.getRank() < 2 || type.getDimSize(0) != (int64_t)getSources().size())
      return emitOpError("combine 'stack' needs one source part per leading index");
  } else {
    return emitOpError("unknown combine '") << getCombine() << "'";
  }
  if (auto blocks = getBlockDiagAttr()) {
    int64_t n = blocks.getInt();
    if (getCombine() != "none" || type.getRank() != 2 || n <= 0 || type.getDimSize(0) % n != 0 ||
        type.getDimSize(1) % n != 0)
      return emitOpError("block_diag needs combine 'none' and a [rows, cols] weight whose rows and "
                         "columns it divides");
  }
  if (auto scales = getRowScalesAttr()) {
    auto v = scales.asArrayRef();
    bool ok = !v.empty() && v.size() % 2 == 0;
    int64_t covered = 0;
    for (size_t i = 0; ok && i < v.size(); i += 2) {
      ok = v[i] >= 1 && v[i] <= 9.0e15 && v[i] == std::floor(v[i]) && std::isfinite(v[i + 1]);
      covered += ok ? (int64_t)v[i] : 0;
    }
    if (!ok)
      return emitOpError("row_scales must be pairs of a positive whole row count and a finite factor");
    if (type.getRank() < 1 || covered != type.getDimSize(0))
      return emitOpError("row_scales cover ") << covered << " rows but the weight has "
                                              << (type.getRank() ? type.getDimSize(0) : 0);
  }
  return success();
}

LogicalResult EmbedOp::verify() {
  auto table = tensorType(getTable());
  if (table.getRank() != 2)
    return emitOpError("table must be [vocab, hidden]");
  if (table.getDimSize(1) != cols(getResult()))
    return emitOpError("result width must equal the table's hidden size");
  return success();
}

LogicalResult LinearOp::verify() {
  auto w = tensorType(getWeight());
  if (w.getRank() != 2)
    return emitOpError("weight must be [out, in]");
  if (w.getDimSize(1) != cols(getX()))
    return emitOpError("weight input size ") << w.getDimSize(1) << " does not match input width "
                                             << cols(getX());
  if (w.getDimSize(0) != cols(getResult()))
    return emitOpError("weight output size must equal the result width");
  if (getBias()) {
    auto b = tensorType(getBias());
    if (b.getRank() != 1 || b.getDimSize(0) != w.getDimSize(0))
      return emitOpError("bias must be [out]");
  }
  return success();
}

LogicalResult RmsNormOp::verify() {
  int64_t width = cols(getX());
  int64_t group = getGroupAttr() ? getGroupAttr().getInt() : width;
  if (group <= 0 || width % group != 0)
    return emitOpError("group ") << group << " must divide the row width " << width;
  if (getWeight()) {
    auto w = tensorType(getWeight());
    if (w.getRank() != 1 || w.getDimSize(0) != group)
      return emitOpError("weight must have one entry per feature of a group");
  }
  if (getEps().convertToDouble() <= 0)
    return emitOpError("eps must be positive");
  if (cols(getResult()) != width)
    return emitOpError("result width must equal the input width");
  return success();
}

LogicalResult GluOp::verify() {
  if (failed(verifyGluAct(*this, getAct(), getLayout(), (bool)getLimitAttr(), (bool)getAlphaAttr())))
    return failure();
  if (cols(getX()) != 2 * cols(getResult()))
    return emitOpError("input width must be twice the result width");
  return success();
}

LogicalResult SplitOp::verify() {
  int64_t total = 0;
  for (Value r : getResults())
    total += cols(r);
  if (total != cols(getX()))
    return emitOpError("result widths add up to ") << total << ", not the input width "
                                                   << cols(getX());
  return success();
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  int64_t total = 0;
  for (Value v : getInputs())
    total += cols(v);
  if (total != cols(getResult()))
    return emitOpError("result width ") << cols(getResult()) << " is not the sum of the input widths, "
                                        << total;
  return success();
}

LogicalResult RopeOp::verify() {
  int64_t headDim = getHeadDimAttr().getInt(), rotary = getRotaryDimAttr().getInt();
  if (headDim <= 0 || cols(getX()) % headDim != 0)
    return emitOpError("head_dim must divide the row width");
  if (rotary <= 0 || rotary > headDim || rotary % 2 != 0)
    return emitOpError("rotary_dim must be even and in (0, head_dim]");
  if ((int64_t)getInvFreq().size() != rotary / 2)
    return emitOpError("inv_freq must have rotary_dim / 2 entries");
  if (getPairing() != "half" && getPairing() != "interleaved")
    return emitOpError("unknown pairing '") << getPairing() << "'";
  if (getInvFreqLong()) {
    if ((int64_t)getInvFreqLong()->size() != rotary / 2)
      return emitOpError("inv_freq_long must have rotary_dim / 2 entries");
    if (!getLongAfter())
      return emitOpError("inv_freq_long needs long_after");
  }
  if (getDynamicBase() && (!getDynamicFactor() || !getDynamicMaxPositions()))
    return emitOpError("dynamic_base needs dynamic_factor and dynamic_max_positions");
  if (cols(getResult()) != cols(getX()))
    return emitOpError("result width must equal the input width");
  return success();
}

LogicalResult ActOp::verify() {
  static const char *known[] = {"none", "silu", "gelu_tanh", "gelu", "relu", "relu2"};
  if (!llvm::is_contained(known, getAct()))
    return emitOpError("unknown activation '") << getAct() << "'";
  if (!std::isfinite(getScale().convertToDouble()))
    return emitOpError("scale must be finite");
  return success();
}

LogicalResult SoftcapOp::verify() {
  if (getCap().convertToDouble() <= 0)
    return emitOpError("cap must be positive");
  return success();
}

LogicalResult GateOp::verify() {
  if (getAct() != "sigmoid" && getAct() != "none")
    return emitOpError("unknown activation '") << getAct() << "'";
  if (cols(getG()) != 1 && cols(getG()) != cols(getX()))
    return emitOpError("gate width must be 1 or the input width");
  if (cols(getResult()) != cols(getX()))
    return emitOpError("result width must equal the input width");
  return success();
}

namespace {
std::optional<int64_t> signedOpt(IntegerAttr a) {
  return a ? std::optional<int64_t>(a.getInt()) : std::nullopt;
}

LogicalResult verifyCacheShape(Operation *op, int64_t heads, int64_t headDim,
                               std::optional<int64_t> window, std::optional<int64_t> chunk) {
  if (heads <= 0 || headDim <= 0)
    return op->emitOpError("head counts and head_dim must be positive");
  if (window && *window <= 0)
    return op->emitOpError("window must be positive");
  if (chunk && *chunk <= 0)
    return op->emitOpError("chunk must be positive");
  if (window && chunk)
    return op->emitOpError("a layer is either windowed or chunked, not both");
  return success();
}
} // namespace

LogicalResult KvAppendOp::verify() {
  int64_t kvHeads = getNumKvHeadsAttr().getInt(), headDim = getHeadDimAttr().getInt();
  if (failed(verifyCacheShape(*this, kvHeads, headDim, signedOpt(getWindowAttr()),
                              signedOpt(getChunkAttr()))))
    return failure();
  if (cols(getK()) != kvHeads * headDim)
    return emitOpError("k width must be num_kv_heads * head_dim");
  if (cols(getV()) % kvHeads != 0)
    return emitOpError("v width must be a multiple of num_kv_heads");
  return success();
}

LogicalResult KvAttentionOp::verify() {
  int64_t heads = getNumHeadsAttr().getInt(), kvHeads = getNumKvHeadsAttr().getInt(),
          headDim = getHeadDimAttr().getInt();
  if (failed(verifyCacheShape(*this, kvHeads, headDim, signedOpt(getWindowAttr()),
                              signedOpt(getChunkAttr()))))
    return failure();
  if (heads <= 0 || heads % kvHeads != 0)
    return emitOpError("num_heads must be a multiple of num_kv_heads");
  if (cols(getQ()) != heads * headDim)
    return emitOpError("q width must be num_heads * head_dim");
  if (cols(getResult()) % heads != 0)
    return emitOpError("result width must be a multiple of num_heads");
  if (getSinks()) {
    auto s = tensorType(getSinks());
    if (s.getRank() != 1 || s.getDimSize(0) != heads)
      return emitOpError("sinks must have one entry per query head");
  }
  if (getSoftcap() && getSoftcap()->convertToDouble() <= 0)
    return emitOpError("softcap must be positive");
  return success();
}

LogicalResult AddRmsNormOp::verify() {
  int64_t width = cols(getLhs());
  if (cols(getRhs()) != width || cols(getSum()) != width || cols(getNormed()) != width)
    return emitOpError("operands and results must have the same width");
  if (getWeight()) {
    auto w = tensorType(getWeight());
    if (w.getRank() != 1 || w.getDimSize(0) != width)
      return emitOpError("weight must have one entry per feature");
  }
  if (getEps().convertToDouble() <= 0)
    return emitOpError("eps must be positive");
  return success();
}

LogicalResult KvRopeAppendOp::verify() {
  int64_t heads = getNumHeadsAttr().getInt(), kvHeads = getNumKvHeadsAttr().getInt(),
          headDim = getHeadDimAttr().getInt(), rotary = getRotaryDimAttr().getInt();
  if (failed(verifyCacheShape(*this, kvHeads, headDim, signedOpt(getWindowAttr()),
                              signedOpt(getChunkAttr()))))
    return failure();
  if (heads <= 0 || heads % kvHeads != 0)
    return emitOpError("num_heads must be a multiple of num_kv_heads");
  if (cols(getQkv()) != (heads + 2 * kvHeads) * headDim)
    return emitOpError("qkv width must be (num_heads + 2 * num_kv_heads) * head_dim");
  if (cols(getQ()) != heads * headDim)
    return emitOpError("result width must be num_heads * head_dim");
  if ((bool)getQNorm() != (bool)getKNorm())
    return emitOpError("give both q and k norm weights or neither");
  if (getQNorm()) {
    for (Value w : {getQNorm(), getKNorm()}) {
      auto t = tensorType(w);
      if (t.getRank() != 1 || t.getDimSize(0) != headDim)
        return emitOpError("norm weights must have head_dim entries");
    }
    if (!getEpsAttr() || getEpsAttr().getValueAsDouble() <= 0)
      return emitOpError("q/k norms need a positive eps");
  }
  if (rotary <= 0 || rotary > headDim || rotary % 2 != 0)
    return emitOpError("rotary_dim must be even and in (0, head_dim]");
  if ((int64_t)getInvFreq().size() != rotary / 2)
    return emitOpError("inv_freq must have rotary_dim / 2 entries");
  if (getPairing() != "half" && getPairing() != "interleaved")
    return emitOpError("unknown pairing '") << getPairing() << "'";
  if (getInvFreqLong() && ((int64_t)getInvFreqLong()->size() != rotary / 2 || !getLongAfterAttr()))
    return emitOpError("inv_freq_long needs rotary_dim / 2 entries and long_after");
  if (getDynamicBaseAttr() && (!getDynamicFactorAttr() || !getDynamicMaxPositionsAttr()))
    return emitOpError("dynamic_base needs dynamic_factor and dynamic_max_positions");
  return success();
}

LogicalResult RmsNormGatedOp::verify() {
  int64_t width = cols(getX());
  int64_t group = getGroupAttr() ? getGroupAttr().getInt() : width;
  if (cols(getZ()) != width || cols(getResult()) != width)
    return emitOpError("x, z and the result must have the same width");
  if (group <= 0 || width % group != 0)
    return emitOpError("group ") << group << " must divide the row width " << width;
  if (getWeight()) {
    auto w = tensorType(getWeight());
    if (w.getRank() != 1 || (w.getDimSize(0) != group && w.getDimSize(0) != width))
      return emitOpError("weight must have one entry per feature of a group or of the row");
  }
  if (getAct() != "silu" && getAct() != "sigmoid")
    return emitOpError("unknown activation '") << getAct() << "'";
  if (getOrder() != "norm_gate" && getOrder() != "gate_norm")
    return emitOpError("unknown order '") << getOrder() << "'";
  if (getEps().convertToDouble() <= 0)
    return emitOpError("eps must be positive");
  return success();
}

LogicalResult StateConv1dOp::verify() {
  int64_t channels = cols(getX());
  auto w = tensorType(getWeight());
  // The layout of a depthwise torch Conv1d weight, so checkpoints load without reshaping.
  if (w.getRank() != 3 || w.getDimSize(0) != channels || w.getDimSize(1) != 1 || w.getDimSize(2) < 1)
    return emitOpError("weight must be [channels, 1, kernel]");
  if (getBias()) {
    auto b = tensorType(getBias());
    if (b.getRank() != 1 || b.getDimSize(0) != channels)
      return emitOpError("bias must have one entry per channel");
  }
  if (getAct() != "none" && getAct() != "silu")
    return emitOpError("unknown activation '") << getAct() << "'";
  if (cols(getResult()) != channels)
    return emitOpError("result width must equal the channel count");
  return success();
}

namespace {
bool isIndexVector(Value v) {
  auto t = llvm::dyn_cast<RankedTensorType>(v.getType());
  return t && t.getRank() == 1 && t.getElementType().isInteger(32);
}
// The width of packed f32 rows, or -1.
int64_t rowWidth(Value v) {
  auto t = llvm::dyn_cast<RankedTensorType>(v.getType());
  if (!t || t.getRank() != 2 || !t.isDynamicDim(0) || !t.getElementType().isF32())
    return -1;
  return t.getDimSize(1);
}
bool hasElements(Value v, int64_t n) {
  auto t = llvm::dyn_cast<RankedTensorType>(v.getType());
  return t && t.hasStaticShape() && t.getNumElements() == n;
}
} // namespace

LogicalResult StateScanOp::verify() {
  auto in = getInputs();
  if (in.size() < 3 || !isIndexVector(in[in.size() - 1]) || !isIndexVector(in[in.size() - 2]) ||
      !isIndexVector(in[in.size() - 3]))
    return emitOpError("the last three operands must be cu_seqlens, slots and has_initial_state");
  if (getKind() == "gated_delta")
    return verifyGatedDelta();
  if (getKind() == "ssd_mamba2")
    return verifySsd();
  if (getKind() == "selective_mamba1")
    return verifySelective();
  return emitOpError("unknown scan kind '") << getKind() << "'";
}

LogicalResult StateScanOp::verifyGatedDelta() {
  auto in = getInputs();
  if (in.size() != 10)
    return emitOpError("kind 'gated_delta' takes q, k, v, a, b, A_log, dt_bias and the metadata");
  if (!getNumKHeadsAttr() || !getNumVHeadsAttr() || !getKDimAttr() || !getVDimAttr())
    return emitOpError("kind 'gated_delta' needs num_k_heads, num_v_heads, k_dim and v_dim");
  int64_t hk = getNumKHeadsAttr().getInt(), hv = getNumVHeadsAttr().getInt();
  int64_t dk = getKDimAttr().getInt(), dv = getVDimAttr().getInt();
  if (hk <= 0 || hv <= 0 || dk <= 0 || dv <= 0 || hv % hk != 0)
    return emitOpError("num_v_heads must be a positive multiple of num_k_heads");
  if (rowWidth(in[0]) != hk * dk || rowWidth(in[1]) != hk * dk || rowWidth(in[2]) != hv * dv)
    return emitOpError("q and k must be [T, num_k_heads * k_dim] and v [T, num_v_heads * v_dim]");
  if (rowWidth(in[3]) != hv || rowWidth(in[4]) != hv)
    return emitOpError("a and b must be [T, num_v_heads]");
  if (!hasElements(in[5], hv) || !hasElements(in[6], hv))
    return emitOpError("A_log and dt_bias must have num_v_heads entries");
  if (cols(getResult()) != hv * dv)
    return emitOpError("result width must be num_v_heads * v_dim");
  if (getBetaScale().convertToDouble() <= 0)
    return emitOpError("beta_scale must be positive");
  return success();
}

LogicalResult StateScanOp::verifySsd() {
  auto in = getInputs();
  if (in.size() != 10)
    return emitOpError("kind 'ssd_mamba2' takes x, dt, B, C, A_log, dt_bias, D and the metadata");
  if (!getNumHeadsAttr() || !getHeadDimAttr() || !getNGroupsAttr() || !getStateSizeAttr())
    return emitOpError("kind 'ssd_mamba2' needs num_heads, head_dim, n_groups and state_size");
  int64_t H = getNumHeadsAttr().getInt(), P = getHeadDimAttr().getInt();
  int64_t G = getNGroupsAttr().getInt(), N = getStateSizeAttr().getInt();
  if (H <= 0 || P <= 0 || G <= 0 || N <= 0 || H % G != 0)
    return emitOpError("num_heads must be a positive multiple of n_groups");
  if (rowWidth(in[0]) != H * P || rowWidth(in[1]) != H)
    return emitOpError("x must be [T, num_heads * head_dim] and dt [T, num_heads]");
  if (rowWidth(in[2]) != G * N || rowWidth(in[3]) != G * N)
    return emitOpError("B and C must be [T, n_groups * state_size]");
  if (!hasElements(in[4], H) || !hasElements(in[5], H) || !hasElements(in[6], H))
    return emitOpError("A_log, dt_bias and D must have num_heads entries");
  if (cols(getResult()) != H * P)
    return emitOpError("result width must be num_heads * head_dim");
  if (!(getDtMin().convertToDouble() <= getDtMax().convertToDouble()) || getDtMin().convertToDouble() < 0)
    return emitOpError("dt limits must satisfy 0 <= dt_min <= dt_max");
  return success();
}

LogicalResult StateScanOp::verifySelective() {
  auto in = getInputs();
  if (in.size() != 10 && in.size() != 11)
    return emitOpError("kind 'selective_mamba1' takes x, dt, B, C, A_log, dt_bias, D, an optional z "
                       "and the metadata");
  if (!getNGroupsAttr() || !getStateSizeAttr())
    return emitOpError("kind 'selective_mamba1' needs n_groups and state_size");
  int64_t I = rowWidth(in[0]), G = getNGroupsAttr().getInt(), N = getStateSizeAttr().getInt();
  if (I <= 0 || rowWidth(in[1]) != I || (in.size() == 11 && rowWidth(in[7]) != I))
    return emitOpError("x, dt and z must be [T, channels]");
  if (G <= 0 || N <= 0 || I % G != 0)
    return emitOpError("n_groups must divide the channel count");
  if (rowWidth(in[2]) != G * N || rowWidth(in[3]) != G * N)
    return emitOpError("B and C must be [T, n_groups * state_size]");
  if (!hasElements(in[4], I * N))
    return emitOpError("A_log must be [channels, state_size]");
  if (!hasElements(in[5], I) || !hasElements(in[6], I))
    return emitOpError("dt_bias and D must have one entry per channel");
  if (cols(getResult()) != I)
    return emitOpError("result width must equal the channel count");
  return success();
}

LogicalResult RowsGatherOp::verify() {
  if (cols(getResult()) != cols(getX()))
    return emitOpError("result width must equal the input width");
  return success();
}

LogicalResult MoeRouteOp::verify() {
  int64_t experts = cols(getLogits()), k = getKAttr().getInt();
  if (k <= 0 || k > experts)
    return emitOpError("k must be in [1, experts]");
  if (getScore() != "softmax" && getScore() != "topk_softmax" && getScore() != "sigmoid")
    return emitOpError("unknown score '") << getScore() << "'";
  if (cols(getWeights()) != k || cols(getIds()) != k)
    return emitOpError("weights and ids must have k columns");
  if (getSelectionBias()) {
    if (getScore() == "topk_softmax")
      return emitOpError("a selection bias needs softmax or sigmoid scores");
    auto t = tensorType(getSelectionBias());
    if (t.getRank() != 1 || t.getDimSize(0) != experts)
      return emitOpError("selection bias must have one entry per expert");
  }
  if (getRenormEps().convertToDouble() < 0)
    return emitOpError("renorm_eps must not be negative");
  return success();
}

LogicalResult MoeExpertsOp::verify() {
  bool ungated = getLayout() == "ungated";
  if (ungated) {
    static const char *known[] = {"none", "silu", "gelu_tanh", "gelu", "relu", "relu2"};
    if (!llvm::is_contained(known, getAct()))
      return emitOpError("layout 'ungated' takes an activation of cbc.math.act, not '") << getAct() << "'";
  } else if (failed(verifyGluAct(*this, getAct(), getLayout(), (bool)getLimitAttr(), (bool)getAlphaAttr()))) {
    return failure();
  }
  auto gu = tensorType(getGateUp()), down = tensorType(getDown());
  if (gu.getRank() != 3 || down.getRank() != 3)
    return emitOpError("expert weights must be [experts, out, in]");
  int64_t e = gu.getDimSize(0), i2 = gu.getDimSize(1), h = gu.getDimSize(2);
  if (ungated && (down.getDimSize(0) != e || down.getDimSize(1) != h || down.getDimSize(2) != i2))
    return emitOpError("with layout 'ungated', gate_up must be [experts, intermediate, hidden] and "
                       "down [experts, hidden, intermediate]");
  if (!ungated && (down.getDimSize(0) != e || down.getDimSize(1) != h || 2 * down.getDimSize(2) != i2))
    return emitOpError("down must be [experts, hidden, intermediate] matching gate_up");
  if (cols(getX()) != h || cols(getResult()) != h)
    return emitOpError("input and result width must equal the hidden size");
  if (cols(getIds()) != cols(getWeights()))
    return emitOpError("ids and weights must have the same number of columns");
  if ((bool)getGateUpBias() != (bool)getDownBias())
    return emitOpError("give both biases or neither");
  if (getGateUpBias()) {
    auto b1 = tensorType(getGateUpBias()), b2 = tensorType(getDownBias());
    if (b1.getRank() != 2 || b1.getDimSize(0) != e || b1.getDimSize(1) != i2 ||
        b2.getRank() != 2 || b2.getDimSize(0) != e || b2.getDimSize(1) != h)
      return emitOpError("biases must be [experts, 2I] and [experts, hidden]");
  }
  return success();
}

int64_t StateConv1dOp::getStateLayer() { return (int64_t)getLayer(); }
llvm::StringRef StateConv1dOp::getStateName() { return getState(); }
// The last K - 1 inputs of each channel.
llvm::SmallVector<int64_t> StateConv1dOp::getStateShape() {
  auto w = llvm::cast<RankedTensorType>(getWeight().getType());
  return {w.getDimSize(0), w.getDimSize(2) - 1};
}

int64_t StateScanOp::getStateLayer() { return (int64_t)getLayer(); }
llvm::StringRef StateScanOp::getStateName() { return getState(); }
llvm::SmallVector<int64_t> StateScanOp::getStateShape() {
  auto attr = [](std::optional<uint64_t> v) { return (int64_t)v.value_or(0); };
  if (getKind() == "gated_delta") // one dk x dv matrix per value head
    return {attr(getNumVHeads()), attr(getKDim()), attr(getVDim())};
  if (getKind() == "ssd_mamba2") // one head_dim x state_size matrix per head
    return {attr(getNumHeads()), attr(getHeadDim()), attr(getStateSize())};
  if (getKind() == "selective_mamba1") // state_size values per channel
    return {cols(getInputs()[0]), attr(getStateSize())};
  return {};
}

#include "dialects/cbc/CbcInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "dialects/cbc/CbcOps.cpp.inc"
