// The paged cache: appending rows, the fused RoPE-and-append prologue, and attention.
#include "codegen/cuda/Emitter.h"

#include "llvm/Support/MathExtras.h"

namespace cbc::codegen::cuda {

using namespace mlir;


// The slots every kernel over the paged cache takes alike: the tokens' positions and request
// slots, the layer's pool, and what locates its block tables.
template <class S, class Op> static void setCacheSlots(SlotArgs<S> &args, Emitter &e, Op op) {
  args.set(S::Positions, e.arg(op.getPositions()))
      .set(S::Slots, e.arg(op.getSlots()))
      .set(S::Tables, e.arg(op.getBlockTables()))
      .set(S::Pool, Emitter::cache(op.getLayer()))
      .set(S::Group, Emitter::integer(op.getGroupAttr().getInt()))
      .set(S::TableSlots, Emitter::runtime(RuntimeVar::TableSlots))
      .set(S::TableWidth, Emitter::runtime(RuntimeVar::TableWidth));
}

// The positions per row of a layer of this retention: N for compressed rows, else 1.
static int64_t compressedRate(RetentionAttr r) {
  return r.getKind() == RetentionKind::compressed ? r.getTokens() : 1;
}

// The elements of a pool row of `layer` as the cache plan lays it out (0: no such layer).
static int64_t planRowElems(Operation *op, int64_t layer) {
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

void emitKvAppend(Emitter &e, KvAppendOp op) {
  using S = slots::KvAppend;
  // A layer with an index_key row has a longer pool row than k | v.
  int64_t row = planRowElems(op, op.getLayer());
  int k = e.kernel("kv_append", "kv_append.cuh",
                   Instance("kv_append")
                       .type(op.getK())
                       .type(op.getV())
                       .type(e.kvType())
                       .integer(cols(op.getK()))
                       .integer(cols(op.getV()))
                       .integer(e.blockSize())
                       .integer(std::max(row, cols(op.getK()) + cols(op.getV())))
                       .integer(compressedRate(op.getRetention()), 1));
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
// Sinks given as rows ([T, H], `sinkRows`) hold one logit per query row and head.
static void emitCombine(Emitter &e, Value cuSeqlens, KernelArgOut partials, Value result, Value sinks, int64_t H, int64_t Dv,
                 bool all, bool sinkRows = false) {
  using C = slots::AttentionCombine;
  Instance inst("attention_combine");
  inst.type(result).type(sinks).integer(H).integer(Dv).flag(all);
  if (sinkRows)
    inst.flag(true);
  int kc = e.kernel("attention_combine", "attention.cuh", inst);
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
static KernelArgOut emitPlan(Emitter &e, Value cuSeqlens, int tokens) {
  using P = slots::AttentionPlan;
  // The count, then two ints a tile; a tile has at least two tokens.
  KernelArgOut plan = e.workspace("attention_plan_" + std::to_string(tokens), 4, 16);
  int k = e.kernel("attention_plan", "attention_prefill.cuh", Instance("attention_plan").integer(tokens));
  SlotArgs<P> args;
  args.set(P::CuSeqlens, e.arg(cuSeqlens))
      .set(P::Plan, plan)
      .set(P::Requests, Emitter::runtime(RuntimeVar::NumRequests));
  LaunchOut &l = e.launch(k, kernels::kAttentionPlanThreads, args);
  l.grid[0] = {RuntimeVar::PrefillTiles, 1, 1 << 30, 0};
  return plan;
}

// An attention's sinks: the learned logits per head, or the per-row ones.
static Value sinksOf(KvAttentionOp op) { return op.getSinkLogits() ? op.getSinkLogits() : op.getSinks(); }

// The template arguments of a layer's retention: its kind and its tokens.
static Instance &addRetentionArgs(Instance &inst, RetentionAttr retention) {
  return inst.choice(retention.getKind())
      .integer(retention.getKind() == RetentionKind::all ? 0 : retention.getTokens());
}

// Tiled prefill attention over the plan's tiles (of chunks of two or more tokens): block (tile,
// kv head x head block), its result written directly.
static void emitAttentionPrefill(Emitter &e, KvAttentionOp op, KernelArgOut plan) {
  using S = slots::AttentionPrefill;
  int64_t H = op.getNumHeads(), Hkv = op.getNumKvHeads(), D = op.getHeadDim(), Dv = cols(op.getResult()) / H;
  int G = (int)(H / Hkv), GB = kernels::prefillHeadsPerBlock(G, (int)Dv);
  bool softcap = (bool)op.getSoftcapAttr();
  Value sinks = sinksOf(op);
  Instance inst("attention_prefill");
  inst.type(op.getQ()).type(e.kvType()).type(op.getResult()).type(sinks);
  inst.integer(H).integer(Hkv).integer(D).integer(Dv).integer(e.blockSize());
  addRetentionArgs(inst, op.getRetention()).flag(softcap);
  inst.type(op.getDistanceBias()).integer(op.getDistanceBias() ? op.getBiasExtent() : 0);
  auto slopes = op.getAlibiSlopes();
  if (slopes || op.getSinkLogits()) // only then: the other instances keep their spelling
    inst.table(slopes ? e.table(*slopes) : std::string());
  if (op.getSinkLogits())
    inst.flag(true);
  int k = e.kernel("attention_prefill", "attention_prefill.cuh", inst);
  SlotArgs<S> args;
  args.set(S::Q, e.arg(op.getQ()))
      .set(S::Plan, plan)
      .set(S::CuSeqlens, e.arg(op.getCuSeqlens()))
      .set(S::Out, e.arg(op.getResult()))
      .set(S::Sinks, e.arg(sinks))
      .set(S::DistanceBias, e.arg(op.getDistanceBias()))
      .set(S::KeyEnds, e.arg(op.getKeyEnds()))
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
void emitKvAttention(Emitter &e, KvAttentionOp op) {
  using S = slots::Attention;
  int64_t H = op.getNumHeads(), Hkv = op.getNumKvHeads(), D = op.getHeadDim(), Dv = cols(op.getResult()) / H;
  bool softcap = (bool)op.getSoftcapAttr();
  // A block selection has no tiled form: each token's keys are its own.
  Value sel = op.getBlockSelection();
  bool tiled = !sel && kernels::prefillWarps((int)(H / Hkv), (int)Dv) <= 8;
  int64_t row = planRowElems(op, op.getLayer());
  if (tiled) {
    int G = (int)(H / Hkv);
    KernelArgOut plan = emitPlan(e, op.getCuSeqlens(), kernels::prefillTileTokens(kernels::prefillHeadsPerBlock(G, (int)Dv)));
    emitAttentionPrefill(e, op, plan);
  }
  KernelArgOut partials = e.workspace("attention_partials", H * (Dv + 2) * 4, 0);
  Instance inst("attention");
  inst.type(op.getQ()).type(e.kvType()).integer(H).integer(Hkv).integer(D).integer(Dv).integer(e.blockSize());
  addRetentionArgs(inst, op.getRetention()).flag(softcap);
  inst.type(op.getDistanceBias()).integer(op.getDistanceBias() ? op.getBiasExtent() : 0).flag(!tiled);
  inst.integer(row > Hkv * (D + Dv) ? row : 0);
  inst.integer(sel ? op.getSelectionHeads() : 0).integer(sel ? cols(sel) / op.getSelectionHeads() : 0);
  inst.integer(sel ? op.getSelectionBlock() : 0);
  // Query heads per block: all of a KV head's but for heads too many or too wide (only then is
  // the argument spelled, after ALiBi's table, so the other instances keep their spelling).
  int64_t G = H / Hkv, v16 = e.kvType() == DeviceType::F32 ? 4 : 8;
  int64_t GB = kernels::decodeHeadsPerBlock((int)G, (int)D, (int)Dv, D % v16 == 0 && Dv % v16 == 0 ? (int)v16 : 1);
  auto slopes = op.getAlibiSlopes();
  if (slopes || GB < G)
    inst.table(slopes ? e.table(*slopes) : std::string());
  if (GB < G)
    inst.integer(GB);
  int k = e.kernel("attention", "attention.cuh", inst);
  SlotArgs<S> args;
  args.set(S::Q, e.arg(op.getQ()))
      .set(S::SeqIds, e.arg(op.getSeqIds()))
      .set(S::Partials, partials)
      .set(S::DistanceBias, e.arg(op.getDistanceBias()))
      .set(S::Selection, e.arg(sel))
      .set(S::KeyEnds, e.arg(op.getKeyEnds()))
      .set(S::CuSeqlens, e.arg(op.getCuSeqlens()))
      .set(S::Splits, Emitter::runtime(RuntimeVar::AttnSplits))
      .set(S::ScoreScale, op.getScale().convertToDouble())
      .set(S::ScoreCap, softcap ? op.getSoftcapAttr().getValueAsDouble() : 0.0);
  setCacheSlots(args, e, op);
  LaunchOut &l = e.launch(k, 32 * kernels::kAttentionWarps, args);
  l.grid[0] = {tiled ? RuntimeVar::NumRequests : RuntimeVar::NumTokens, 1, 1, 0};
  l.grid[1] = {std::nullopt, 1, 1, Hkv * (G / GB)};
  l.grid[2] = {RuntimeVar::AttnSplits, 1, 1, 0};
  emitCombine(e, op.getCuSeqlens(), partials, op.getResult(), sinksOf(op), H, Dv, !tiled, (bool)op.getSinkLogits());
}

// Heads per block of latent (decode) attention: as many as keep the per-warp partial latents
// within 32 KiB of shared memory and q and the accumulators within about 128 registers a lane
// (the kernel's row split: 16-byte chunks of `vec` elements round-robin over up to 32 lanes),
// dividing the head count.
static int64_t latentHeadsPerBlock(int64_t H, int64_t L, int64_t R, int64_t vec) {
  auto lanes = [](int64_t chunks) { return std::min<int64_t>(32, (int64_t)llvm::PowerOf2Ceil(chunks)); };
  int64_t lpk = lanes((L + R) / vec), kc = ((L + R) / vec + lpk - 1) / lpk, vc = (L / vec + lpk - 1) / lpk;
  int64_t regs = kc * vec / 2 + vc * vec; // q packed, the accumulators in fp32
  for (int64_t hg : {8, 4, 2})
    if (H % hg == 0 && kernels::kAttentionWarps * hg * L * 4 <= 32 * 1024 && hg * regs <= 128)
      return hg;
  return 1;
}

// The prefill form of latent attention over the plan's tiles: block (tile, head block).
static void emitLatentPrefill(Emitter &e, KvLatentAttentionOp op, KernelArgOut plan, int64_t row) {
  using S = slots::LatentAttentionPrefill;
  int64_t H = op.getNumHeads(), L = op.getLatentDim(), R = op.getRopeDim();
  int GB = kernels::prefillHeadsPerBlock((int)H, (int)L);
  Instance inst("latent_attention_prefill");
  inst.type(op.getQLatent()).type(e.kvType()).type(op.getResult()).type(op.getSinks()).integer(H).integer(L).integer(R);
  inst.integer(e.blockSize());
  addRetentionArgs(inst, op.getRetention()).integer(std::max(row, L + R));
  int k = e.kernel("latent_attention_prefill", "attention_prefill.cuh", inst);
  SlotArgs<S> args;
  args.set(S::QLatent, e.arg(op.getQLatent()))
      .set(S::QRope, e.arg(op.getQRope()))
      .set(S::Plan, plan)
      .set(S::CuSeqlens, e.arg(op.getCuSeqlens()))
      .set(S::Out, e.arg(op.getResult()))
      .set(S::Sinks, e.arg(op.getSinks()))
      .set(S::ScoreScale, op.getScale().convertToDouble());
  setCacheSlots(args, e, op);
  LaunchOut &l = e.launch(k, 32 * kernels::prefillWarps((int)H, (int)L), args);
  l.grid[0] = {RuntimeVar::PrefillTiles, 1, 1, 0};
  l.grid[1] = {std::nullopt, 1, 1, H / GB};
}

// Latent attention: as attention, one-token chunks by flash-decoding over the cached latent rows
// and longer chunks by the tiled kernel. With a selection (sparse attention) each token has keys
// of its own, so flash-decoding takes every token.
// With compressed entries: one block of 128 threads per (token, head), the window's rows then
// the entries, in one online softmax.
static void emitLatentEntries(Emitter &e, KvLatentAttentionOp op) {
  using S = slots::LatentEntries;
  int64_t H = op.getNumHeads(), L = op.getLatentDim();
  RetentionAttr r = op.getRetention();
  Instance inst("latent_entries");
  inst.type(op.getQLatent()).type(e.kvType()).type(op.getSinks()).type(op.getResult());
  inst.integer(H).integer(L).integer(e.blockSize()).integer(std::max(planRowElems(op, op.getLayer()), L));
  inst.integer(std::max(planRowElems(op, *op.getEntriesLayer()), L));
  inst.integer(r.getKind() == RetentionKind::window ? r.getTokens() : 0).integer(op.getEntriesRate());
  inst.integer(op.getEntrySelection() ? cols(op.getEntrySelection()) : 0);
  int k = e.kernel("latent_entries", "latent_entries.cuh", inst);
  SlotArgs<S> args;
  args.set(S::QLatent, e.arg(op.getQLatent()))
      .set(S::Positions, e.arg(op.getPositions()))
      .set(S::SeqIds, e.arg(op.getSeqIds()))
      .set(S::Slots, e.arg(op.getSlots()))
      .set(S::Tables, e.arg(op.getBlockTables()))
      .set(S::Pool, Emitter::cache(op.getLayer()))
      .set(S::EntryPool, Emitter::cache(*op.getEntriesLayer()))
      .set(S::Selection, e.arg(op.getEntrySelection()))
      .set(S::Sinks, e.arg(op.getSinks()))
      .set(S::Out, e.arg(op.getResult()))
      .set(S::Group, Emitter::integer(op.getGroupAttr().getInt()))
      .set(S::EntryGroup, Emitter::integer(op.getEntriesGroupAttr().getInt()))
      .set(S::TableSlots, Emitter::runtime(RuntimeVar::TableSlots))
      .set(S::TableWidth, Emitter::runtime(RuntimeVar::TableWidth))
      .set(S::ScoreScale, op.getScale().convertToDouble());
  LaunchOut &l = e.launch(k, 128, args);
  l.grid[0] = {RuntimeVar::NumTokens, 1, 1, 0};
  l.grid[1] = {std::nullopt, 1, 1, H};
}

void emitKvLatentAttention(Emitter &e, KvLatentAttentionOp op) {
  if (op.getEntriesRate() > 0)
    return emitLatentEntries(e, op);
  using S = slots::LatentAttention;
  int64_t H = op.getNumHeads(), L = op.getLatentDim(), R = op.getRopeDim();
  int64_t vec = e.kvType() == DeviceType::Bf16 ? 8 : 4, row = planRowElems(op, op.getLayer());
  bool wide = L % vec == 0 && R % vec == 0 && std::max<int64_t>(row, L + R) % vec == 0;
  int64_t HG = latentHeadsPerBlock(H, L, R, wide ? vec : 1);
  bool tiled = !op.getSelection() && kernels::prefillWarps((int)H, (int)L) <= 8;
  if (tiled) {
    int tokens = kernels::prefillTileTokens(kernels::prefillHeadsPerBlock((int)H, (int)L));
    emitLatentPrefill(e, op, emitPlan(e, op.getCuSeqlens(), tokens), row);
  }
  KernelArgOut partials = e.workspace("attention_partials", H * (L + 2) * 4, 0);
  Instance inst("latent_attention");
  inst.type(op.getQLatent()).type(e.kvType()).integer(H).integer(L).integer(R).integer(HG).integer(e.blockSize());
  addRetentionArgs(inst, op.getRetention()).integer(std::max(row, L + R));
  inst.integer(op.getSelection() ? cols(op.getSelection()) : 0).flag(!tiled);
  int k = e.kernel("latent_attention", "attention.cuh", inst);
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
  emitCombine(e, op.getCuSeqlens(), partials, op.getResult(), op.getSinks(), H, L, !tiled);
}

void emitKvIndexAppend(Emitter &e, KvIndexAppendOp op) {
  using S = slots::IndexAppend;
  int64_t DI = op.getHeadDim(), row = planRowElems(op, op.getLayer());
  int k = e.kernel("index_append", "index_select.cuh",
                   Instance("index_append")
                       .type(op.getIndexKey())
                       .type(e.kvType())
                       .integer(DI)
                       .integer(row)
                       .integer(e.blockSize())
                       .integer(compressedRate(op.getRetention()), 1));
  SlotArgs<S> args;
  args.set(S::Key, e.arg(op.getIndexKey()))
      .set(S::SeqIds, e.arg(op.getSeqIds()));
  setCacheSlots(args, e, op);
  LaunchOut &l = e.launch(k, 128, args);
  l.grid[0] = {RuntimeVar::NumTokens, 1, 1, 0};
}

// One block of 128 threads per query token (the kernel's scans assume 128).
// One block per (token, head).
void emitKvBlockSelect(Emitter &e, KvBlockSelectOp op) {
  using S = slots::BlockSelect;
  int64_t row = planRowElems(op, op.getLayer());
  int k = e.kernel("block_select", "index_select.cuh",
                   Instance("block_select")
                       .type(op.getQ())
                       .type(e.kvType())
                       .type(op.getResult())
                       .integer(op.getNumHeads())
                       .integer(op.getHeadDim())
                       .integer(op.getBlock())
                       .integer(op.getTopk())
                       .integer(op.getLocal())
                       .integer(row)
                       .integer(e.blockSize()));
  SlotArgs<S> args;
  args.set(S::Q, e.arg(op.getQ())).set(S::SeqIds, e.arg(op.getSeqIds())).set(S::Out, e.arg(op.getResult()));
  setCacheSlots(args, e, op);
  LaunchOut &l = e.launch(k, 128, args);
  l.grid[0] = {RuntimeVar::NumTokens, 1, 1, 0};
  l.grid[1] = {std::nullopt, 1, 1, (int64_t)op.getNumHeads()};
}

// The slots every lightning-indexer selection takes: queries, head weights, scales, the cache.
template <class S, class Op> static void setIndexerSlots(SlotArgs<S> &args, Emitter &e, Op op) {
  args.set(S::Q, e.arg(op.getQ()))
      .set(S::W, e.arg(op.getWeights()))
      .set(S::SeqIds, e.arg(op.getSeqIds()))
      .set(S::Out, e.arg(op.getResult()))
      .set(S::KeyScale, op.getKeyScale().convertToDouble())
      .set(S::WeightScale, op.getWeightScale().convertToDouble());
  setCacheSlots(args, e, op);
}

void emitKvIndexSelect(Emitter &e, KvIndexSelectOp op) {
  using S = slots::IndexSelect;
  int64_t row = planRowElems(op, op.getLayer());
  int k = e.kernel("index_select", "index_select.cuh",
                   Instance("index_select")
                       .type(op.getQ())
                       .type(op.getWeights())
                       .type(e.kvType())
                       .type(op.getResult())
                       .integer(op.getNumHeads())
                       .integer(op.getHeadDim())
                       .integer(op.getTopk())
                       .integer(row)
                       .integer(e.blockSize())
                       .integer(compressedRate(op.getRetention()), 1));
  SlotArgs<S> args;
  setIndexerSlots(args, e, op);
  LaunchOut &l = e.launch(k, 128, args);
  l.grid[0] = {RuntimeVar::NumTokens, 1, 1, 0};
}

void emitKvPoolSelect(Emitter &e, KvPoolSelectOp op) {
  using S = slots::PoolSelect;
  int64_t row = planRowElems(op, op.getLayer());
  Instance inst("pool_select");
  inst.type(op.getQ()).type(op.getWeights()).type(e.kvType()).type(op.getApe()).type(op.getResult());
  inst.integer(op.getNumHeads()).integer(op.getHeadDim()).integer(op.getPools()).integer(op.getPool());
  inst.integer(row).integer(e.blockSize());
  std::vector<float> freqs;
  if (op.getKeyFreqs())
    freqs.assign(op.getKeyFreqs()->begin(), op.getKeyFreqs()->end());
  if (op.getKeyNorm() || !freqs.empty() || op.getBlocks())
    inst.type(op.getKeyNorm()).integer((int64_t)freqs.size()).table(freqs.empty() ? "" : e.table(freqs))
        .flag(op.getBlocks());
  int k = e.kernel("pool_select", "index_select.cuh", inst);
  SlotArgs<S> args;
  setIndexerSlots(args, e, op);
  args.set(S::Ape, e.arg(op.getApe())).set(S::KeyNorm, e.arg(op.getKeyNorm()));
  args.set(S::Eps, op.getEpsAttr() ? op.getEpsAttr().getValueAsDouble() : 0.0)
      .set(S::NormOffset, op.getNormOffset().convertToDouble());
  LaunchOut &l = e.launch(k, 128, args); // select_top's 128 threads
  l.grid[0] = {RuntimeVar::NumTokens, 1, 1, 0};
}

// The attention prologue for one token per block: q and k heads normalised, rotated, and
// written out (q) or appended with v (k).
void emitKvRopeAppend(Emitter &e, KvRopeAppendOp op) {
  using S = slots::RopeAppend;
  RopeAttr rope = op.getRope();
  Instance inst("rope_append");
  inst.type(op.getQkv()).type(op.getQ()).type(op.getQNorm()).type(e.kvType());
  inst.integer(op.getNumHeads()).integer(op.getNumKvHeads()).integer(op.getHeadDim()).integer(e.blockSize());
  addRopeArgs(inst, e, rope);
  int k = e.kernel("rope_append", "rope_append.cuh", inst);
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

} // namespace cbc::codegen::cuda
