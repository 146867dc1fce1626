// Read-only access to safetensors checkpoints: one file or a sharded directory with
// model.safetensors.index.json. Files are mmap'ed; every header and tensor range is checked
// against the file size before use.
#ifndef CBC_RUNTIME_SAFETENSORS_H
#define CBC_RUNTIME_SAFETENSORS_H

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace cbc::rt {

class WeightError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

enum class StDType { F32, F16, BF16, U8, I8, I32, I64, F8E4M3, F8E5M2, Other };

struct TensorView {
  StDType dtype = StDType::Other;
  std::string dtype_name;
  std::vector<int64_t> shape;
  const uint8_t *data = nullptr;
  size_t bytes = 0;
  std::string file; // for error messages
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

class SafetensorsFile {
public:
  explicit SafetensorsFile(const std::string &path); // throws WeightError naming the file
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile &) = delete;
  SafetensorsFile &operator=(const SafetensorsFile &) = delete;

  bool has(const std::string &name) const { return tensors_.count(name) != 0; }
  const TensorView &get(const std::string &name) const;
  std::vector<std::string> names() const;
  const std::string &path() const { return path_; }
  // Drops the mapped pages read so far from this process (they stay in the page cache and fault
  // back in if read again), so that loading holds one copy of the weights, not two.
  void releasePages() const;

private:
  std::string path_;
  void *map_ = nullptr;
  size_t size_ = 0;
  std::map<std::string, TensorView> tensors_;
};

// A checkpoint: a directory (single model.safetensors, or sharded via the index), or one file.
class Checkpoint {
public:
  explicit Checkpoint(const std::string &path);
  bool has(const std::string &name) const;
  const TensorView &get(const std::string &name) const; // throws WeightError naming the tensor
  std::vector<std::string> names() const;
  void releasePages() const; // every file's, as SafetensorsFile::releasePages

private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, size_t> index_; // tensor -> file
};

// Writes float32 or bfloat16 tensors as a safetensors file (tests, random checkpoints).
void writeSafetensors(const std::string &path,
                      const std::vector<std::pair<std::string, TensorView>> &tensors);

// Inline: the CPU backend widens bf16 weights with it in its matrix kernels.
inline float bf16ToFloat(uint16_t v) {
  uint32_t bits = (uint32_t)v << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
uint16_t floatToBf16(float f);
float f16ToFloat(uint16_t v);

} // namespace cbc::rt

#endif
