// Per-request recurrences: short convolutions and the scans, each reading its layer's state
// pool in the request's input unit and writing it in its output unit.
#include "codegen/cuda/Emitter.h"

#include <algorithm>
#include <limits>

namespace cbc::codegen::cuda {

using namespace mlir;


// The step's per-request metadata and the state pool, which every scan names alike.
template <class S, class Op> static void setScanSlots(Emitter &e, SlotArgs<S> &args, Op op) {
  args.set(S::CuSeqlens, e.arg(op.getCuSeqlens()))
      .set(S::StateIn, e.arg(op.getStateIn()))
      .set(S::StateOut, e.arg(op.getStateOut()))
      .set(S::HasInitial, e.arg(op.getHasInitialState()))
      .set(S::Pool, Emitter::state(op.getLayer(), op.getState()))
      .set(S::Out, e.arg(op.getResult()));
}

// One thread per (request, channel); a grouped convolution's block is one group.
void emitStateConv1d(Emitter &e, StateConv1dOp op) {
  using S = slots::Conv1d;
  int64_t C = cols(op.getX());
  auto w = llvm::cast<RankedTensorType>(op.getWeight().getType());
  bool rank3 = w.getRank() == 3; // else [C, K], depthwise
  int64_t G = rank3 ? w.getDimSize(1) : 1, K = w.getDimSize(rank3 ? 2 : 1);
  Instance inst("conv1d");
  inst.type(op.getX()).type(op.getWeight()).type(op.getBias()).type(op.getResult());
  inst.integer(C).integer(K).choice(op.getAct()).flag(op.getResidual()).integer(G).type(op.getInitial());
  if (op.getTaps() || op.getLagOrder() || op.getDilation() > 1)
    inst.type(op.getTaps()).integer(op.getTaps() ? cols(op.getTaps()) : K).flag(op.getLagOrder());
  if (op.getDilation() > 1)
    inst.integer(op.getDilation());
  int k = e.kernel("conv1d", "conv1d.cuh", inst);
  SlotArgs<S> args;
  args.set(S::X, e.arg(op.getX())).set(S::Weight, e.arg(op.getWeight())).set(S::Bias, e.arg(op.getBias()));
  args.set(S::Initial, e.arg(op.getInitial())).set(S::Taps, e.arg(op.getTaps()));
  args.set(S::Scale, op.getScale().convertToDouble());
  setScanSlots(e, args, op);
  // Depthwise: 128 channels a block; grouped: one group a block, of whole warps up to 128 threads.
  int64_t block = G > 1 ? std::min<int64_t>((G + 31) / 32 * 32, 128) : 128, perBlock = G > 1 ? G : 128;
  LaunchOut &l = e.launch(k, (int)block, args);
  l.grid[0] = {RuntimeVar::NumRequests, 1, 1, 0};
  l.grid[1] = {std::nullopt, 1, 1, (C + perBlock - 1) / perBlock};
}

// One thread per (request, channel).
void emitStateShift(Emitter &e, StateShiftOp op) {
  using S = slots::Shift;
  int64_t C = cols(op.getX());
  Instance inst("shift");
  inst.type(op.getX()).type(op.getInitial()).type(op.getResult()).integer(C);
  int k = e.kernel("shift", "conv1d.cuh", inst);
  SlotArgs<S> args;
  args.set(S::X, e.arg(op.getX())).set(S::Initial, e.arg(op.getInitial()));
  setScanSlots(e, args, op);
  LaunchOut &l = e.launch(k, 128, args);
  l.grid[0] = {RuntimeVar::NumRequests, 1, 1, 0};
  l.grid[1] = {std::nullopt, 1, 1, (C + 127) / 128};
}

// One block per request, its threads over the request's rows.
void emitNgramEmbed(Emitter &e, NgramEmbedOp op) {
  using S = slots::NgramEmbed;
  auto table = llvm::cast<RankedTensorType>(op.getTable().getType());
  std::vector<int64_t> mult(op.getMultipliers().begin(), op.getMultipliers().end());
  std::vector<int64_t> primes(op.getPrimes().begin(), op.getPrimes().end()), offsets;
  int64_t sum = 0;
  for (int64_t p : primes) {
    offsets.push_back(sum);
    sum += p;
  }
  Instance inst("ngram_embed");
  inst.type(op.getTable()).type(op.getResult()).integer((int64_t)mult.size()).integer(op.getHeadsPerNgram());
  inst.integer(table.getDimSize(1)).table(e.table(mult)).table(e.table(primes)).table(e.table(offsets));
  int k = e.kernel("ngram_embed", "conv1d.cuh", inst);
  SlotArgs<S> args;
  args.set(S::Tokens, e.arg(op.getTokens())).set(S::Table, e.arg(op.getTable()));
  args.set(S::Eos, Emitter::integer(op.getEos()));
  setScanSlots(e, args, op);
  LaunchOut &l = e.launch(k, 128, args);
  l.grid[0] = {RuntimeVar::NumRequests, 1, 1, 0};
}

// One thread per (request, channel).
void emitWkv(Emitter &e, WkvOp op) {
  using S = slots::Wkv;
  int64_t C = cols(op.getK());
  Instance inst("wkv");
  inst.type(op.getK()).type(op.getV()).type(op.getTimeDecay()).type(op.getTimeFirst()).type(op.getResult()).integer(C);
  int k = e.kernel("wkv", "conv1d.cuh", inst);
  SlotArgs<S> args;
  args.set(S::K, e.arg(op.getK()))
      .set(S::V, e.arg(op.getV()))
      .set(S::TimeDecay, e.arg(op.getTimeDecay()))
      .set(S::TimeFirst, e.arg(op.getTimeFirst()));
  setScanSlots(e, args, op);
  LaunchOut &l = e.launch(k, 128, args);
  l.grid[0] = {RuntimeVar::NumRequests, 1, 1, 0};
  l.grid[1] = {std::nullopt, 1, 1, (C + 127) / 128};
}

// One thread per (request, channel).
void emitRgLru(Emitter &e, RgLruOp op) {
  using S = slots::RgLru;
  int64_t C = cols(op.getX());
  Instance inst("rg_lru");
  inst.type(op.getX()).type(op.getInputGate()).type(op.getRecurrentGate()).type(op.getRecurrentParam());
  inst.type(op.getResult()).integer(C);
  int k = e.kernel("rg_lru", "conv1d.cuh", inst);
  SlotArgs<S> args;
  args.set(S::X, e.arg(op.getX()))
      .set(S::InputGate, e.arg(op.getInputGate()))
      .set(S::RecurrentGate, e.arg(op.getRecurrentGate()))
      .set(S::Param, e.arg(op.getRecurrentParam()));
  setScanSlots(e, args, op);
  LaunchOut &l = e.launch(k, 128, args);
  l.grid[0] = {RuntimeVar::NumRequests, 1, 1, 0};
  l.grid[1] = {std::nullopt, 1, 1, (C + 127) / 128};
}

// Block (request, head), the threads over the value columns; see mlstm.cuh for why a head is not split.
void emitMlstm(Emitter &e, MlstmOp op) {
  using S = slots::Mlstm;
  int64_t H = op.getNumHeads(), dk = op.getKDim(), dv = op.getVDim();
  Instance inst("mlstm");
  inst.type(op.getQ()).type(op.getK()).type(op.getV()).type(op.getInputGate()).type(op.getForgetGate());
  inst.type(op.getResult()).integer(H).integer(dk).integer(dv);
  int k = e.kernel("mlstm", "mlstm.cuh", inst);
  SlotArgs<S> args;
  args.set(S::Q, e.arg(op.getQ()))
      .set(S::K, e.arg(op.getK()))
      .set(S::V, e.arg(op.getV()))
      .set(S::InputGate, e.arg(op.getInputGate()))
      .set(S::ForgetGate, e.arg(op.getForgetGate()))
      .set(S::Eps, op.getEps().convertToDouble());
  setScanSlots(e, args, op);
  LaunchOut &l = e.launch(k, std::min<int64_t>(256, std::max<int64_t>(32, (dv + 31) / 32 * 32)), args);
  l.grid[0] = {RuntimeVar::NumRequests, 1, 1, 0};
  l.grid[1] = {std::nullopt, 1, 1, H};
}

// The chunked scans take bf16 operands: an f32 artefact, kept for its fp32 precision, runs every
// request through the token-recurrent kernel on CUDA cores.
static bool bf16Operands(std::initializer_list<Value> vs) {
  return llvm::all_of(vs, [](Value v) { return deviceType(v) == DeviceType::Bf16; });
}

// Requests longer than one token (prefill chunks) take the chunked kernel where it fits; the
// token-recurrent one takes the others (decode), or every request where it does not.
static int64_t recurrentMax(int chunk) { return chunk ? 1 : std::numeric_limits<int32_t>::max(); }

// Two launches, the token-recurrent kernel and the chunked one, each block (request, value head,
// 32 value columns) exiting at once where the request is the other kernel's.
void emitGatedDelta(Emitter &e, GatedDeltaOp op) {
  using S = slots::GatedDelta;
  int64_t dk = op.getKDim(), dv = op.getVDim();
  Instance inst("gated_delta");
  inst.type(op.getQ()).type(op.getK()).type(op.getV()).type(op.getA()).type(op.getB()).type(op.getALog());
  inst.type(op.getDtBias()).type(op.getResult());
  inst.integer(op.getNumKHeads()).integer(op.getNumVHeads()).integer(dk).integer(dv).flag(op.getQkL2norm());
  int chunk = bf16Operands({op.getQ(), op.getK(), op.getV()}) ? kernels::gatedDeltaChunk((int)dk) : 0;
  SlotArgs<S> args;
  args.set(S::Q, e.arg(op.getQ()))
      .set(S::K, e.arg(op.getK()))
      .set(S::V, e.arg(op.getV()))
      .set(S::A, e.arg(op.getA()))
      .set(S::B, e.arg(op.getB()))
      .set(S::ALog, e.arg(op.getALog()))
      .set(S::DtBias, e.arg(op.getDtBias()))
      .set(S::RecurrentMax, Emitter::integer(recurrentMax(chunk)))
      .set(S::BetaScale, op.getBetaScale().convertToDouble())
      .set(S::QScale, (float)(1.0 / std::sqrt((double)dk)));
  setScanSlots(e, args, op);
  auto grid = [&](LaunchOut &l) {
    l.grid[0] = {RuntimeVar::NumRequests, 1, 1, 0};
    l.grid[1] = {std::nullopt, 1, 1, (int64_t)op.getNumVHeads()};
    l.grid[2] = {std::nullopt, 1, 1, (dv + kernels::kGatedDeltaCols - 1) / kernels::kGatedDeltaCols};
  };
  grid(e.launch(e.kernel("gated_delta", "gated_delta.cuh", inst), 32 * kernels::kGatedDeltaWarps, args));
  if (!chunk)
    return;
  grid(e.launch(e.kernel("gated_delta_chunked", "gated_delta_chunked.cuh",
                         inst.renamed("gated_delta_chunked").integer(chunk)),
                kernels::kScanChunkThreads, args));
}

// Two launches as the gated delta rule's, block (request, head, 32 value columns).
void emitKda(Emitter &e, KdaOp op) {
  using S = slots::Kda;
  int64_t dk = op.getKDim(), dv = op.getVDim();
  bool bounded = op.getGate() == DecayGate::bounded_sigmoid;
  Instance inst("kda");
  inst.type(op.getQ()).type(op.getK()).type(op.getV()).type(op.getF()).type(op.getB()).type(op.getALog());
  inst.type(op.getDtBias()).type(op.getResult()).integer(op.getNumHeads()).integer(dk).integer(dv).flag(bounded);
  int chunk = bf16Operands({op.getQ(), op.getK(), op.getV()}) ? kernels::kdaChunk((int)dk) : 0;
  SlotArgs<S> args;
  args.set(S::Q, e.arg(op.getQ()))
      .set(S::K, e.arg(op.getK()))
      .set(S::V, e.arg(op.getV()))
      .set(S::F, e.arg(op.getF()))
      .set(S::B, e.arg(op.getB()))
      .set(S::ALog, e.arg(op.getALog()))
      .set(S::DtBias, e.arg(op.getDtBias()))
      .set(S::RecurrentMax, Emitter::integer(recurrentMax(chunk)))
      .set(S::LowerBound, bounded ? op.getLowerBoundAttr().getValueAsDouble() : 0.0)
      .set(S::QScale, (float)(1.0 / std::sqrt((double)dk)));
  setScanSlots(e, args, op);
  auto grid = [&](LaunchOut &l) {
    l.grid[0] = {RuntimeVar::NumRequests, 1, 1, 0};
    l.grid[1] = {std::nullopt, 1, 1, (int64_t)op.getNumHeads()};
    l.grid[2] = {std::nullopt, 1, 1, (dv + kernels::kKdaCols - 1) / kernels::kKdaCols};
  };
  grid(e.launch(e.kernel("kda", "kda.cuh", inst), 32 * kernels::kKdaWarps, args));
  if (!chunk)
    return;
  grid(e.launch(e.kernel("kda_chunked", "kda_chunked.cuh", inst.renamed("kda_chunked").integer(chunk)),
                kernels::kScanChunkThreads, args));
}

// Two launches, as the gated delta rule: the token-recurrent kernel, block (request, head,
// kSsdRows rows of head_dim), and the chunked one, block (request, head, PT rows of head_dim).
void emitSsd(Emitter &e, SsdOp op) {
  using S = slots::Ssd;
  int64_t H = op.getNumHeads(), P = op.getHeadDim(), N = op.getStateSize();
  Instance inst("ssd");
  inst.type(op.getX()).type(op.getDt()).type(op.getB()).type(op.getC()).type(op.getALog()).type(op.getDtBias());
  inst.type(op.getD()).type(op.getResult()).integer(H).integer(P).integer(op.getNGroups()).integer(N);
  int chunk = bf16Operands({op.getX(), op.getB(), op.getC()}) ? kernels::ssdChunk((int)P, (int)N) : 0;
  SlotArgs<S> args;
  args.set(S::X, e.arg(op.getX()))
      .set(S::Dt, e.arg(op.getDt()))
      .set(S::B, e.arg(op.getB()))
      .set(S::C, e.arg(op.getC()))
      .set(S::ALog, e.arg(op.getALog()))
      .set(S::DtBias, e.arg(op.getDtBias()))
      .set(S::D, e.arg(op.getD()))
      .set(S::RecurrentMax, Emitter::integer(recurrentMax(chunk)))
      .set(S::DtMin, op.getDtMin().convertToDouble())
      .set(S::DtMax, op.getDtMax().convertToDouble());
  setScanSlots(e, args, op);
  auto grid = [&](LaunchOut &l, int64_t rows) {
    l.grid[0] = {RuntimeVar::NumRequests, 1, 1, 0};
    l.grid[1] = {std::nullopt, 1, 1, H};
    l.grid[2] = {std::nullopt, 1, 1, (P + rows - 1) / rows};
  };
  grid(e.launch(e.kernel("ssd", "ssd.cuh", inst), kernels::kSsdThreads, args), kernels::kSsdRows);
  if (!chunk)
    return;
  int rows = kernels::ssdChunkRows((int)P, (int)N);
  grid(e.launch(e.kernel("ssd_chunked", "ssd_chunked.cuh", inst.renamed("ssd_chunked").integer(chunk).integer(rows)),
                kernels::kScanChunkThreads, args),
       rows);
}

// One thread per (request, channel).
void emitSelectiveScan(Emitter &e, SelectiveScanOp op) {
  using S = slots::SelectiveScan;
  int64_t I = cols(op.getX());
  Instance inst("selective_scan");
  inst.type(op.getX()).type(op.getDt()).type(op.getB()).type(op.getC()).type(op.getALog()).type(op.getDtBias());
  inst.type(op.getD()).type(op.getZ()).type(op.getResult()).integer(I).integer(op.getNGroups());
  inst.integer(op.getStateSize());
  int k = e.kernel("selective_scan", "selective_scan.cuh", inst);
  SlotArgs<S> args;
  args.set(S::X, e.arg(op.getX()))
      .set(S::Dt, e.arg(op.getDt()))
      .set(S::B, e.arg(op.getB()))
      .set(S::C, e.arg(op.getC()))
      .set(S::ALog, e.arg(op.getALog()))
      .set(S::DtBias, e.arg(op.getDtBias()))
      .set(S::D, e.arg(op.getD()))
      .set(S::Z, e.arg(op.getZ()));
  setScanSlots(e, args, op);
  LaunchOut &l = e.launch(k, 128, args);
  l.grid[0] = {RuntimeVar::NumRequests, 1, 1, 0};
  l.grid[1] = {std::nullopt, 1, 1, (I + 127) / 128};
}

// Block (request, head, 32 value columns); the per-head decay rates are a constant table.
void emitLightning(Emitter &e, LightningOp op) {
  using S = slots::Lightning;
  int64_t H = op.getNumHeads(), d = op.getHeadDim();
  std::vector<float> decay(op.getDecay().begin(), op.getDecay().end());
  std::string table = e.table(decay);
  int k = e.kernel("lightning", "lightning.cuh",
                   Instance("lightning")
                       .type(op.getQ())
                       .type(op.getK())
                       .type(op.getV())
                       .type(op.getResult())
                       .integer(H)
                       .integer(d)
                       .table(table));
  SlotArgs<S> args;
  args.set(S::Q, e.arg(op.getQ())).set(S::K, e.arg(op.getK())).set(S::V, e.arg(op.getV()));
  args.set(S::Rank, op.getRanks() > 1 ? Emitter::runtime(RuntimeVar::Rank) : Emitter::integer(0));
  setScanSlots(e, args, op);
  LaunchOut &l = e.launch(k, 32 * kernels::kLightningWarps, args);
  l.grid[0] = {RuntimeVar::NumRequests, 1, 1, 0};
  l.grid[1] = {std::nullopt, 1, 1, H};
  l.grid[2] = {std::nullopt, 1, 1, (d + kernels::kLightningCols - 1) / kernels::kLightningCols};
}

// One block per request, its threads over the entry's features.
void emitWindowPool(Emitter &e, WindowPoolOp op) {
  using S = slots::WindowPool;
  int64_t D = op.getDim();
  RopeAttr rope = op.getRopeAttr();
  Instance inst("window_pool");
  inst.type(op.getX()).type(op.getApe()).type(op.getNorm()).type(op.getResult());
  inst.integer(op.getRate()).integer(D).flag(op.getOverlap());
  if (rope)
    inst.integer(rope.getRotaryDim()).choice(rope.getPairing()).table(e.table(rope.getInvFreq().asArrayRef()));
  else
    inst.integer(0).choice(RopePairing::half).table("");
  inst.integer(rope ? rope.getRotaryOffset() : 0);
  int k = e.kernel("window_pool", "window_pool.cuh", inst);
  SlotArgs<S> args;
  args.set(S::X, e.arg(op.getX()))
      .set(S::Positions, e.arg(op.getPositions()))
      .set(S::Ape, e.arg(op.getApe()))
      .set(S::Norm, e.arg(op.getNorm()))
      .set(S::Eps, op.getEps().convertToDouble());
  if (rope)
    setRopeSlots(args, rope);
  else
    args.set(S::AttentionFactor, 1.0).set(S::DynamicBase, 0.0).set(S::DynamicFactor, 0.0);
  setScanSlots(e, args, op);
  LaunchOut &l = e.launch(k, D >= 128 ? 128 : 32, args);
  l.grid[0] = {RuntimeVar::NumRequests, 1, 1, 0};
}

} // namespace cbc::codegen::cuda
