// The loader's checks of what the backends and `cbc dump` rely on, beyond what the FlatBuffers
// verifier sees (offsets, not values): each instruction's operand counts, the enums, presence
// and sizes in its parameter table, and that the cache sites and states it names are the cache
// plan's. They hold with the integrity hash bypassed (a fuzzer's view), so a corrupt artefact is
// an ArtefactError at load time, never a backend's failure or a silently different model.
#ifndef CBC_RUNTIME_ARTEFACT_CHECK_H
#define CBC_RUNTIME_ARTEFACT_CHECK_H

#include "runtime/artefact.h"

namespace cbc::rt {

// One instruction on its own: operand counts and its parameter table.
void checkInstr(const Instr &in);
// The program against the cache plan and metadata, once all of them are read.
void checkProgramAgainstPlan(const Artefact &a);
// The CUDA kernel bundle (a.kernels must be set) against the program and the cache plan.
void checkKernels(const Artefact &a);

} // namespace cbc::rt

#endif
