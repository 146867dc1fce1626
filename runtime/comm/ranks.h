// One scheduler, N executors. Rank 0 runs the engine (scheduler, cache coordinator, sampler) on
// a backend that first sends every call to the other ranks: the cache's allocation, the unit
// copies and each step's compact plan (the batch metadata and the block-table rows of the step's
// requests), and its swaps (each rank moves its own shard of the units to host memory and back).
// The other ranks run what they receive on their own shard of the weights and join the step
// program's collectives; they never schedule, so they cannot diverge.
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

// A rank other than 0: runs rank 0's calls on `local` (of an artefact with cache plan `plan`)
// until it says stop, keeping its own host copies of the units rank 0 swaps out. A failure
// aborts the group with a message naming this rank.
void followRank0(Backend &local, Communicator &comm, const CachePlan &plan);

} // namespace cbc::rt

#endif
