// The artefact's integrity trailer: 16 bytes after the FlatBuffer, a magic and the XXH3-64
// hash of every byte before the hash (the FlatBuffer and the magic). A FlatBuffer verifier checks
// offsets, not values, so a flipped byte in a float array or an enum would otherwise load and
// change the output silently; with the trailer every changed byte is refused before parsing.
// The compiler seals what it writes (codegen/artefact_writer.cpp); the loader checks it first
// (runtime/artefact.cpp).
#ifndef CBC_RUNTIME_SCHEMA_INTEGRITY_H
#define CBC_RUNTIME_SCHEMA_INTEGRITY_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cbc {

inline constexpr size_t kTrailerBytes = 16;
// 8 bytes; "X3" for XXH3, "01" for the trailer's layout.
inline constexpr char kTrailerMagic[8] = {'C', 'B', 'C', 'S', 'X', '3', '0', '1'};

// The hash a trailer carries for `size` bytes of FlatBuffer at `data` (magic included).
uint64_t artefactChecksum(const uint8_t *data, size_t size);

// Appends the trailer to a finished FlatBuffer.
void sealArtefact(std::vector<uint8_t> &flatbuffer);
// Recomputes the hash of sealed bytes after an edit in place (tests that patch artefacts).
void resealArtefact(std::vector<uint8_t> &sealed);

// Whether the last kTrailerBytes of `data` begin with the magic.
bool hasTrailer(const uint8_t *data, size_t size);
// Whether the trailer's hash is that of the bytes before it; requires hasTrailer.
bool checksumMatches(const uint8_t *data, size_t size);

} // namespace cbc

#endif
