// Runs a grid of a shim-compiled kernel on the CPU: blocks one after another, each block's
// threads as fibers that meet at barriers.
#ifndef CBC_TEST_SIMT_SIMT_RUNTIME_H
#define CBC_TEST_SIMT_SIMT_RUNTIME_H

#include "runtime/schema/kernel_abi.h"

#include <cstdint>

namespace cbc::simt {

using KernelFn = void (*)(CbcArgs);

// Throws std::runtime_error on a barrier deadlock (threads waiting at different barriers).
void launch(KernelFn fn, const uint32_t grid[3], int block, const CbcArgs &args);

} // namespace cbc::simt

#endif
