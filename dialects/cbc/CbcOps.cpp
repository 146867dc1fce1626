// The op verifiers: how each op's attributes fit its operands. Closed sets are enums and
// parameter bundles verify themselves (CbcAttrs.cpp), so what is left here is shapes.
#include "dialects/cbc/CbcOps.h"
#include "runtime/schema/shape_rules.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include <cmath>

using namespace mlir;
using namespace cbc;

namespace {
int64_t cols(Value v) { return llvm::cast<RankedTensorType>(v.getType()).getDimSize(1); }
RankedTensorType tensorType(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

int64_t numel(Value v) { return tensorType(v).getNumElements(); }
// The elements of a vector weight; -1 for any other rank, which no rule accepts.
int64_t vectorLength(Value v) { return tensorType(v).getRank() == 1 ? tensorType(v).getDimSize(0) : -1; }

// The shared shape rules (runtime/schema/shape_rules.h) as the op's verifier.
LogicalResult verifyShape(Operation *op, shape::Error error) { return error ? op->emitOpError(error) : success(); }

// The factor of cbc.math.mul and cbc.math.gate: one per group of equal columns (as wide as x,
// one per head, or one per row).
LogicalResult verifyRowFactor(Operation *op, Value x, Value g, Value result) {
  if (cols(g) < 1 || cols(x) % cols(g) != 0)
    return op->emitOpError("gate width must divide the input width");
  if (cols(result) != cols(x))
    return op->emitOpError("result width must equal the input width");
  return success();
}

// How a RoPE schedule fits rows: whole heads of its head_dim.
LogicalResult verifyRopeFits(Operation *op, RopeAttr rope, int64_t width) {
  if (width % rope.getHeadDim() != 0)
    return op->emitOpError("rope head_dim must divide the row width");
  return success();
}

// A quantised weight's type is checked here too: types built in C++ are not verified on their own.
LogicalResult verifyFormat(WeightRefOp op) {
  auto type = llvm::cast<RankedTensorType>(op.getType());
  auto quant = llvm::dyn_cast_or_null<QuantAttr>(type.getEncoding());
  if (quant && failed(quant.verifyEncoding(type.getShape(), type.getElementType(),
                                            [&] { return op.emitOpError(); })))
    return failure();
  if (quant && op.getDequant())
    return op.emitOpError("dequant expands a weight at load, so its type must be plain, not #cbc.quant");
  if (op.getDeclaredAttr() && (quant || *op.getDeclared() == type.getElementType()))
    return op.emitOpError("declared records the type a plain weight was widened from, so it must differ from its type");
  bool pairs = op.getDequant() || (quant && quant.getScheme() == QuantScheme::mxfp4);
  for (Attribute part : op.getSources())
    if (pairs && llvm::cast<ArrayAttr>(part).size() != 2)
      return op.emitOpError("an MXFP4 weight's source parts each name its blocks and its scales");
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
  if (failed(verifyFormat(*this)))
    return failure();
  auto type = llvm::cast<RankedTensorType>(getType());
  // The assembly transforms below describe the whole weight; a shard keeps one rank's slice.
  if (ShardAttr shard = getShardAttr()) {
    if (shard.getDim() >= type.getRank())
      return emitOpError("shard dim ") << shard.getDim() << " is not a dimension of the weight";
    if (shard.rankExtent() != type.getDimSize(shard.getDim()))
      return emitOpError("shard gives each rank ") << shard.rankExtent() << " along dimension " << shard.getDim()
                                                   << " but the weight has " << type.getDimSize(shard.getDim());
    SmallVector<int64_t> whole(type.getShape());
    whole[shard.getDim()] = 0;
    for (int64_t s : shard.getSegments())
      whole[shard.getDim()] += s;
    type = RankedTensorType::get(whole, type.getElementType(), type.getEncoding());
  }
  int64_t rows = type.getRank() ? type.getDimSize(0) : 0;
  if (getFlatten()) {
    if (getCombine() != WeightCombine::none || type.getRank() < (getTranspose() ? 2 : 1))
      return emitOpError("flatten needs combine 'none' and a ranked weight (rank 2 with transpose)");
    // Regrouping reorders the rows of the flattened part, whose rows are the result's last
    // dimension (the one before it with transpose).
    int64_t last = type.getDimSize(type.getRank() - (getTranspose() ? 2 : 1));
    rows = last ? type.getNumElements() / last : 0;
  }
  if (auto regroup = getRegroupAttr()) {
    auto r = regroup.asArrayRef();
    if (r.size() < 2 || llvm::any_of(r, [](int64_t v) { return v <= 0; }))
      return emitOpError("regroup must be [outer, segment sizes...] of positive sizes");
    int64_t covered = 0;
    for (int64_t seg : r.drop_front())
      covered += seg;
    if (r[0] * covered > rows)
      return emitOpError("regroup covers ") << r[0] * covered << " rows but the weight has " << rows;
  }
  if (getCombine() == WeightCombine::none && getSources().size() != 1)
    return emitOpError("combine 'none' takes exactly one source part");
  if (getCombine() == WeightCombine::stack && (type.getRank() < 2 || rows != (int64_t)getSources().size()))
    return emitOpError("combine 'stack' needs one source part per leading index");
  if (auto blocks = getBlockDiagAttr()) {
    int64_t n = blocks.getInt();
    if (getCombine() != WeightCombine::none || type.getRank() != 2 || n <= 0 || rows % n != 0 ||
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
    if (covered != rows)
      return emitOpError("row_scales cover ") << covered << " rows but the weight has " << rows;
  }
  return success();
}

LogicalResult EmbedOp::verify() {
  auto table = tensorType(getTable());
  if (table.getRank() != 2)
    return emitOpError("table must be [vocab, hidden]");
  if (table.getDimSize(1) != cols(getResult()))
    return emitOpError("result width must equal the table's hidden size");
  if (getOffsetAttr().getInt() < 0)
    return emitOpError("offset must not be negative");
  if (auto oov = getOovRowAttr(); oov && (oov.getInt() < 0 || oov.getInt() >= table.getDimSize(0)))
    return emitOpError("oov_row must be a row of the table");
  if (getVocabRanks() < 1 || (getVocabRanks() > 1 && (getOovRowAttr() || getOffset() != 0)))
    return emitOpError("vocab_ranks must be at least 1, and above 1 only without offset or oov_row");
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
    if (w.getRank() != 1 || (w.getDimSize(0) != group && w.getDimSize(0) != width))
      return emitOpError("weight must have one entry per feature of a group or of the row");
  }
  if (getEps().convertToDouble() <= 0)
    return emitOpError("eps must be positive");
  if (cols(getResult()) != width)
    return emitOpError("result width must equal the input width");
  return success();
}

LogicalResult DiffHeadsOp::verify() {
  if (cols(getX()) != 2 * cols(getResult()))
    return emitOpError("input width must be twice the result width");
  auto q1 = llvm::cast<RankedTensorType>(getQ1().getType());
  for (Value w : {getQ1(), getK1(), getQ2(), getK2()}) {
    auto t = llvm::cast<RankedTensorType>(w.getType());
    if (t.getRank() != 1 || t.getShape() != q1.getShape() || t.getElementType() != q1.getElementType())
      return emitOpError("lambda vectors must be four of one length and element type");
  }
  if (!std::isfinite(getLambdaInit().convertToDouble()))
    return emitOpError("lambda_init must be finite");
  return success();
}

LogicalResult AddOp::verify() {
  int64_t width = cols(getLhs());
  if (auto w = llvm::dyn_cast<RankedTensorType>(getRhs().getType()); w && w.hasStaticShape()) {
    if (w.getRank() != 1 || w.getDimSize(0) == 0 || width % w.getDimSize(0) != 0)
      return emitOpError("a weight addend must be one row whose length divides the operand's width");
  } else if (cols(getRhs()) != width) {
    return emitOpError("requires the same shape for all operands and results");
  }
  if (cols(getResult()) != width)
    return emitOpError("requires the same shape for all operands and results");
  return success();
}

LogicalResult MulOp::verify() {
  // A weight factor is a learned scalar or one entry per group of columns.
  if (auto w = llvm::dyn_cast<RankedTensorType>(getG().getType()); w && w.hasStaticShape()) {
    int64_t n = w.getNumElements();
    if (w.getRank() > 1 || n == 0 || cols(getX()) % n != 0)
      return emitOpError("a weight factor must be one row whose length divides the operand's width");
    if (cols(getResult()) != cols(getX()))
      return emitOpError("result width must equal the input width");
    return success();
  }
  return verifyRowFactor(*this, getX(), getG(), getResult());
}
LogicalResult GateOp::verify() { return verifyRowFactor(*this, getX(), getG(), getResult()); }

LogicalResult GluOp::verify() {
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

LogicalResult HeadLinearOp::verify() {
  auto w = tensorType(getWeight());
  bool matrix = w.getRank() == 2;
  return verifyShape(*this, shape::check(shape::HeadLinear{(int64_t)getHeads(), (int64_t)getOffset(), (int64_t)getRows(),
                                                           w.getRank(), matrix ? w.getDimSize(0) : 0,
                                                           matrix ? w.getDimSize(1) : 0, getTranspose(), cols(getX()),
                                                           cols(getResult())}));
}

LogicalResult PositionScaleOp::verify() {
  if (getPeriod() <= 0 || getOffset() < 0)
    return emitOpError("period must be positive and offset not negative");
  if (cols(getResult()) != cols(getX()))
    return emitOpError("result width must equal the input width");
  return success();
}

LogicalResult L2ClipOp::verify() {
  return verifyShape(*this, shape::check(shape::L2Clip{cols(getX()), (int64_t)getGroup(),
                                                       getScale() ? vectorLength(getScale()) : -1, cols(getResult()),
                                                       getThreshold().convertToDouble(), getEps().convertToDouble(),
                                                       (bool)getScale()}));
}

LogicalResult HeadPositionScaleOp::verify() {
  return verifyShape(*this, shape::check(shape::HeadPositionScale{cols(getX()), vectorLength(getScale()),
                                                                  vectorLength(getBias()), cols(getResult())}));
}

LogicalResult SinusoidalPositionOp::verify() {
  if (failed(verifyShape(*this, shape::check(shape::SinusoidalPosition{cols(getResult())}))))
    return failure();
  if (getOffsetAttr().getInt() < 0 || (getPaddingRowAttr() && getPaddingRowAttr().getInt() < 0))
    return emitOpError("offset and padding_row must not be negative");
  if (!(getBase().convertToDouble() > 1) || !std::isfinite(getBase().convertToDouble()))
    return emitOpError("base must be finite and above 1");
  if (getForm() == SinusoidForm::power && cols(getResult()) % 2 != 0)
    return emitOpError("the power form needs an even width");
  return success();
}

LogicalResult RopeOp::verify() {
  if (failed(verifyRopeFits(*this, getRope(), cols(getX()))))
    return failure();
  if (cols(getResult()) != cols(getX()))
    return emitOpError("result width must equal the input width");
  if (getRope().getSections().empty() != !getSectionPositions())
    return emitOpError("takes section positions exactly when its schedule has sections");
  if (getFreqLogScale() && vectorLength(getFreqLogScale()) != getRope().getRotaryDim() / 2)
    return emitOpError("freq_log_scale must hold rotary_dim / 2 values");
  return success();
}

LogicalResult ActOp::verify() {
  if (!std::isfinite(getScale().convertToDouble()))
    return emitOpError("scale must be finite");
  return success();
}

LogicalResult SoftcapOp::verify() {
  if (getCap().convertToDouble() <= 0)
    return emitOpError("cap must be positive");
  return success();
}

LogicalResult MatchRmsOp::verify() {
  if (cols(getResult()) != cols(getX()))
    return emitOpError("result width must equal the input's");
  double floor = getFloor().convertToDouble();
  if (!(floor > 0) || !std::isfinite(floor))
    return emitOpError("floor must be positive and finite");
  return success();
}

LogicalResult StreamHcWeightsOp::verify() {
  double magnitude = getMagnitude().convertToDouble(), eps = getEps().convertToDouble(),
         postEps = getPostEps().convertToDouble();
  if (!(magnitude > 0) || !std::isfinite(magnitude) || !(eps >= 0) || !std::isfinite(eps) || !(postEps >= 0) ||
      !std::isfinite(postEps))
    return emitOpError("magnitude must be positive and the epsilons not negative, all finite");
  return verifyShape(*this, shape::check(shape::HcWeights{(int64_t)getKind(), (int64_t)getStreams(), cols(getMixes()),
                                                          numel(getBase()), numel(getScale()), cols(getResult()),
                                                          (int64_t)getSinkhornIters()}));
}

LogicalResult StreamAttendOp::verify() {
  auto q = tensorType(getQuery());
  bool rank2 = q.getRank() == 2;
  return verifyShape(*this, shape::check(shape::StreamAttend{
                                (int64_t)getCount(), cols(getSources()), q.getRank(), rank2 ? q.getDimSize(0) : 1,
                                q.getRank() ? q.getDimSize(q.getRank() - 1) : 0, cols(getResult()),
                                getEps().convertToDouble()}));
}

LogicalResult StreamCollapseOp::verify() {
  return verifyShape(*this, shape::check(shape::Streams{(int64_t)getCount(), cols(getStreams()),
                                                        getWeights() ? cols(getWeights()) : 0, (int64_t)getOffset(), 0,
                                                        cols(getResult()), false, false, (bool)getWeights()}));
}

LogicalResult StreamExpandOp::verify() {
  return verifyShape(*this, shape::check(shape::Streams{(int64_t)getCount(), cols(getStreams()), cols(getWeights()),
                                                        (int64_t)getOffset(), cols(getBlock()), cols(getResult()), true,
                                                        getComb()}));
}

LogicalResult HeadPadOp::verify() {
  int64_t heads = getHeads(), width = getWidth();
  if (heads <= 0 || width <= 0)
    return emitOpError("heads and width must be positive");
  if (cols(getX()) % heads != 0)
    return emitOpError("input width must be a multiple of heads");
  if (cols(getResult()) != cols(getX()) + heads * width)
    return emitOpError("result width must be the input's plus heads * width");
  if (getExtra() && cols(getExtra()) != heads)
    return emitOpError("extra must hold one value per head");
  if (!std::isfinite(getValue().convertToDouble()))
    return emitOpError("value must be finite");
  return success();
}

LogicalResult GaussianTopkOp::verify() {
  if (!std::isfinite(getMultiplier().convertToDouble()))
    return emitOpError("multiplier must be finite");
  return success();
}

LogicalResult ClampOp::verify() {
  double limit = getLimit().convertToDouble();
  if (!(limit > 0) || !std::isfinite(limit))
    return emitOpError("limit must be positive and finite");
  return success();
}

LogicalResult XieluOp::verify() {
  Type element = llvm::cast<RankedTensorType>(getAlphaP().getType()).getElementType();
  for (Value w : {getAlphaP(), getAlphaN(), getBeta(), getEps()}) {
    auto t = llvm::cast<RankedTensorType>(w.getType());
    if (t.getNumElements() != 1)
      return emitOpError("parameters must each have exactly one element");
    if (t.getElementType() != element)
      return emitOpError("parameters must share one element type");
  }
  if (cols(getResult()) != cols(getX()))
    return emitOpError("result width must equal the input width");
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
  if (getEps().convertToDouble() <= 0)
    return emitOpError("eps must be positive");
  return success();
}

LogicalResult KvAppendOp::verify() {
  int64_t kvHeads = getNumKvHeads(), headDim = getHeadDim();
  if (kvHeads <= 0 || headDim <= 0)
    return emitOpError("head counts and head_dim must be positive");
  if (cols(getK()) != kvHeads * headDim)
    return emitOpError("k width must be num_kv_heads * head_dim");
  if (cols(getV()) % kvHeads != 0)
    return emitOpError("v width must be a multiple of num_kv_heads");
  if (getLatent() && kvHeads != 1)
    return emitOpError("latent rows have one kv head");
  return success();
}

LogicalResult KvLatentAttentionOp::verify() {
  if (failed(verifyShape(*this, shape::check(shape::KvLatentAttention{
                                    (int64_t)getNumHeads(), (int64_t)getLatentDim(), (int64_t)getRopeDim(),
                                    cols(getQLatent()), cols(getQRope()), cols(getResult()),
                                    getSelection() ? cols(getSelection()) : -1}))))
    return failure();
  if (getSelection() && getRetention().getKind() != RetentionKind::all)
    return emitOpError("a selection reads layers that keep every token");
  if (getRetention().getKind() == RetentionKind::compressed)
    return emitOpError("reads a window of tokens or all of them; compressed rows are its entries");
  if (getEntriesRate() < 0 || (getEntriesRate() > 0) != (bool)getEntriesLayerAttr())
    return emitOpError("entries need a positive entries_rate and an entries_layer together");
  if (getEntrySelection() && getEntriesRate() == 0)
    return emitOpError("an entry selection needs entries");
  if (getEntrySelection() && cols(getEntrySelection()) <= 0)
    return emitOpError("an entry selection must list at least one entry per query");
  if (getSinks() && numel(getSinks()) != (int64_t)getNumHeads())
    return emitOpError("sinks must have one logit per head");
  return success();
}

LogicalResult LayerNormOp::verify() {
  int64_t width = cols(getX());
  if (cols(getResult()) != width)
    return emitOpError("result width must be the input width");
  int64_t group = getGroupAttr() ? getGroupAttr().getInt() : width;
  if (group <= 0 || width % group != 0)
    return emitOpError("group must divide the width");
  if (getBias() && !getWeight())
    return emitOpError("a bias needs a weight");
  int64_t entries = 0;
  for (Value w : {getWeight(), getBias()}) {
    if (!w)
      continue;
    auto t = llvm::cast<RankedTensorType>(w.getType());
    if (t.getRank() != 1 || (t.getDimSize(0) != group && t.getDimSize(0) != width) ||
        (entries && t.getDimSize(0) != entries))
      return emitOpError("weight and bias must have one entry per feature of a group or of the row");
    entries = t.getDimSize(0);
  }
  if (getEps().convertToDouble() <= 0)
    return emitOpError("eps must be positive");
  return success();
}

// Index keys are kept for every token, or one per compressed window.
static bool indexRetention(RetentionAttr r) {
  return r.getKind() == RetentionKind::all || r.getKind() == RetentionKind::compressed;
}

LogicalResult KvIndexAppendOp::verify() {
  if (!indexRetention(getRetention()))
    return emitOpError("index keys are kept for every token or per compressed window");
  if (getHeadDim() <= 0)
    return emitOpError("head_dim must be positive");
  if (cols(getIndexKey()) != getHeadDim())
    return emitOpError("index_key width must be head_dim");
  return success();
}

LogicalResult KvIndexSelectOp::verify() {
  if (!indexRetention(getRetention()))
    return emitOpError("index keys are kept for every token or per compressed window");
  return verifyShape(*this, shape::check(shape::KvIndexSelect{(int64_t)getNumHeads(), (int64_t)getHeadDim(),
                                                              (int64_t)getTopk(), cols(getQ()), cols(getWeights()),
                                                              cols(getResult())}));
}

static shape::KvPoolSelect poolSelectShape(KvPoolSelectOp op) {
  shape::KvPoolSelect s{(int64_t)op.getNumHeads(), (int64_t)op.getHeadDim(), (int64_t)op.getPools(),
                        (int64_t)op.getPool(), cols(op.getQ()), op.getWeights() ? cols(op.getWeights()) : 0,
                        cols(op.getResult()), 0, 0, 0};
  if (Value ape = op.getApe()) {
    auto t = tensorType(ape);
    s.ape_rank = t.getRank();
    s.ape_rows = t.getRank() == 2 ? t.getDimSize(0) : 0;
    s.ape_cols = t.getRank() == 2 ? t.getDimSize(1) : 0;
  }
  s.has_weights = (bool)op.getWeights();
  s.has_ape = (bool)op.getApe();
  s.blocks = op.getBlocks();
  s.has_norm = (bool)op.getKeyNorm();
  s.norm = op.getKeyNorm() ? numel(op.getKeyNorm()) : 0;
  s.eps = op.getEpsAttr() ? op.getEpsAttr().getValueAsDouble() : 0.0;
  s.freqs = op.getKeyFreqs() ? (int64_t)op.getKeyFreqs()->size() : 0;
  return s;
}

LogicalResult KvPoolSelectOp::verify() { return verifyShape(*this, shape::check(poolSelectShape(*this))); }

LogicalResult GroupDotOp::verify() {
  return verifyShape(*this, shape::check(shape::GroupDot{(int64_t)getGroups(), cols(getA()), cols(getB()),
                                                         cols(getResult())}));
}

LogicalResult KvBlockSelectOp::verify() {
  return verifyShape(*this, shape::check(shape::KvBlockSelect{(int64_t)getNumHeads(), (int64_t)getHeadDim(),
                                                              (int64_t)getBlock(), (int64_t)getTopk(),
                                                              (int64_t)getLocal(), cols(getQ()), cols(getResult())}));
}

LogicalResult KvAttentionOp::verify() {
  if (failed(verifyShape(*this, shape::check(shape::KvAttention{
                                    (int64_t)getNumHeads(), (int64_t)getNumKvHeads(), (int64_t)getHeadDim(),
                                    (int64_t)getBiasExtent(), cols(getQ()), cols(getResult()),
                                    getDistanceBias() ? cols(getDistanceBias()) : 0, (bool)getDistanceBias(),
                                    getSinks() ? vectorLength(getSinks()) : 0, (bool)getSinks(),
                                    getBlockSelection() ? cols(getBlockSelection()) : 0, (int64_t)getSelectionHeads(),
                                    (int64_t)getSelectionBlock(), (bool)getBlockSelection()}))))
    return failure();
  if (getSoftcap() && getSoftcap()->convertToDouble() <= 0)
    return emitOpError("softcap must be positive");
  if (getKeyEnds() && (getBlockSelection() || getDistanceBias()))
    return emitOpError("key ends take neither a block selection nor a distance bias");
  if (getSinkLogits() && getSinks())
    return emitOpError("takes sinks or sink logits, not both");
  if (getSinkLogits() && cols(getSinkLogits()) != (int64_t)getNumHeads())
    return emitOpError("sink_logits must hold one logit per query head");
  if (auto slopes = getAlibiSlopes()) {
    if ((int64_t)slopes->size() != (int64_t)getNumHeads())
      return emitOpError("alibi_slopes must have one entry per query head");
    if (llvm::any_of(*slopes, [](float s) { return !std::isfinite(s); }))
      return emitOpError("alibi_slopes must be finite");
  }
  return success();
}

LogicalResult KvRopeAppendOp::verify() {
  int64_t headDim = getHeadDim();
  if (failed(verifyShape(*this, shape::check(shape::KvRopeAppend{(int64_t)getNumHeads(), (int64_t)getNumKvHeads(),
                                                                 headDim, (int64_t)getRope().getHeadDim(),
                                                                 cols(getQkv()), cols(getQ())}))))
    return failure();
  if (!getRope().getSections().empty())
    return emitOpError("rotates by one position per token: its schedule must have no sections");
  if (getRope().getRotaryOffset() != 0)
    return emitOpError("rotates the first features of a head: its schedule must have no rotary_offset");
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
  return success();
}

// The torch Conv1d weight layout, so checkpoints load without reshaping.
static shape::Conv1d conv1dShape(StateConv1dOp op) {
  auto w = tensorType(op.getWeight());
  bool rank3 = w.getRank() == 3, rank2 = w.getRank() == 2; // [C, K]: depthwise
  return {cols(op.getX()), w.getRank(), rank3 || rank2 ? w.getDimSize(0) : 0, rank3 ? w.getDimSize(1) : 1,
          rank3 ? w.getDimSize(2) : rank2 ? w.getDimSize(1) : 0, op.getBias() ? vectorLength(op.getBias()) : 0, cols(op.getResult()),
          (bool)op.getBias(), op.getInitial() ? vectorLength(op.getInitial()) : 0, (bool)op.getInitial(),
          op.getTaps() ? cols(op.getTaps()) : 0, (bool)op.getTaps(), (int64_t)op.getDilation()};
}
LogicalResult StateConv1dOp::verify() {
  if (failed(verifyShape(*this, shape::check(conv1dShape(*this)))))
    return failure();
  double scale = getScale().convertToDouble();
  if (!std::isfinite(scale) || scale == 0)
    return emitOpError("scale must be finite and non-zero");
  if (getLagOrder() && conv1dShape(*this).group != 1)
    return emitOpError("lag_order needs a depthwise conv");
  return success();
}

static shape::Shift shiftShape(StateShiftOp op) {
  return {cols(op.getX()), op.getInitial() ? vectorLength(op.getInitial()) : 0, cols(op.getResult()),
          (bool)op.getInitial()};
}
LogicalResult StateShiftOp::verify() { return verifyShape(*this, shape::check(shiftShape(*this))); }

static shape::Wkv wkvShape(WkvOp op) {
  return {cols(op.getK()), cols(op.getV()), numel(op.getTimeDecay()), numel(op.getTimeFirst()), cols(op.getResult())};
}
LogicalResult WkvOp::verify() { return verifyShape(*this, shape::check(wkvShape(*this))); }

static shape::NgramEmbed ngramShape(NgramEmbedOp op) {
  auto t = tensorType(op.getTable());
  int64_t primeSum = 0;
  for (int64_t p : op.getPrimes())
    primeSum += p > 0 ? p : (int64_t)1 << 40; // a prime that is not positive never fits the table
  return {(int64_t)op.getMultipliers().size(), (int64_t)op.getHeadsPerNgram(), (int64_t)op.getPrimes().size(),
          primeSum, t.getRank(), t.getRank() == 2 ? t.getDimSize(0) : 0, t.getRank() == 2 ? t.getDimSize(1) : 0,
          cols(op.getResult()), (int64_t)op.getEos()};
}
LogicalResult NgramEmbedOp::verify() { return verifyShape(*this, shape::check(ngramShape(*this))); }

static shape::WindowPool windowPoolShape(WindowPoolOp op) {
  auto ape = tensorType(op.getApe());
  return {(int64_t)op.getRate(), (int64_t)op.getDim(), cols(op.getX()), ape.getRank(),
          ape.getRank() == 2 ? ape.getDimSize(0) : 0, ape.getRank() == 2 ? ape.getDimSize(1) : 0,
          op.getNorm() ? numel(op.getNorm()) : 0, cols(op.getResult()), op.getOverlap(), (bool)op.getNorm()};
}
LogicalResult WindowPoolOp::verify() {
  if (failed(verifyShape(*this, shape::check(windowPoolShape(*this)))))
    return failure();
  if (auto rope = getRopeAttr();
      rope && (rope.getHeadDim() != (int64_t)getDim() || !rope.getSections().empty() || rope.getInvFreqLong() ||
               rope.getDynamicBase().convertToDouble() != 0))
    return emitOpError("rope must be a plain schedule rotating one head of dim features at one position");
  return success();
}

static shape::RgLru rgLruShape(RgLruOp op) {
  return {cols(op.getX()), cols(op.getInputGate()), cols(op.getRecurrentGate()), numel(op.getRecurrentParam()),
          cols(op.getResult())};
}
LogicalResult RgLruOp::verify() { return verifyShape(*this, shape::check(rgLruShape(*this))); }

static shape::Mlstm mlstmShape(MlstmOp op) {
  return {(int64_t)op.getNumHeads(), (int64_t)op.getKDim(), (int64_t)op.getVDim(), cols(op.getQ()), cols(op.getK()),
          cols(op.getV()), cols(op.getInputGate()), cols(op.getForgetGate()), cols(op.getResult())};
}
LogicalResult MlstmOp::verify() { return verifyShape(*this, shape::check(mlstmShape(*this))); }

static shape::GatedDelta gatedDeltaShape(GatedDeltaOp op) {
  return {(int64_t)op.getNumKHeads(), (int64_t)op.getNumVHeads(), (int64_t)op.getKDim(), (int64_t)op.getVDim(),
          cols(op.getQ()), cols(op.getK()), cols(op.getV()), cols(op.getA()), cols(op.getB()), cols(op.getResult()),
          numel(op.getALog()), numel(op.getDtBias())};
}
LogicalResult GatedDeltaOp::verify() {
  if (failed(verifyShape(*this, shape::check(gatedDeltaShape(*this)))))
    return failure();
  if (getBetaScale().convertToDouble() <= 0)
    return emitOpError("beta_scale must be positive");
  return success();
}

static shape::Kda kdaShape(KdaOp op) {
  return {(int64_t)op.getNumHeads(), (int64_t)op.getKDim(), (int64_t)op.getVDim(), cols(op.getQ()), cols(op.getK()),
          cols(op.getV()), cols(op.getF()), cols(op.getB()), cols(op.getResult()), numel(op.getALog()),
          numel(op.getDtBias())};
}
LogicalResult KdaOp::verify() {
  if (failed(verifyShape(*this, shape::check(kdaShape(*this)))))
    return failure();
  bool bounded = getGate() == DecayGate::bounded_sigmoid;
  if (bounded != (bool)getLowerBoundAttr())
    return emitOpError("lower_bound is given with the bounded_sigmoid gate and only with it");
  if (bounded && !(getLowerBoundAttr().getValueAsDouble() < 0))
    return emitOpError("lower_bound must be negative");
  return success();
}

static shape::Ssd ssdShape(SsdOp op) {
  return {(int64_t)op.getNumHeads(), (int64_t)op.getHeadDim(), (int64_t)op.getNGroups(), (int64_t)op.getStateSize(),
          cols(op.getX()), cols(op.getDt()), cols(op.getB()), cols(op.getC()), cols(op.getResult()),
          numel(op.getALog()), numel(op.getDtBias()), numel(op.getD())};
}
LogicalResult SsdOp::verify() {
  if (failed(verifyShape(*this, shape::check(ssdShape(*this)))))
    return failure();
  double lo = getDtMin().convertToDouble(), hi = getDtMax().convertToDouble();
  if (!(lo <= hi) || lo < 0)
    return emitOpError("dt limits must satisfy 0 <= dt_min <= dt_max");
  return success();
}

static shape::SelectiveScan selectiveScanShape(SelectiveScanOp op) {
  return {cols(op.getX()), (int64_t)op.getNGroups(), (int64_t)op.getStateSize(), cols(op.getDt()),
          op.getZ() ? cols(op.getZ()) : 0, cols(op.getB()), cols(op.getC()), cols(op.getResult()), (bool)op.getZ(),
          numel(op.getALog()), numel(op.getDtBias()), numel(op.getD())};
}
LogicalResult SelectiveScanOp::verify() { return verifyShape(*this, shape::check(selectiveScanShape(*this))); }

static shape::Lightning lightningShape(LightningOp op) {
  return {(int64_t)op.getNumHeads(), (int64_t)op.getHeadDim(), (int64_t)op.getDecay().size(), cols(op.getQ()),
          cols(op.getK()), cols(op.getV()), cols(op.getResult()), (int64_t)op.getRanks()};
}
LogicalResult LightningOp::verify() {
  if (failed(verifyShape(*this, shape::check(lightningShape(*this)))))
    return failure();
  for (double s : getDecay())
    if (!(s >= 0) || !std::isfinite(s))
      return emitOpError("decay rates must be finite and not negative");
  return success();
}

LogicalResult RowsGatherOp::verify() {
  if (cols(getResult()) != cols(getX()))
    return emitOpError("result width must equal the input width");
  return success();
}

LogicalResult RowsInjectOp::verify() {
  if (cols(getResult()) != cols(getX()) || cols(getEmbeds()) != cols(getX()))
    return emitOpError("embeddings and result must have the input's width");
  if (!tensorType(getEmbeds()).getElementType().isF32())
    return emitOpError("embeddings must be f32");
  return success();
}

LogicalResult MoeRouteOp::verify() {
  int64_t sinks = getSinks(), experts = cols(getLogits()) - sinks, k = getK();
  if (sinks < 0 || (sinks > 0 && (getScore() != RouteScore::sigmoid || getGroupsAttr() || getRenorm())))
    return emitOpError("sinks must not be negative, and need sigmoid scores without groups or renorm");
  if (k <= 0 || k > experts)
    return emitOpError("k must be in [1, experts]");
  if (sinks == 0 && (cols(getWeights()) != k || cols(getIds()) != k))
    return emitOpError("weights and ids must have k columns");
  if (cols(getWeights()) != sinks + k || cols(getIds()) != sinks + k)
    return emitOpError("with sinks, weights and ids must have sinks + k columns");
  if (getSelectionBias()) {
    if (getScore() == RouteScore::topk_softmax)
      return emitOpError("a selection bias needs softmax or sigmoid scores");
    auto t = tensorType(getSelectionBias());
    if (t.getRank() != 1 || t.getDimSize(0) != experts)
      return emitOpError("selection bias must have one entry per expert");
  }
  if (getRenormEps().convertToDouble() < 0)
    return emitOpError("renorm_eps must not be negative");
  if (getBiasOnLogits() && !getSelectionBias())
    return emitOpError("bias_on_logits needs a selection bias");
  bool mixer = getScore() == RouteScore::sparsemixer;
  if (mixer && (getSelectionBias() || getGroupsAttr() || getRenorm()))
    return emitOpError("sparsemixer scores take no selection bias, groups or renorm");
  if (getThreshold().convertToDouble() < 0 || (!mixer && getThreshold().convertToDouble() != 0))
    return emitOpError("a threshold must not be negative, and needs sparsemixer scores");
  if ((bool)getTable() != (bool)getTokens())
    return emitOpError("a routing table needs the tokens, and the tokens a table");
  if (getTable()) {
    auto t = tensorType(getTable());
    if (t.getRank() != 2 || t.getDimSize(1) != k)
      return emitOpError("routing table must be [vocab, k]");
    if (getSelectionBias() || getGroupsAttr() || sinks > 0 || mixer || getScore() == RouteScore::topk_softmax)
      return emitOpError("a routing table takes no selection bias, groups or sinks, and needs per-expert scores");
  }
  if (auto groups = getGroupsAttr()) {
    if (getScore() == RouteScore::topk_softmax)
      return emitOpError("route groups need softmax or sigmoid scores");
    int64_t count = groups.getCount(), keep = groups.getKeep();
    if (experts % count != 0)
      return emitOpError("route groups must divide the experts evenly");
    int64_t perGroup = experts / count;
    if (groups.getScore() == GroupScore::top2_sum && perGroup < 2)
      return emitOpError("top2_sum route groups need at least two experts each");
    if (k > keep * perGroup)
      return emitOpError("k must not exceed the experts of the kept groups (keep * experts / count = ")
             << keep * perGroup << ")";
  }
  return success();
}

LogicalResult MoeExpertsOp::verify() {
  bool ungated = getUngated();
  if (ungated && !llvm::isa<ActivationAttr>(getAct()))
    return emitOpError("ungated experts take a plain activation");
  if (ungated && getLayout() != GluLayout::halves)
    return emitOpError("ungated experts have no gate layout");
  auto gu = tensorType(getGateUp()), down = tensorType(getDown());
  if (gu.getRank() != 3 || down.getRank() != 3)
    return emitOpError("expert weights must be [experts, out, in]");
  int64_t e = gu.getDimSize(0), i2 = gu.getDimSize(1), h = gu.getDimSize(2);
  int64_t inter = ungated ? i2 : i2 / 2;
  if (down.getDimSize(0) != e || down.getDimSize(1) != h || down.getDimSize(2) != inter ||
      (!ungated && i2 % 2 != 0))
    return emitOpError(ungated ? "ungated experts need gate_up [experts, intermediate, hidden] and down "
                                 "[experts, hidden, intermediate]"
                               : "down must be [experts, hidden, intermediate] matching gate_up");
  if (cols(getX()) != h || cols(getResult()) != h)
    return emitOpError("input and result width must equal the hidden size");
  if (cols(getIds()) != cols(getWeights()))
    return emitOpError("ids and weights must have the same number of columns");
  int64_t identity = getIdentityExperts(), null = getNullExperts();
  if (identity < 0 || null < 0)
    return emitOpError("identity_experts and null_experts must not be negative");
  if (getExpertRanks() < 1)
    return emitOpError("expert_ranks must be at least 1");
  // Under expert parallelism the weights hold one rank's share; the router scores them all.
  int64_t routed = e * getExpertRanks();
  if (auto route = getIds().getDefiningOp<MoeRouteOp>(); route && cols(route.getLogits()) != routed + identity + null)
    return emitOpError("the router must score the experts plus identity_experts and null_experts (")
           << routed + identity + null << " columns)";
  if ((bool)getGateUpBias() != (bool)getDownBias())
    return emitOpError("give both biases or neither");
  if (getGateUpBias()) {
    auto b1 = tensorType(getGateUpBias()), b2 = tensorType(getDownBias());
    if (b1.getRank() != 2 || b1.getDimSize(0) != e || b1.getDimSize(1) != i2 ||
        b2.getRank() != 2 || b2.getDimSize(0) != e || b2.getDimSize(1) != h)
      return emitOpError("biases must be [experts, gate_up rows] and [experts, hidden]");
  }
  return success();
}

LogicalResult MoeSlotLinearOp::verify() {
  auto w = tensorType(getWeight());
  if (w.getRank() != 3)
    return emitOpError("weight must be [experts, out, in]");
  int64_t n = w.getDimSize(1), in = w.getDimSize(2), k = cols(getIds());
  if (!getWeights() && (cols(getX()) != in || cols(getResult()) != k * n))
    return emitOpError("without weights, x must be [tokens, in] and the result [tokens, choices * out]");
  if (getWeights() && (cols(getX()) != k * in || cols(getResult()) != n))
    return emitOpError("with weights, x must be [tokens, choices * in] and the result [tokens, out]");
  if (getWeights() && cols(getWeights()) != k)
    return emitOpError("ids and weights must have the same number of columns");
  return success();
}

// The states the recurrences keep per request, as runtime/schema/shape_rules.h gives them.
template <size_t N> static SmallVector<int64_t> shapeVector(const std::array<int64_t, N> &a) { return {a.begin(), a.end()}; }
SmallVector<int64_t> StateConv1dOp::getStateShape() { return shapeVector(shape::stateShape(conv1dShape(*this))); }
SmallVector<int64_t> StateShiftOp::getStateShape() { return shapeVector(shape::stateShape(shiftShape(*this))); }
SmallVector<int64_t> GatedDeltaOp::getStateShape() { return shapeVector(shape::stateShape(gatedDeltaShape(*this))); }
SmallVector<int64_t> KdaOp::getStateShape() { return shapeVector(shape::stateShape(kdaShape(*this))); }
SmallVector<int64_t> SsdOp::getStateShape() { return shapeVector(shape::stateShape(ssdShape(*this))); }
SmallVector<int64_t> LightningOp::getStateShape() { return shapeVector(shape::stateShape(lightningShape(*this))); }
SmallVector<int64_t> WkvOp::getStateShape() { return shapeVector(shape::stateShape(wkvShape(*this))); }
SmallVector<int64_t> NgramEmbedOp::getStateShape() { return shapeVector(shape::stateShape(ngramShape(*this))); }
SmallVector<int64_t> WindowPoolOp::getStateShape() { return shapeVector(shape::stateShape(windowPoolShape(*this))); }
SmallVector<int64_t> RgLruOp::getStateShape() { return shapeVector(shape::stateShape(rgLruShape(*this))); }
SmallVector<int64_t> MlstmOp::getStateShape() { return shapeVector(shape::stateShape(mlstmShape(*this))); }
SmallVector<int64_t> SelectiveScanOp::getStateShape() {
  return shapeVector(shape::stateShape(selectiveScanShape(*this)));
}

LogicalResult AllReduceOp::verify() {
  if (getRanks() < 2)
    return emitOpError("ranks must be at least 2");
  if (cols(getX()) != cols(getResult()))
    return emitOpError("result must have the width of x");
  if (getBias() && tensorType(getBias()).getNumElements() != cols(getResult()))
    return emitOpError("bias must have one element per column");
  return success();
}

LogicalResult AllGatherOp::verify() {
  if (getRanks() < 2)
    return emitOpError("ranks must be at least 2");
  if (cols(getX()) * getRanks() != cols(getResult()))
    return emitOpError("result width must be ranks times the width of x");
  return success();
}

// Elementwise ops print one type while their operands and result share it (always before
// cbc-assign-device-types) and a functional type once the device types differ.
static ParseResult parseRowsTypes(OpAsmParser &parser, ArrayRef<Type *> operands, Type &result) {
  Type type;
  llvm::SMLoc loc = parser.getCurrentLocation();
  if (parser.parseType(type))
    return failure();
  auto fn = llvm::dyn_cast<FunctionType>(type);
  if (!fn) {
    for (Type *t : operands)
      *t = type;
    result = type;
    return success();
  }
  if (fn.getNumInputs() != operands.size() || fn.getNumResults() != 1)
    return parser.emitError(loc, "expected ") << operands.size() << " operand types and one result type";
  for (auto [t, in] : llvm::zip(operands, fn.getInputs()))
    *t = in;
  result = fn.getResult(0);
  return success();
}
static ParseResult parseRowsTypes(OpAsmParser &parser, Type &x, Type &result) {
  return parseRowsTypes(parser, {&x}, result);
}
static ParseResult parseRowsTypes(OpAsmParser &parser, Type &lhs, Type &rhs, Type &result) {
  return parseRowsTypes(parser, {&lhs, &rhs}, result);
}
static void printRowsTypes(OpAsmPrinter &p, ArrayRef<Type> operands, Type result) {
  if (llvm::all_of(operands, [&](Type t) { return t == result; }))
    p << result;
  else
    p << FunctionType::get(result.getContext(), operands, result);
}
static void printRowsTypes(OpAsmPrinter &p, Operation *, Type x, Type result) { printRowsTypes(p, {x}, result); }
static void printRowsTypes(OpAsmPrinter &p, Operation *, Type lhs, Type rhs, Type result) {
  printRowsTypes(p, {lhs, rhs}, result);
}

#include "dialects/cbc/CbcInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "dialects/cbc/CbcOps.cpp.inc"
