// A rank's slices of a bf16 checkpoint are read as ranges of the tensors' bytes (only its slice
// is touched): they must equal the float path's whole weight cut by takeShard, for fused weights
// (q|k|v, gate|up segments), row-parallel columns, vocabulary rows and stacked experts.
#include "driver/compile.h"
#include "runtime/weights.h"
#include "test/support/compile_support.h"

#include <gtest/gtest.h>

namespace cbc::test {
namespace {

std::vector<float> values(const rt::HostTensor &t) {
  int64_t cols = t.shape().empty() ? 1 : t.shape().back(), rows = t.numel() / std::max<int64_t>(cols, 1);
  std::vector<float> out(t.numel());
  for (int64_t r = 0; r < rows; ++r)
    rt::storageTraits(t.format()).toFloatRow(t.data(), cols, r, out.data() + r * cols);
  return out;
}

void slicesMatchTheFloatPath(const std::string &family, int64_t tp, int64_t ep) {
  driver::CompileOptions o;
  o.emit_cuda = false;
  o.tp = tp;
  o.ep = ep;
  auto bytes = driver::compileConfig(readFile(fixtureDir(family) + "/config.json"), o).artefact;
  rt::Artefact a = rt::Artefact::fromBytes(bytes.data(), bytes.size());
  int sharded = 0;
  for (const rt::WeightEntry &w : a.weights)
    sharded += w.shard_dim >= 0;
  ASSERT_GT(sharded, 0) << family;
  for (int rank = 0; rank < tp; ++rank) {
    rt::WeightSource source;
    source.checkpoint_dir = fixtureDir(family);
    source.rank = rank;
    std::vector<rt::HostTensor> sliced, cut;
    rt::WeightStore::stream(a, source, [&](int, rt::HostTensor &&t) { sliced.push_back(std::move(t)); },
                            std::vector<bool>(a.weights.size(), true));
    rt::WeightStore::stream(a, source, [&](int, rt::HostTensor &&t) { cut.push_back(std::move(t)); });
    ASSERT_EQ(sliced.size(), a.weights.size());
    int bf16 = 0;
    for (size_t i = 0; i < a.weights.size(); ++i) {
      EXPECT_EQ(sliced[i].shape(), a.weights[i].shape) << a.weights[i].name;
      EXPECT_EQ(values(sliced[i]), values(cut[i])) << family << " rank " << rank << ": " << a.weights[i].name;
      bf16 += a.weights[i].shard_dim >= 0 && sliced[i].format() == rt::Storage::BF16;
    }
    EXPECT_GT(bf16, 0) << family << ": no sharded weight took the bf16 path";
    std::printf("[ shards ] %s tp %lld ep %lld rank %d: %d of %d sharded weights read as bf16 slices\n", family.c_str(),
                (long long)tp, (long long)ep, rank, bf16, sharded);
  }
}

TEST(ShardedWeights, BytesReadAsSlicesEqualTheCutWholeWeight) {
  slicesMatchTheFloatPath("llama", 2, 1);
  slicesMatchTheFloatPath("gpt2", 4, 1);
  slicesMatchTheFloatPath("qwen3_moe", 2, 1);
  slicesMatchTheFloatPath("qwen3_moe", 2, 2);
  slicesMatchTheFloatPath("qwen3_next", 2, 1);
}

} // namespace
} // namespace cbc::test
