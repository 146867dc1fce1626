// The CPU compile functions of the paged-cache ops (cbc.kv.*).
#include "runtime/cpu/op_context.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace cbc::rt::cpu {

namespace {
// The layer and group of a cache op, checked against the plan.
const KvLayout &siteLayout(const OpContext &c, const fb::CacheSite *site) {
  c.check(site != nullptr, "has no cache site");
  return c.kvLayout(site->layer(), site->group());
}

int64_t windowOf(const fb::CacheSite &s) { return s.retention() == fb::Retention::Window ? s.tokens() : 0; }
int64_t chunkOf(const fb::CacheSite &s) { return s.retention() == fb::Retention::Chunk ? s.tokens() : 0; }
int64_t rateOf(const fb::CacheSite &s) { return s.retention() == fb::Retention::Compressed ? s.tokens() : 1; }

// The rows a writer of `site` fills: the tokens' positions, or in a compressed layer the windows
// the tokens close (-1 for the others), in `scratch`.
const int32_t *writtenRows(const fb::CacheSite &site, const StepBatch &b, std::vector<int32_t> &scratch) {
  if (site.retention() != fb::Retention::Compressed)
    return b.positions.data();
  scratch.resize(b.num_tokens);
  compressedRows(b.positions.data(), b.num_tokens, site.tokens(), scratch.data());
  return scratch.data();
}
} // namespace

Exec compileKvAppend(const OpContext &c) {
  c.need(6, 0);
  const fb::KvAppendParams &p = c.params<fb::KvAppendParams>();
  const KvLayout &kv = siteLayout(c, p.site());
  int layer = p.site()->layer(), group = p.site()->group(), k = c.I[0], v = c.I[1];
  c.acts({k, v});
  c.check(kv.k_elems >= 0 && c.cols(k) == kv.k_elems && c.cols(v) == kv.vElems(),
          "writes rows that do not match the cache plan");
  c.needArg(2, StepArg::Positions);
  c.needArg(3, StepArg::SeqIds);
  c.needArg(4, StepArg::Slots);
  c.needArg(5, StepArg::BlockTables);
  fb::CacheSite site = *p.site();
  return [=](StepEnv &e) {
    const StepBatch &b = *e.batch;
    thread_local std::vector<int32_t> scratch;
    kvAppend(e.f32(k), e.f32(v), b.num_tokens, writtenRows(site, b, scratch), b.seq_ids.data(), b.slots.data(),
             e.groupTables(group), b.table_width, e.kvLayouts.at(layer), e.kvPool(layer));
  };
}

