// The CPU compile functions of the per-request state ops (cbc.state.*). The shapes are checked
// by the rules the ops' verifiers use (runtime/schema/shape_rules.h); what is left here is what
// the kernels need besides: activations where rows are read, and the sizes their buffers bound.
#include "runtime/cpu/op_context.h"

namespace cbc::rt::cpu {

namespace {
// The step's per-request metadata, the last four operands of every state op.
void checkStateMeta(const OpContext &c, size_t first) {
  c.check(c.I.size() == first + 4 && c.O.size() == 1, "has the wrong number of operands");
  c.check(c.isArg(c.I[first], StepArg::CuSeqlens) && c.isArg(c.I[first + 1], StepArg::StateIn) &&
              c.isArg(c.I[first + 2], StepArg::StateOut) && c.isArg(c.I[first + 3], StepArg::HasInitialState),
          "expects the step's metadata arguments");
}

void checkActs(const OpContext &c, std::initializer_list<int> ids) {
  for (int v : ids)
    c.check(c.isAct(v), "expects an activation operand");
}

// The scans keep per-head scratch of at most these sizes.
constexpr int64_t kMaxStateDim = 4096, kMaxStateHeads = 65536;
} // namespace

// Operands x, weight, then the optional bias and initial inputs (Conv1dParams says whether the
// last optional one is the initial), then the metadata.
Exec compileStateConv1d(const OpContext &c) {
  const fb::Conv1dParams &p = c.params<fb::Conv1dParams>();
  // The optional operands in order: the bias, the initial inputs, the per-token taps.
  size_t optional = c.I.size() >= 6 ? c.I.size() - 6 : 0;
  bool hasInitial = p.initial(), hasTaps = p.taps();
  c.check(c.I.size() >= 6 && c.O.size() == 1 && optional <= 3 && optional >= (size_t)hasInitial + hasTaps,
          "has the wrong number of operands");
  bool hasBias = optional - hasInitial - hasTaps == 1;
  checkStateMeta(c, 2 + optional);
  int x = c.I[0], w = c.I[1], bias = hasBias ? c.I[2] : -1;
  int initial = hasInitial ? c.I[2 + hasBias] : -1, taps = hasTaps ? c.I[1 + optional] : -1;
  int out = c.O[0];
  const std::vector<int64_t> &ws = c.weightShape(w);
  bool rank3 = ws.size() == 3, rank2 = ws.size() == 2; // [C, K]: depthwise
  shape::Conv1d s{c.cols(x), (int64_t)ws.size(), rank3 || rank2 ? ws[0] : 0, rank3 ? ws[1] : 1,
                  rank3 ? ws[2] : rank2 ? ws[1] : 0, bias >= 0 ? c.weightNumel(bias) : 0, c.cols(out), bias >= 0,
                  initial >= 0 ? c.weightNumel(initial) : 0, initial >= 0, taps >= 0 ? c.cols(taps) : 0, taps >= 0,
                  p.dilation()};
  c.checkShape(shape::check(s));
  c.check(c.isAct(x) && c.isAct(out) && c.value(x).arena == 0, "expects per-token activations");
  if (taps >= 0)
    c.acts({x, taps});
  c.check(std::isfinite(p.scale()) && p.scale() != 0, "has a scale that is not finite and non-zero");
  int64_t tapsWidth = s.taps;
  bool lagOrder = p.lag_order();
  float scale = (float)p.scale();
  int64_t C = s.channels, K = s.kernel, G = s.group;
  c.check(!lagOrder || G == 1, "has lag order on a grouped conv");
  int layer = p.state()->layer();
  std::string state = p.state()->name()->str();
  Act act = p.act();
  bool residual = p.residual();
  if (K > 1)
    c.checkState(*p.state(), shape::stateShape(s));
  int64_t dilation = s.dilation;
  return [=](StepEnv &e) {
    ConvForm form{taps >= 0 ? e.f32(taps) : nullptr, tapsWidth, lagOrder, scale, dilation};
    conv1dStates(e.f32(x), C, K, e.weight(w), bias >= 0 ? e.weight(bias) : nullptr, act, e.stateRows(),
                 K > 1 ? e.statePool(layer, state) : nullptr, e.f32(out), e.pfor, residual, G,
                 initial >= 0 ? e.weight(initial) : nullptr, form);
  };
}

Exec compileStateShift(const OpContext &c) {
  c.check((c.I.size() == 5 || c.I.size() == 6) && c.O.size() == 1, "has the wrong number of operands");
  bool hasInitial = c.I.size() == 6;
  checkStateMeta(c, hasInitial ? 2 : 1);
  const fb::ShiftParams &p = c.params<fb::ShiftParams>();
  int x = c.I[0], initial = hasInitial ? c.I[1] : -1, out = c.O[0];
  shape::Shift s{c.cols(x), initial >= 0 ? c.weightNumel(initial) : 0, c.cols(out), initial >= 0};
  c.checkShape(shape::check(s));
  c.check(c.isAct(x) && c.isAct(out) && c.value(x).arena == 0, "expects per-token activations");
  c.checkState(*p.state(), shape::stateShape(s));
  int layer = p.state()->layer();
  std::string state = p.state()->name()->str();
  int64_t C = s.channels;
  return [=](StepEnv &e) {
    shiftStates(e.f32(x), C, initial >= 0 ? e.weight(initial) : nullptr, e.stateRows(), e.statePool(layer, state),
                e.f32(out), e.pfor);
  };
}

// Operands tokens, table, then the metadata.
Exec compileNgramEmbed(const OpContext &c) {
  checkStateMeta(c, 2);
  const fb::NgramEmbedParams &p = c.params<fb::NgramEmbedParams>();
  int tokens = c.I[0], table = c.I[1], out = c.O[0];
  c.needArg(0, StepArg::Tokens);
  c.check(c.isAct(out) && c.value(out).arena == 0, "expects per-token activations");
  NgramParams np;
  np.eos = p.eos();
  np.heads_per_ngram = p.heads_per_ngram();
  c.check(p.multipliers() && p.primes(), "has no hash multipliers or primes");
  np.multipliers.assign(p.multipliers()->begin(), p.multipliers()->end());
  np.primes.assign(p.primes()->begin(), p.primes()->end());
  int64_t sum = 0;
  for (int64_t prime : np.primes) {
    c.check(prime > 0 && sum <= ((int64_t)1 << 40), "has a prime that is not positive");
    np.offsets.push_back(sum);
    sum += prime;
  }
  const std::vector<int64_t> &ts = c.weightShape(table);
  shape::NgramEmbed s{(int64_t)np.multipliers.size(), np.heads_per_ngram, (int64_t)np.primes.size(), sum,
                      (int64_t)ts.size(), ts.size() == 2 ? ts[0] : 0, ts.size() == 2 ? ts[1] : 0, c.cols(out), np.eos};
  c.checkShape(shape::check(s));
  c.checkState(*p.state(), shape::stateShape(s));
  c.check(c.artefact.meta.vocab_size <= (1 << 24), "keeps token ids of a vocabulary past 2^24 in fp32");
  int layer = p.state()->layer();
  std::string state = p.state()->name()->str();
  int64_t D = s.table_dim;
  return [=](StepEnv &e) {
    ngramEmbed(e.arg(StepArg::Tokens), e.matrix(table), D, np, e.stateRows(), e.statePool(layer, state), e.f32(out),
               e.pfor);
  };
}

// Operands x, positions, ape, [norm], then the metadata.
Exec compileWindowPool(const OpContext &c) {
  const fb::WindowPoolParams &p = c.params<fb::WindowPoolParams>();
  checkStateMeta(c, p.has_norm() ? 4 : 3);
  int x = c.I[0], ape = c.I[2], norm = p.has_norm() ? c.I[3] : -1, out = c.O[0];
  c.needArg(1, StepArg::Positions);
  checkActs(c, {x, out});
  c.acts({x, out});
  const std::vector<int64_t> &as = c.weightShape(ape);
  shape::WindowPool s{p.rate(), p.dim(), c.cols(x), (int64_t)as.size(), as.size() == 2 ? as[0] : 0,
                      as.size() == 2 ? as[1] : 0, norm >= 0 ? c.weightNumel(norm) : 0, c.cols(out), p.overlap(),
                      norm >= 0};
  c.checkShape(shape::check(s));
  c.checkState(*p.state(), shape::stateShape(s));
  WindowPoolParams wp;
  wp.rate = p.rate();
  wp.dim = p.dim();
  wp.overlap = p.overlap();
  wp.eps = (float)p.eps();
  if (p.rope()) {
    wp.rope = ropeParams(*p.rope());
    c.check(wp.rope->head_dim == wp.dim && wp.rope->sections.empty() &&
                wp.rope->rotary_offset + wp.rope->rotary_dim <= wp.dim,
            "has a rope that does not rotate one head of dim features");
  }
  int layer = p.state()->layer();
  std::string state = p.state()->name()->str();
  return [=](StepEnv &e) mutable {
    wp.norm = norm >= 0 ? e.weight(norm) : nullptr;
    windowPool(e.f32(x), e.arg(StepArg::Positions), e.weight(ape), wp, e.stateRows(), e.statePool(layer, state),
               e.f32(out), e.pfor);
  };
}

Exec compileWkv(const OpContext &c) {
  checkStateMeta(c, 4);
  const fb::WkvParams &p = c.params<fb::WkvParams>();
  int k = c.I[0], v = c.I[1], decay = c.I[2], first = c.I[3], out = c.O[0];
  checkActs(c, {k, v, out});
  c.acts({k, v, out});
  shape::Wkv s{c.cols(k), c.cols(v), c.weightNumel(decay), c.weightNumel(first), c.cols(out)};
  c.checkShape(shape::check(s));
  c.checkState(*p.state(), shape::stateShape(s));
  int layer = p.state()->layer();
  std::string state = p.state()->name()->str();
  int64_t C = s.channels;
  return [=](StepEnv &e) {
    wkvScan(e.f32(k), e.f32(v), C, e.weight(decay), e.weight(first), e.stateRows(), e.statePool(layer, state),
            e.f32(out), e.pfor);
  };
}

Exec compileRgLru(const OpContext &c) {
  checkStateMeta(c, 4);
  const fb::RgLruParams &p = c.params<fb::RgLruParams>();
  int x = c.I[0], gx = c.I[1], ga = c.I[2], param = c.I[3], out = c.O[0];
  checkActs(c, {x, gx, ga, out});
  c.acts({x, gx, ga, out});
  shape::RgLru s{c.cols(x), c.cols(gx), c.cols(ga), c.weightNumel(param), c.cols(out)};
  c.checkShape(shape::check(s));
  c.checkState(*p.state(), shape::stateShape(s));
  int layer = p.state()->layer();
  std::string state = p.state()->name()->str();
  int64_t C = s.channels;
  return [=](StepEnv &e) {
    rgLruScan(e.f32(x), e.f32(gx), e.f32(ga), e.weight(param), C, e.stateRows(), e.statePool(layer, state), e.f32(out),
              e.pfor);
  };
}

Exec compileMlstm(const OpContext &c) {
  checkStateMeta(c, 5);
  const fb::MlstmParams &params = c.params<fb::MlstmParams>();
  int q = c.I[0], k = c.I[1], v = c.I[2], ig = c.I[3], fg = c.I[4], out = c.O[0];
  checkActs(c, {q, k, v, ig, fg, out});
  c.acts({q, k, v, ig, fg, out});
  shape::Mlstm s{params.num_heads(), params.k_dim(), params.v_dim(), c.cols(q), c.cols(k), c.cols(v),
                 c.cols(ig), c.cols(fg), c.cols(out)};
  c.checkShape(shape::check(s));
  c.check(std::isfinite(params.eps()) && params.eps() >= 0, "has a negative or non-finite eps");
  c.checkState(*params.state(), shape::stateShape(s));
  MlstmParams p{s.heads, s.k_dim, s.v_dim, (float)params.eps()};
  int layer = params.state()->layer();
  std::string state = params.state()->name()->str();
  return [=](StepEnv &e) {
    mlstmScan(e.f32(q), e.f32(k), e.f32(v), e.f32(ig), e.f32(fg), p, e.stateRows(), e.statePool(layer, state),
              e.f32(out), e.pfor);
  };
}

Exec compileGatedDelta(const OpContext &c) {
  checkStateMeta(c, 7);
  const fb::GatedDeltaParams &params = c.params<fb::GatedDeltaParams>();
  const auto &I = c.I;
  int out = c.O[0];
  checkActs(c, {I[0], I[1], I[2], I[3], I[4], out});
  shape::GatedDelta s{params.num_k_heads(), params.num_v_heads(), params.k_dim(), params.v_dim(),
                      c.cols(I[0]), c.cols(I[1]), c.cols(I[2]), c.cols(I[3]), c.cols(I[4]), c.cols(out),
                      c.weightNumel(I[5]), c.weightNumel(I[6])};
  c.checkShape(shape::check(s));
  c.check(s.k_dim <= kMaxStateDim && s.v_dim <= kMaxStateDim && s.v_heads <= kMaxStateHeads,
          "has heads larger than the CPU backend's scans take");
  c.checkState(*params.state(), shape::stateShape(s));
  GatedDeltaParams p;
  p.k_heads = s.k_heads;
  p.v_heads = s.v_heads;
  p.k_dim = s.k_dim;
  p.v_dim = s.v_dim;
  p.beta_scale = (float)params.beta_scale();
  p.qk_l2norm = params.qk_l2norm();
  int layer = params.state()->layer();
  std::string state = params.state()->name()->str();
  std::vector<int> in(I.begin(), I.begin() + 7);
  return [=](StepEnv &e) mutable {
    p.A_log = e.weight(in[5]);
    p.dt_bias = e.weight(in[6]);
    gatedDeltaScan(e.f32(in[0]), e.f32(in[1]), e.f32(in[2]), e.f32(in[3]), e.f32(in[4]), p, e.stateRows(),
                   e.statePool(layer, state), e.f32(out), e.pfor);
  };
}

Exec compileKda(const OpContext &c) {
  checkStateMeta(c, 7);
  const fb::KdaParams &params = c.params<fb::KdaParams>();
  const auto &I = c.I;
  int out = c.O[0];
  checkActs(c, {I[0], I[1], I[2], I[3], I[4], out});
  shape::Kda s{params.num_heads(), params.k_dim(), params.v_dim(), c.cols(I[0]), c.cols(I[1]), c.cols(I[2]),
               c.cols(I[3]), c.cols(I[4]), c.cols(out), c.weightNumel(I[5]), c.weightNumel(I[6])};
  c.checkShape(shape::check(s));
  c.check(s.k_dim <= kMaxStateDim && s.v_dim <= kMaxStateDim && s.heads <= kMaxStateHeads,
          "has heads larger than the CPU backend's scans take");
  KdaParams p;
  p.heads = s.heads;
  p.k_dim = s.k_dim;
  p.v_dim = s.v_dim;
  p.bounded = params.gate() == fb::DecayGate::BoundedSigmoid;
  p.lower_bound = (float)params.lower_bound();
  c.check(!p.bounded || p.lower_bound < 0, "has a bounded gate without a negative lower bound");
  c.checkState(*params.state(), shape::stateShape(s));
  int layer = params.state()->layer();
  std::string state = params.state()->name()->str();
  std::vector<int> in(I.begin(), I.begin() + 7);
  return [=](StepEnv &e) mutable {
    p.A_log = e.weight(in[5]);
    p.dt_bias = e.weight(in[6]);
    kdaScan(e.f32(in[0]), e.f32(in[1]), e.f32(in[2]), e.f32(in[3]), e.f32(in[4]), p, e.stateRows(),
            e.statePool(layer, state), e.f32(out), e.pfor);
  };
}

Exec compileSsd(const OpContext &c) {
  checkStateMeta(c, 7);
  const fb::SsdParams &params = c.params<fb::SsdParams>();
  const auto &I = c.I;
  int out = c.O[0];
  checkActs(c, {I[0], I[1], I[2], I[3], out});
  shape::Ssd s{params.num_heads(), params.head_dim(), params.n_groups(), params.state_size(),
               c.cols(I[0]), c.cols(I[1]), c.cols(I[2]), c.cols(I[3]), c.cols(out),
               c.weightNumel(I[4]), c.weightNumel(I[5]), c.weightNumel(I[6])};
  c.checkShape(shape::check(s));
  c.check(s.head_dim <= kMaxStateDim && s.state_size <= kMaxStateDim && s.heads <= kMaxStateHeads,
          "has heads larger than the CPU backend's scans take");
  c.checkState(*params.state(), shape::stateShape(s));
  SsdParams p;
  p.heads = s.heads;
  p.head_dim = s.head_dim;
  p.groups = s.groups;
  p.state = s.state_size;
  p.dt_min = (float)params.dt_min();
  p.dt_max = (float)params.dt_max();
  int layer = params.state()->layer();
  std::string state = params.state()->name()->str();
  std::vector<int> in(I.begin(), I.begin() + 7);
  return [=](StepEnv &e) mutable {
    p.A_log = e.weight(in[4]);
    p.dt_bias = e.weight(in[5]);
    p.D = e.weight(in[6]);
    ssdScan(e.f32(in[0]), e.f32(in[1]), e.f32(in[2]), e.f32(in[3]), p, e.stateRows(), e.statePool(layer, state),
            e.f32(out), e.pfor);
  };
}

Exec compileSelectiveScan(const OpContext &c) {
  bool gated = c.I.size() == 12;
  checkStateMeta(c, gated ? 8 : 7);
  const fb::SelectiveScanParams &params = c.params<fb::SelectiveScanParams>();
  const auto &I = c.I;
  int out = c.O[0];
  checkActs(c, {I[0], I[1], I[2], I[3], out});
  if (gated)
    checkActs(c, {I[7]});
  shape::SelectiveScan s{c.cols(I[0]), params.n_groups(), params.state_size(), c.cols(I[1]),
                         gated ? c.cols(I[7]) : 0, c.cols(I[2]), c.cols(I[3]), c.cols(out), gated,
                         c.weightNumel(I[4]), c.weightNumel(I[5]), c.weightNumel(I[6])};
  c.checkShape(shape::check(s));
  c.check(s.state_size <= kMaxStateDim, "has a state larger than the CPU backend's scan takes");
  c.checkState(*params.state(), shape::stateShape(s));
  SelectiveParams p;
  p.channels = s.channels;
  p.groups = s.groups;
  p.state = s.state_size;
  int layer = params.state()->layer();
  std::string state = params.state()->name()->str();
  std::vector<int> in(I.begin(), I.begin() + (gated ? 8 : 7));
  return [=](StepEnv &e) mutable {
    p.A_log = e.weight(in[4]);
    p.dt_bias = e.weight(in[5]);
    p.D = e.weight(in[6]);
    selectiveScan(e.f32(in[0]), e.f32(in[1]), e.f32(in[2]), e.f32(in[3]), gated ? e.f32(in[7]) : nullptr, p,
                  e.stateRows(), e.statePool(layer, state), e.f32(out), e.pfor);
  };
}

Exec compileLightning(const OpContext &c) {
  checkStateMeta(c, 3);
  const fb::LightningParams &params = c.params<fb::LightningParams>();
  const auto &I = c.I;
  int out = c.O[0];
  checkActs(c, {I[0], I[1], I[2], out});
  shape::Lightning s{params.num_heads(), params.head_dim(), (int64_t)params.decay()->size(),
                     c.cols(I[0]), c.cols(I[1]), c.cols(I[2]), c.cols(out), params.ranks()};
  c.checkShape(shape::check(s));
  c.check(s.ranks == 1 || s.ranks == c.artefact.ranks, "divides its heads among other ranks than the artefact's");
  c.check(s.head_dim <= kMaxStateDim && s.heads <= kMaxStateHeads, "has heads larger than the CPU backend's scans take");
  c.checkState(*params.state(), shape::stateShape(s));
  LightningParams p;
  p.heads = s.heads;
  p.head_dim = s.head_dim;
  for (double r : *params.decay()) {
    c.check(std::isfinite(r) && r >= 0, "has a negative or non-finite decay rate");
    p.decay.push_back((float)r);
  }
  int layer = params.state()->layer();
  std::string state = params.state()->name()->str();
  int q = I[0], k = I[1], v = I[2];
  bool sharded = s.ranks > 1;
  return [=](StepEnv &e) {
    LightningParams mine = p;
    mine.first_head = sharded ? e.comm->rank() * p.heads : 0;
    lightningScan(e.f32(q), e.f32(k), e.f32(v), mine, e.stateRows(), e.statePool(layer, state), e.f32(out), e.pfor);
  };
}

} // namespace cbc::rt::cpu
