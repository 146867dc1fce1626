// GatedResidual streams (HyperSpec::rank), the hashed n-gram embeddings added to them (PleSpec)
// and the QSA block indexer (BlockIndexerSpec::pooled). The streams travel side by side in one
// [T, N * hidden] row as for the other hyper-connections; the per-element gate, the mean and the
// per-stream norms are ordinary ops, the mean a weightless cbc.stream.collapse.
#include "frontends/hf_config/lower/step_builder.h"

#include <cmath>

namespace cbc::hf::lower {

using namespace mlir;

// One site's block input from the streams: mean_n(sigmoid(up silu(down u / N))_n * u_n) with u
// the streams each (1 + w) normed; with `inject`, also 2 sigmoid(inject u / N), one per stream.
Value StepBuilder::gatedMix(Value streams, const std::string &prog, const std::string &prefix, Value *inject) {
  const HyperSpec &h = spec_.hyper;
  int64_t N = h.streams, H = spec_.hidden_size, W = N * H;
  Value u = norm(streams, weight(prog + "norm", {W}, prefix + "hc_norm.weight"), H, h.norm_eps);
  Value down = linear(u, weight(prog + "down", {h.rank, W}, prefix + "input_mix_weight_down.weight"));
  Value gate = linear(act(scaleBy(down, 1.0 / (double)N), Activation::silu),
                      weight(prog + "up", {W, h.rank}, prefix + "input_mix_weight_up.weight"));
  Value gated = GateOp::create(b_, loc_, rows(W), u, gate).getResult();
  if (inject) {
    Value in = linear(u, weight(prog + "inject", {N, W}, prefix + "block_inject_weight.weight"));
    *inject = ActOp::create(b_, loc_, rows(N), scaleBy(in, 1.0 / (double)N), actAttr(Activation::sigmoid),
                            b_.getF64FloatAttr(2.0))
                  .getResult();
  }
  return StreamCollapseOp::create(b_, loc_, rows(H), gated, Value(), b_.getI64IntegerAttr(N), b_.getI64IntegerAttr(0))
      .getResult();
}

// h_n += inject_n * block(x) at each of the layer's two sites, the PLE rows added first where
// the layer has them; the raw streams are the residual.
Value StepBuilder::gatedResidualLayer(int64_t l, Value x) {
  const LayerSpec &L = spec_.layers[l];
  const HyperSpec &h = spec_.hyper;
  auto site = [&](Value streams, const std::string &name, const std::string &prefix,
                  const std::function<Value(Value)> &block) {
    Value inject;
    Value in = gatedMix(streams, prog(l, name + "."), hf(l, prefix), &inject);
    return StreamExpandOp::create(b_, loc_, streams.getType(), block(in), streams, inject,
                                  b_.getI64IntegerAttr(h.streams), b_.getI64IntegerAttr(0), UnitAttr())
        .getResult();
  };
  if (L.ple >= 0)
    x = add(x, ngramEmbeddings(l, x));
  x = site(x, "gr_attn", h.attn, [&](Value in) { return mixer(l, in); });
  return site(x, "gr_mlp", h.ffn, [&](Value in) { return L.moe ? moeMlp(l, in) : denseMlp(l, in); });
}

// PLE: e = the token's hashed n-gram rows; per stream n a gate g_n = sign-sqrt(<key_n, query_n>
// / sqrt(H)) from key = norm(key_proj e) and query = norm(streams); v_n = sigmoid(g_n) value_proj e;
// the result v + silu(conv(norm(v))), the conv depthwise and dilated by ngram over time.
Value StepBuilder::ngramEmbeddings(int64_t l, Value streams) {
  const PleSpec &p = spec_.ple;
  const LayerSpec &L = spec_.layers[l];
  int64_t N = spec_.hyper.streams, H = spec_.hidden_size, W = N * H, heads = (p.ngram - 1) * p.heads_per_ngram;
  auto name = [&](const std::string &rest) { return hf(l, "ple." + rest); };
  auto pn = [&](const std::string &rest) { return prog(l, "ple." + rest); };
  int64_t rows = p.table_rows[L.ple], chunk = (rows + p.shards - 1) / p.shards;
  WeightRef table;
  table.parts.emplace_back();
  for (int64_t s = 0; s * chunk < rows; ++s) // torch.chunk's pieces, fewer than shards when they run out
    table.parts[0].push_back(name("ple_embedding.ngram_embedding.shard_" + std::to_string(s) + ".weight"));
  Value tableW = weight(pn("table"), {rows, p.dim / heads}, table);
  const std::vector<int64_t> &primes = p.primes[L.ple];
  Value e = NgramEmbedOp::create(b_, loc_, this->rows(p.dim), tokens_, tableW, cuSeqlens_, stateIn_, stateOut_,
                                 hasInitial_, b_.getI64IntegerAttr(l), b_.getI64IntegerAttr(p.eos),
                                 b_.getI64IntegerAttr(p.heads_per_ngram),
                                 b_.getDenseI64ArrayAttr(p.multipliers[L.ple]), b_.getDenseI64ArrayAttr(primes),
                                 b_.getStringAttr("ngram"))
                .getResult();
  Value key = norm(linear(e, weight(pn("key"), {W, p.dim}, name("key_proj.weight"))),
                   weight(pn("norm_key"), {W}, name("norm_key.weight")), H);
  Value query = norm(streams, weight(pn("norm_query"), {W}, name("norm_query.weight")), H);
  Value g = GroupDotOp::create(b_, loc_, this->rows(N), key, query, b_.getI64IntegerAttr(N),
                               b_.getF64FloatAttr(1.0 / std::sqrt((double)H)), actAttr(Activation::signed_sqrt))
                .getResult();
  Value value = linear(e, weight(pn("value"), {H, p.dim}, name("value_proj.weight")));
  SmallVector<Value> copies(N, value);
  Value v = GateOp::create(b_, loc_, this->rows(W), ConcatOp::create(b_, loc_, this->rows(W), copies).getResult(), g)
                .getResult();
  Value vn = norm(v, weight(pn("norm_conv"), {W}, name("norm_conv.weight")), H);
  Value convW = weight(pn("conv"), {W, 1, p.conv_kernel}, name("conv1d.weight"));
  Value c = conv1d(l, vn, convW, Value(), Activation::silu, "ple_conv", false, Value(), {.dilation = p.ngram});
  return add(v, c);
}

// The QSA selection: the indexer's raw key cached per token, the complete blocks' pooled keys
// (mean, (1 + w) k_layernorm, RoPE at the block's first position) scored against the normed, roped
// queries; every query head reads the chosen blocks and its own open block.
BlockSelection StepBuilder::qsaIndexer(int64_t layer, Value x, const AttnSite &site) {
  const BlockIndexerSpec &ix = spec_.attn.block_indexer;
  int64_t Hi = ix.heads, Di = ix.head_dim;
  std::string hfi = site.hf + "indexer.", progi = site.prog + "indexer.";
  auto parts = split(linear(x, weight(progi + "qk", {(Hi + 1) * Di, site.in}, hfi + "index_qk_proj.weight")),
                     {Hi * Di, Di});
  const RopeSpec &r = spec_.layers[layer].rope;
  Value q = rope(r, norm(parts[0], weight(progi + "q_norm", {Di}, hfi + "q_layernorm.weight"), Di), Di);
  KvIndexAppendOp::create(b_, loc_, parts[1], positions_, seqIds_, slots_, blockTables_, b_.getI64IntegerAttr(layer),
                          b_.getI64IntegerAttr(Di), IntegerAttr());
  Value kNorm = weight(progi + "k_norm", {Di}, hfi + "k_layernorm.weight");
  Value blocks = KvPoolSelectOp::create(
                     b_, loc_, rowsI32(ix.topk + 1), q, Value(), positions_, seqIds_, cuSeqlens_, kvLens_, slots_,
                     blockTables_, Value(), kNorm, b_.getI64IntegerAttr(layer), b_.getI64IntegerAttr(Hi),
                     b_.getI64IntegerAttr(Di), b_.getI64IntegerAttr(ix.topk), b_.getI64IntegerAttr(ix.block),
                     b_.getF64FloatAttr(1.0), b_.getF64FloatAttr(1.0 / std::sqrt((double)Di)), IntegerAttr(),
                     b_.getF64FloatAttr(spec_.norm_eps), b_.getF64FloatAttr(spec_.norm_offset),
                     b_.getDenseF32ArrayAttr(r.inv_freq), b_.getUnitAttr())
                     .getResult();
  return {blocks, 1, ix.block};
}

} // namespace cbc::hf::lower
