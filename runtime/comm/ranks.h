// One scheduler, N executors. Rank 0 runs the engine (scheduler, cache coordinator, sampler) on
// a backend that first sends every call to the other ranks: the cache's allocation, the unit
// copies and each step's compact plan (the batch metadata and the block-table rows of the step's
// requests). The other ranks run what they receive on their own shard of the weights and join
// the step program's collectives; they never schedule, so they cannot diverge.
#ifndef CBC_RUNTIME_COMM_RANKS_H
#define CBC_RUNTIME_COMM_RANKS_H

#include "runtime/backend.h"
#include "runtime/comm/communicator.h"

#include <memory>

namespace cbc::rt {

// Rank 0's backend: `local` (its own shard), each call sent to the other ranks first. Its
// destructor tells them to stop. A step that throws on rank 0 aborts the group: the others may
// be waiting in a collective of that step.
std::unique_ptr<Backend> leadRanks(std::unique_ptr<Backend> local, std::shared_ptr<Communicator> comm);

// A rank other than 0: runs rank 0's calls on `local` until it says stop. A failure aborts the
// group with a message naming this rank.
void followRank0(Backend &local, Communicator &comm);

} // namespace cbc::rt

#endif