Exec compileKvAttention(const OpContext &c) {
  c.need(7, 1);
  const fb::KvAttentionParams &params = c.params<fb::KvAttentionParams>();
  const KvLayout &kv = siteLayout(c, params.site());
  int layer = params.site()->layer(), group = params.site()->group(), q = c.I[0], out = c.O[0];
  c.acts({q, out});
  AttentionParams p;
  p.num_heads = params.num_heads();
  p.num_kv_heads = params.num_kv_heads();
  p.head_dim = params.head_dim();
  p.v_head_dim = p.num_heads > 0 ? c.cols(out) / p.num_heads : 0;
  p.scale = (float)params.scale();
  p.window = windowOf(*params.site());
  p.chunk = chunkOf(*params.site());
  p.softcap = (float)params.softcap();
  // Optional operands: sinks, then the distance bias (present when bias_extent > 0), then the
  // block selection (present when selection_heads > 0).
  p.bias_extent = params.bias_extent();
  p.selection_heads = params.selection_heads();
  p.selection_block = params.selection_block();
  if (const auto *slopes = params.alibi_slopes()) {
    p.alibi_slopes.assign(slopes->begin(), slopes->end());
    c.check((int64_t)p.alibi_slopes.size() == p.num_heads &&
                std::all_of(p.alibi_slopes.begin(), p.alibi_slopes.end(), [](float s) { return std::isfinite(s); }),
            "has ALiBi slopes that are not one finite value per query head");
  }
  bool keyEnds = params.key_ends(), sinkRows = params.sink_rows();
  size_t optional = (p.bias_extent > 0) + (p.selection_heads > 0) + keyEnds + sinkRows;
  c.check(p.bias_extent <= (1 << 24) && p.selection_heads >= 0 && p.selection_block >= 0 &&
              c.I.size() >= 7 + optional && c.I.size() <= 8 + optional,
          "has a bad bias extent or block selection");
  c.check(!keyEnds || (p.bias_extent == 0 && p.selection_heads == 0),
          "has key ends with a distance bias or a block selection");
  // From the back: the sink logits, the key ends, the selection, the bias.
  size_t back = c.I.size();
  int rowSinks = sinkRows ? c.I[--back] : -1;
  if (keyEnds)
    c.needArg(--back, StepArg::KeyEnds);
  int sel = p.selection_heads > 0 ? c.I[--back] : -1;
  int bias = p.bias_extent > 0 ? c.I[--back] : -1;
  int sinks = c.I.size() > 7 + optional ? c.I[7] : -1;
  c.check(rowSinks < 0 || sinks < 0, "has sinks and sink logits");
  if (rowSinks >= 0) {
    c.acts({q, rowSinks});
    c.check(c.cols(rowSinks) == p.num_heads, "has sink logits that are not one per query head");
  }
  if (bias >= 0)
    c.acts({q, bias});
  if (sel >= 0) {
    c.acts({q, sel});
    p.selection_topk = c.cols(sel) / p.selection_heads;
    c.check(p.selection_topk <= (1 << 24) && p.window == 0 && p.chunk == 0, "has a bad block selection");
  }
  c.checkShape(shape::check(shape::KvAttention{p.num_heads, p.num_kv_heads, p.head_dim, p.bias_extent, c.cols(q),
                                                c.cols(out), bias >= 0 ? c.cols(bias) : 0, bias >= 0,
                                                sinks >= 0 ? c.weightNumel(sinks) : 0, sinks >= 0,
                                                sel >= 0 ? c.cols(sel) : 0, p.selection_heads, p.selection_block,
                                                sel >= 0}));
  c.check(p.num_kv_heads * p.head_dim <= kv.k_elems && p.num_kv_heads * p.v_head_dim <= kv.row_elems - kv.k_elems,
          "has heads that do not fit the cache plan's rows");
  c.needArg(1, StepArg::Positions);
  c.needArg(2, StepArg::SeqIds);
  c.needArg(5, StepArg::Slots);
  c.needArg(6, StepArg::BlockTables);
  return [=](StepEnv &e) mutable {
    const StepBatch &b = *e.batch;
    p.sinks = sinks >= 0 ? e.weight(sinks) : nullptr;
    p.sink_rows = rowSinks >= 0 ? e.f32(rowSinks) : nullptr;
    p.distance_bias = bias >= 0 ? e.f32(bias) : nullptr;
    p.block_selection = sel >= 0 ? e.i32(sel) : nullptr;
    p.key_ends = keyEnds ? b.key_ends.data() : nullptr;
    pagedAttention(e.f32(q), b.num_tokens, b.positions.data(), b.seq_ids.data(), b.slots.data(),
                   e.groupTables(group), b.table_width, e.kvLayouts.at(layer), e.kvPool(layer), p, e.f32(out),
                   e.pfor);
  };
}

