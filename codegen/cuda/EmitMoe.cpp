// Mixture of experts: routing, and the experts as grouped GEMMs over a per-step plan.
#include "codegen/cuda/Emitter.h"

namespace cbc::codegen::cuda {

using namespace mlir;

namespace {

// One warp per token.
void emitRoute(Emitter &e, MoeRouteOp op) {
  using S = slots::MoeRoute;
  int64_t E = cols(op.getLogits()), K = op.getKAttr().getInt(), NS = op.getSinks();
  std::vector<std::string> targs = {e.type(op.getLogits()), e.type(op.getSelectionBias()), num(E), num(K),
                                    spell(op.getScore()), flag(op.getRenorm())};
  if (auto g = op.getGroupsAttr()) {
    targs.push_back(num(g.getCount()));
    targs.push_back(num(g.getKeep()));
    targs.push_back(g.getScore() == GroupScore::max ? "cbc::GroupScore::max" : "cbc::GroupScore::top2_sum");
    targs.push_back(g.getFill() == GroupFill::zero ? "cbc::GroupFill::zero" : "cbc::GroupFill::neg_inf");
  }
  if (NS > 0)
    targs = {e.type(op.getLogits()), e.type(op.getSelectionBias()), num(E - NS), num(NS), num(K)};
  const char *name = NS > 0 ? "moe_route_sinks" : "moe_route";
  int k = e.kernel(name, "moe.cuh", instance(name, targs));
  SlotArgs<S> args;
  args.set(S::Logits, e.arg(op.getLogits()))
      .set(S::Weights, e.arg(op.getWeights()))
      .set(S::Ids, e.arg(op.getIds()))
      .set(S::Bias, e.arg(op.getSelectionBias()))
      .set(S::RenormEps, op.getRenormEps().convertToDouble())
      .set(S::Scaling, op.getScaling().convertToDouble());
  LaunchOut &l = e.launch(k, 32, args);
  l.grid[0] = {e.rowsVar(op.getLogits()), 1, 1, 0};
}

struct ExpertShape {
  int64_t E, I, H, K;
};

// The per-step workspaces of the expert GEMMs, shared by every MoE layer (sized for the largest).
struct ExpertWorkspaces {
  KernelArgOut plan, tiles, act, out;
};

// Tiles of the expert GEMMs, at most ceil(T K / TM) + E (a partial tile per expert at most):
// the grid's y, a per-step integer, whatever the routing.
GridDimOut tileGrid(Emitter &e, MoeExpertsOp op, const ExpertShape &s) {
  return {e.rowsVar(op.getX()), s.K, kernels::kMoeTileM, s.E};
}

// gate_up runs with the unit fused in, then down, each over the plan's tiles of one expert's
// positions x kMoeTileN weight rows.
void emitExpertGemms(Emitter &e, MoeExpertsOp op, const ExpertShape &s, const ExpertWorkspaces &ws,
                     const std::string &actType) {
  using U = slots::MoeGateUp;
  using D = slots::MoeDown;
  constexpr int TN = kernels::kMoeTileN;
  GluUnit unit = gluUnit(op.getAct(), op.getUngated());
  std::vector<std::string> targs = {e.type(op.getX()), e.type(op.getGateUp()), e.type(op.getGateUpBias()),
                                    actType, num(s.E), num(s.I), num(s.H),
                                    num(s.K), spell(op.getLayout()), unit.unit, unit.act};
  if (op.getScaleInput())
    targs.push_back(flag(true));
  int k1 = e.kernel("moe_gate_up", "moe.cuh", instance("moe_gate_up", targs));
  SlotArgs<U> up;
  up.set(U::Plan, ws.plan)
      .set(U::X, e.arg(op.getX()))
      .set(U::W, e.arg(op.getGateUp()))
      .set(U::Bias, e.arg(op.getGateUpBias()))
      .set(U::Act, ws.act)
      .set(U::Weights, e.arg(op.getWeights()))
      .set(U::Tiles, ws.tiles)
      .set(U::Limit, unit.limit)
      .set(U::Alpha, unit.alpha);
  LaunchOut &l1 = e.launch(k1, kernels::kMoeThreads, up);
  int64_t units = op.getUngated() ? TN : TN / 2;
  l1.grid[0] = {std::nullopt, 1, 1, (s.I + units - 1) / units};
  l1.grid[1] = tileGrid(e, op, s);

  int k2 = e.kernel("moe_down", "moe.cuh",
                    instance("moe_down", {actType, e.type(op.getDown()), e.type(op.getDownBias()), num(s.E),
                                          num(s.I), num(s.H)}));
  SlotArgs<D> down;
  down.set(D::Plan, ws.plan)
      .set(D::Act, ws.act)
      .set(D::W, e.arg(op.getDown()))
      .set(D::Bias, e.arg(op.getDownBias()))
      .set(D::Out, ws.out)
      .set(D::Tiles, ws.tiles);
  LaunchOut &l2 = e.launch(k2, kernels::kMoeThreads, down);
  l2.grid[0] = {std::nullopt, 1, 1, (s.H + TN - 1) / TN};
  l2.grid[1] = tileGrid(e, op, s);
}

void emitExperts(Emitter &e, MoeExpertsOp op) {
  using P = slots::MoePlan;
  using C = slots::MoeCombine;
  auto gu = llvm::cast<RankedTensorType>(op.getGateUp().getType());
  bool ungated = op.getUngated(); // gate_up holds only up: [E, I, H]
  ExpertShape s{gu.getDimSize(0), ungated ? gu.getDimSize(1) : gu.getDimSize(1) / 2, gu.getDimSize(2),
                cols(op.getIds())};
  // The unit's results are rounded to the dtype the down projection reads, and kept in it.
  std::string actType = e.isF32(op.getResult()) ? "float" : "bf16";
  int64_t actBytes = actType == "float" ? 4 : 2, tm = kernels::kMoeTileM;
  ExpertWorkspaces ws{e.workspace("moe_plan", s.K * 8, (s.E + 1) * 4),
                      e.workspace("moe_tiles", (8 * s.K + tm - 1) / tm, 8 * (s.E + 1)),
                      e.workspace("moe_act", s.K * s.I * actBytes, 0), e.workspace("moe_out", s.K * s.H * 4, 0)};
  Value x = op.getX();
  int kp = e.kernel("moe_plan", "moe.cuh", instance("moe_plan", {num(s.E), num(s.K)}));
  SlotArgs<P> pargs;
  pargs.set(P::Ids, e.arg(op.getIds()))
      .set(P::Plan, ws.plan)
      .set(P::Tiles, ws.tiles)
      .set(P::Rows, Emitter::runtime(e.rowsVar(x)));
  LaunchOut &lp = e.launch(kp, 256, pargs);
  lp.grid[0] = {std::nullopt, 1, 1, 1};

  emitExpertGemms(e, op, s, ws, actType);

  std::vector<std::string> cargsT = {e.type(op.getResult()), num(s.E), num(s.K), num(s.H)};
  if (int64_t Z = op.getIdentityExperts(); Z || op.getScaleInput()) {
    cargsT.push_back(num(Z));
    cargsT.push_back(e.type(x));
    if (op.getScaleInput())
      cargsT.push_back(flag(true));
  }
  int kc = e.kernel("moe_combine", "moe.cuh", instance("moe_combine", cargsT));
  SlotArgs<C> cargs;
  cargs.set(C::Plan, ws.plan)
      .set(C::Partial, ws.out)
      .set(C::Weights, e.arg(op.getWeights()))
      .set(C::Out, e.arg(op.getResult()))
      .set(C::Ids, e.arg(op.getIds()))
      .set(C::X, e.arg(x))
      .set(C::Rows, Emitter::runtime(e.rowsVar(x)));
  LaunchOut &lc = e.launch(kc, 128, cargs);
  lc.grid[0] = {e.rowsVar(x), 1, 1, 0};
}

} // namespace

void addMoeEmitters(EmitterTable &t) {
  t.add(emitRoute);
  t.add(emitExperts);
}

} // namespace cbc::codegen::cuda
