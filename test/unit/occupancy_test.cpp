// The occupancy `cbc dump --kernels` prints (runtime/occupancy.h), on the SM limits of sm_90
// and sm_80: each figure below follows from those limits by the allocation rules the header
// states, and each case is bounded by a different resource.
#include "runtime/occupancy.h"

#include <gtest/gtest.h>

#include <cstring>

namespace cbc::rt {
namespace {

TEST(Occupancy, EachResourceBoundsTheBlocks) {
  SmLimits h = *smLimits("sm_90");
  // 256 threads, 32 registers, no shared memory: 2048 / 256 = 8 blocks, every warp slot used.
  Occupancy o = occupancy(h, 256, 32, 0);
  EXPECT_EQ(o.blocks, 8);
  EXPECT_EQ(o.percent, 100);
  EXPECT_STREQ(o.limit, "threads");
  // 128 threads at 255 registers: 256 a lane rounded per warp is 8192 a warp, 8 warps an SM.
  o = occupancy(h, 128, 255, 0);
  EXPECT_EQ(o.blocks, 2);
  EXPECT_EQ(o.warps, 8);
  EXPECT_EQ(o.percent, 12);
  EXPECT_STREQ(o.limit, "registers");
  // 100 KiB of shared memory (+1 KiB reserved) a block: 228 KiB hold 2 on sm_90, 1 on sm_80.
  o = occupancy(h, 128, 32, 100 * 1024);
  EXPECT_EQ(o.blocks, 2);
  EXPECT_STREQ(o.limit, "shared");
  EXPECT_EQ(occupancy(*smLimits("sm_80"), 128, 32, 100 * 1024).blocks, 1);
  // 32 threads a block: at most 32 blocks an SM, half the warp slots.
  o = occupancy(h, 32, 16, 0);
  EXPECT_EQ(o.blocks, 32);
  EXPECT_EQ(o.percent, 50);
  EXPECT_STREQ(o.limit, "blocks");
}

TEST(Occupancy, ABlockBeyondTheLimitsDoesNotFit) {
  SmLimits h = *smLimits("sm_90");
  EXPECT_EQ(occupancy(h, 128, 32, 228 * 1024).blocks, 0);
  EXPECT_EQ(occupancy(h, 0, 32, 0).blocks, 0);
  EXPECT_FALSE(smLimits("sm_75").has_value());
}

} // namespace
} // namespace cbc::rt
