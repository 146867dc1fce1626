// Theoretical occupancy of a kernel on one SM from what ptxas reported (registers per thread,
// static shared memory) and how it is launched (threads per block, dynamic shared memory),
// against the SM's limits, as CUDA's occupancy calculator reckons it: registers are allocated
// per warp in units of 256, shared memory per block in units of 128 bytes plus 1 KiB the
// driver reserves per block. `cbc dump --kernels` prints it; nothing here needs a GPU.
#ifndef CBC_RUNTIME_OCCUPANCY_H
#define CBC_RUNTIME_OCCUPANCY_H

#include <algorithm>
#include <optional>
#include <string>

namespace cbc::rt {

struct SmLimits {
  int registers = 65536;            // 32-bit registers per SM
  int shared_bytes = 228 * 1024;    // shared memory per SM
  int block_shared_bytes = 227 * 1024; // the most one block may use
  int threads = 2048, blocks = 32;
  int register_unit = 256, shared_unit = 128, reserved_shared = 1024;
};

// The limits of the targets whose figures are known (sm_80: A100, sm_90: H100/H200); none for
// another target.
inline std::optional<SmLimits> smLimits(const std::string &arch) {
  SmLimits l;
  if (arch == "sm_90" || arch == "sm_90a" || arch == "sm_100")
    return l;
  if (arch == "sm_80") {
    l.shared_bytes = 164 * 1024, l.block_shared_bytes = 163 * 1024;
    return l;
  }
  return std::nullopt;
}

struct Occupancy {
  int blocks = 0;        // resident blocks per SM (0: the block does not fit)
  int warps = 0;         // resident warps per SM
  int percent = 0;       // resident warps over the SM's most
  const char *limit = ""; // what bounds the blocks: threads, registers, shared, blocks
};

inline Occupancy occupancy(const SmLimits &l, int threadsPerBlock, int registers, int sharedBytes) {
  Occupancy o;
  int warps = (threadsPerBlock + 31) / 32;
  if (warps <= 0)
    return o;
  int byThreads = l.threads / 32 / warps, byBlocks = l.blocks;
  int regsPerWarp = (registers * 32 + l.register_unit - 1) / l.register_unit * l.register_unit;
  int byRegisters = regsPerWarp > 0 ? l.registers / regsPerWarp / warps : l.blocks;
  int shared = (sharedBytes + l.shared_unit - 1) / l.shared_unit * l.shared_unit + l.reserved_shared;
  int byShared = sharedBytes > l.block_shared_bytes ? 0 : l.shared_bytes / shared;
  o.blocks = byThreads, o.limit = "threads";
  if (byRegisters < o.blocks)
    o.blocks = byRegisters, o.limit = "registers";
  if (byShared < o.blocks)
    o.blocks = byShared, o.limit = "shared";
  if (byBlocks < o.blocks)
    o.blocks = byBlocks, o.limit = "blocks";
  o.warps = o.blocks * warps;
  o.percent = o.warps * 100 / (l.threads / 32);
  return o;
}

} // namespace cbc::rt

#endif