Exec compileKvLatentAttention(const OpContext &c) {
  c.check(c.I.size() >= 8 && c.I.size() <= 11, "has the wrong number of operands");
  c.need((int)c.I.size(), 1);
  const fb::KvLatentAttentionParams &params = c.params<fb::KvLatentAttentionParams>();
  const KvLayout &kv = siteLayout(c, params.site());
  int layer = params.site()->layer(), group = params.site()->group();
  int ql = c.I[0], qr = c.I[1], out = c.O[0];
  c.acts({ql, qr, out});
  LatentAttentionParams p;
  p.num_heads = params.num_heads();
  p.latent_dim = params.latent_dim();
  p.rope_dim = params.rope_dim();
  p.scale = (float)params.scale();
  p.window = windowOf(*params.site());
  p.chunk = chunkOf(*params.site());
  int64_t L = p.latent_dim, R = p.rope_dim;
  // Optional operands: the sinks (a weight), the selection (rows), then the entry selection.
  const fb::CacheSite *entrySite = params.entries();
  size_t end = c.I.size() - (params.entry_selection() ? 1 : 0);
  c.check(end >= 8 && (!params.entry_selection() || entrySite), "has an entry selection without entries");
  int entrySel = params.entry_selection() ? c.I.back() : -1;
  int sinks = end > 8 && !c.isAct(c.I[8]) ? c.I[8] : -1;
  int sel = end > 8 && c.isAct(c.I[end - 1]) ? c.I[end - 1] : -1;
  c.check(end == 8 + (sinks >= 0) + (sel >= 0), "has operands of the wrong kinds");
  LatentEntries entries;
  int entryLayer = -1, entryGroup = -1;
  if (entrySite) {
    c.check(entrySite->retention() == fb::Retention::Compressed && sel < 0 && (entrySel < 0 || c.isAct(entrySel)),
            "reads entries that are not a compressed layer's, or with a token selection");
    const KvLayout &ekv = siteLayout(c, entrySite);
    c.check(ekv.k_elems == L, "reads entries whose rows are not latent_dim wide");
    entryLayer = entrySite->layer();
    entryGroup = entrySite->group();
    entries.rate = entrySite->tokens();
    if (entrySel >= 0) {
      c.acts({entrySel});
      entries.k = c.cols(entrySel);
      c.check(entries.k > 0 && entries.k <= (1 << 24), "has a bad entry selection");
    }
  }
  c.check(sinks < 0 || c.weightNumel(sinks) == p.num_heads, "has sinks that are not one per head");
  c.checkShape(shape::check(shape::KvLatentAttention{p.num_heads, L, R, c.cols(ql), c.cols(qr), c.cols(out),
                                                      sel >= 0 ? c.cols(sel) : -1}));
  c.check(kv.k_elems == L && kv.row_elems - kv.index_elems == L + R, "has widths that do not fit the cache plan's rows");
  int64_t K = 0;
  if (sel >= 0) {
    c.acts({sel});
    K = c.cols(sel);
    c.check(K <= (1 << 24) && p.window == 0 && p.chunk == 0, "has a bad selection");
  }
  c.needArg(2, StepArg::Positions);
  c.needArg(3, StepArg::SeqIds);
  c.needArg(6, StepArg::Slots);
  c.needArg(7, StepArg::BlockTables);
  return [=](StepEnv &e) {
    const StepBatch &b = *e.batch;
    LatentAttentionParams p2 = p;
    p2.sinks = sinks >= 0 ? e.weight(sinks) : nullptr;
    const LatentAttentionParams &p = p2;
    if (entryLayer >= 0) {
      LatentEntries en = entries;
      en.tables = e.groupTables(entryGroup);
      en.layout = &e.kvLayouts.at(entryLayer);
      en.pool = e.kvPool(entryLayer);
      en.selection = entrySel >= 0 ? e.i32(entrySel) : nullptr;
      // Listed entries must be complete at the query.
      for (int64_t t = 0; en.selection && t < b.num_tokens * en.k; ++t)
        if (en.selection[t] >= (b.positions[t / en.k] + 1) / en.rate)
          throw std::runtime_error("cbc.kv.latent_attention: an entry selection names a window after its query");
      latentAttentionWithEntries(e.f32(ql), e.f32(qr), b.num_tokens, b.positions.data(), b.seq_ids.data(),
                                 b.slots.data(), e.groupTables(group), b.table_width, e.kvLayouts.at(layer),
                                 e.kvPool(layer), p, en, e.f32(out), e.pfor);
      return;
    }
    if (sel >= 0) {
      // The selected positions index the request's rows; reject any outside its context.
      const int32_t *s = e.i32(sel);
      for (int64_t t = 0; t < b.num_tokens * K; ++t)
        if (s[t] > b.positions[t / K])
          throw std::runtime_error("cbc.kv.latent_attention: a selection names a position after its query");
      sparseLatentAttention(e.f32(ql), e.f32(qr), b.num_tokens, b.seq_ids.data(), b.slots.data(),
                            e.groupTables(group), b.table_width, e.kvLayouts.at(layer), e.kvPool(layer), p, s, K,
                            e.f32(out), e.pfor);
      return;
    }
    latentAttention(e.f32(ql), e.f32(qr), b.num_tokens, b.positions.data(), b.seq_ids.data(), b.slots.data(),
                    e.groupTables(group), b.table_width, e.kvLayouts.at(layer), e.kvPool(layer), p, e.f32(out),
                    e.pfor);
  };
}

