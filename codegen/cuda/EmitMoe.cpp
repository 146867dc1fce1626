// Mixture of experts: routing, and the experts as grouped GEMMs over a per-step plan.
#include "codegen/cuda/Emitter.h"

namespace cbc::codegen::cuda {

using namespace mlir;


// One warp per token.
void emitMoeRoute(Emitter &e, MoeRouteOp op) {
  using S = slots::MoeRoute;
  int64_t E = cols(op.getLogits()), K = op.getKAttr().getInt(), NS = op.getSinks();
  // Without groups, every expert is in the one kept group (the kernel then masks nothing).
  RouteGroupsAttr g = op.getGroupsAttr();
  Instance inst("moe_route");
  inst.type(op.getLogits()).type(op.getSelectionBias()).integer(E).integer(K).choice(op.getScore());
  inst.flag(op.getRenorm()).integer(g ? g.getCount() : 0).integer(g ? g.getKeep() : 0);
  inst.choice(g ? g.getScore() : GroupScore::top2_sum).choice(g ? g.getFill() : GroupFill::neg_inf);
  inst.flag(op.getBiasOnLogits());
  if (op.getTable())
    inst.type(op.getTable());
  if (NS > 0)
    inst = Instance("moe_route_sinks")
               .type(op.getLogits())
               .type(op.getSelectionBias())
               .integer(E - NS)
               .integer(NS)
               .integer(K);
  int k = e.kernel(NS > 0 ? "moe_route_sinks" : "moe_route", "moe.cuh", inst);
  SlotArgs<S> args;
  args.set(S::Logits, e.arg(op.getLogits()))
      .set(S::Weights, e.arg(op.getWeights()))
      .set(S::Ids, e.arg(op.getIds()))
      .set(S::Bias, e.arg(op.getSelectionBias()))
      .set(S::Tokens, e.arg(op.getTokens()))
      .set(S::Table, e.arg(op.getTable()))
      .set(S::RenormEps, op.getRenormEps().convertToDouble())
      .set(S::Scaling, op.getScaling().convertToDouble())
      .set(S::Threshold, op.getThreshold().convertToDouble());
  LaunchOut &l = e.launch(k, 32, args);
  l.grid[0] = {e.rowsVar(op.getLogits()), 1, 1, 0};
}

namespace {

struct ExpertShape {
  int64_t E, I, H, K;
  int64_t ranks = 1; // > 1: the E experts are one rank's (expert parallelism)
};

// The rank whose experts the weights hold: this process's under expert parallelism, else 0.
KernelArgOut expertRank(const ExpertShape &s) {
  return s.ranks > 1 ? Emitter::runtime(RuntimeVar::Rank) : Emitter::integer(0);
}

// The per-step workspaces of the expert GEMMs, shared by every MoE layer (sized for the largest).
struct ExpertWorkspaces {
  KernelArgOut plan, tiles, act, out;
};

// Tiles of the expert GEMMs, at most ceil(T K / TM) + E (a partial tile per expert at most):
// the grid's y, a per-step integer, whatever the routing.

} // namespace

static GridDimOut tileGrid(Emitter &e, Value x, const ExpertShape &s) {
  return {e.rowsVar(x), s.K, kernels::kMoeTileM, s.E};
}

// Groups the (token, choice) pairs by expert and lists the GEMMs' tiles.
static void emitPlan(Emitter &e, Value ids, Value x, const ExpertShape &s, const ExpertWorkspaces &ws) {
  using P = slots::MoePlan;
  int kp = e.kernel("moe_plan", "moe.cuh", Instance("moe_plan").integer(s.E).integer(s.K));
  SlotArgs<P> pargs;
  pargs.set(P::Ids, e.arg(ids))
      .set(P::Plan, ws.plan)
      .set(P::Tiles, ws.tiles)
      .set(P::Rows, Emitter::runtime(e.rowsVar(x)))
      .set(P::Rank, expertRank(s));
  LaunchOut &lp = e.launch(kp, 256, pargs);
  lp.grid[0] = {std::nullopt, 1, 1, 1};
}

// Mixes each token's k results (of width s.H, in the out workspace) by their weights.
static void emitCombine(Emitter &e, Value ids, Value weights, Value result, Value x, const ExpertShape &s,
                        const ExpertWorkspaces &ws, int64_t identity, bool scaleInput, int64_t null = 0) {
  using C = slots::MoeCombine;
  int kc = e.kernel("moe_combine", "moe.cuh",
                    Instance("moe_combine")
                        .type(result)
                        .integer(s.E)
                        .integer(s.K)
                        .integer(s.H)
                        .integer(identity)
                        .type(x)
                        .flag(scaleInput)
                        .integer(null)
                        .integer(s.ranks, 1));
  SlotArgs<C> cargs;
  cargs.set(C::Plan, ws.plan)
      .set(C::Partial, ws.out)
      .set(C::Weights, e.arg(weights))
      .set(C::Out, e.arg(result))
      .set(C::Ids, e.arg(ids))
      .set(C::X, e.arg(x))
      .set(C::Rows, Emitter::runtime(e.rowsVar(x)))
      .set(C::Rank, expertRank(s));
  LaunchOut &lc = e.launch(kc, 128, cargs);
  lc.grid[0] = {e.rowsVar(x), 1, 1, 0};
}

// gate_up runs with the unit fused in, then down, each over the plan's tiles of one expert's
// positions x kMoeTileN weight rows.
static void emitExpertGemms(Emitter &e, MoeExpertsOp op, const ExpertShape &s, const ExpertWorkspaces &ws,
                     DeviceType actType) {
  using U = slots::MoeGateUp;
  using D = slots::MoeDown;
  constexpr int TN = kernels::kMoeTileN;
  GluUnit unit = gluUnit(op.getAct(), op.getUngated());
  Instance inst("moe_gate_up");
  inst.type(op.getX()).type(op.getGateUp()).type(op.getGateUpBias()).type(actType);
  inst.integer(s.E).integer(s.I).integer(s.H).integer(s.K).choice(op.getLayout()).choice(unit.kind);
  inst.choice(unit.act).flag(op.getScaleInput());
  int k1 = e.kernel("moe_gate_up", "moe.cuh", inst);
  SlotArgs<U> up;
  up.set(U::Plan, ws.plan)
      .set(U::X, e.arg(op.getX()))
      .set(U::W, e.arg(op.getGateUp()))
      .set(U::Bias, e.arg(op.getGateUpBias()))
      .set(U::Act, ws.act)
      .set(U::Weights, e.arg(op.getWeights()))
      .set(U::Tiles, ws.tiles)
      .set(U::Limit, unit.limit)
      .set(U::Alpha, unit.alpha)
      .set(U::UpOffset, unit.up_offset);
  LaunchOut &l1 = e.launch(k1, kernels::kMoeThreads, up);
  int64_t units = op.getUngated() ? TN : TN / 2;
  l1.grid[0] = {std::nullopt, 1, 1, (s.I + units - 1) / units};
  l1.grid[1] = tileGrid(e, op.getX(), s);

  int k2 = e.kernel("moe_down", "moe.cuh",
                    Instance("moe_down")
                        .type(actType)
                        .type(op.getDown())
                        .type(op.getDownBias())
                        .integer(s.E)
                        .integer(s.I)
                        .integer(s.H));
  SlotArgs<D> down;
  down.set(D::Plan, ws.plan)
      .set(D::Act, ws.act)
      .set(D::W, e.arg(op.getDown()))
      .set(D::Bias, e.arg(op.getDownBias()))
      .set(D::Out, ws.out)
      .set(D::Tiles, ws.tiles);
  LaunchOut &l2 = e.launch(k2, kernels::kMoeThreads, down);
  l2.grid[0] = {std::nullopt, 1, 1, (s.H + TN - 1) / TN};
  l2.grid[1] = tileGrid(e, op.getX(), s);
}

void emitMoeExperts(Emitter &e, MoeExpertsOp op) {
  auto gu = llvm::cast<RankedTensorType>(op.getGateUp().getType());
  bool ungated = op.getUngated(); // gate_up holds only up: [E, I, H]
  ExpertShape s{gu.getDimSize(0), ungated ? gu.getDimSize(1) : gu.getDimSize(1) / 2, gu.getDimSize(2),
                cols(op.getIds()), (int64_t)op.getExpertRanks()};
  // The unit's results are rounded to the dtype the down projection reads, and kept in it.
  DeviceType actType = deviceType(op.getResult()) == DeviceType::F32 ? DeviceType::F32 : DeviceType::Bf16;
  int64_t actBytes = actType == DeviceType::F32 ? 4 : 2, tm = kernels::kMoeTileM;
  ExpertWorkspaces ws{e.workspace("moe_plan", s.K * 8, (s.E + 1) * 4),
                      e.workspace("moe_tiles", (8 * s.K + tm - 1) / tm, 8 * (s.E + 1)),
                      e.workspace("moe_act", s.K * s.I * actBytes, 0), e.workspace("moe_out", s.K * s.H * 4, 0)};
  Value x = op.getX();
  emitPlan(e, op.getIds(), x, s, ws);
  emitExpertGemms(e, op, s, ws, actType);
  emitCombine(e, op.getIds(), op.getWeights(), op.getResult(), x, s, ws, op.getIdentityExperts(), op.getScaleInput(),
              op.getNullExperts());
}

// Grouped like the experts: the plan, one GEMM of each choice's expert over the plan's tiles and,
// when the choices mix, the combine.
void emitMoeSlotLinear(Emitter &e, MoeSlotLinearOp op) {
  using S = slots::MoeSlotLinear;
  auto w = llvm::cast<RankedTensorType>(op.getWeight().getType());
  int64_t N = w.getDimSize(1), KD = w.getDimSize(2);
  bool mix = (bool)op.getWeights();
  ExpertShape s{w.getDimSize(0), 0, N, cols(op.getIds())};
  int64_t tm = kernels::kMoeTileM;
  ExpertWorkspaces ws{e.workspace("moe_plan", s.K * 8, (s.E + 1) * 4),
                      e.workspace("moe_tiles", (8 * s.K + tm - 1) / tm, 8 * (s.E + 1)), KernelArgOut(),
                      mix ? e.workspace("moe_out", s.K * N * 4, 0) : KernelArgOut()};
  Value x = op.getX();
  emitPlan(e, op.getIds(), x, s, ws);
  Instance inst("moe_slot_linear");
  inst.type(x).type(op.getWeight());
  if (mix)
    inst.type(DeviceType::F32);
  else
    inst.type(op.getResult());
  inst.integer(s.E).integer(N).integer(KD).integer(s.K).flag(mix);
  int k = e.kernel("moe_slot_linear", "moe.cuh", inst);
  SlotArgs<S> args;
  args.set(S::Plan, ws.plan)
      .set(S::X, e.arg(x))
      .set(S::W, e.arg(op.getWeight()))
      .set(S::Out, mix ? ws.out : e.arg(op.getResult()))
      .set(S::Tiles, ws.tiles);
  LaunchOut &l = e.launch(k, kernels::kMoeThreads, args);
  l.grid[0] = {std::nullopt, 1, 1, (N + kernels::kMoeTileN - 1) / kernels::kMoeTileN};
  l.grid[1] = tileGrid(e, x, s);
  if (mix)
    emitCombine(e, op.getIds(), op.getWeights(), op.getResult(), x, s, ws, 0, false);
}

} // namespace cbc::codegen::cuda
