// Collectives (cbc.comm.*): a gather launch, which the backend runs through its communicator
// (NCCL on a GPU), puts every rank's rows of the input in a workspace; a kernel then combines
// them in rank order (kernels/comm.cuh), as the CPU backend does.
#include "codegen/cuda/Emitter.h"

namespace cbc::codegen::cuda {

using mlir::Value;

namespace {

int64_t elemBytes(DeviceType t) { return t == DeviceType::Bf16 ? 2 : 4; }

// The gather of `x`'s rows from `ranks` ranks into the workspace it returns.
KernelArgOut gatherRanks(Emitter &e, Value x, int64_t ranks) {
  KernelArgOut parts = e.workspace("comm_parts", ranks * cols(x) * elemBytes(deviceType(x)), 0);
  LaunchOut &l = e.newLaunch();
  l.gather_x = e.id(x);
  l.gather_workspace = parts.index;
  l.grid[0] = {e.rowsVar(x), 1, 1, 0};
  return parts;
}

} // namespace

void emitAllReduce(Emitter &e, AllReduceOp op) {
  using S = slots::RankSum;
  Value x = op.getX(), out = op.getResult();
  int64_t W = cols(out), N = op.getRanks();
  KernelArgOut parts = gatherRanks(e, x, N);
  int k = e.kernel("rank_sum", "comm.cuh",
                   Instance("rank_sum").type(x).type(op.getBias()).type(out).integer(W).integer(N));
  SlotArgs<S> args;
  args.set(S::Parts, parts)
      .set(S::Bias, e.arg(op.getBias()))
      .set(S::Out, e.arg(out))
      .set(S::Rows, Emitter::runtime(e.rowsVar(out)));
  LaunchOut &l = e.launch(k, 256, args);
  l.grid[0] = {e.rowsVar(out), W, 256, 0};
}

void emitAllGather(Emitter &e, AllGatherOp op) {
  using S = slots::RankColumns;
  Value x = op.getX(), out = op.getResult();
  int64_t W = cols(x), N = op.getRanks();
  KernelArgOut parts = gatherRanks(e, x, N);
  int k = e.kernel("rank_columns", "comm.cuh", Instance("rank_columns").type(x).type(out).integer(W).integer(N));
  SlotArgs<S> args;
  args.set(S::Parts, parts).set(S::Out, e.arg(out)).set(S::Rows, Emitter::runtime(e.rowsVar(out)));
  LaunchOut &l = e.launch(k, 256, args);
  l.grid[0] = {e.rowsVar(out), W * N, 256, 0};
}

} // namespace cbc::codegen::cuda