Exec compileKvIndexAppend(const OpContext &c) {
  c.need(5, 0);
  const fb::KvIndexAppendParams &p = c.params<fb::KvIndexAppendParams>();
  const KvLayout &kv = siteLayout(c, p.site());
  int layer = p.site()->layer(), group = p.site()->group(), key = c.I[0];
  c.acts({key});
  c.check(kv.index_elems > 0 && p.head_dim() == kv.index_elems && c.cols(key) == kv.index_elems,
          "writes index keys that do not match the cache plan");
  c.needArg(1, StepArg::Positions);
  c.needArg(2, StepArg::SeqIds);
  c.needArg(3, StepArg::Slots);
  c.needArg(4, StepArg::BlockTables);
  fb::CacheSite site = *p.site();
  return [=](StepEnv &e) {
    const StepBatch &b = *e.batch;
    thread_local std::vector<int32_t> scratch;
    indexAppend(e.f32(key), b.num_tokens, writtenRows(site, b, scratch), b.seq_ids.data(), b.slots.data(),
                e.groupTables(group), b.table_width, e.kvLayouts.at(layer), e.kvPool(layer));
  };
}

Exec compileKvBlockSelect(const OpContext &c) {
  c.need(7, 1);
  const fb::KvBlockSelectParams &params = c.params<fb::KvBlockSelectParams>();
  const KvLayout &kv = siteLayout(c, params.site());
  int layer = params.site()->layer(), group = params.site()->group(), q = c.I[0], out = c.O[0];
  c.acts({q, out});
  BlockSelectParams p;
  p.num_heads = params.num_heads();
  p.head_dim = params.head_dim();
  p.block = params.block();
  p.topk = params.topk();
  p.local = params.local();
  c.checkShape(shape::check(shape::KvBlockSelect{p.num_heads, p.head_dim, p.block, p.topk, p.local, c.cols(q),
                                                 c.cols(out)}));
  c.check(p.head_dim == kv.index_elems && p.topk <= (1 << 24) && p.block <= (1 << 24),
          "has index keys that do not fit the cache plan's rows");
  c.needArg(1, StepArg::Positions);
  c.needArg(2, StepArg::SeqIds);
  c.needArg(5, StepArg::Slots);
  c.needArg(6, StepArg::BlockTables);
  return [=](StepEnv &e) {
    const StepBatch &b = *e.batch;
    blockSelect(e.f32(q), b.num_tokens, b.positions.data(), b.seq_ids.data(), b.slots.data(), e.groupTables(group),
                b.table_width, e.kvLayouts.at(layer), e.kvPool(layer), p, e.i32(out), e.pfor);
  };
}

