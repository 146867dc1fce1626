// The paged cache: appending rows, the fused RoPE-and-append prologue, and attention.
#include "codegen/cuda/Emitter.h"

#include "llvm/Support/MathExtras.h"

namespace cbc::codegen::cuda {

using namespace mlir;

namespace {

// The slots every kernel over the paged cache takes alike: the tokens' positions and request
// slots, the layer's pool, and what locates its block tables.
template <class S, class Op> void setCacheSlots(SlotArgs<S> &args, Emitter &e, Op op) {
  args.set(S::Positions, e.arg(op.getPositions()))
      .set(S::Slots, e.arg(op.getSlots()))
      .set(S::Tables, e.arg(op.getBlockTables()))
      .set(S::Pool, Emitter::cache(op.getLayer()))
      .set(S::Group, Emitter::integer(op.getGroupAttr().getInt()))
      .set(S::TableSlots, Emitter::runtime(RuntimeVar::TableSlots))
      .set(S::TableWidth, Emitter::runtime(RuntimeVar::TableWidth));
}

// The elements of a pool row of `layer` as the cache plan lays it out (0: no such layer).
int64_t planRowElems(Operation *op, int64_t layer) {
  auto plan = op->getParentOfType<ModuleOp>()->getAttrOfType<CachePlanAttr>("cbc.cache_plan");
  if (plan)
    for (CacheLayerAttr l : plan.getLayers())
      if (l.getLayer() == layer) {
        int64_t n = 0;
        for (CacheRowAttr r : l.getRows())
          n += r.getElems();
        return n;
      }
  return 0;
}

void emitAppend(Emitter &e, KvAppendOp op) {
  using S = slots::KvAppend;
  std::vector<std::string> targs = {e.type(op.getK()), e.type(op.getV()), e.kvType(), num(cols(op.getK())),
                                    num(cols(op.getV())), num(e.blockSize())};
  // A layer with an index_key row has a longer pool row than k | v.
  int64_t row = planRowElems(op, op.getLayer());
  if (row > cols(op.getK()) + cols(op.getV()))
    targs.push_back(num(row));
  int k = e.kernel("kv_append", "kv_append.cuh", instance("kv_append", targs));
  SlotArgs<S> args;
  args.set(S::K, e.arg(op.getK()))
      .set(S::V, e.arg(op.getV()))
      .set(S::SeqIds, e.arg(op.getSeqIds()));
  setCacheSlots(args, e, op);
  LaunchOut &l = e.launch(k, 128, args);
  l.grid[0] = {RuntimeVar::NumTokens, 1, 1, 0};
}

// The merge of the attention splits (and the sinks) per (token, head) into `result`: of the
// one-token chunks' tokens (cu_seqlens tells), or with `all` of every token.
void emitCombine(Emitter &e, Value cuSeqlens, KernelArgOut partials, Value result, Value sinks, int64_t H, int64_t Dv,
                 bool all) {
  using C = slots::AttentionCombine;
  std::vector<std::string> targs = {e.type(result), e.type(sinks), num(H), num(Dv)};
  if (all)
    targs.push_back(flag(true));
  int kc = e.kernel("attention_combine", "attention.cuh", instance("attention_combine", targs));
  SlotArgs<C> cargs;
  cargs.set(C::Partials, partials)
      .set(C::Out, e.arg(result))
      .set(C::Sinks, e.arg(sinks))
      .set(C::CuSeqlens, e.arg(cuSeqlens))
      .set(C::Splits, Emitter::runtime(RuntimeVar::AttnSplits));
  LaunchOut &c = e.launch(kc, Dv >= 128 ? 128 : 64, cargs);
  c.grid[0] = {all ? RuntimeVar::NumTokens : RuntimeVar::NumRequests, 1, 1, 0};
  c.grid[1] = {std::nullopt, 1, 1, H};
}

// The plan of the step's prefill tiles of `tokens` tokens, in a workspace of its own; one block,
// launched only in steps with a prefill chunk (the grid is min(1, PrefillTiles)).
KernelArgOut emitPlan(Emitter &e, Value cuSeqlens, int tokens) {
  using P = slots::AttentionPlan;
  // The count, then two ints a tile; a tile has at least two tokens.
  KernelArgOut plan = e.workspace("attention_plan_" + std::to_string(tokens), 4, 16);
  int k = e.kernel("attention_plan", "attention_prefill.cuh", instance("attention_plan", {num(tokens)}));
  SlotArgs<P> args;
  args.set(P::CuSeqlens, e.arg(cuSeqlens))
      .set(P::Plan, plan)
      .set(P::Requests, Emitter::runtime(RuntimeVar::NumRequests));
  LaunchOut &l = e.launch(k, kernels::kAttentionPlanThreads, args);
  l.grid[0] = {RuntimeVar::PrefillTiles, 1, 1 << 30, 0};
  return plan;
}

// The template arguments of a layer's retention: its kind and its tokens.
std::vector<std::string> retentionArgs(RetentionAttr retention) {
  return {spell(retention.getKind()), num(retention.getKind() == RetentionKind::all ? 0 : retention.getTokens())};
}

// Tiled prefill attention over the plan's tiles (of chunks of two or more tokens): block (tile,
// kv head x head block), its result written directly.
void emitAttentionPrefill(Emitter &e, KvAttentionOp op, KernelArgOut plan) {
  using S = slots::AttentionPrefill;
  int64_t H = op.getNumHeads(), Hkv = op.getNumKvHeads(), D = op.getHeadDim(), Dv = cols(op.getResult()) / H;
  int G = (int)(H / Hkv), GB = kernels::prefillHeadsPerBlock(G, (int)Dv);
  bool softcap = (bool)op.getSoftcapAttr();
  std::vector<std::string> targs = {e.type(op.getQ()), e.kvType(), e.type(op.getResult()), e.type(op.getSinks()),
                                    num(H), num(Hkv), num(D), num(Dv), num(e.blockSize())};
  for (std::string &r : retentionArgs(op.getRetention()))
    targs.push_back(std::move(r));
  targs.push_back(flag(softcap));
  if (Value bias = op.getDistanceBias())
    targs.insert(targs.end(), {e.type(bias), num(op.getBiasExtent())});
  int k = e.kernel("attention_prefill", "attention_prefill.cuh", instance("attention_prefill", targs));
  SlotArgs<S> args;
  args.set(S::Q, e.arg(op.getQ()))
      .set(S::Plan, plan)
      .set(S::CuSeqlens, e.arg(op.getCuSeqlens()))
      .set(S::Out, e.arg(op.getResult()))
      .set(S::Sinks, e.arg(op.getSinks()))
      .set(S::DistanceBias, e.arg(op.getDistanceBias()))
      .set(S::ScoreScale, op.getScale().convertToDouble())
      .set(S::ScoreCap, softcap ? op.getSoftcapAttr().getValueAsDouble() : 0.0);
  setCacheSlots(args, e, op);
  LaunchOut &l = e.launch(k, 32 * kernels::prefillWarps(G, (int)Dv), args);
  l.grid[0] = {RuntimeVar::PrefillTiles, 1, 1, 0};
  l.grid[1] = {std::nullopt, 1, 1, Hkv * (G / GB)};
}

// Attention: the one-token chunks by flash-decoding (the partial softmax per (request, kv
// head, split), then the merge of the splits and the sinks), the longer chunks by the tiled
// prefill kernel. Heads too wide for a prefill block stay on flash-decoding for every token.
void emitAttention(Emitter &e, KvAttentionOp op) {
  using S = slots::Attention;
  int64_t H = op.getNumHeads(), Hkv = op.getNumKvHeads(), D = op.getHeadDim(), Dv = cols(op.getResult()) / H;
  bool softcap = (bool)op.getSoftcapAttr();
  bool tiled = kernels::prefillWarps((int)(H / Hkv), (int)Dv) <= 8;
  if (tiled) {
    int G = (int)(H / Hkv);
    KernelArgOut plan = emitPlan(e, op.getCuSeqlens(), kernels::prefillTileTokens(kernels::prefillHeadsPerBlock(G, (int)Dv)));
    emitAttentionPrefill(e, op, plan);
  }
  KernelArgOut partials = e.workspace("attention_partials", H * (Dv + 2) * 4, 0);
  std::vector<std::string> targs = {e.type(op.getQ()), e.kvType(), num(H), num(Hkv), num(D), num(Dv),
                                    num(e.blockSize())};
  for (std::string &r : retentionArgs(op.getRetention()))
    targs.push_back(std::move(r));
  targs.push_back(flag(softcap));
  // The distance bias and the all-token form are template arguments only where needed, so that
  // other instances keep their names.
  if (Value bias = op.getDistanceBias())
    targs.insert(targs.end(), {e.type(bias), num(op.getBiasExtent())});
  if (!tiled) {
    if (!op.getDistanceBias())
      targs.insert(targs.end(), {"void", "0"});
    targs.push_back(flag(true));
  }
  int k = e.kernel("attention", "attention.cuh", instance("attention", targs));
  SlotArgs<S> args;
  args.set(S::Q, e.arg(op.getQ()))
      .set(S::SeqIds, e.arg(op.getSeqIds()))
      .set(S::Partials, partials)
      .set(S::DistanceBias, e.arg(op.getDistanceBias()))
      .set(S::CuSeqlens, e.arg(op.getCuSeqlens()))
      .set(S::Splits, Emitter::runtime(RuntimeVar::AttnSplits))
      .set(S::ScoreScale, op.getScale().convertToDouble())
      .set(S::ScoreCap, softcap ? op.getSoftcapAttr().getValueAsDouble() : 0.0);
  setCacheSlots(args, e, op);
  LaunchOut &l = e.launch(k, 32 * kernels::kAttentionWarps, args);
  l.grid[0] = {tiled ? RuntimeVar::NumRequests : RuntimeVar::NumTokens, 1, 1, 0};
  l.grid[1] = {std::nullopt, 1, 1, Hkv};
  l.grid[2] = {RuntimeVar::AttnSplits, 1, 1, 0};
  emitCombine(e, op.getCuSeqlens(), partials, op.getResult(), op.getSinks(), H, Dv, !tiled);
}

// Heads per block of latent (decode) attention: as many as keep the per-warp partial latents
// within 32 KiB of shared memory and q and the accumulators within about 128 registers a lane
// (the kernel's row split: 16-byte chunks of `vec` elements round-robin over up to 32 lanes),
// dividing the head count.
int64_t latentHeadsPerBlock(int64_t H, int64_t L, int64_t R, int64_t vec) {
  auto lanes = [](int64_t chunks) { return std::min<int64_t>(32, (int64_t)llvm::PowerOf2Ceil(chunks)); };
  int64_t lpk = lanes((L + R) / vec), kc = ((L + R) / vec + lpk - 1) / lpk, vc = (L / vec + lpk - 1) / lpk;
  int64_t regs = kc * vec / 2 + vc * vec; // q packed, the accumulators in fp32
  for (int64_t hg : {8, 4, 2})
    if (H % hg == 0 && kernels::kAttentionWarps * hg * L * 4 <= 32 * 1024 && hg * regs <= 128)
      return hg;
  return 1;
}

// The prefill form of latent attention over the plan's tiles: block (tile, head block).
void emitLatentPrefill(Emitter &e, KvLatentAttentionOp op, KernelArgOut plan, int64_t row) {
  using S = slots::LatentAttentionPrefill;
  int64_t H = op.getNumHeads(), L = op.getLatentDim(), R = op.getRopeDim();
  int GB = kernels::prefillHeadsPerBlock((int)H, (int)L);
  std::vector<std::string> targs = {e.type(op.getQLatent()), e.kvType(), e.type(op.getResult()), num(H), num(L),
                                    num(R), num(e.blockSize())};
  for (std::string &r : retentionArgs(op.getRetention()))
    targs.push_back(std::move(r));
  if (row > L + R)
    targs.push_back(num(row));
  int k = e.kernel("latent_attention_prefill", "attention_prefill.cuh", instance("latent_attention_prefill", targs));
  SlotArgs<S> args;
  args.set(S::QLatent, e.arg(op.getQLatent()))
      .set(S::QRope, e.arg(op.getQRope()))
      .set(S::Plan, plan)
      .set(S::CuSeqlens, e.arg(op.getCuSeqlens()))
      .set(S::Out, e.arg(op.getResult()))
      .set(S::ScoreScale, op.getScale().convertToDouble());
  setCacheSlots(args, e, op);
  LaunchOut &l = e.launch(k, 32 * kernels::prefillWarps((int)H, (int)L), args);
  l.grid[0] = {RuntimeVar::PrefillTiles, 1, 1, 0};
  l.grid[1] = {std::nullopt, 1, 1, H / GB};
}

// Latent attention: as attention, one-token chunks by flash-decoding over the cached latent rows
// and longer chunks by the tiled kernel. With a selection (sparse attention) each token has keys
// of its own, so flash-decoding takes every token.
void emitLatentAttention(Emitter &e, KvLatentAttentionOp op) {
  using S = slots::LatentAttention;
  int64_t H = op.getNumHeads(), L = op.getLatentDim(), R = op.getRopeDim();
  int64_t vec = e.kvType() == "bf16" ? 8 : 4, row = planRowElems(op, op.getLayer());
  bool wide = L % vec == 0 && R % vec == 0 && std::max<int64_t>(row, L + R) % vec == 0;
  int64_t HG = latentHeadsPerBlock(H, L, R, wide ? vec : 1);
  bool tiled = !op.getSelection() && kernels::prefillWarps((int)H, (int)L) <= 8;
  if (tiled) {
    int tokens = kernels::prefillTileTokens(kernels::prefillHeadsPerBlock((int)H, (int)L));
    emitLatentPrefill(e, op, emitPlan(e, op.getCuSeqlens(), tokens), row);
  }
  KernelArgOut partials = e.workspace("attention_partials", H * (L + 2) * 4, 0);
  std::vector<std::string> targs = {e.type(op.getQLatent()), e.kvType(), num(H), num(L), num(R), num(HG),
                                    num(e.blockSize())};
  for (std::string &r : retentionArgs(op.getRetention()))
    targs.push_back(std::move(r));
  if (row > L + R || op.getSelection() || !tiled) {
    targs.push_back(num(std::max<int64_t>(row, L + R)));
    targs.push_back(num(op.getSelection() ? cols(op.getSelection()) : 0));
  }
  if (!tiled && !op.getSelection())
    targs.push_back(flag(true));
  int k = e.kernel("latent_attention", "attention.cuh", instance("latent_attention", targs));
  SlotArgs<S> args;
  args.set(S::QLatent, e.arg(op.getQLatent()))
      .set(S::QRope, e.arg(op.getQRope()))
      .set(S::SeqIds, e.arg(op.getSeqIds()))
      .set(S::Partials, partials)
      .set(S::CuSeqlens, e.arg(op.getCuSeqlens()))
      .set(S::Splits, Emitter::runtime(RuntimeVar::AttnSplits))
      .set(S::ScoreScale, op.getScale().convertToDouble());
  args.set(S::Selection, e.arg(op.getSelection())); // null without a selection
  setCacheSlots(args, e, op);
  LaunchOut &l = e.launch(k, 32 * kernels::kAttentionWarps, args);
  l.grid[0] = {tiled ? RuntimeVar::NumRequests : RuntimeVar::NumTokens, 1, 1, 0};
  l.grid[1] = {std::nullopt, 1, 1, H / HG};
  l.grid[2] = {RuntimeVar::AttnSplits, 1, 1, 0};
  emitCombine(e, op.getCuSeqlens(), partials, op.getResult(), Value(), H, L, !tiled);
}

void emitIndexAppend(Emitter &e, KvIndexAppendOp op) {
  using S = slots::IndexAppend;
  int64_t DI = op.getHeadDim(), row = planRowElems(op, op.getLayer());
  int k = e.kernel("index_append", "index_select.cuh",
                   instance("index_append", {e.type(op.getIndexKey()), e.kvType(), num(DI), num(row), num(e.blockSize())}));
  SlotArgs<S> args;
  args.set(S::Key, e.arg(op.getIndexKey()))
      .set(S::SeqIds, e.arg(op.getSeqIds()));
  setCacheSlots(args, e, op);
  LaunchOut &l = e.launch(k, 128, args);
  l.grid[0] = {RuntimeVar::NumTokens, 1, 1, 0};
}

// One block of 128 threads per query token (the kernel's scans assume 128).
void emitIndexSelect(Emitter &e, KvIndexSelectOp op) {
  using S = slots::IndexSelect;
  int64_t row = planRowElems(op, op.getLayer());
  int k = e.kernel("index_select", "index_select.cuh",
                   instance("index_select", {e.type(op.getQ()), e.type(op.getWeights()), e.kvType(),
                                             e.type(op.getResult()), num(op.getNumHeads()), num(op.getHeadDim()),
                                             num(op.getTopk()), num(row), num(e.blockSize())}));
  SlotArgs<S> args;
  args.set(S::Q, e.arg(op.getQ()))
      .set(S::W, e.arg(op.getWeights()))
      .set(S::SeqIds, e.arg(op.getSeqIds()))
      .set(S::Out, e.arg(op.getResult()))
      .set(S::KeyScale, op.getKeyScale().convertToDouble())
      .set(S::WeightScale, op.getWeightScale().convertToDouble());
  setCacheSlots(args, e, op);
  LaunchOut &l = e.launch(k, 128, args);
  l.grid[0] = {RuntimeVar::NumTokens, 1, 1, 0};
}

// The attention prologue for one token per block: q and k heads normalised, rotated, and
// written out (q) or appended with v (k).
void emitRopeAppend(Emitter &e, KvRopeAppendOp op) {
  using S = slots::RopeAppend;
  RopeAttr rope = op.getRope();
  std::vector<std::string> targs = {e.type(op.getQkv()),  e.type(op.getQ()),     e.type(op.getQNorm()),
                                    e.kvType(),           num(op.getNumHeads()), num(op.getNumKvHeads()),
                                    num(op.getHeadDim()), num(e.blockSize())};
  for (std::string &a : ropeTemplateArgs(e, rope))
    targs.push_back(std::move(a));
  int k = e.kernel("rope_append", "rope_append.cuh", instance("rope_append", targs));
  SlotArgs<S> args;
  args.set(S::Qkv, e.arg(op.getQkv()))
      .set(S::SeqIds, e.arg(op.getSeqIds()))
      .set(S::PromptLens, e.arg(op.getPromptLens()))
      .set(S::QNorm, e.arg(op.getQNorm()))
      .set(S::KNorm, e.arg(op.getKNorm()))
      .set(S::QOut, e.arg(op.getQ()))
      .set(S::Eps, op.getEpsAttr() ? op.getEpsAttr().getValueAsDouble() : 1e-6)
      .set(S::NormOffset, op.getNormOffset().convertToDouble());
  setCacheSlots(args, e, op);
  setRopeSlots(args, rope);
  LaunchOut &l = e.launch(k, 128, args);
  l.grid[0] = {RuntimeVar::NumTokens, 1, 1, 0};
}

} // namespace

void addKvEmitters(EmitterTable &t) {
  t.add(emitAppend);
  t.add(emitAttention);
  t.add(emitLatentAttention);
  t.add(emitRopeAppend);
  t.add(emitIndexAppend);
  t.add(emitIndexSelect);
}

} // namespace cbc::codegen::cuda
