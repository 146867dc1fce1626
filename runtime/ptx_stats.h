// Instruction counts per kernel from PTX text: how many tensor-core (mma), ldmatrix, 128-bit
// global load and cp.async instructions each entry function issues, counting those of the
// device functions it calls. `cbc dump --kernels` prints them for the PTX an artefact carries,
// so that a test can check that a kernel really uses tensor cores or wide loads without a GPU.
// Static counts: an instruction inside a loop counts once.
#ifndef CBC_RUNTIME_PTX_STATS_H
#define CBC_RUNTIME_PTX_STATS_H

#include <map>
#include <string>

namespace cbc::rt {

struct PtxCounts {
  int mma = 0;       // mma.* and wgmma.* (tensor cores)
  int ldmatrix = 0;  // ldmatrix.*
  int ld128 = 0;     // ld.global* moving 128 bits (.v4 of 32-bit, .v2 of 64-bit elements)
  int cp_async = 0;  // cp.async copies (not commit_group / wait_group / wait_all)
};

// The counts of one PTX instruction's opcode (e.g. "ld.global.nc.v4.u32"): one field set to 1.
PtxCounts classifyPtxOpcode(const std::string &opcode);

// Per entry function (.entry) of a PTX module: its counts, plus those of every .func it calls,
// directly or not, each callee counted once.
std::map<std::string, PtxCounts> ptxInstructionCounts(const std::string &ptx);

} // namespace cbc::rt

#endif
