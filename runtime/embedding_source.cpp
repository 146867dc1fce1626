#include "runtime/embedding_source.h"

#include "runtime/safetensors.h"

#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

namespace cbc::rt {

namespace {

std::string keyName(const std::string &key) { return "\"" + key + "\""; }

bool endsWith(const std::string &s, const char *tail) {
  size_t n = std::strlen(tail);
  return s.size() >= n && s.compare(s.size() - n, n, tail) == 0;
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

uint32_t le32(const uint8_t *b) { return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24; }
uint16_t le16(const uint8_t *b) { return (uint16_t)(b[0] | b[1] << 8); }
uint64_t le64(const uint8_t *b) { return (uint64_t)le32(b) | (uint64_t)le32(b + 4) << 32; }

// The elements of a shape, or -1 when a dimension is negative or the product overflows.
int64_t elements(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && n > std::numeric_limits<int64_t>::max() / d))
      return -1;
    n *= d;
  }
  return n;
}

// The value of `key` in a .npy header (a Python dict literal), up to the next top-level comma
// or the closing brace; empty when absent.
std::string headerValue(const std::string &header, const std::string &key) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos)
    return "";
  at = header.find(':', at);
  if (at == std::string::npos)
    return "";
  ++at;
  int depth = 0;
  size_t end = at;
  for (; end < header.size(); ++end) {
    char c = header[end];
    if (c == '(' || c == '[')
      ++depth;
    else if (c == ')' || c == ']')
      --depth;
    else if ((c == ',' || c == '}') && depth == 0)
      break;
  }
  std::string v = header.substr(at, end - at);
  size_t a = v.find_first_not_of(" \t"), b = v.find_last_not_of(" \t");
  return a == std::string::npos ? "" : v.substr(a, b - a + 1);
}

std::string readNpy(const std::string &path, std::vector<float> &values, std::vector<int64_t> &shape) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return std::string("cannot be read: ") + std::strerror(errno);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad())
    return std::string("cannot be read: ") + std::strerror(errno);
  const uint8_t *b = reinterpret_cast<const uint8_t *>(bytes.data());
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    return "is not a .npy file (no \\x93NUMPY magic)";
  int major = b[6];
  size_t headerLen, headerAt;
  if (major == 1) {
    headerLen = le16(b + 8);
    headerAt = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return "is a truncated .npy file";
    headerLen = le32(b + 8);
    headerAt = 12;
  } else {
    return "is a .npy file of format version " + std::to_string(major) + ", not 1, 2 or 3";
  }
  if (headerAt + headerLen > bytes.size())
    return "is a truncated .npy file (its header runs past the end)";
  std::string header = bytes.substr(headerAt, headerLen);
  std::string descr = headerValue(header, "descr"), order = headerValue(header, "fortran_order"),
              shapeText_ = headerValue(header, "shape");
  if (descr.size() < 2 || (descr.front() != '\'' && descr.front() != '"'))
    return "has a .npy header without a dtype ('descr')";
  descr = descr.substr(1, descr.size() - 2);
  int itemsize = 0;
  if (descr == "<f4")
    itemsize = 4;
  else if (descr == "<f2")
    itemsize = 2;
  else if (descr == "<f8")
    itemsize = 8;
  else
    return "holds dtype '" + descr + "'; embeddings must be little-endian float32 ('<f4'), float16 or float64";
  if (shapeText_.size() < 2 || shapeText_.front() != '(' || shapeText_.back() != ')')
    return "has a .npy header without a shape";
  shape.clear();
  std::stringstream dims(shapeText_.substr(1, shapeText_.size() - 2));
  std::string dim;
  while (std::getline(dims, dim, ',')) {
    size_t a = dim.find_first_not_of(" \t"), z = dim.find_last_not_of(" \t");
    if (a == std::string::npos)
      continue; // the trailing comma of a 1-tuple
    dim = dim.substr(a, z - a + 1);
    if (dim.empty() || dim.size() > 18 || dim.find_first_not_of("0123456789") != std::string::npos)
      return "has a .npy shape that is not a tuple of sizes: " + shapeText_;
    shape.push_back(std::stoll(dim));
  }
  if (shape.empty())
    return "holds a scalar, not rows of embeddings";
  int64_t n = elements(shape);
  if (n < 0)
    return "has a .npy shape too large: " + shapeText_;
  if (order == "True") {
    int big = 0;
    for (int64_t d : shape)
      big += d > 1;
    if (big > 1)
      return "is in Fortran order; save it C-ordered (numpy.ascontiguousarray)";
  } else if (order != "False") {
    return "has a .npy header without 'fortran_order'";
  }
  size_t dataAt = headerAt + headerLen;
  if ((uint64_t)n > (bytes.size() - dataAt) / (uint64_t)itemsize)
    return "is truncated: shape " + shapeText(shape) + " needs " + std::to_string(n * itemsize) +
           " bytes of data, it has " + std::to_string(bytes.size() - dataAt);
  values.resize((size_t)n);
  const uint8_t *d = b + dataAt;
  for (int64_t i = 0; i < n; ++i) {
    if (itemsize == 4)
      values[i] = std::bit_cast<float>(le32(d + 4 * i));
    else if (itemsize == 2)
      values[i] = f16ToFloat(le16(d + 2 * i));
    else
      values[i] = (float)std::bit_cast<double>(le64(d + 8 * i));
  }
  return "";
}

