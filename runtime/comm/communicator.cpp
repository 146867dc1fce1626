#include "runtime/comm/communicator.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace cbc::rt {

namespace {

class SingleRank : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void allGatherBytes(const void *in, size_t bytes, void *out) override { std::memcpy(out, in, bytes); }
  void broadcast(std::vector<uint8_t> &, bool) override {}
  [[noreturn]] void abort(const std::string &why) override {
    std::fprintf(stderr, "error: %s\n", why.c_str());
    std::exit(3);
  }
};

} // namespace

std::shared_ptr<Communicator> singleRank() { return std::make_shared<SingleRank>(); }

void checkRanks(int64_t ranks, const Communicator &comm) {
  if (ranks == comm.size())
    return;
  std::string n = std::to_string(ranks);
  if (ranks == 1)
    throw std::invalid_argument("the artefact was compiled without --tp but runs on " + std::to_string(comm.size()) +
                                " ranks; start it as one process, or compile it with --tp " +
                                std::to_string(comm.size()));
  throw std::invalid_argument("the artefact was compiled for --tp " + n + " but runs on " +
                              std::to_string(comm.size()) + " rank(s); start it with `mpiexec -n " + n +
                              " cbc run ...` (or `cbc serve --tp " + n + "`)");
}

bool everyRank(Communicator &comm, bool ok) {
  std::vector<uint8_t> all(comm.size());
  uint8_t mine = ok;
  comm.allGatherBytes(&mine, 1, all.data());
  return std::all_of(all.begin(), all.end(), [](uint8_t v) { return v != 0; });
}

void allReduceSum(Communicator &comm, float *x, int64_t rows, int64_t cols, std::vector<float> &scratch) {
  int n = comm.size();
  if (n == 1)
    return;
  int64_t count = rows * cols;
  scratch.resize((size_t)(n * count));
  comm.allGather(x, count, scratch.data());
  // Rank order, one element at a time: (x0 + x1) + x2 ..., the same on every rank.
  std::copy_n(scratch.data(), count, x);
  for (int r = 1; r < n; ++r) {
    const float *part = scratch.data() + r * count;
    for (int64_t i = 0; i < count; ++i)
      x[i] += part[i];
  }
}

void allGatherColumns(Communicator &comm, const float *x, int64_t rows, int64_t cols, float *out,
                      std::vector<float> &scratch) {
  int n = comm.size();
  int64_t count = rows * cols;
  scratch.resize((size_t)(n * count));
  comm.allGather(x, count, scratch.data());
  for (int r = 0; r < n; ++r)
    for (int64_t i = 0; i < rows; ++i)
      std::copy_n(scratch.data() + r * count + i * cols, cols, out + i * n * cols + r * cols);
}

} // namespace cbc::rt
