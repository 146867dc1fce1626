// The CPU compile functions of the collectives (cbc.comm.*), over the backend's communicator.
#include "runtime/cpu/op_context.h"

#include <algorithm>

namespace cbc::rt::cpu {

namespace {

void checkRanks(const OpContext &c) {
  c.check(c.params<fb::CommParams>().ranks() == c.artefact.ranks, "spans other ranks than the artefact's");
}

} // namespace

Exec compileAllReduce(const OpContext &c) {
  c.need(1, 1);
  checkRanks(c);
  int x = c.I[0], out = c.O[0], bias = c.I.size() > 1 ? c.I[1] : -1;
  int64_t width = c.cols(x);
  c.acts({x, out});
  c.check(c.cols(out) == width, "must keep the width of its rows");
  c.check(bias < 0 || c.weightNumel(bias) == width, "has a bias of the wrong size");
  return [=](StepEnv &e) {
    int64_t rows = e.rows(x);
    float *y = e.f32(out);
    std::copy_n(e.f32(x), rows * width, y);
    allReduceSum(*e.comm, y, rows, width, e.commScratch);
    if (bias >= 0) {
      const float *b = e.weight(bias);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < width; ++i)
          y[r * width + i] += b[i];
    }
  };
}

Exec compileAllGather(const OpContext &c) {
  c.need(1, 1);
  checkRanks(c);
  int x = c.I[0], out = c.O[0];
  int64_t width = c.cols(x), ranks = c.artefact.ranks;
  c.acts({x, out});
  c.check(c.cols(out) == width * ranks, "must gather its ranks' columns");
  return [=](StepEnv &e) { allGatherColumns(*e.comm, e.f32(x), e.rows(x), width, e.f32(out), e.commScratch); };
}

} // namespace cbc::rt::cpu