Exec compileKvIndexSelect(const OpContext &c) {
  c.need(8, 1);
  const fb::KvIndexSelectParams &params = c.params<fb::KvIndexSelectParams>();
  const KvLayout &kv = siteLayout(c, params.site());
  int layer = params.site()->layer(), group = params.site()->group(), q = c.I[0], w = c.I[1], out = c.O[0];
  c.acts({q, w, out});
  IndexSelectParams p;
  p.num_heads = params.num_heads();
  p.head_dim = params.head_dim();
  p.topk = params.topk();
  p.key_scale = (float)params.key_scale();
  p.weight_scale = (float)params.weight_scale();
  p.rate = rateOf(*params.site());
  c.check(params.site()->retention() == fb::Retention::All || p.rate > 1,
          "reads index keys that are kept for every token or per compressed window only");
  c.checkShape(shape::check(shape::KvIndexSelect{p.num_heads, p.head_dim, p.topk, c.cols(q), c.cols(w), c.cols(out)}));
  c.check(p.head_dim == kv.index_elems && p.topk <= (1 << 24), "has index keys that do not fit the cache plan's rows");
  c.needArg(2, StepArg::Positions);
  c.needArg(3, StepArg::SeqIds);
  c.needArg(6, StepArg::Slots);
  c.needArg(7, StepArg::BlockTables);
  return [=](StepEnv &e) {
    const StepBatch &b = *e.batch;
    indexSelect(e.f32(q), e.f32(w), b.num_tokens, b.positions.data(), b.seq_ids.data(), b.slots.data(),
                e.groupTables(group), b.table_width, e.kvLayouts.at(layer), e.kvPool(layer), p, e.i32(out), e.pfor);
  };
}

// Operands q, [weights], the step's positions, seq_ids, cu_seqlens, kv_lens, slots and block
// tables, then [ape], [key_norm]: the params say which are present.
Exec compileKvPoolSelect(const OpContext &c) {
  const fb::KvPoolSelectParams &params = c.params<fb::KvPoolSelectParams>();
  bool hasW = params.has_weights(), hasApe = params.has_ape(), hasNorm = params.has_key_norm();
  c.check(c.I.size() == 7u + hasW + hasApe + hasNorm && c.O.size() == 1, "has the wrong number of operands");
  const KvLayout &kv = siteLayout(c, params.site());
  int layer = params.site()->layer(), group = params.site()->group(), q = c.I[0], w = hasW ? c.I[1] : -1;
  int meta = hasW ? 2 : 1, ape = hasApe ? c.I[meta + 6] : -1, norm = hasNorm ? c.I[meta + 6 + hasApe] : -1;
  int out = c.O[0];
  c.acts({q, out});
  if (w >= 0)
    c.acts({q, w});
  PoolSelectParams p;
  p.num_heads = params.num_heads();
  p.head_dim = params.head_dim();
  p.pools = params.pools();
  p.pool = params.pool();
  p.key_scale = (float)params.key_scale();
  p.weight_scale = (float)params.weight_scale();
  p.eps = (float)params.eps();
  p.norm_offset = (float)params.norm_offset();
  p.blocks = params.blocks();
  if (params.key_freqs())
    p.key_freqs.assign(params.key_freqs()->begin(), params.key_freqs()->end());
  shape::KvPoolSelect s{p.num_heads, p.head_dim, p.pools, p.pool, c.cols(q), w >= 0 ? c.cols(w) : 0, c.cols(out),
                        0, 0, 0};
  if (ape >= 0) {
    const std::vector<int64_t> &apeShape = c.weightShape(ape);
    s.ape_rank = (int64_t)apeShape.size();
    s.ape_rows = apeShape.size() == 2 ? apeShape[0] : 0;
    s.ape_cols = apeShape.size() == 2 ? apeShape[1] : 0;
  }
  s.has_weights = hasW;
  s.has_ape = hasApe;
  s.blocks = p.blocks;
  s.has_norm = hasNorm;
  s.norm = hasNorm ? c.weightNumel(norm) : 0;
  s.eps = params.eps();
  s.freqs = (int64_t)p.key_freqs.size();
  c.checkShape(shape::check(s));
  c.check(shape::indexElems(s) == kv.index_elems && p.pools * p.pool <= (1 << 24),
          "has index keys that do not fit the cache plan's rows");
  c.needArg(meta, StepArg::Positions);
  c.needArg(meta + 1, StepArg::SeqIds);
  c.needArg(meta + 4, StepArg::Slots);
  c.needArg(meta + 5, StepArg::BlockTables);
  return [=](StepEnv &e) {
    const StepBatch &b = *e.batch;
    PoolSelectParams run = p;
    run.key_norm = norm >= 0 ? e.weight(norm) : nullptr;
    poolSelect(e.f32(q), w >= 0 ? e.f32(w) : nullptr, b.num_tokens, b.positions.data(), b.seq_ids.data(),
               b.slots.data(), e.groupTables(group), b.table_width, e.kvLayouts.at(layer), e.kvPool(layer),
               ape >= 0 ? e.weight(ape) : nullptr, run, e.i32(out), e.pfor);
  };
}

