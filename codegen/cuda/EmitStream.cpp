// CUDA emission of the residual-stream ops (cbc.stream.*), kernels in kernels/stream.cuh.
#include "codegen/cuda/Emitter.h"

namespace cbc::codegen::cuda {

using namespace mlir;

// One thread per token.
void emitStreamHcWeights(Emitter &e, StreamHcWeightsOp op) {
  using S = slots::HcWeights;
  Value out = op.getResult();
  int k = e.kernel("hc_weights", "stream.cuh",
                   Instance("hc_weights")
                       .type(op.getMixes()).type(op.getBase()).type(op.getScale()).type(out)
                       .integer(op.getStreams()).integer((int64_t)op.getKind()).integer(op.getSinkhornIters()));
  SlotArgs<S> args;
  args.set(S::Mixes, e.arg(op.getMixes()))
      .set(S::Base, e.arg(op.getBase()))
      .set(S::Scale, e.arg(op.getScale()))
      .set(S::Out, e.arg(out))
      .set(S::Rows, Emitter::runtime(e.rowsVar(out)))
      .set(S::Magnitude, op.getMagnitude().convertToDouble())
      .set(S::Eps, op.getEps().convertToDouble())
      .set(S::PostEps, op.getPostEps().convertToDouble());
  LaunchOut &l = e.launch(k, 128, args);
  l.grid[0] = {e.rowsVar(out), 1, 128, 0};
}

void emitStreamCollapse(Emitter &e, StreamCollapseOp op) {
  using S = slots::StreamCollapse;
  Value out = op.getResult();
  int64_t N = op.getCount(), H = cols(out);
  Value w = op.getWeights(); // none: the mean
  int k = e.kernel("stream_collapse", "stream.cuh",
                   Instance("stream_collapse").type(op.getStreams()).type(w).type(out)
                       .integer(N).integer(H).integer(w ? cols(w) : 0).integer(op.getOffset()));
  SlotArgs<S> args;
  args.set(S::Streams, e.arg(op.getStreams())).set(S::Weights, e.arg(op.getWeights())).set(S::Out, e.arg(out));
  args.set(S::Rows, Emitter::runtime(e.rowsVar(out)));
  LaunchOut &l = e.launch(k, 256, args); // one thread per output element
  l.grid[0] = {e.rowsVar(out), H, 256, 0};
}

void emitStreamExpand(Emitter &e, StreamExpandOp op) {
  using S = slots::StreamExpand;
  Value out = op.getResult();
  int64_t N = op.getCount(), H = cols(op.getBlock());
  int k = e.kernel("stream_expand", "stream.cuh",
                   Instance("stream_expand").type(op.getBlock()).type(op.getStreams()).type(op.getWeights()).type(out)
                       .integer(N).integer(H).integer(cols(op.getWeights())).integer(op.getOffset()).flag(op.getComb()));
  SlotArgs<S> args;
  args.set(S::Block, e.arg(op.getBlock()))
      .set(S::Streams, e.arg(op.getStreams()))
      .set(S::Weights, e.arg(op.getWeights()))
      .set(S::Out, e.arg(out))
      .set(S::Rows, Emitter::runtime(e.rowsVar(out)));
  LaunchOut &l = e.launch(k, 256, args); // one thread per output element
  l.grid[0] = {e.rowsVar(out), cols(out), 256, 0};
}

// One block per token.
void emitStreamAttend(Emitter &e, StreamAttendOp op) {
  using S = slots::StreamAttend;
  Value out = op.getResult();
  auto q = llvm::cast<RankedTensorType>(op.getQuery().getType());
  int64_t N = op.getCount(), H = q.getDimSize(q.getRank() - 1), Q = q.getRank() == 2 ? q.getDimSize(0) : 1;
  int k = e.kernel("stream_attend", "stream.cuh",
                   Instance("stream_attend").type(op.getSources()).type(op.getQuery()).type(out)
                       .integer(N).integer(H).integer(Q));
  SlotArgs<S> args;
  args.set(S::Sources, e.arg(op.getSources()))
      .set(S::Query, e.arg(op.getQuery()))
      .set(S::Out, e.arg(out))
      .set(S::Eps, op.getEps().convertToDouble());
  LaunchOut &l = e.launch(k, 128, args);
  l.grid[0] = {e.rowsVar(out), 1, 1, 0};
}

} // namespace cbc::codegen::cuda
