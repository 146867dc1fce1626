// The MPI communicator (MPICH or Open MPI): the tensor-parallel group is MPI_COMM_WORLD of a job
// started with `mpiexec -n N`. Built only with CBC_MPI, in its own library (cbc_mpi), so that
// the runtime library itself needs no MPI.
#ifndef CBC_RUNTIME_COMM_MPI_COMMUNICATOR_H
#define CBC_RUNTIME_COMM_MPI_COMMUNICATOR_H

#include "runtime/comm/communicator.h"

#include <memory>

namespace cbc::rt {

// Whether this process was started by an MPI launcher (its environment says so).
bool launchedByMpi();

// Initialises MPI and returns this process's rank of MPI_COMM_WORLD. A collective that has not
// completed after `timeoutSeconds` (a rank died or hangs) aborts the job with a message naming
// this rank; waiting for rank 0's next call between steps is never timed out.
std::shared_ptr<Communicator> openMpi(double timeoutSeconds);

} // namespace cbc::rt

#endif
