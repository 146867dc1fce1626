// What the multi-rank suites share: the job's group, one artefact compiled by rank 0 and sent to
// every rank, and main() under mpiexec (every rank runs the tests, rank 0 alone reports them).
#ifndef CBC_TEST_TP_TP_SUPPORT_H
#define CBC_TEST_TP_TP_SUPPORT_H

#include "driver/compile.h"
#include "runtime/artefact.h"
#include "runtime/comm/communicator.h"

#include <memory>
#include <optional>
#include <string>

namespace cbc::test {

extern std::shared_ptr<rt::Communicator> gComm;

// Rank 0's artefact of the config at `configPath`, compiled with `options` (whose tp and ep this
// function sets: the job's size, and with `expertParallel` the experts divided among the ranks),
// sent to every rank; empty with the reason on every rank when the shapes do not divide (`failed`
// when the compile failed otherwise).
std::optional<rt::Artefact> shareArtefact(const std::string &configPath, driver::CompileOptions options,
                                          bool expertParallel, std::string &why, bool &failed);

// Rank 0's `value`, on every rank.
bool shareFlag(bool value);

// Whether the program has MoE experts (what expert parallelism divides).
bool hasExperts(const rt::Artefact &a);

// The test binary's main: the group from mpiexec (or a group of one), the tests on every rank.
int runOnRanks(int argc, char **argv);

} // namespace cbc::test

#endif
