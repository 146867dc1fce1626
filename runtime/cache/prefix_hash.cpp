#include "runtime/cache/prefix_hash.h"

#include "runtime/artefact.h"
#include "runtime/request.h"

#include <xxhash.h>

#include <algorithm>

namespace cbc::rt {

uint64_t modelFingerprint(const Artefact &a) {
  if (a.bytes && !a.bytes->empty())
    return XXH3_64bits(a.bytes->data(), a.bytes->size());
  uint64_t h = XXH3_64bits(a.config_json.data(), a.config_json.size());
  return XXH3_64bits_withSeed(a.ir.data(), a.ir.size(), h);
}

uint64_t prefixSeed(uint64_t modelFingerprint, const std::string &salt) {
  return salt.empty() ? modelFingerprint : XXH3_64bits_withSeed(salt.data(), salt.size(), modelFingerprint);
}

namespace {

// `h` mixed with the embeddings the request gives for rows [from, to), where it gives any: two
// images behind the same placeholder tokens never name the same blocks.
uint64_t mixEmbeddings(uint64_t h, const Request &r, int64_t from, int64_t to) {
  for (const EmbeddingSegment &s : r.embeds) {
    int64_t a = std::max(from, s.start), e = std::min(to, s.start + s.rows);
    if (a >= e)
      continue;
    size_t width = s.data->size() / (size_t)s.rows;
    h = XXH3_64bits_withSeed(s.data->data() + (size_t)(a - s.start) * width, (size_t)(e - a) * width * sizeof(float),
                             h ^ (uint64_t)a);
  }
  return h;
}

} // namespace

void extendBlockHashes(std::vector<uint64_t> &hashes, const Request &r, uint64_t seed, int blockSize, int64_t known) {
  std::vector<int32_t> tokens(blockSize);
  for (int64_t b = (int64_t)hashes.size(); (b + 1) * blockSize <= known; ++b) {
    for (int i = 0; i < blockSize; ++i)
      tokens[i] = r.tokenAt(b * blockSize + i);
    uint64_t h = XXH3_64bits_withSeed(tokens.data(), tokens.size() * sizeof(int32_t), b ? hashes[b - 1] : seed);
    hashes.push_back(r.embeds.empty() ? h : mixEmbeddings(h, r, b * blockSize, (b + 1) * blockSize));
  }
}

} // namespace cbc::rt
