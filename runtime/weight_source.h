// Where a model's weights come from: a safetensors checkpoint, or random weights from a seed.
// Its own header so that the embedding API (runtime/engine.h) names it without the loader.
#ifndef CBC_RUNTIME_WEIGHT_SOURCE_H
#define CBC_RUNTIME_WEIGHT_SOURCE_H

#include <cstdint>
#include <string>

namespace cbc::rt {

struct WeightSource {
  std::string checkpoint_dir;  // empty: random weights
  uint64_t seed = 0;
  int rank = 0; // the rank whose slices of sharded weights to keep (cbc compile --tp)
};

} // namespace cbc::rt

#endif
