// The CPU compile functions of the per-request state ops (cbc.state.*).
#include "runtime/cpu/op_context.h"

namespace cbc::rt::cpu {

namespace {
// The step's per-request metadata, the last three operands of every state op.
void checkStateMeta(const OpContext &c, size_t first) {
  c.check(c.I.size() == first + 3 && c.O.size() == 1, "has the wrong number of operands");
  c.check(c.isArg(c.I[first], StepArg::CuSeqlens) && c.isArg(c.I[first + 1], StepArg::Slots) &&
              c.isArg(c.I[first + 2], StepArg::HasInitialState),
          "expects the step's metadata arguments");
}

std::string stateName(const flatbuffers::String *s) { return s ? s->str() : std::string(); }
} // namespace

Exec compileConv1d(const OpContext &c) {
  c.check(c.I.size() >= 5 && c.O.size() == 1, "has the wrong number of operands");
  bool hasBias = c.I.size() == 6;
  checkStateMeta(c, hasBias ? 3 : 2);
  const fb::Conv1dParams &p = c.params<fb::Conv1dParams>();
  int x = c.I[0], w = c.I[1], bias = hasBias ? c.I[2] : -1, out = c.O[0];
  int64_t C = c.cols(x);
  const Value &wv = c.value(w);
  c.check(wv.kind == Value::Weight && wv.shape.size() == 3 && wv.shape[0] == C && wv.shape[1] == 1 && wv.shape[2] >= 1,
          "has a weight that is not [channels, 1, kernel]");
  int64_t K = wv.shape[2];
  c.check(bias < 0 || c.weightNumel(bias) == C, "has a bias of the wrong size");
  c.check(c.isAct(x) && c.isAct(out) && c.cols(out) == C && c.value(x).arena == 0, "has operands of different widths");
  int layer = p.layer();
  std::string state = stateName(p.state());
  Act act = p.act();
  bool residual = p.residual();
  if (K > 1)
    c.checkState(layer, state, C * (K - 1));
  return [=](StepEnv &e) {
    conv1dStates(e.f32(x), C, K, e.weight(w), bias >= 0 ? e.weight(bias) : nullptr, act, e.stateRows(),
                 K > 1 ? e.statePool(layer, state) : nullptr, e.f32(out), e.pfor, residual);
  };
}

Exec compileGatedDelta(const OpContext &c) {
  checkStateMeta(c, 7);
  const fb::GatedDeltaParams &params = c.params<fb::GatedDeltaParams>();
  GatedDeltaParams p;
  p.k_heads = params.num_k_heads();
  p.v_heads = params.num_v_heads();
  p.k_dim = params.k_dim();
  p.v_dim = params.v_dim();
  p.beta_scale = (float)params.beta_scale();
  p.qk_l2norm = params.qk_l2norm();
  const auto &I = c.I;
  int out = c.O[0];
  c.check(p.k_heads > 0 && p.v_heads > 0 && p.k_dim > 0 && p.v_dim > 0 && p.v_heads % p.k_heads == 0 &&
              p.k_dim <= 4096 && p.v_dim <= 4096 && p.v_heads <= 65536,
          "has bad head counts");
  c.check(c.isAct(I[0]) && c.isAct(I[1]) && c.isAct(I[2]) && c.isAct(I[3]) && c.isAct(I[4]) && c.isAct(out) &&
              c.cols(I[0]) == p.k_heads * p.k_dim && c.cols(I[1]) == p.k_heads * p.k_dim &&
              c.cols(I[2]) == p.v_heads * p.v_dim && c.cols(I[3]) == p.v_heads && c.cols(I[4]) == p.v_heads &&
              c.cols(out) == p.v_heads * p.v_dim,
          "has operands that do not match its heads");
  c.check(c.weightNumel(I[5]) == p.v_heads && c.weightNumel(I[6]) == p.v_heads,
          "has A_log or dt_bias of the wrong size");
  int layer = params.layer();
  std::string state = stateName(params.state());
  c.checkState(layer, state, p.v_heads * p.k_dim * p.v_dim);
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
  KdaParams p;
  p.heads = params.num_heads();
  p.k_dim = params.k_dim();
  p.v_dim = params.v_dim();
  p.bounded = params.gate() == fb::DecayGate::BoundedSigmoid;
  p.lower_bound = (float)params.lower_bound();
  const auto &I = c.I;
  int out = c.O[0];
  c.check(p.heads > 0 && p.k_dim > 0 && p.v_dim > 0 && p.k_dim <= 4096 && p.v_dim <= 4096 && p.heads <= 65536,
          "has bad head counts");
  c.check(!p.bounded || p.lower_bound < 0, "has a bounded gate without a negative lower bound");
  int64_t kw = p.heads * p.k_dim, vw = p.heads * p.v_dim;
  c.check(c.isAct(I[0]) && c.isAct(I[1]) && c.isAct(I[2]) && c.isAct(I[3]) && c.isAct(I[4]) && c.isAct(out) &&
              c.cols(I[0]) == kw && c.cols(I[1]) == kw && c.cols(I[2]) == vw && c.cols(I[3]) == kw &&
              c.cols(I[4]) == p.heads && c.cols(out) == vw,
          "has operands that do not match its heads");
  c.check(c.weightNumel(I[5]) == p.heads && c.weightNumel(I[6]) == kw, "has A_log or dt_bias of the wrong size");
  int layer = params.layer();
  std::string state = stateName(params.state());
  c.checkState(layer, state, p.heads * p.k_dim * p.v_dim);
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
  SsdParams p;
  p.heads = params.num_heads();
  p.head_dim = params.head_dim();
  p.groups = params.n_groups();
  p.state = params.state_size();
  p.dt_min = (float)params.dt_min();
  p.dt_max = (float)params.dt_max();
  const auto &I = c.I;
  int out = c.O[0];
  c.check(p.heads > 0 && p.head_dim > 0 && p.groups > 0 && p.state > 0 && p.heads % p.groups == 0 &&
              p.head_dim <= 4096 && p.state <= 4096 && p.heads <= 65536,
          "has bad head counts");
  c.check(c.isAct(I[0]) && c.isAct(I[1]) && c.isAct(I[2]) && c.isAct(I[3]) && c.isAct(out) &&
              c.cols(I[0]) == p.heads * p.head_dim && c.cols(I[1]) == p.heads && c.cols(I[2]) == p.groups * p.state &&
              c.cols(I[3]) == p.groups * p.state && c.cols(out) == p.heads * p.head_dim,
          "has operands that do not match its heads");
  c.check(c.weightNumel(I[4]) == p.heads && c.weightNumel(I[5]) == p.heads && c.weightNumel(I[6]) == p.heads,
          "has A_log, dt_bias or D of the wrong size");
  int layer = params.layer();
  std::string state = stateName(params.state());
  c.checkState(layer, state, p.heads * p.head_dim * p.state);
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
  bool gated = c.I.size() == 11;
  checkStateMeta(c, gated ? 8 : 7);
  const fb::SelectiveScanParams &params = c.params<fb::SelectiveScanParams>();
  const auto &I = c.I;
  int out = c.O[0];
  SelectiveParams p;
  p.channels = c.cols(I[0]);
  p.groups = params.n_groups();
  p.state = params.state_size();
  c.check(p.groups > 0 && p.state > 0 && p.state <= 4096 && p.channels % p.groups == 0, "has bad group counts");
  c.check(c.isAct(I[0]) && c.isAct(I[1]) && c.isAct(I[2]) && c.isAct(I[3]) && c.isAct(out) &&
              (!gated || (c.isAct(I[7]) && c.cols(I[7]) == p.channels)) && c.cols(I[1]) == p.channels &&
              c.cols(I[2]) == p.groups * p.state && c.cols(I[3]) == p.groups * p.state && c.cols(out) == p.channels,
          "has operands that do not match its channels");
  c.check(c.weightNumel(I[4]) == p.channels * p.state && c.weightNumel(I[5]) == p.channels &&
              c.weightNumel(I[6]) == p.channels,
          "has A_log, dt_bias or D of the wrong size");
  int layer = params.layer();
  std::string state = stateName(params.state());
  c.checkState(layer, state, p.channels * p.state);
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
  LightningParams p;
  p.heads = params.num_heads();
  p.head_dim = params.head_dim();
  const auto &I = c.I;
  int out = c.O[0];
  c.check(p.heads > 0 && p.head_dim > 0 && p.head_dim <= 4096 && p.heads <= 65536, "has bad head counts");
  c.check(params.decay() && (int64_t)params.decay()->size() == p.heads, "has no decay rate per head");
  for (double s : *params.decay()) {
    c.check(std::isfinite(s) && s >= 0, "has a negative or non-finite decay rate");
    p.decay.push_back((float)s);
  }
  int64_t w = p.heads * p.head_dim;
  c.check(c.isAct(I[0]) && c.isAct(I[1]) && c.isAct(I[2]) && c.isAct(out) && c.cols(I[0]) == w &&
              c.cols(I[1]) == w && c.cols(I[2]) == w && c.cols(out) == w,
          "has operands that do not match its heads");
  int layer = params.layer();
  std::string state = stateName(params.state());
  c.checkState(layer, state, p.heads * p.head_dim * p.head_dim);
  int q = I[0], k = I[1], v = I[2];
  return [=](StepEnv &e) {
    lightningScan(e.f32(q), e.f32(k), e.f32(v), p, e.stateRows(), e.statePool(layer, state), e.f32(out), e.pfor);
  };
}

} // namespace cbc::rt::cpu