std::string readSafetensors(const std::string &path, const std::string &tensor, std::vector<float> &values,
                            std::vector<int64_t> &shape) {
  try {
    SafetensorsFile file(path);
    std::vector<std::string> names = file.names();
    std::string name = tensor;
    auto list = [&] {
      std::string s;
      for (size_t i = 0; i < names.size() && i < 8; ++i)
        s += (i ? ", " : "") + ("'" + names[i] + "'");
      return s + (names.size() > 8 ? ", ..." : "");
    };
    if (name.empty()) {
      if (names.size() != 1)
        return "holds " + std::to_string(names.size()) + " tensors" + (names.empty() ? "" : " (" + list() + ")") +
               "; name one with \"tensor\"";
      name = names[0];
    } else if (!file.has(name)) {
      return "has no tensor '" + name + "' (it holds " + list() + ")";
    }
    const TensorView &t = file.get(name);
    shape = t.shape;
    int64_t n = t.numel();
    if (shape.empty())
      return "tensor '" + name + "' is a scalar, not rows of embeddings";
    values.resize((size_t)n);
    if (t.dtype == StDType::F32) {
      std::memcpy(values.data(), t.data, (size_t)n * 4);
    } else if (t.dtype == StDType::BF16 || t.dtype == StDType::F16) {
      for (int64_t i = 0; i < n; ++i) {
        uint16_t v;
        std::memcpy(&v, t.data + 2 * i, 2);
        values[i] = t.dtype == StDType::BF16 ? bf16ToFloat(v) : f16ToFloat(v);
      }
    } else {
      return "tensor '" + name + "' is " + t.dtype_name + "; embeddings must be F32, BF16 or F16";
    }
    return "";
  } catch (const std::exception &e) {
    return std::string("cannot be read as safetensors: ") + e.what();
  }
}

} // namespace

std::string readEmbeddingFile(const std::string &path, const std::string &tensor, std::vector<float> &values,
                              int64_t &columns) {
  std::vector<int64_t> shape;
  std::string bad = endsWith(path, ".safetensors") ? readSafetensors(path, tensor, values, shape)
                                                   : readNpy(path, values, shape);
  if (!bad.empty())
    return bad;
  columns = shape.size() >= 2 ? shape.back() : 0;
  return "";
}

std::vector<std::pair<int64_t, int64_t>> placeholderRuns(const std::vector<int32_t> &prompt, int64_t id) {
  std::vector<std::pair<int64_t, int64_t>> runs;
  for (size_t i = 0; i < prompt.size(); ++i) {
    if (prompt[i] != id)
      continue;
    size_t end = i;
    while (end < prompt.size() && prompt[end] == id)
      ++end;
    runs.push_back({(int64_t)i, (int64_t)(end - i)});
    i = end - 1;
  }
  return runs;
}

std::string resolveEmbeddings(const std::vector<PendingSegment> &pending, int64_t placeholder,
                              const std::vector<int32_t> &prompt, int64_t width, std::vector<EmbeddingSegment> &out) {
  out.clear();
  if (!pending.empty() && width <= 0)
    return "\"embeds\" given, but this model takes no embeddings (only a multimodal model's decoder does)";
  std::vector<std::pair<int64_t, int64_t>> runs;
  if (placeholder >= 0) {
    runs = placeholderRuns(prompt, placeholder);
    if (runs.size() != pending.size()) {
      std::string at;
      for (size_t r = 0; r < runs.size() && r < 8; ++r)
        at += (r ? ", " : "") + std::to_string(runs[r].first);
      return "\"embeds\" has " + std::to_string(pending.size()) + " segment" + (pending.size() == 1 ? "" : "s") +
             " but the prompt has " + std::to_string(runs.size()) + " run" + (runs.size() == 1 ? "" : "s") +
             " of \"placeholder\" " + std::to_string(placeholder) +
             (runs.empty() ? "" : " (at rows " + at + (runs.size() > 8 ? ", ..." : "") + ")") +
             ": one segment a run, in order";
    }
  }
  for (size_t i = 0; i < pending.size(); ++i) {
    const PendingSegment &p = pending[i];
    const std::string where = "embeds[" + std::to_string(i) + "]";
    std::shared_ptr<const std::vector<float>> values = p.values;
    if (!p.file.empty()) {
      auto loaded = std::make_shared<std::vector<float>>();
      int64_t columns = 0;
      std::string bad;
      try {
        bad = readEmbeddingFile(p.file, p.tensor, *loaded, columns);
      } catch (const std::bad_alloc &) {
        bad = "is too large to read";
      }
      if (!bad.empty())
        return keyName(where + ".file") + " '" + p.file + "' " + bad;
      if (columns != 0 && columns != width)
        return keyName(where + ".file") + " '" + p.file + "' has rows of " + std::to_string(columns) +
               " values; the model's embedding width is " + std::to_string(width);
      values = std::move(loaded);
    }
    int64_t n = values ? (int64_t)values->size() : 0;
    if (n == 0)
      return keyName(where) + " holds no values";
    if (n % width != 0)
      return keyName(where) + " holds " + std::to_string(n) +
             " values, not a whole number of rows of the model's embedding width " + std::to_string(width);
    EmbeddingSegment seg;
    seg.rows = n / width;
    seg.start = p.start;
    if (placeholder >= 0) {
      auto [start, length] = runs[i];
      if (seg.rows != length)
        return keyName(where) + " has " + std::to_string(seg.rows) + " rows (" + std::to_string(n) +
               " values of width " + std::to_string(width) + ") but run " + std::to_string(i) + " of \"placeholder\" " +
               std::to_string(placeholder) + " (prompt rows " + std::to_string(start) + " to " +
               std::to_string(start + length) + ") has " + std::to_string(length);
      seg.start = start;
    }
    seg.data = std::move(values);
    for (int c = 0; c < 3; ++c)
      seg.grid[c] = p.grid[c];
    seg.modality = p.modality;
    out.push_back(std::move(seg));
  }
  return "";
}

} // namespace cbc::rt
