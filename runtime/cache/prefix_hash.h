// The content names of a sequence's cache blocks, for prefix caching: block b's hash is
// H(block b-1's hash, its tokens), chained from a seed that names the compiled model and the
// request's cache salt, so that equal hashes mean equal rows in every group (paged blocks, and
// the state snapshot taken at the block's end). XXH3, 64 bits: fast and well mixed, not
// collision-resistant against an adversary; a salt keeps tenants apart.
#ifndef CBC_RUNTIME_CACHE_PREFIX_HASH_H
#define CBC_RUNTIME_CACHE_PREFIX_HASH_H

#include <cstdint>
#include <string>
#include <vector>

namespace cbc::rt {

struct Artefact;
struct Request;

// The compiled model's fingerprint: a hash of the artefact's bytes (its config, plan, dtypes and
// kernels). The weights are not in it: an engine serves one checkpoint, and its cache lives with it.
uint64_t modelFingerprint(const Artefact &a);

// The chain's seed: the model's fingerprint, mixed with the salt when there is one.
uint64_t prefixSeed(uint64_t modelFingerprint, const std::string &salt);
// Appends to `hashes` the hashes of the request's blocks that are full within its first `known`
// tokens and not hashed yet.
void extendBlockHashes(std::vector<uint64_t> &hashes, const Request &r, uint64_t seed, int blockSize, int64_t known);

} // namespace cbc::rt

#endif