// Split, per-head norms, RoPE and the append of cbc.kv.rope_append, with the kernels of the
// ops it replaces.
Exec compileKvRopeAppend(const OpContext &c) {
  c.check(c.I.size() >= 6 && c.O.size() == 1, "has the wrong number of operands");
  const fb::KvRopeAppendParams &params = c.params<fb::KvRopeAppendParams>();
  const KvLayout &kv = siteLayout(c, params.site());
  int layer = params.site()->layer(), group = params.site()->group(), qkv = c.I[0], out = c.O[0];
  int64_t H = params.num_heads(), Hkv = params.num_kv_heads(), D = params.head_dim();
  c.check(c.isAct(qkv) && c.isAct(out), "expects activation operands");
  c.checkShape(shape::check(shape::KvRopeAppend{H, Hkv, D, params.rope()->head_dim(), c.cols(qkv), c.cols(out)}));
  int64_t qw = H * D, kw = Hkv * D;
  c.check(kv.k_elems == kw && kv.row_elems == 2 * kw, "has widths that do not fit the cache plan's rows");
  c.check(c.isArg(c.I[1], StepArg::Positions) && c.isArg(c.I[2], StepArg::SeqIds) &&
              c.isArg(c.I[3], StepArg::PromptLens) && c.isArg(c.I[4], StepArg::Slots) &&
              c.isArg(c.I[5], StepArg::BlockTables),
          "expects the step's metadata arguments");
  bool norms = c.I.size() > 6;
  c.check(!norms || (c.I.size() == 8 && c.weightNumel(c.I[6]) == D && c.weightNumel(c.I[7]) == D),
          "has norm weights of the wrong size");
  int qn = norms ? c.I[6] : -1, kn = norms ? c.I[7] : -1;
  float eps = (float)params.norm_eps(), offset = (float)params.norm_offset();
  RopeParams p = ropeParams(*params.rope());
  c.check(p.sections.empty(), "rotates by one position per token: its schedule must have no sections");
  c.check(p.rotary_offset == 0, "rotates the first features of a head: its schedule must have no rotary_offset");
  p.head_dim = D;
  checkRope(c, p);
  return [=](StepEnv &e) {
    const StepBatch &b = *e.batch;
    int64_t T = b.num_tokens;
    std::vector<float> &q = e.scratch[0], &k = e.scratch[1], &v = e.scratch[2];
    q.resize(T * qw);
    k.resize(T * kw);
    v.resize(T * kw);
    copyColumns(e.f32(qkv), T, qw + 2 * kw, 0, qw, q.data());
    copyColumns(e.f32(qkv), T, qw + 2 * kw, qw, kw, k.data());
    copyColumns(e.f32(qkv), T, qw + 2 * kw, qw + kw, kw, v.data());
    if (norms) {
      rmsNorm(q.data(), T, qw, D, e.weight(qn), eps, offset, q.data());
      rmsNorm(k.data(), T, kw, D, e.weight(kn), eps, offset, k.data());
    }
    const int64_t *seqLen = e.seqLengths();
    rope(q.data(), T, qw, p, b.positions.data(), seqLen, e.f32(out), e.pfor);
    rope(k.data(), T, kw, p, b.positions.data(), seqLen, k.data(), e.pfor);
    kvAppend(k.data(), v.data(), T, b.positions.data(), b.seq_ids.data(), b.slots.data(), e.groupTables(group),
             b.table_width, e.kvLayouts.at(layer), e.kvPool(layer));
  };
}

} // namespace cbc::rt::cpu
