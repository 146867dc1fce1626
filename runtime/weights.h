// Program weights as host tensors (runtime/tensor.h), assembled from a checkpoint by the
// artefact's weight manifest, or generated from a seed: F32, or BF16 where the loader is asked to
// keep a weight so and every value of it is a bf16 value (exact: the checkpoint stored it in
// bf16). Quantized checkpoints (MXFP4 experts, block-scaled FP8) are dequantised as they load.
#ifndef CBC_RUNTIME_WEIGHTS_H
#define CBC_RUNTIME_WEIGHTS_H

#include "runtime/artefact.h"
#include "runtime/safetensors.h"
#include "runtime/tensor.h"
#include "runtime/weight_source.h"

#include <functional>
#include <map>

namespace cbc::rt {

class WeightStore {
public:
  // Loads every manifest entry. Throws WeightError naming the tensor or file at fault.
  // keepBf16[i]: hold weight i as bf16 when all of its values are bf16 values (so nothing is
  // rounded); otherwise, and for the rest, as float32.
  static WeightStore load(const Artefact &artefact, const WeightSource &source,
                          const std::function<void(size_t, size_t)> &progress = nullptr,
                          const std::vector<bool> &keepBf16 = {});
  // The same tensors one at a time, so a device can upload them without holding them all.
  // asBf16[i]: weight i may come as bf16 when the checkpoint stores it so and assembling it only
  // concatenates or stacks; otherwise it comes as float32.
  static void stream(const Artefact &artefact, const WeightSource &source,
                     const std::function<void(int index, HostTensor &&tensor)> &consume,
                     const std::vector<bool> &asBf16 = {});
  const HostTensor &get(int index) const { return tensors_.at(index); }
  HostTensor &get(int index) { return tensors_.at(index); }
  size_t size() const { return tensors_.size(); }

private:
  std::vector<HostTensor> tensors_;
};

// Which of `candidates` the checkpoint stores wholly in BF16 with no rescaling on assembly
// (no row scales, no MXFP4 or FP8 dequantisation): those load as bf16 when asked. Random
// weights are bf16 values, so all of them.
std::vector<bool> storedAsBf16(const Artefact &artefact, const WeightSource &source,
                               const std::vector<bool> &candidates);

// Reads one HF tensor as float32 (bf16, f16, f32; F8_E4M3 dequantised with its block scales
// <name>_scale_inv when the model has fp8 quantization).
HostTensor readTensorAsFloat(const Checkpoint &ckpt, const std::string &name,
                             const ModelMeta &meta);

// Rank `rank`'s slice of a sharded weight (WeightEntry::shard_*), from the whole float32 one.
HostTensor takeShard(const HostTensor &whole, const WeightEntry &w, int rank);

// e4m3fn: 1 sign, 4 exponent (bias 7) and 3 mantissa bits, subnormals at exponent 0, no
// infinities; S.1111.111 is NaN, so the largest finite magnitude is 448.
float fp8E4m3ToFloat(uint8_t code);

// Block-scaled FP8: codes q [..., R, C] and scales [..., ceil(R/bR), ceil(C/bC)]; element
// [..., i, j] is fp8(q[..., i, j]) * scale[..., i / bR, j / bC] (the last row and column of
// blocks may be partial). Throws WeightError naming both tensors when the shapes disagree.
HostTensor dequantFp8Blocks(const TensorView &q, const HostTensor &scale, int64_t blockRows, int64_t blockCols,
                            const std::string &name, const std::string &scaleName);

// What loading an artefact from a checkpoint does with each of the checkpoint's tensors (for
// `cbc dump --weights --weights-path`): read as stored, dequantised from F8_E4M3, read as the
// block scales of one, skipped as a multi-token-prediction layer the step does not run (decoder
// layers past the model's num_layers, or an `mtp.` module), or not used at all. Loading never
// reads the last two kinds, so nothing in them can fail it.
enum class TensorRole { Read, Fp8, Fp8Scales, Ternary, TernaryScales, MtpLayer, Unused };
std::map<std::string, TensorRole> checkpointRoles(const Artefact &artefact, const Checkpoint &ckpt);
// The checkpoint's spelling of a manifest tensor name: the name itself, else an alias it has;
// empty when it has neither.
std::string checkpointName(const Checkpoint &ckpt, const std::string &name, const ModelMeta &meta);

} // namespace cbc::rt

#endif
