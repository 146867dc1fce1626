// The CPU compile functions of the packed-row and mixture-of-experts ops (cbc.rows.*, cbc.moe.*).
#include "runtime/cpu/op_context.h"

#include <algorithm>

namespace cbc::rt::cpu {

Exec compileRowsGather(const OpContext &c) {
  c.need(2, 1);
  int x = c.I[0], out = c.O[0];
  int64_t width = c.cols(x);
  c.acts({x});
  c.acts({out});
  c.check(c.value(x).arena == 0 && c.value(out).arena == 1 && c.cols(out) == width,
          "must gather token rows into request rows of the same width");
  c.needArg(1, StepArg::LogitRows);
  return [=](StepEnv &e) {
    gatherRows(e.f32(x), width, e.arg(StepArg::LogitRows), e.batch->num_logit_rows, e.f32(out));
  };
}

Exec compileRowsInject(const OpContext &c) {
  c.need(3, 1);
  int x = c.I[0], out = c.O[0];
  int64_t width = c.cols(x);
  c.acts({x, out});
  c.check(c.value(x).arena == 0 && c.cols(out) == width, "must keep the token rows' width");
  c.needArg(1, StepArg::InjectRows);
  c.needArg(2, StepArg::InjectEmbeds);
  c.check(c.value(c.I[2]).shape.size() == 2 && c.value(c.I[2]).shape[1] == width,
          "has embeddings of another width than its rows");
  return [=](StepEnv &e) {
    const StepBatch &b = *e.batch;
    float *y = e.f32(out);
    if (y != e.f32(x))
      std::copy(e.f32(x), e.f32(x) + b.num_tokens * width, y);
    const float *embeds = e.injected();
    for (size_t j = 0; j < b.inject_rows.size(); ++j)
      std::copy(embeds + j * width, embeds + (j + 1) * width, y + (int64_t)b.inject_rows[j] * width);
  };
}

// Operands logits, [selection bias], [tokens, table]: the params say whether the table is there.
Exec compileMoeRoute(const OpContext &c) {
  const fb::MoeRouteParams &params = c.params<fb::MoeRouteParams>();
  size_t hashed = params.table() ? 2 : 0;
  c.check(c.I.size() >= 1 + hashed && c.I.size() <= 2 + hashed, "has the wrong number of operands");
  c.need((int)c.I.size(), 2);
  int logits = c.I[0], weights = c.O[0], ids = c.O[1], bias = c.I.size() == 2 + hashed ? c.I[1] : -1;
  int table = hashed ? c.I.back() : -1;
  if (hashed)
    c.needArg((int)c.I.size() - 2, StepArg::Tokens);
  c.acts({logits, weights, ids});
  int64_t E = c.cols(logits), k = params.k(), S = params.sinks();
  c.check(S >= 0 && S < E && (S == 0 || (params.score() == fb::RouteScore::Sigmoid && !params.groups() && !params.renorm())),
          "has sinks without plain sigmoid scores");
  c.check(k >= 1 && k <= E - S && c.cols(weights) == S + k && c.cols(ids) == S + k, "has an inconsistent k");
  c.check(bias < 0 || c.weightNumel(bias) == E - S, "has a selection bias of the wrong size");
  c.check(params.score() >= fb::RouteScore::MIN && params.score() <= fb::RouteScore::MAX, "has an unknown score");
  bool mixer = params.score() == fb::RouteScore::Sparsemixer;
  c.check(!mixer || (bias < 0 && !params.groups() && !params.renorm()),
          "has sparsemixer scores with a selection bias, groups or renorm");
  c.check(params.threshold() >= 0 && (mixer || params.threshold() == 0), "has a threshold without sparsemixer scores");
  RouteParams p;
  p.sinks = S;
  p.score = params.score();
  p.renorm = params.renorm();
  p.renorm_eps = (float)params.renorm_eps();
  p.scaling = (float)params.scaling();
  p.threshold = (float)params.threshold();
  c.check(!params.bias_on_logits() || bias >= 0, "has bias_on_logits without a selection bias");
  p.bias_on_logits = params.bias_on_logits();
  if (const fb::RouteGroups *g = params.groups()) {
    c.check(g->count() > 0 && E % g->count() == 0 && g->keep() > 0 && g->keep() <= g->count() &&
                k <= g->keep() * (E / g->count()) && (g->score() == fb::GroupScore::Max || E / g->count() >= 2),
            "has inconsistent route groups");
    c.check(g->score() >= fb::GroupScore::MIN && g->score() <= fb::GroupScore::MAX && g->fill() >= fb::GroupFill::MIN &&
                g->fill() <= fb::GroupFill::MAX && params.score() != fb::RouteScore::TopkSoftmax,
            "has unknown route group options");
    p.group_count = g->count();
    p.group_keep = g->keep();
    p.group_score = g->score();
    p.group_fill = g->fill();
  }
  if (table >= 0) {
    const std::vector<int64_t> &ts = c.weightShape(table);
    c.check(ts.size() == 2 && ts[1] == k && ts[0] > 0 && bias < 0 && S == 0 && !params.groups() && !mixer &&
                params.score() != fb::RouteScore::TopkSoftmax,
            "has a routing table that is not [vocab, k], or with a selection bias, sinks or groups");
    p.vocab = ts[0];
  }
  return [=](StepEnv &e) {
    RouteParams q = p;
    q.selection_bias = bias >= 0 ? e.weight(bias) : nullptr;
    q.table = table >= 0 ? e.weight(table) : nullptr;
    q.tokens = table >= 0 ? e.arg(StepArg::Tokens) : nullptr;
    moeRoute(e.f32(logits), e.rows(logits), E, k, q, e.f32(weights), e.i32(ids));
  };
}

Exec compileMoeExperts(const OpContext &c) {
  c.need(5, 1);
  const fb::MoeExpertsParams &params = c.params<fb::MoeExpertsParams>();
  c.check(params.glu() != nullptr, "has no unit parameters");
  const fb::GluParams &glu = *params.glu();
  Act act = glu.act();
  bool inter = glu.layout() == fb::GluLayout::Interleaved, ungated = params.ungated();
  std::optional<SwigluClamp> clamp = swigluForm(glu);
  c.check(!ungated || !clamp, "has an activation that needs a gated unit");
  const auto &I = c.I;
  int out = c.O[0];
  const auto &guShape = c.value(I[3]).shape;
  c.check(guShape.size() == 3, "needs gate_up of rank 3");
  int64_t E = guShape[0], I2 = guShape[1], H = guShape[2], k = c.cols(I[1]);
  int64_t inter1 = ungated ? I2 : I2 / 2; // the intermediate width
  bool biases = I.size() > 5;
  int64_t identity = params.identity_experts(), null = params.null_experts();
  bool scale_input = params.scale_input();
  c.check(identity >= 0 && null >= 0, "has a negative number of identity or null experts");
  c.acts({I[0], I[1], I[2], out});
  c.check(c.weightShape(I[3]) == guShape && (ungated || I2 % 2 == 0) && c.cols(I[0]) == H && c.cols(out) == H &&
              c.cols(I[2]) == k && c.weightShape(I[4]) == std::vector<int64_t>{E, H, inter1},
          "has expert weights that do not match its operands");
  c.check(!biases || (I.size() > 6 && c.weightShape(I[5]) == std::vector<int64_t>{E, I2} &&
                      c.weightShape(I[6]) == std::vector<int64_t>{E, H}),
          "has expert biases of the wrong shape");
  std::vector<int> in(I.begin(), I.begin() + (biases ? 7 : 5));
  int64_t shares = params.expert_ranks();
  c.check(shares == 1 || shares == c.artefact.ranks, "shares its experts among other ranks than the artefact's");
  return [=](StepEnv &e) {
    ExpertWeights w{e.matrix(in[3]), e.matrix(in[4]), biases ? e.weight(in[5]) : nullptr,
                    biases ? e.weight(in[6]) : nullptr, E, inter1, H, ungated, identity, scale_input, null};
    if (shares > 1) {
      w.first = e.comm->rank() * E;
      w.routed = E * shares;
      w.owns_identity = e.comm->rank() == 0;
    }
    moeExperts(e.f32(in[0]), e.rows(in[0]), e.i32(in[1]), e.f32(in[2]), k, w, act, inter, clamp ? &*clamp : nullptr,
               e.f32(out), e.pfor);
  };
}

Exec compileMoeSlotLinear(const OpContext &c) {
  c.need(3, 1);
  int x = c.I[0], ids = c.I[1], w = c.I[2], out = c.O[0], mix = c.I.size() > 3 ? c.I[3] : -1;
  const std::vector<int64_t> &shape = c.value(w).shape;
  c.check(shape.size() == 3 && c.weightShape(w) == shape, "needs a weight of rank 3");
  int64_t E = shape[0], N = shape[1], K = shape[2], k = c.cols(ids);
  c.acts({x, ids, out});
  if (mix >= 0)
    c.acts({mix});
  c.check(mix < 0 ? c.cols(x) == K && c.cols(out) == k * N : c.cols(x) == k * K && c.cols(out) == N && c.cols(mix) == k,
          "has operands that do not match its weight");
  return [=](StepEnv &e) {
    moeSlotLinear(e.f32(x), e.rows(x), e.i32(ids), mix >= 0 ? e.f32(mix) : nullptr, k, e.matrix(w), E, N, K,
                  e.f32(out), e.pfor);
  };
}

} // namespace cbc::rt::cpu
