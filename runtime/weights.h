// Program weights as host float32 tensors, assembled from a checkpoint by the artefact's
// weight manifest, or generated from a seed.
#ifndef CBC_RUNTIME_WEIGHTS_H
#define CBC_RUNTIME_WEIGHTS_H

#include "runtime/artefact.h"
#include "runtime/safetensors.h"

#include <functional>

namespace cbc::rt {

struct HostTensor {
  std::vector<int64_t> shape;
  std::vector<float> data;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

struct WeightSource {
  std::string checkpoint_dir;  // empty: random weights
  uint64_t seed = 0;
};

class WeightStore {
public:
  // Loads every manifest entry. Throws WeightError naming the tensor or file at fault.
  static WeightStore load(const Artefact &artefact, const WeightSource &source,
                          const std::function<void(size_t, size_t)> &progress = nullptr);
  // The same tensors one at a time, so a device can upload them without holding them all.
  static void stream(const Artefact &artefact, const WeightSource &source,
                     const std::function<void(int index, HostTensor &&tensor)> &consume);
  const HostTensor &get(int index) const { return tensors_.at(index); }
  size_t size() const { return tensors_.size(); }

private:
  std::vector<HostTensor> tensors_;
};

// Reads one HF tensor as float32 (bf16, f16, f32).
HostTensor readTensorAsFloat(const Checkpoint &ckpt, const std::string &name,
                             const ModelMeta &meta);

} // namespace cbc::rt

#endif
