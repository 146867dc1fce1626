// The ranks of a tensor-parallel group, as the runtime sees them: who this process is, and the
// few collectives the step program and the step plan's broadcast need. MPI provides them across
// processes (runtime/comm/mpi_communicator.h); a single process is its own group of one.
#ifndef CBC_RUNTIME_COMM_COMMUNICATOR_H
#define CBC_RUNTIME_COMM_COMMUNICATOR_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cbc::rt {

class Communicator {
public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Every rank's `bytes` bytes, concatenated in rank order into `out` ([size * bytes]).
  virtual void allGatherBytes(const void *in, size_t bytes, void *out) = 0;
  // Every rank's `n` floats, concatenated in rank order into `out` ([size * n]).
  void allGather(const float *in, int64_t n, float *out) { allGatherBytes(in, (size_t)n * sizeof(float), out); }
  // Rank 0's bytes to every rank (resized on the others). `idle`: the others may wait for it
  // indefinitely (a worker between steps); otherwise a rank that does not answer in time is a
  // fault.
  virtual void broadcast(std::vector<uint8_t> &bytes, bool idle) = 0;
  // Ends every rank of the group with a non-zero status, saying why on this rank's stderr.
  [[noreturn]] virtual void abort(const std::string &why) = 0;
};

// The group of one: every collective is a copy.
std::shared_ptr<Communicator> singleRank();

// An artefact compiled for `ranks` ranks runs only on a group of that size: otherwise an
// std::invalid_argument saying how to start it.
void checkRanks(int64_t ranks, const Communicator &comm);

// Whether `ok` holds on every rank of the group (every rank calls it alike).
bool everyRank(Communicator &comm, bool ok);

// Sums `rows` rows of `cols` floats over the ranks in place: every rank's rows are gathered and
// added in rank order, so the bits do not depend on message sizes or the library's algorithm.
// `scratch` holds the gathered rows between calls.
void allReduceSum(Communicator &comm, float *x, int64_t rows, int64_t cols, std::vector<float> &scratch);

// [rows, cols] per rank -> [rows, size * cols]: each rank's columns in rank order.
void allGatherColumns(Communicator &comm, const float *x, int64_t rows, int64_t cols, float *out,
                      std::vector<float> &scratch);

} // namespace cbc::rt

#endif
