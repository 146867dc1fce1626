#include "runtime/tensor.h"

#include "runtime/safetensors.h"

#include <cstdlib>
#include <cstring>
#include <iterator>
#include <new>
#include <stdexcept>

namespace cbc::rt {

namespace {

void f32Row(const uint8_t *data, int64_t cols, int64_t row, float *out) {
  std::memcpy(out, data + row * cols * 4, cols * 4);
}

void bf16Row(const uint8_t *data, int64_t cols, int64_t row, float *out) {
  const uint16_t *src = reinterpret_cast<const uint16_t *>(data) + row * cols;
  for (int64_t k = 0; k < cols; ++k)
    out[k] = bf16ToFloat(src[k]);
}

void bf16PanelRow(const uint8_t *data, int64_t cols, int64_t row, float *out) {
  const uint16_t *src = reinterpret_cast<const uint16_t *>(data);
  for (int64_t k = 0; k < cols; ++k)
    out[k] = bf16ToFloat(src[panelIndex(row, k, cols)]);
}

bool anyShape(const std::vector<int64_t> &) { return true; }

bool wholePanels(const std::vector<int64_t> &shape) {
  size_t r = shape.size();
  return r >= 2 && panelsFit(shape[r - 2], shape[r - 1]);
}

// Indexed by Storage.
constexpr StorageTraits kTraits[] = {
    {"f32", 32, true, f32Row, anyShape},
    {"bf16", 16, true, bf16Row, anyShape},
    {"bf16_panels", 16, false, bf16PanelRow, wholePanels},
};
static_assert(std::size(kTraits) == kStorageCount, "one row of traits per storage format");

std::string shapeText(const std::vector<int64_t> &s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

int64_t checkedNumel(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n))
      throw std::invalid_argument("host tensor shape " + shapeText(shape) + " has no element count");
  return n;
}

constexpr size_t kAlign = 64; // a cache line, and one AVX-512 load

} // namespace

const StorageTraits &storageTraits(Format f) {
  auto i = (size_t)f.storage;
  if (i >= std::size(kTraits))
    throw std::logic_error("unknown storage format " + std::to_string(i));
  return kTraits[i];
}

int64_t formatBytes(Format f, int64_t numel) { return (numel * storageTraits(f).bits + 7) / 8; }

void HostTensor::Free::operator()(uint8_t *p) const { std::free(p); }

HostTensor::HostTensor(Format format, std::vector<int64_t> shape) : format_(format), shape_(std::move(shape)) {
  int64_t n = checkedNumel(shape_);
  if (!storageTraits(format_).fits(shape_))
    throw std::invalid_argument("a " + std::string(formatName(format_)) + " tensor cannot have shape " +
                                shapeText(shape_));
  bytes_ = formatBytes(format_, n);
  if (bytes_ == 0)
    return;
  size_t size = ((size_t)bytes_ + kAlign - 1) / kAlign * kAlign;
  auto *p = static_cast<uint8_t *>(std::aligned_alloc(kAlign, size));
  if (!p)
    throw std::bad_alloc();
  std::memset(p, 0, size);
  buffer_.reset(p);
}

HostTensor::HostTensor(const HostTensor &other) : HostTensor(other.format_, other.shape_) {
  if (bytes_)
    std::memcpy(buffer_.get(), other.buffer_.get(), bytes_);
}

HostTensor &HostTensor::operator=(const HostTensor &other) {
  if (this != &other)
    *this = HostTensor(other);
  return *this;
}

HostTensor::HostTensor(HostTensor &&other) noexcept
    : format_(other.format_), shape_(std::move(other.shape_)), bytes_(other.bytes_), buffer_(std::move(other.buffer_)) {
  other.bytes_ = 0;
}

HostTensor &HostTensor::operator=(HostTensor &&other) noexcept {
  format_ = other.format_;
  shape_ = std::move(other.shape_);
  bytes_ = other.bytes_;
  buffer_ = std::move(other.buffer_);
  other.bytes_ = 0;
  return *this;
}

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape_)
    n *= d;
  return n;
}

void HostTensor::need(Storage s, const char *view) const {
  if (format_.storage != s)
    throw std::logic_error(std::string("host tensor: ") + view + "() of a " + formatName(format_) + " tensor");
}

std::span<float> HostTensor::f32() {
  need(Storage::F32, "f32");
  return {reinterpret_cast<float *>(buffer_.get()), (size_t)numel()};
}

std::span<const float> HostTensor::f32() const {
  need(Storage::F32, "f32");
  return {reinterpret_cast<const float *>(buffer_.get()), (size_t)numel()};
}

std::span<uint16_t> HostTensor::bf16() {
  need(Storage::BF16, "bf16");
  return {reinterpret_cast<uint16_t *>(buffer_.get()), (size_t)numel()};
}

std::span<const uint16_t> HostTensor::bf16() const {
  need(Storage::BF16, "bf16");
  return {reinterpret_cast<const uint16_t *>(buffer_.get()), (size_t)numel()};
}

void HostTensor::reshape(std::vector<int64_t> shape) {
  if (!storageTraits(format_).rowMajor)
    throw std::logic_error(std::string("host tensor: cannot reshape a ") + formatName(format_) + " tensor");
  if (checkedNumel(shape) != numel())
    throw std::invalid_argument("host tensor: cannot reshape " + shapeText(shape_) + " to " + shapeText(shape));
  shape_ = std::move(shape);
}

void HostTensor::setFormat(Format format) {
  const StorageTraits &to = storageTraits(format);
  if (formatBytes(format, numel()) != bytes_ || !to.fits(shape_))
    throw std::logic_error("host tensor: a " + std::string(formatName(format_)) + " tensor of shape " +
                           shapeText(shape_) + " cannot be held as " + to.name);
  format_ = format;
}

} // namespace cbc::rt
