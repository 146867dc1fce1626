// Host tensors and their storage formats: one byte buffer described by a Format, so that the
// loader, the CPU backend and the device uploads agree on what the bytes are without a flag per
// format (ggml's per-type traits table is the model: one row of traits per storage type).
#ifndef CBC_RUNTIME_TENSOR_H
#define CBC_RUNTIME_TENSOR_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace cbc::rt {

// How a tensor's elements lie in memory. A closed set: each one is a row of storageTraits().
enum class Storage : uint8_t {
  F32,        // float32, row-major
  BF16,       // bf16 bit patterns (a float32's high half), row-major
  BF16Panels, // bf16 matrices [..., N, K] in the panels below (the CPU backend's product weights)
};
constexpr int kStorageCount = 3;

// BF16Panels: each [N, K] matrix of the last two dimensions in panels of kPanelRows rows, each
// panel k-pair major with the pair's two values of a row side by side: element (n, k) at
//   ((n / 16) * (K / 2) + k / 2) * 32 + (n % 16) * 2 + k % 2.
// That is the layout AMX's bf16 tiles read for the weight operand, and one 64-byte line gives a
// matrix-vector kernel 16 outputs' worth of two k. Every panel stays where its rows were, so a
// stacked matrix's blocks (experts) keep their offsets and row n of the stack is row n % N of
// block n / N.
constexpr int64_t kPanelRows = 16;
constexpr int64_t kPanelDepth = 32; // K must be a multiple: one AMX tile's depth
inline bool panelsFit(int64_t N, int64_t K) {
  return N > 0 && K > 0 && N % kPanelRows == 0 && K % kPanelDepth == 0;
}
inline int64_t panelIndex(int64_t n, int64_t k, int64_t K) {
  return ((n / kPanelRows) * (K / 2) + k / 2) * 32 + (n % kPanelRows) * 2 + k % 2;
}

// A tensor's storage format. Today the storage type says it all. A quantized format (a later
// issue) adds storage types whose elements are codes (I4, F8E4M3, MXFP4: 4 or 8 bits, see
// StorageTraits::bits) and two fields here: `group`, the elements of a row that share one scale,
// and `scale`, the storage type of a scale (F32, BF16, or a new E8M0 for MXFP4); `==` then
// compares all three. Its HostTensor holds the scales in a second buffer beside the codes
// ([rows, ceil(cols / group)] of `scale`, empty for the formats here), and toFloatRow gains the
// format and that buffer as arguments. "Dequantize at load" stays what the loader does with
// MXFP4 and FP8 today (it makes F32); "run quantized" keeps the codes, and every kernel reads them
// through toFloatRow until runtime/cpu/formats.h gives the format a fast kernel.
struct Format {
  Storage storage = Storage::F32;
  constexpr Format() = default;
  constexpr Format(Storage s) : storage(s) {} // a storage type alone is a whole format today
  bool operator==(const Format &) const = default;
};

// One row of the format table: what every user of a tensor needs to know about its storage.
struct StorageTraits {
  const char *name; // "f32", "bf16", "bf16_panels"
  int bits;         // per element (a 4-bit code would have 4)
  bool rowMajor;    // element i of the flattened tensor is element i of the buffer
  // Row `row` of the tensor seen as [rows, cols] (cols: its last dimension) as float32, into
  // out[0, cols). Exact for every format here. Matrix layouts take any row of a stack.
  void (*toFloatRow)(const uint8_t *data, int64_t cols, int64_t row, float *out);
  // Whether a tensor of this shape can be held in the format (panels need whole panels).
  bool (*fits)(const std::vector<int64_t> &shape);
};
const StorageTraits &storageTraits(Format f);
inline const char *formatName(Format f) { return storageTraits(f).name; }

// Bytes that `numel` elements take in format f.
int64_t formatBytes(Format f, int64_t numel);

// A tensor on the host: a shape, a format and one byte buffer (64-byte aligned, zero-filled when
// made) in that format. Typed views check the format: asking for float32 values of a bf16
// tensor is a bug in the caller and throws std::logic_error. A moved-from tensor may only be
// assigned or destroyed.
class HostTensor {
public:
  HostTensor() : HostTensor(Storage::F32, {0}) {}
  // Throws std::invalid_argument for a negative dimension or a shape the format cannot hold.
  HostTensor(Format format, std::vector<int64_t> shape);

  Format format() const { return format_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  int64_t numel() const;
  int64_t bytes() const { return bytes_; }
  // The raw buffer, for code that dispatches on format() itself (kernels, uploads); null when
  // bytes() is 0.
  const uint8_t *data() const { return buffer_.get(); }
  uint8_t *data() { return buffer_.get(); }
  // Values of a F32 tensor, and bit patterns of a BF16 (row-major) one.
  std::span<float> f32();
  std::span<const float> f32() const;
  std::span<uint16_t> bf16();
  std::span<const uint16_t> bf16() const;

  // The same elements in another shape of as many elements (row-major formats only).
  void reshape(std::vector<int64_t> shape);
  // The caller has rearranged the bytes in place into `format`, which must take as many bytes
  // and fit the shape (the CPU backend packing a BF16 matrix into BF16Panels).
  void setFormat(Format format);

  HostTensor(const HostTensor &other);
  HostTensor &operator=(const HostTensor &other);
  HostTensor(HostTensor &&other) noexcept;
  HostTensor &operator=(HostTensor &&other) noexcept;

private:
  struct Free {
    void operator()(uint8_t *p) const;
  };
  void need(Storage s, const char *view) const;

  Format format_;
  std::vector<int64_t> shape_;
  int64_t bytes_ = 0;
  std::unique_ptr<uint8_t[], Free> buffer_;
};

} // namespace cbc::rt

#endif
