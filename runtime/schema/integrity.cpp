#include "runtime/schema/integrity.h"

#include <xxhash.h>

#include <cstring>
#include <stdexcept>

namespace cbc {

namespace {

// The hash is stored little-endian whatever the host, like the FlatBuffer's scalars.
void putLe64(uint8_t *at, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    at[i] = (uint8_t)(v >> (8 * i));
}
uint64_t getLe64(const uint8_t *at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= (uint64_t)at[i] << (8 * i);
  return v;
}

} // namespace

uint64_t artefactChecksum(const uint8_t *data, size_t size) {
  return XXH3_64bits(data, size);
}

void sealArtefact(std::vector<uint8_t> &flatbuffer) {
  flatbuffer.insert(flatbuffer.end(), kTrailerMagic, kTrailerMagic + sizeof kTrailerMagic);
  flatbuffer.resize(flatbuffer.size() + 8);
  resealArtefact(flatbuffer);
}

void resealArtefact(std::vector<uint8_t> &sealed) {
  if (!hasTrailer(sealed.data(), sealed.size()))
    throw std::logic_error("resealArtefact: the bytes carry no integrity trailer");
  size_t hashAt = sealed.size() - 8;
  putLe64(sealed.data() + hashAt, artefactChecksum(sealed.data(), hashAt));
}

bool hasTrailer(const uint8_t *data, size_t size) {
  return size >= kTrailerBytes &&
         std::memcmp(data + size - kTrailerBytes, kTrailerMagic, sizeof kTrailerMagic) == 0;
}

bool checksumMatches(const uint8_t *data, size_t size) {
  size_t hashAt = size - 8;
  return getLe64(data + hashAt) == artefactChecksum(data, hashAt);
}

} // namespace cbc
