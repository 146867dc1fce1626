// Dense math: embedding, norms, elementwise ops, split and concat, RoPE, row gathers, GEMMs
// and greedy sampling.
#include "codegen/cuda/Emitter.h"

namespace cbc::codegen::cuda {

using namespace mlir;

// Threads per block for a norm over groups of g features.
static int normBlock(int64_t g) { return g >= 256 ? 256 : g >= 128 ? 128 : g >= 64 ? 64 : 32; }

// Elementwise kernels: one thread per element of `out`, 256 per block.
template <class S>
static void elementwise(Emitter &e, llvm::StringRef hint, const Instance &inst, Value out, SlotArgs<S> args) {
  int k = e.kernel(hint, "elementwise.cuh", inst);
  args.set(S::Rows, Emitter::runtime(e.rowsVar(out)));
  LaunchOut &l = e.launch(k, 256, args);
  l.grid[0] = {e.rowsVar(out), cols(out), 256, 0};
}

void emitEmbed(Emitter &e, EmbedOp op) {
  using S = slots::Embed;
  int64_t H = cols(op.getResult()), ranks = op.getVocabRanks();
  int k = e.kernel("embed", "embed.cuh", Instance("embed").type(op.getTable()).type(op.getResult()).integer(H));
  int64_t held = ranks > 1 ? llvm::cast<RankedTensorType>(op.getTable().getType()).getDimSize(0) : 0;
  SlotArgs<S> args;
  args.set(S::Tokens, e.arg(op.getTokens()))
      .set(S::Table, e.arg(op.getTable()))
      .set(S::Out, e.arg(op.getResult()))
      .set(S::Scale, op.getScale().convertToDouble())
      .set(S::Offset, Emitter::integer(op.getOffset()))
      .set(S::Rows, Emitter::integer(op.getOovRowAttr() ? llvm::cast<RankedTensorType>(op.getTable().getType()).getDimSize(0) : 0))
      .set(S::OovRow, Emitter::integer(op.getOovRowAttr() ? op.getOovRowAttr().getInt() : 0))
      .set(S::Held, Emitter::integer(held))
      .set(S::Rank, ranks > 1 ? Emitter::runtime(RuntimeVar::Rank) : Emitter::integer(0));
  LaunchOut &l = e.launch(k, 128, args);
  l.grid[0] = {RuntimeVar::NumTokens, 1, 1, 0};
}

void emitRmsNorm(Emitter &e, RmsNormOp op) {
  using S = slots::RmsNorm;
  int64_t W = cols(op.getX());
  int64_t G = op.getGroupAttr() ? op.getGroupAttr().getInt() : W;
  int k = e.kernel("rms_norm", "norm.cuh",
                   Instance("rms_norm").type(op.getX()).type(op.getResult()).type(op.getWeight()).integer(G));
  SlotArgs<S> args;
  bool perRow = op.getWeight() && llvm::cast<RankedTensorType>(op.getWeight().getType()).getDimSize(0) != G;
  args.set(S::X, e.arg(op.getX()))
      .set(S::Out, e.arg(op.getResult()))
      .set(S::Weight, e.arg(op.getWeight()))
      .set(S::RowGroups, Emitter::integer(perRow ? W / G : 0))
      .set(S::Eps, op.getEps().convertToDouble())
      .set(S::Offset, op.getOffset().convertToDouble());
  LaunchOut &l = e.launch(k, normBlock(G), args);
  l.grid[0] = {e.rowsVar(op.getX()), W / G, 1, 0};
}

// One warp per (row, group).
void emitGroupDot(Emitter &e, GroupDotOp op) {
  using S = slots::GroupDot;
  Value out = op.getResult();
  int64_t NG = op.getGroups(), D = cols(op.getA()) / NG;
  int k = e.kernel("group_dot", "norm.cuh",
                   Instance("group_dot").type(op.getA()).type(op.getB()).type(out).integer(NG).integer(D)
                       .choice(op.getAct()));
  SlotArgs<S> args;
  args.set(S::A, e.arg(op.getA()))
      .set(S::B, e.arg(op.getB()))
      .set(S::Out, e.arg(out))
      .set(S::Rows, Emitter::runtime(e.rowsVar(out)))
      .set(S::Scale, op.getScale().convertToDouble());
  LaunchOut &l = e.launch(k, 128, args); // four warps, four groups a block
  l.grid[0] = {e.rowsVar(out), NG, 4, 0};
}

// One block per group of G features (a whole row by default).
void emitLayerNorm(Emitter &e, LayerNormOp op) {
  using S = slots::LayerNorm;
  int64_t W = cols(op.getX());
  int64_t G = op.getGroupAttr() ? op.getGroupAttr().getInt() : W;
  bool perFeature = op.getWeight() && llvm::cast<RankedTensorType>(op.getWeight().getType()).getDimSize(0) != G;
  int k = e.kernel("layer_norm", "norm.cuh",
                   Instance("layer_norm")
                       .type(op.getX())
                       .type(op.getResult())
                       .type(op.getWeight())
                       .type(op.getBias())
                       .integer(G));
  SlotArgs<S> args;
  args.set(S::X, e.arg(op.getX()))
      .set(S::Out, e.arg(op.getResult()))
      .set(S::Weight, e.arg(op.getWeight()))
      .set(S::Bias, e.arg(op.getBias()))
      .set(S::RowGroups, Emitter::integer(perFeature ? W / G : 0))
      .set(S::Eps, op.getEps().convertToDouble())
      .set(S::Offset, op.getOffset().convertToDouble());
  LaunchOut &l = e.launch(k, normBlock(G), args);
  l.grid[0] = {e.rowsVar(op.getX()), W / G, 1, 0};
}

void emitDiffHeads(Emitter &e, DiffHeadsOp op) {
  using S = slots::DiffHeads;
  Value out = op.getResult();
  int64_t d = llvm::cast<RankedTensorType>(op.getQ1().getType()).getDimSize(0);
  SlotArgs<S> args;
  args.set(S::X, e.arg(op.getX())).set(S::Q1, e.arg(op.getQ1())).set(S::K1, e.arg(op.getK1()));
  args.set(S::Q2, e.arg(op.getQ2())).set(S::K2, e.arg(op.getK2())).set(S::Out, e.arg(out));
  args.set(S::LambdaInit, op.getLambdaInit().convertToDouble());
  elementwise(e, "diff_heads",
              Instance("diff_heads").type(op.getX()).type(op.getQ1()).type(out).integer(cols(out)).integer(d), out,
              args);
}

void emitActQuant(Emitter &e, ActQuantOp op) {
  using S = slots::ActQuant;
  int64_t W = cols(op.getX());
  int k = e.kernel("act_quant", "norm.cuh", Instance("act_quant").type(op.getX()).type(op.getResult()).integer(W));
  SlotArgs<S> args;
  args.set(S::X, e.arg(op.getX())).set(S::Out, e.arg(op.getResult()));
  LaunchOut &l = e.launch(k, normBlock(W), args);
  l.grid[0] = {e.rowsVar(op.getX()), 1, 1, 0};
}

// One block per group.
void emitL2Clip(Emitter &e, L2ClipOp op) {
  using S = slots::L2Clip;
  int64_t W = cols(op.getX()), G = op.getGroup();
  int k = e.kernel("l2_clip", "norm.cuh",
                   Instance("l2_clip").type(op.getX()).type(op.getScale()).type(op.getResult()).integer(G).integer(W));
  SlotArgs<S> args;
  args.set(S::X, e.arg(op.getX()))
      .set(S::Scale, e.arg(op.getScale()))
      .set(S::Out, e.arg(op.getResult()))
      .set(S::Threshold, op.getThreshold().convertToDouble())
      .set(S::Eps, op.getEps().convertToDouble());
  LaunchOut &l = e.launch(k, normBlock(G), args);
  l.grid[0] = {e.rowsVar(op.getX()), W / G, 1, 0};
}

void emitMatchRms(Emitter &e, MatchRmsOp op) {
  using S = slots::MatchRms;
  int64_t W = cols(op.getX()), RW = cols(op.getRef());
  int k = e.kernel("match_rms", "norm.cuh",
                   Instance("match_rms").type(op.getX()).type(op.getRef()).type(op.getResult()).integer(W).integer(RW));
  SlotArgs<S> args;
  args.set(S::X, e.arg(op.getX()))
      .set(S::Ref, e.arg(op.getRef()))
      .set(S::Out, e.arg(op.getResult()))
      .set(S::Floor, op.getFloor().convertToDouble());
  LaunchOut &l = e.launch(k, normBlock(std::max(W, RW)), args);
  l.grid[0] = {e.rowsVar(op.getX()), 1, 1, 0};
}

void emitHeadPad(Emitter &e, HeadPadOp op) {
  using S = slots::HeadPad;
  Value out = op.getResult();
  int64_t heads = op.getHeads(), width = op.getWidth(), D = cols(op.getX()) / heads;
  SlotArgs<S> args;
  args.set(S::X, e.arg(op.getX())).set(S::Extra, e.arg(op.getExtra())).set(S::Out, e.arg(out));
  args.set(S::Value, op.getValue().convertToDouble());
  elementwise(e, "head_pad",
              Instance("head_pad").type(op.getX()).type(op.getExtra()).type(out).integer(heads).integer(D).integer(width),
              out, args);
}

void emitGaussianTopk(Emitter &e, GaussianTopkOp op) {
  using S = slots::GaussianTopk;
  int64_t W = cols(op.getX());
  int k = e.kernel("gaussian_topk", "norm.cuh",
                   Instance("gaussian_topk").type(op.getX()).type(op.getResult()).integer(W));
  SlotArgs<S> args;
  args.set(S::X, e.arg(op.getX())).set(S::Out, e.arg(op.getResult())).set(S::Multiplier, op.getMultiplier().convertToDouble());
  LaunchOut &l = e.launch(k, normBlock(W), args);
  l.grid[0] = {e.rowsVar(op.getX()), 1, 1, 0};
}

// Residual add and RMS norm: one pass writes the sum and the normalised row.
void emitAddRmsNorm(Emitter &e, AddRmsNormOp op) {
  using S = slots::AddRmsNorm;
  int64_t W = cols(op.getLhs());
  int k = e.kernel("add_rms_norm", "norm.cuh",
                   Instance("add_rms_norm")
                       .type(op.getLhs())
                       .type(op.getRhs())
                       .type(op.getSum())
                       .type(op.getNormed())
                       .type(op.getWeight())
                       .integer(W));
  SlotArgs<S> args;
  args.set(S::Lhs, e.arg(op.getLhs()))
      .set(S::Rhs, e.arg(op.getRhs()))
      .set(S::Sum, e.arg(op.getSum()))
      .set(S::Normed, e.arg(op.getNormed()))
      .set(S::Weight, e.arg(op.getWeight()))
      .set(S::Eps, op.getEps().convertToDouble())
      .set(S::Offset, op.getOffset().convertToDouble());
  LaunchOut &l = e.launch(k, 256, args);
  l.grid[0] = {e.rowsVar(op.getLhs()), 1, 1, 0};
}

void emitRmsNormGated(Emitter &e, RmsNormGatedOp op) {
  using S = slots::RmsNormGated;
  int64_t W = cols(op.getX());
  int64_t G = op.getGroupAttr() ? op.getGroupAttr().getInt() : W;
  Value w = op.getWeight();
  // A weight with one entry per feature of the row rather than of the group.
  bool perRow = w && llvm::cast<RankedTensorType>(w.getType()).getDimSize(0) == W && W != G;
  int k = e.kernel("rms_norm_gated", "norm.cuh",
                   Instance("rms_norm_gated")
                       .type(op.getX())
                       .type(op.getZ())
                       .type(op.getResult())
                       .type(w)
                       .integer(G)
                       .integer(perRow ? W : 0)
                       .choice(op.getAct())
                       .choice(op.getOrder()));
  SlotArgs<S> args;
  args.set(S::X, e.arg(op.getX()))
      .set(S::Z, e.arg(op.getZ()))
      .set(S::Out, e.arg(op.getResult()))
      .set(S::Weight, e.arg(w))
      .set(S::Eps, op.getEps().convertToDouble())
      .set(S::Offset, op.getOffset().convertToDouble());
  LaunchOut &l = e.launch(k, normBlock(G), args);
  l.grid[0] = {e.rowsVar(op.getX()), W / G, 1, 0};
}

void emitAdd(Emitter &e, AddOp op) {
  using S = slots::Add;
  Value out = op.getResult();
  SlotArgs<S> args;
  args.set(S::Lhs, e.arg(op.getLhs())).set(S::Rhs, e.arg(op.getRhs())).set(S::Out, e.arg(out));
  auto rhs = llvm::cast<RankedTensorType>(op.getRhs().getType());
  int64_t row = rhs.getRank() == 1 ? rhs.getDimSize(0) : 0; // a weight added to every row
  elementwise(e, "add",
              Instance("add").type(op.getLhs()).type(op.getRhs()).type(out).integer(cols(out)).integer(row), out,
              args);
}

void emitAct(Emitter &e, ActOp op) {
  using S = slots::Act;
  Value out = op.getResult();
  SlotArgs<S> args;
  args.set(S::X, e.arg(op.getX())).set(S::Out, e.arg(out)).set(S::Scale, op.getScale().convertToDouble());
  elementwise(e, "act", Instance("activation").type(op.getX()).type(out).integer(cols(out)).choice(op.getAct()),
              out, args);
}

void emitSoftcap(Emitter &e, SoftcapOp op) {
  using S = slots::Softcap;
  Value out = op.getResult();
  SlotArgs<S> args;
  args.set(S::X, e.arg(op.getX())).set(S::Out, e.arg(out)).set(S::Cap, op.getCap().convertToDouble());
  elementwise(e, "softcap", Instance("softcap").type(op.getX()).type(out).integer(cols(out)), out, args);
}

void emitClamp(Emitter &e, ClampOp op) {
  using S = slots::Clamp;
  Value out = op.getResult();
  SlotArgs<S> args;
  args.set(S::X, e.arg(op.getX())).set(S::Out, e.arg(out)).set(S::Limit, op.getLimit().convertToDouble());
  elementwise(e, "clamp", Instance("clamp").type(op.getX()).type(out).integer(cols(out)), out, args);
}

// The four parameters share one element type (the verifier sees to their shapes).
void emitXielu(Emitter &e, XieluOp op) {
  using S = slots::Xielu;
  Value out = op.getResult();
  SlotArgs<S> args;
  args.set(S::X, e.arg(op.getX())).set(S::AlphaP, e.arg(op.getAlphaP())).set(S::AlphaN, e.arg(op.getAlphaN()));
  args.set(S::Beta, e.arg(op.getBeta())).set(S::Eps, e.arg(op.getEps())).set(S::Out, e.arg(out));
  elementwise(e, "xielu", Instance("xielu").type(op.getX()).type(op.getAlphaP()).type(out).integer(cols(out)), out,
              args);
}

// x * sigmoid(g) (gate) and x * g (mul), one g per group of columns (per element, head or row).
template <class Op> static void emitScale(Emitter &e, Op op, llvm::StringRef name) {
  using S = slots::Gate;
  Value out = op.getResult();
  SlotArgs<S> args;
  args.set(S::X, e.arg(op.getX())).set(S::G, e.arg(op.getG())).set(S::Out, e.arg(out));
  elementwise(e, name,
              Instance(name).type(op.getX()).type(op.getG()).type(out).integer(cols(out)).integer(cols(op.getG())),
              out, args);
}
void emitGate(Emitter &e, GateOp op) { emitScale(e, op, "gate"); }
void emitMul(Emitter &e, MulOp op) {
  auto g = llvm::cast<RankedTensorType>(op.getG().getType());
  if (g.getRank() == 2 && g.isDynamicDim(0))
    return emitScale(e, op, "mul");
  // A weight on every row: a learned scalar, or one entry per group of columns.
  using S = slots::Gate;
  Value out = op.getResult();
  SlotArgs<S> args;
  args.set(S::X, e.arg(op.getX())).set(S::G, e.arg(op.getG())).set(S::Out, e.arg(out));
  elementwise(e, "mul_weight",
              Instance("mul_weight").type(op.getX()).type(op.getG()).type(out).integer(cols(out)).integer(g.getNumElements()),
              out, args);
}

void emitGlu(Emitter &e, GluOp op) {
  using S = slots::Glu;
  Value out = op.getResult();
  GluUnit unit = gluUnit(op.getAct(), false);
  SlotArgs<S> args;
  args.set(S::X, e.arg(op.getX())).set(S::Out, e.arg(out)).set(S::Limit, unit.limit).set(S::Alpha, unit.alpha);
  args.set(S::UpOffset, unit.up_offset);
  Instance inst("glu");
  inst.type(op.getX()).type(out).integer(cols(out)).choice(op.getLayout()).choice(unit.kind).choice(unit.act);
  elementwise(e, "glu", inst, out, args);
}

void emitSplit(Emitter &e, SplitOp op) {
  using S = slots::Split;
  Value x = op.getX();
  Instance inst("split");
  inst.type(x).integer(cols(x));
  SlotArgs<S> args((int)op.getNumResults());
  args.set(S::X, e.arg(x)).set(S::Rows, Emitter::runtime(e.rowsVar(x)));
  for (auto [k, r] : llvm::enumerate(op.getResults())) {
    inst.instance(Instance("col").type(r).integer(cols(r)));
    args.setAt(S::Parts, k, e.arg(r));
  }
  int k = e.kernel("split", "elementwise.cuh", inst);
  LaunchOut &l = e.launch(k, 256, args);
  l.grid[0] = {e.rowsVar(x), cols(x), 256, 0};
}

// The inverse of split: each output element copies from the input its column falls in.
void emitConcat(Emitter &e, ConcatOp op) {
  using S = slots::Concat;
  Value out = op.getResult();
  Instance inst("concat");
  inst.type(out).integer(cols(out));
  SlotArgs<S> args((int)op.getInputs().size());
  args.set(S::Out, e.arg(out));
  for (auto [k, x] : llvm::enumerate(op.getInputs())) {
    inst.instance(Instance("col").type(x).integer(cols(x)));
    args.setAt(S::Parts, k, e.arg(x));
  }
  elementwise(e, "concat", inst, out, args);
}

void emitRope(Emitter &e, RopeOp op) {
  using S = slots::Rope;
  RopeAttr rope = op.getRope();
  Instance inst("rope");
  inst.type(op.getX()).type(op.getResult()).integer(cols(op.getX())).integer(rope.getHeadDim());
  addRopeArgs(inst, e, rope);
  std::vector<float> sections(rope.getSections().begin(), rope.getSections().end());
  inst.table(sections.empty() ? "" : e.table(sections));
  Value logScale = op.getFreqLogScale();
  if (rope.getRotaryOffset() != 0 || logScale)
    inst.integer(rope.getRotaryOffset());
  if (logScale)
    inst.type(logScale);
  int k = e.kernel("rope", "rope.cuh", inst);
  SlotArgs<S> args;
  args.set(S::X, e.arg(op.getX()))
      .set(S::Positions, e.arg(op.getPositions()))
      .set(S::SeqIds, e.arg(op.getSeqIds()))
      .set(S::PromptLens, e.arg(op.getPromptLens()))
      .set(S::SectionPositions, e.arg(op.getSectionPositions()))
      .set(S::FreqLogScale, e.arg(logScale))
      .set(S::Out, e.arg(op.getResult()))
      .set(S::Tokens, Emitter::runtime(RuntimeVar::NumTokens));
  setRopeSlots(args, rope);
  LaunchOut &l = e.launch(k, 128, args);
  l.grid[0] = {RuntimeVar::NumTokens, 1, 1, 0};
}

void emitPositionScale(Emitter &e, PositionScaleOp op) {
  using S = slots::PositionScale;
  Value out = op.getResult();
  SlotArgs<S> args;
  args.set(S::X, e.arg(op.getX()))
      .set(S::Positions, e.arg(op.getPositions()))
      .set(S::Out, e.arg(out))
      .set(S::Beta, op.getBeta().convertToDouble());
  Instance inst("position_scale");
  inst.type(op.getX()).type(out).integer(cols(out)).integer(op.getPeriod()).integer(op.getOffset());
  inst.integer((int64_t)op.getForm());
  elementwise(e, "position_scale", inst, out, args);
}

void emitHeadPositionScale(Emitter &e, HeadPositionScaleOp op) {
  using S = slots::HeadPositionScale;
  Value out = op.getResult();
  SlotArgs<S> args;
  args.set(S::X, e.arg(op.getX()))
      .set(S::Positions, e.arg(op.getPositions()))
      .set(S::Scale, e.arg(op.getScale()))
      .set(S::Bias, e.arg(op.getBias()))
      .set(S::Out, e.arg(out));
  Instance inst("head_position_scale");
  inst.type(op.getX()).type(op.getScale()).type(out).integer(cols(out)).integer(llvm::cast<RankedTensorType>(op.getScale().getType()).getNumElements());
  elementwise(e, "head_position_scale", inst, out, args);
}

void emitSinusoidalPosition(Emitter &e, SinusoidalPositionOp op) {
  using S = slots::SinusoidalPosition;
  Value out = op.getResult();
  IntegerAttr pad = op.getPaddingRowAttr();
  bool power = op.getForm() == SinusoidForm::power;
  SlotArgs<S> args;
  args.set(S::Positions, e.arg(op.getPositions()))
      .set(S::Out, e.arg(out))
      .set(S::Step, power ? (float)op.getBase().convertToDouble()
                          : (float)(-std::log(op.getBase().convertToDouble()) / (double)(cols(out) / 2 - 1)));
  Instance inst("sinusoidal_position");
  inst.type(out).integer(cols(out)).integer(op.getOffsetAttr().getInt()).integer(pad ? pad.getInt() : -1);
  if (power) // only then: the log-step instances keep their spelling
    inst.flag(true);
  elementwise(e, "sinusoidal_position", inst, out, args);
}

// Per head: block (token tile, head, output tile).
void emitHeadLinear(Emitter &e, HeadLinearOp op) {
  using S = slots::HeadLinear;
  auto w = llvm::cast<RankedTensorType>(op.getWeight().getType());
  int64_t heads = op.getHeads(), R = w.getDimSize(0) / heads, C = w.getDimSize(1);
  int64_t out = op.getTranspose() ? C : op.getRows();
  int k = e.kernel("head_linear", "head_linear.cuh",
                   Instance("head_linear")
                       .type(op.getX())
                       .type(op.getWeight())
                       .type(op.getResult())
                       .integer(heads)
                       .integer(R)
                       .integer(C)
                       .integer(op.getOffset())
                       .integer(op.getRows())
                       .flag(op.getTranspose()));
  SlotArgs<S> args;
  args.set(S::X, e.arg(op.getX()))
      .set(S::W, e.arg(op.getWeight()))
      .set(S::Out, e.arg(op.getResult()))
      .set(S::Rows, Emitter::runtime(e.rowsVar(op.getX())));
  LaunchOut &l = e.launch(k, kernels::kHeadLinearThreads, args);
  l.grid[0] = {e.rowsVar(op.getX()), 1, kernels::headLinearTokens(op.getTranspose() ? op.getRows() : C), 0};
  l.grid[1] = {std::nullopt, 1, 1, heads};
  l.grid[2] = {std::nullopt, 1, 1, (out + kernels::kHeadLinearThreads - 1) / kernels::kHeadLinearThreads};
}

void emitRowsGather(Emitter &e, RowsGatherOp op) {
  using S = slots::Gather;
  int k = e.kernel("gather_rows", "gather.cuh",
                   Instance("gather_rows").type(op.getX()).type(op.getResult()).integer(cols(op.getX())));
  SlotArgs<S> args;
  args.set(S::X, e.arg(op.getX())).set(S::Rows, e.arg(op.getRows())).set(S::Out, e.arg(op.getResult()));
  LaunchOut &l = e.launch(k, 128, args);
  l.grid[0] = {RuntimeVar::NumLogitRows, 1, 1, 0};
}

void emitRowsInject(Emitter &e, RowsInjectOp op) {
  using S = slots::Inject;
  int k = e.kernel("inject_rows", "gather.cuh",
                   Instance("inject_rows").type(op.getX()).type(op.getResult()).integer(cols(op.getX())));
  SlotArgs<S> args;
  args.set(S::X, e.arg(op.getX()))
      .set(S::Rows, e.arg(op.getRows()))
      .set(S::Embeds, e.arg(op.getEmbeds()))
      .set(S::Out, e.arg(op.getResult()))
      .set(S::Injected, Emitter::runtime(RuntimeVar::NumInjected));
  LaunchOut &l = e.launch(k, 128, args);
  l.grid[0] = {e.rowsVar(op.getX()), 1, 1, 0};
}

void emitLinear(Emitter &e, LinearOp op) {
  LaunchOut &l = e.newLaunch();
  l.gemm = true;
  l.gemm_x = e.id(op.getX());
  l.gemm_w = e.id(op.getWeight());
  l.gemm_bias = op.getBias() ? e.id(op.getBias()) : -1;
  l.gemm_out = e.id(op.getResult());
  l.grid[0] = {e.rowsVar(op.getX()), 1, 1, 0};
}

int emitArgmax(Emitter &e, Value logits) {
  return e.kernel("argmax", "argmax.cuh", Instance("argmax").type(logits).integer(cols(logits)));
}

} // namespace cbc::codegen::cuda
