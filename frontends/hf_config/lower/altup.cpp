// AltUp's residual streams (AltUpSpec): the streams from the embeddings, the layer that predicts
// every stream, runs its blocks (with LAuReL) on the first prediction and corrects the streams by
// the innovation, and the average of the streams before the final norm. The streams travel
// between layers side by side in one [T, streams * hidden] value.
#include "frontends/hf_config/lower/step_builder.h"

#include <cmath>

namespace cbc::hf::lower {

using namespace mlir;

// Stream i > 0 of `x`'s streams through <prefix><projections>.<i-1>, brought to the RMS of `ref`.
Value StepBuilder::projectedStream(Value x, Value ref, const std::string &projections, int64_t i) {
  int64_t H = spec_.hidden_size;
  std::string n = std::to_string(i - 1);
  Value p = linear(x, weight(projections + "." + n, {H, H}, spec_.prefix + projections + "." + n + ".weight"));
  return MatchRmsOp::create(b_, loc_, rows(H), p, ref, b_.getF64FloatAttr(1e-5)).getResult();
}

Value StepBuilder::altUpStreams(Value embeddings) {
  const AltUpSpec &a = spec_.altup;
  SmallVector<Value> streams = {embeddings};
  for (int64_t i = 1; i < a.streams; ++i)
    streams.push_back(projectedStream(embeddings, embeddings, a.projections, i));
  return ConcatOp::create(b_, loc_, rows(a.streams * spec_.hidden_size), streams).getResult();
}

// The mean of the streams, each but the first through its unembedding projection at the first
// one's RMS.
Value StepBuilder::altUpCollapse(Value x) {
  const AltUpSpec &a = spec_.altup;
  SmallVector<Value> streams = split(x, SmallVector<int64_t>(a.streams, spec_.hidden_size));
  Value sum = streams[0];
  for (int64_t i = 1; i < a.streams; ++i)
    sum = add(sum, projectedStream(streams[i], streams[0], a.unembed, i));
  return scaleBy(sum, 1.0 / (double)a.streams);
}

// The router's modalities of x: tanh(modality_router(router_norm(x) / hidden)), one per stream.
Value StepBuilder::altUpModalities(int64_t l, Value x) {
  const AltUpSpec &a = spec_.altup;
  int64_t H = spec_.hidden_size;
  std::string m = a.module + ".";
  Value h = norm(x, weight(prog(l, m + "router_norm"), {H}, hf(l, m + "router_norm.weight")));
  h = linear(scaleBy(h, toWeightDtype(1.0 / (double)H)),
             weight(prog(l, m + "modality_router"), {a.streams, H}, hf(l, m + "modality_router.weight")));
  // tanh is the soft cap of 1.
  return SoftcapOp::create(b_, loc_, h.getType(), h, b_.getF64FloatAttr(1.0)).getResult();
}

// x plus a low-rank residual of it, normed (LaurelSpec).
Value StepBuilder::laurel(int64_t l, Value x) {
  const LaurelSpec &s = spec_.laurel;
  int64_t H = spec_.hidden_size, r = s.rank;
  Value h = linear(x, weight(prog(l, "laurel.left"), {r, H}, hf(l, s.left + ".weight")));
  h = linear(h, weight(prog(l, "laurel.right"), {H, r}, hf(l, s.right + ".weight")));
  return add(x, norm(h, weight(prog(l, "laurel.norm"), {H}, hf(l, s.norm + ".weight"))));
}

Value StepBuilder::altUpLayer(int64_t l, Value x) {
  const AltUpSpec &a = spec_.altup;
  const Names &nm = spec_.names;
  int64_t n = a.streams, H = spec_.hidden_size;
  std::string m = a.module + ".";
  SmallVector<Value> X = split(x, SmallVector<int64_t>(n, H));
  // Predict: P_j = X_j + sum_i C[j, i] X_i, C = prediction_coefs(modalities of X_0) as [n, n].
  Value coefs = linear(altUpModalities(l, X[0]),
                       weight(prog(l, m + "prediction_coefs"), {n * n, n}, hf(l, m + "prediction_coefs.weight")));
  SmallVector<Value> c = split(coefs, SmallVector<int64_t>(n * n, 1));
  SmallVector<Value> P;
  for (int64_t j = 0; j < n; ++j) {
    Value p = X[j];
    for (int64_t i = 0; i < n; ++i)
      p = add(p, mul(X[i], c[j * n + i]));
    P.push_back(p);
  }
  // The blocks on the first prediction; LAuReL beside the mixer, the two averaged.
  Value active = P[0];
  Value h = layerNorm(l, nm.input_norm, active);
  Value mixed = add(active, layerNorm(l, nm.post_attn_norm, mixer(l, h)));
  if (spec_.laurel.rank > 0)
    mixed = scaleBy(add(mixed, laurel(l, h)), 1.0 / std::sqrt(2.0));
  Value y = add(mixed, layerNorm(l, nm.post_ff_norm, denseMlp(l, layerNorm(l, nm.pre_ff_norm, mixed))));
  // Correct: Q_j = P_j + (1 + k_j) (y - P_0), k = correction_coefs(modalities of y).
  Value k = linear(altUpModalities(l, y),
                   weight(prog(l, m + "correction_coefs"), {n, n}, hf(l, m + "correction_coefs.weight")));
  SmallVector<Value> kj = split(k, SmallVector<int64_t>(n, 1));
  Value innovation = add(y, scaleBy(P[0], -1.0));
  SmallVector<Value> Q;
  for (int64_t j = 0; j < n; ++j)
    Q.push_back(add(add(P[j], innovation), mul(innovation, kj[j])));
  // The per-layer input's branch reads the first corrected stream and adds to the others.
  if (const PerLayerInputSpec &p = spec_.per_layer_inputs; p.dim > 0) {
    Value s = Q[0];
    if (a.correct_scale)
      s = mul(s, weight(prog(l, m + "correct_output_scale"), {H}, hf(l, m + "correct_output_scale")));
    Value b = perLayerBranch(l, s);
    for (int64_t j = 1; j < n; ++j)
      Q[j] = add(Q[j], b);
  }
  return ConcatOp::create(b_, loc_, rows(n * H), Q).getResult();
}

} // namespace cbc::hf::lower
