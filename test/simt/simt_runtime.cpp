#include "test/simt/simt_runtime.h"

#include "test/simt/simt_abi.h"

#include <boost/context/fiber.hpp>
#include <boost/context/pooled_fixedsize_stack.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <stdexcept>
#include <vector>

namespace ctx = boost::context;

namespace {

struct Block {
  int threads = 0;
  std::vector<CbcSimtThread> state;
  std::vector<ctx::fiber> sinks; // each thread's way back to the scheduler
  // Block barrier.
  int arrived = 0;
  uint64_t generation = 0;
  // Warp barriers and the shuffle exchange.
  std::vector<int> warpArrived;
  std::vector<uint64_t> warpGeneration;
  std::vector<uint32_t> exchange;
  std::vector<unsigned char> gather; // kGatherBytes per thread
  // Each thread's cp.async copies: the open group, then the committed ones, oldest first.
  struct Copy {
    void *dst;
    const void *src;
    int bytes;
  };
  struct AsyncCopies {
    std::vector<Copy> open;
    std::deque<std::vector<Copy>> committed;
  };
  std::vector<AsyncCopies> async;
  int current = -1;
};

constexpr int kGatherBytes = 64;

thread_local Block *gBlock = nullptr;

void yieldToScheduler() {
  Block &b = *gBlock;
  int me = b.current;
  b.sinks[me] = std::move(b.sinks[me]).resume();
  gBlock->current = me; // the scheduler may have run others meanwhile
}

void warpBarrier(Block &b, int me) {
  int warp = me / 32;
  int members = std::min(32, b.threads - warp * 32);
  uint64_t gen = b.warpGeneration[warp];
  if (++b.warpArrived[warp] == members) {
    b.warpArrived[warp] = 0;
    ++b.warpGeneration[warp];
    return;
  }
  while (b.warpGeneration[warp] == gen)
    yieldToScheduler();
}

ctx::pooled_fixedsize_stack &stacks() {
  static thread_local ctx::pooled_fixedsize_stack pool(128 * 1024);
  return pool;
}

} // namespace

extern "C" CbcSimtThread *cbc_simt_thread() { return &gBlock->state[gBlock->current]; }

extern "C" void cbc_simt_syncthreads() {
  Block &b = *gBlock;
  uint64_t gen = b.generation;
  if (++b.arrived == b.threads) {
    b.arrived = 0;
    ++b.generation;
    return;
  }
  while (b.generation == gen)
    yieldToScheduler();
}

extern "C" uint32_t cbc_simt_shuffle(uint32_t value, int mode, int arg, int width) {
  Block &b = *gBlock;
  int me = b.current;
  int lane = me % 32, base = me - lane;
  b.exchange[me] = value;
  warpBarrier(b, me);
  int segment = lane - lane % width, src = lane;
  switch (mode) {
  case 0: src = lane ^ arg; break;
  case 1: src = lane + arg < segment + width ? lane + arg : lane; break;
  case 2: src = lane - arg >= segment ? lane - arg : lane; break;
  default: src = segment + (arg % width); break;
  }
  uint32_t out = base + src < b.threads ? b.exchange[base + src] : value;
  warpBarrier(b, me); // nobody overwrites the exchange before everyone has read
  return out;
}

extern "C" void cbc_simt_warp_gather(const void *mine, void *all, int bytes) {
  if (bytes <= 0 || bytes > kGatherBytes)
    cbc_simt_fault("warp gather of more than 64 bytes a lane");
  Block &b = *gBlock;
  int me = b.current, base = me - me % 32;
  std::memcpy(&b.gather[(size_t)me * kGatherBytes], mine, bytes);
  warpBarrier(b, me);
  for (int lane = 0; lane < 32; ++lane) {
    unsigned char *out = static_cast<unsigned char *>(all) + (size_t)lane * bytes;
    if (base + lane < b.threads)
      std::memcpy(out, &b.gather[(size_t)(base + lane) * kGatherBytes], bytes);
    else
      std::memset(out, 0, bytes);
  }
  warpBarrier(b, me); // nobody overwrites a deposit before everyone has read
}

extern "C" void cbc_simt_cp_async(void *dst, const void *src, int bytes) {
  if (((uintptr_t)dst | (uintptr_t)src) % (uintptr_t)bytes != 0)
    cbc_simt_fault("cp.async: an address is not aligned to the copy's size");
  Block &b = *gBlock;
  b.async[b.current].open.push_back({dst, src, bytes});
}

extern "C" void cbc_simt_cp_async_commit() {
  Block::AsyncCopies &a = gBlock->async[gBlock->current];
  a.committed.push_back(std::move(a.open));
  a.open.clear();
}

// Performs the oldest committed groups until at most `pending` are left.
extern "C" void cbc_simt_cp_async_wait(int pending) {
  Block::AsyncCopies &a = gBlock->async[gBlock->current];
  while ((int)a.committed.size() > pending) {
    for (const Block::Copy &c : a.committed.front())
      std::memcpy(c.dst, c.src, c.bytes);
    a.committed.pop_front();
  }
}

extern "C" void cbc_simt_fault(const char *what) {
  CbcSimtThread *t = cbc_simt_thread();
  std::fprintf(stderr, "simt: fault in block (%u, %u, %u) thread %u: %s\n", t->blockIdx.x, t->blockIdx.y,
               t->blockIdx.z, t->threadIdx.x, what);
  std::abort();
}

namespace cbc::simt {

void launch(KernelFn fn, const uint32_t grid[3], int block, const CbcArgs &args) {
  if (block <= 0 || block > 1024 || block % 32 != 0)
    throw std::runtime_error("simt: block size must be a multiple of 32 up to 1024");
  Block b;
  b.threads = block;
  b.state.resize(block);
  b.sinks.resize(block);
  b.warpArrived.assign((block + 31) / 32, 0);
  b.warpGeneration.assign((block + 31) / 32, 0);
  b.exchange.assign(block, 0);
  b.gather.assign((size_t)block * kGatherBytes, 0);
  Block *saved = gBlock;
  gBlock = &b;
  for (uint32_t z = 0; z < grid[2]; ++z)
    for (uint32_t y = 0; y < grid[1]; ++y)
      for (uint32_t x = 0; x < grid[0]; ++x) {
        b.arrived = 0;
        b.async.assign(block, {}); // copies a block left unwaited die with its shared memory
        std::vector<ctx::fiber> fibers;
        fibers.reserve(block);
        for (int t = 0; t < block; ++t) {
          CbcSimtThread &s = b.state[t];
          s.threadIdx = {(unsigned)t, 0, 0};
          s.blockIdx = {x, y, z};
          s.blockDim = {(unsigned)block, 1, 1};
          s.gridDim = {grid[0], grid[1], grid[2]};
          fibers.emplace_back(std::allocator_arg, stacks(), [fn, &args, &b, t](ctx::fiber &&sink) {
            b.sinks[t] = std::move(sink);
            b.current = t;
            fn(args);
            return std::move(b.sinks[t]);
          });
        }
        int alive = block;
        uint64_t rounds = 0;
        while (alive > 0) {
          uint64_t before = b.generation;
          for (int t = 0; t < block; ++t) {
            if (!fibers[t])
              continue;
            b.current = t;
            fibers[t] = std::move(fibers[t]).resume();
            if (!fibers[t])
              --alive;
          }
          if (alive > 0 && ++rounds > 1000000 && b.generation == before) {
            gBlock = saved;
            throw std::runtime_error("simt: threads of a block wait at different barriers");
          }
        }
      }
  gBlock = saved;
}

} // namespace cbc::simt
