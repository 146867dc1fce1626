// Defaults sized from the machine: the cache budget and the step's token budget left at 0 are
// chosen from the memory left beside the weights and from the backend. The machine's figure is
// passed in (EngineOptions::host_memory_available), so every value here is deterministic.
#include "runtime/engine_sizing.h"
#include "runtime/memory_estimate.h"
#include "test/support/test_support.h"

#include <gtest/gtest.h>

namespace cbc::test {
namespace {

constexpr int64_t MiB = 1 << 20, GiB = int64_t(1) << 30;

rt::CacheSizing sizing(int64_t available, int64_t fixed) {
  rt::CacheSizing s;
  s.available = available;
  s.fixed = fixed;
  s.fraction = 0.5;
  s.bytes_per_token = 32768; // 16 layers of 4 kv heads of 64, k and v, as float32
  s.live_requests = 256;
  s.max_model_len = 2048;
  return s;
}

TEST(EngineSizing, TheCacheTakesItsShareOfWhatIsLeftBesideTheWeights) {
  // 24 GiB free, 1 GiB of weights and workspaces: half of the 23 GiB left.
  EXPECT_EQ(rt::chooseCacheBytes(sizing(24 * GiB, GiB)), 23 * GiB / 2);
  // More weights, less cache: the weights count.
  EXPECT_EQ(rt::chooseCacheBytes(sizing(24 * GiB, 9 * GiB)), 15 * GiB / 2);
  // Whole MiB, rounded down.
  EXPECT_EQ(rt::chooseCacheBytes(sizing(GiB + 3 * MiB, 0)) % MiB, 0);
}

TEST(EngineSizing, TheCacheIsCappedAtWhatTheLiveRequestsCanUse) {
  rt::CacheSizing s = sizing(1024 * GiB, GiB);
  // 256 requests of 2048 tokens of 32 KiB: 16 GiB, not half of a terabyte machine.
  EXPECT_EQ(rt::chooseCacheBytes(s), 256ll * 2048 * 32768);
  s.live_requests = 1;
  s.max_model_len = 16; // a tiny cap, under the floor: the cap, not the floor
  EXPECT_EQ(rt::chooseCacheBytes(s), MiB); // at least one MiB
  // States count beside the kv, and may take only max_state_fraction of the budget.
  s = sizing(1024 * GiB, GiB);
  s.bytes_per_token = 0;
  s.state_bytes = 4 * MiB;
  EXPECT_EQ(rt::chooseCacheBytes(s), 256 * 4 * MiB * 2);
}

TEST(EngineSizing, TooLittleLeftOrUnknownIsTheOldFloor) {
  // Nothing left (the model alone exceeds the machine): the floor, refused later with figures.
  EXPECT_EQ(rt::chooseCacheBytes(sizing(8 * GiB, 32 * GiB)), rt::kMinCacheBytes);
  EXPECT_EQ(rt::chooseCacheBytes(sizing(GiB, 900 * MiB)), rt::kMinCacheBytes);
  EXPECT_EQ(rt::chooseCacheBytes(sizing(-1, GiB)), rt::kMinCacheBytes);
}

TEST(EngineSizing, TheEngineChoosesOnlyWhatWasNotGiven) {
  const rt::Artefact &a = committedArtefact("llama");
  rt::EngineOptions o;
  o.backend = "cpu";
  o.threads = 1;
  o.host_memory_available = 4 * GiB;
  auto chosen = rt::Engine::create(a, {"", 0}, o);
  EXPECT_EQ(chosen->options().max_batch_tokens, rt::kCpuMaxBatchTokens);
  rt::EngineOptions sized = o;
  sized.max_batch_tokens = rt::kCpuMaxBatchTokens;
  int64_t fixed = rt::estimateCpuMemory(a, 0, {sized.max_batch_tokens, sized.max_requests}).total();
  int64_t want = rt::chooseCacheBytes(rt::cacheSizing(a, sized, false, 4 * GiB, fixed));
  EXPECT_EQ(chosen->options().cache_memory_bytes, want);
  // The same machine, the same choice.
  EXPECT_EQ(rt::Engine::create(a, {"", 0}, o)->options().cache_memory_bytes, want);
  // Explicit budgets win.
  o.max_batch_tokens = 77;
  o.cache_memory_bytes = 64 * MiB;
  auto given = rt::Engine::create(a, {"", 0}, o);
  EXPECT_EQ(given->options().max_batch_tokens, 77);
  EXPECT_EQ(given->options().cache_memory_bytes, 64 * MiB);
}

} // namespace
} // namespace cbc::test
