#include "runtime/cache/prefix_hash.h"

#include "runtime/artefact.h"
#include "runtime/request.h"

#include <xxhash.h>

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

void extendBlockHashes(std::vector<uint64_t> &hashes, const Request &r, uint64_t seed, int blockSize, int64_t known) {
  std::vector<int32_t> tokens(blockSize);
  for (int64_t b = (int64_t)hashes.size(); (b + 1) * blockSize <= known; ++b) {
    for (int i = 0; i < blockSize; ++i)
      tokens[i] = r.tokenAt(b * blockSize + i);
    hashes.push_back(XXH3_64bits_withSeed(tokens.data(), tokens.size() * sizeof(int32_t), b ? hashes[b - 1] : seed));
  }
}

} // namespace cbc::rt
