// The CPU compile functions of the residual-stream ops (cbc.stream.*).
#include "runtime/cpu/op_context.h"

namespace cbc::rt::cpu {

Exec compileStreamHcWeights(const OpContext &c) {
  c.need(3, 1);
  const fb::HcWeightsParams &p = c.params<fb::HcWeightsParams>();
  int mixes = c.I[0], base = c.I[1], scale = c.I[2], out = c.O[0];
  c.acts({mixes, out});
  HcWeightsParams hp;
  hp.kind = (int)p.kind();
  c.check(hp.kind >= 0 && hp.kind <= 2, "has an unknown kind of hyper-connection");
  hp.streams = p.streams();
  hp.sinkhorn_iters = p.sinkhorn_iters();
  hp.magnitude = (float)p.magnitude();
  hp.eps = (float)p.eps();
  hp.post_eps = (float)p.post_eps();
  c.checkShape(shape::check(shape::HcWeights{hp.kind, hp.streams, c.cols(mixes), c.weightNumel(base),
                                             c.weightNumel(scale), c.cols(out), hp.sinkhorn_iters}));
  c.check(hp.magnitude > 0 && std::isfinite(hp.magnitude) && hp.eps >= 0 && std::isfinite(hp.eps) &&
              hp.post_eps >= 0 && std::isfinite(hp.post_eps) && hp.sinkhorn_iters <= 1000,
          "has a bad magnitude, epsilon or iteration count");
  return [=](StepEnv &e) { hcWeights(e.f32(mixes), e.rows(mixes), e.weight(base), e.weight(scale), hp, e.f32(out)); };
}

Exec compileStreamAttend(const OpContext &c) {
  c.need(2, 1);
  const fb::StreamAttendParams &p = c.params<fb::StreamAttendParams>();
  int sources = c.I[0], query = c.I[1], out = c.O[0];
  c.check(!c.isAct(query), "needs a weight of queries");
  c.acts({sources, out});
  const std::vector<int64_t> &qs = c.weightShape(query);
  bool rank2 = qs.size() == 2;
  c.checkShape(shape::check(shape::StreamAttend{p.count(), c.cols(sources), (int64_t)qs.size(), rank2 ? qs[0] : 1,
                                                qs.empty() ? 0 : qs.back(), c.cols(out), p.eps()}));
  int64_t N = p.count(), H = c.cols(sources) / N, Q = rank2 ? qs[0] : 1;
  float eps = (float)p.eps();
  return [=](StepEnv &e) { streamAttend(e.f32(sources), e.rows(sources), N, H, e.weight(query), Q, eps, e.f32(out)); };
}

// Both stream ops: N streams of H, the coefficients at `offset` of the weights rows.
static shape::Streams streamsShape(const OpContext &c, bool expand) {
  const fb::StreamParams &p = c.params<fb::StreamParams>();
  bool hasWeights = c.I.size() > (expand ? 2u : 1u);
  int streams = c.I[expand ? 1 : 0], w = hasWeights ? c.I[expand ? 2 : 1] : -1;
  return shape::Streams{p.count(), c.cols(streams), w >= 0 ? c.cols(w) : 0, p.offset(), expand ? c.cols(c.I[0]) : 0,
                        c.cols(c.O[0]), expand, expand && p.comb(), w >= 0};
}

// Weighted by a coefficient per stream, or (without weights) the streams' mean.
Exec compileStreamCollapse(const OpContext &c) {
  c.check((c.I.size() == 1 || c.I.size() == 2) && c.O.size() == 1, "has the wrong number of operands");
  shape::Streams s = streamsShape(c, false);
  c.checkShape(shape::check(s));
  int streams = c.I[0], w = s.has_weights ? c.I[1] : -1, out = c.O[0];
  c.acts({streams, out});
  if (w >= 0)
    c.acts({streams, w});
  int64_t N = s.count, H = s.streams / N;
  return [=](StepEnv &e) {
    streamCollapse(e.f32(streams), w >= 0 ? e.f32(w) : nullptr, e.rows(streams), N, H, s.weights, s.offset,
                   e.f32(out));
  };
}

Exec compileStreamExpand(const OpContext &c) {
  c.need(3, 1);
  shape::Streams s = streamsShape(c, true);
  c.checkShape(shape::check(s));
  int block = c.I[0], streams = c.I[1], w = c.I[2], out = c.O[0];
  c.acts({block, streams, w, out});
  int64_t N = s.count, H = s.streams / N;
  return [=](StepEnv &e) {
    streamExpand(e.f32(block), e.f32(streams), e.f32(w), e.rows(streams), N, H, s.weights, s.offset, s.comb,
                 e.f32(out));
  };
}

} // namespace cbc::rt::cpu
