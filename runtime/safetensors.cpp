#include "runtime/safetensors.h"

#include <nlohmann/json.hpp>

#include "runtime/schema/limits.h"

#include <cstring>
#include <fcntl.h>
#include <functional>
#include <set>
#include <filesystem>
#include <fstream>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cbc::rt {

namespace fs = std::filesystem;
using nlohmann::json;

// safetensors' own bound on the header (its MAX_HEADER_SIZE).
constexpr uint64_t kMaxSafetensorsHeader = 100'000'000;


uint16_t floatToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffff) > 0x7f800000) // NaN stays NaN
    return (uint16_t)((bits >> 16) | 0x40);
  uint32_t rounding = 0x7fff + ((bits >> 16) & 1); // round to nearest even
  return (uint16_t)((bits + rounding) >> 16);
}

float f16ToFloat(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else { // subnormal: renormalise
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) {
        mant <<= 1;
        --exp;
      }
      bits = sign | (exp << 23) | ((mant & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000 | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

namespace {

struct DTypeInfo {
  StDType dtype;
  size_t bytes; // 0: not a safetensors dtype
};

DTypeInfo parseDtype(const std::string &s) {
  if (s == "F32") return {StDType::F32, 4};
  if (s == "F16") return {StDType::F16, 2};
  if (s == "BF16") return {StDType::BF16, 2};
  if (s == "U8") return {StDType::U8, 1};
  if (s == "I8") return {StDType::I8, 1};
  if (s == "I32") return {StDType::I32, 4};
  if (s == "I64") return {StDType::I64, 8};
  if (s == "F64" || s == "U64") return {StDType::Other, 8};
  if (s == "U32") return {StDType::Other, 4};
  if (s == "F8_E4M3") return {StDType::F8E4M3, 1};
  if (s == "F8_E5M2") return {StDType::F8E5M2, 1};
  if (s == "BOOL") return {StDType::Other, 1};
  if (s == "I16" || s == "U16") return {StDType::Other, 2};
  return {StDType::Other, 0};
}

// A non-negative JSON integer; a float (2.5, 1e30), a negative or a non-number is refused, so
// no value is cast out of range.
bool jsonCount(const json &v, uint64_t &out) {
  if (v.is_number_unsigned()) {
    out = v.get<uint64_t>();
    return true;
  }
  if (v.is_number_integer() && v.get<int64_t>() >= 0) {
    out = (uint64_t)v.get<int64_t>();
    return true;
  }
  return false;
}

std::string brief(const json &v) {
  std::string s = v.dump();
  return s.size() > 80 ? s.substr(0, 77) + "..." : s;
}

// The header, refusing a key written twice (the JSON parser would keep one silently).
json parseHeader(const char *begin, const char *end, const std::string &path) {
  std::set<std::string> seen;
  std::string duplicate;
  json::parser_callback_t noteKeys = [&](int depth, json::parse_event_t event, json &parsed) {
    if (event == json::parse_event_t::key && depth == 1 && parsed.is_string() &&
        !seen.insert(parsed.get<std::string>()).second && duplicate.empty())
      duplicate = parsed.get<std::string>();
    return true;
  };
  json header;
  try {
    header = json::parse(begin, end, noteKeys);
  } catch (const json::exception &e) {
    throw WeightError("checkpoint file '" + path + "' has a bad header: " + e.what());
  }
  if (!header.is_object())
    throw WeightError("checkpoint file '" + path + "' has a bad header (not an object)");
  if (!duplicate.empty())
    throw WeightError("checkpoint file '" + path + "': tensor '" + duplicate + "' is listed twice in the header");
  return header;
}

// One header entry, checked against the data section of `dataSize` bytes.
TensorView parseEntry(const json &info, const uint8_t *dataStart, uint64_t dataSize,
                      const std::function<WeightError(const std::string &)> &bad) {
  if (!info.is_object() || !info.contains("dtype") || !info.contains("shape") || !info.contains("data_offsets"))
    throw bad("has a malformed header entry (it needs dtype, shape and data_offsets)");
  TensorView t;
  if (!info["dtype"].is_string())
    throw bad("has a dtype that is not a string");
  t.dtype_name = info["dtype"].get<std::string>();
  DTypeInfo d = parseDtype(t.dtype_name);
  if (!d.bytes)
    throw bad("has unknown dtype '" + t.dtype_name + "'");
  t.dtype = d.dtype;
  const json &shape = info["shape"];
  if (!shape.is_array())
    throw bad("has a shape that is not a list");
  uint64_t numel = 1;
  for (const json &dim : shape) {
    uint64_t v;
    if (!jsonCount(dim, v))
      throw bad("has dimension " + brief(dim) + "; dimensions are non-negative integers");
    if (v > (uint64_t)limits::kMaxTensorElems || __builtin_mul_overflow(numel, v, &numel) ||
        numel > (uint64_t)limits::kMaxTensorElems)
      throw bad("has shape " + brief(shape) + ", more than the " + std::to_string(limits::kMaxTensorElems) +
                " elements cbc reads in one tensor");
    t.shape.push_back((int64_t)v);
  }
  const json &offs = info["data_offsets"];
  uint64_t begin, end;
  if (!offs.is_array() || offs.size() != 2 || !jsonCount(offs[0], begin) || !jsonCount(offs[1], end))
    throw bad("has malformed data_offsets (two non-negative integers)");
  if (begin > end)
    throw bad("has data_offsets that run backwards (" + std::to_string(begin) + " > " + std::to_string(end) + ")");
  if (end > dataSize)
    throw bad("extends past the end of the file (truncated?): it ends at byte " + std::to_string(end) +
              " of a data section of " + std::to_string(dataSize));
  if (numel * d.bytes != end - begin) // numel <= 2^40, so no overflow
    throw bad("has " + std::to_string(end - begin) + " bytes but its shape needs " +
              std::to_string(numel * d.bytes));
  t.data = dataStart + begin;
  t.bytes = end - begin;
  return t;
}

} // namespace

SafetensorsFile::SafetensorsFile(const std::string &path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0)
    throw WeightError("cannot open checkpoint file '" + path + "'");
  struct stat st;
  if (fstat(fd, &st) != 0) {
    ::close(fd);
    throw WeightError("cannot stat checkpoint file '" + path + "'");
  }
  size_ = (size_t)st.st_size;
  if (size_ < 8) {
    ::close(fd);
    throw WeightError("checkpoint file '" + path + "' is truncated (no header)");
  }
  map_ = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    throw WeightError("cannot map checkpoint file '" + path + "'");
  }
  // A constructor that throws runs no destructor: unmap here, or every rejected file stays mapped.
  struct UnmapOnThrow {
    void *&map;
    size_t size;
    bool armed = true;
    ~UnmapOnThrow() {
      if (armed) {
        munmap(map, size);
        map = nullptr;
      }
    }
  } unmapOnThrow{map_, size_};
  const uint8_t *base = static_cast<const uint8_t *>(map_);
  uint64_t headerLen;
  std::memcpy(&headerLen, base, 8);
  if (headerLen > size_ - 8)
    throw WeightError("checkpoint file '" + path + "' has a bad header (its length " + std::to_string(headerLen) +
                      " exceeds the file of " + std::to_string(size_) + " bytes; is it a safetensors file?)");
  if (headerLen > kMaxSafetensorsHeader)
    throw WeightError("checkpoint file '" + path + "' has a bad header (its length " + std::to_string(headerLen) +
                      " exceeds the " + std::to_string(kMaxSafetensorsHeader) + " bytes safetensors allows)");
  json header = parseHeader(reinterpret_cast<const char *>(base + 8),
                            reinterpret_cast<const char *>(base + 8 + headerLen), path);
  const uint8_t *dataStart = base + 8 + headerLen;
  uint64_t dataSize = size_ - 8 - headerLen;
  for (auto &[name, info] : header.items()) {
    if (name == "__metadata__")
      continue;
    auto bad = [&](const std::string &why) {
      return WeightError("checkpoint file '" + path + "': tensor '" + name + "' " + why);
    };
    TensorView t = parseEntry(info, dataStart, dataSize, bad);
    t.file = path;
    tensors_.emplace(name, std::move(t));
  }
  unmapOnThrow.armed = false;
}

SafetensorsFile::~SafetensorsFile() {
  if (map_)
    munmap(map_, size_);
}

void SafetensorsFile::releasePages() const {
  // A private read-only file mapping: MADV_DONTNEED unmaps the pages and a later read refaults
  // them from the file, unchanged. Failure only means the pages stay resident.
  if (map_)
    madvise(map_, size_, MADV_DONTNEED);
}

const TensorView &SafetensorsFile::get(const std::string &name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end())
    throw WeightError("tensor '" + name + "' is not in '" + path_ + "'");
  return it->second;
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  for (auto &[n, _] : tensors_)
    out.push_back(n);
  return out;
}

namespace {

// The shards an index's weight_map names, each once, beside the index.
std::vector<std::string> indexShards(const fs::path &indexPath, const json &index) {
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
    throw WeightError("checkpoint index '" + indexPath.string() + "' has no weight_map");
  std::vector<std::string> files;
  std::set<std::string> seen;
  for (auto &[tensor, file] : index["weight_map"].items()) {
    if (!file.is_string())
      throw WeightError("checkpoint index '" + indexPath.string() + "' maps tensor '" + tensor +
                        "' to " + brief(file) + ", not a file name");
    if (seen.insert(file.get<std::string>()).second)
      files.push_back((indexPath.parent_path() / file.get<std::string>()).string());
  }
  return files;
}

json readJsonFile(const fs::path &path, const char *what) {
  std::ifstream in(path);
  if (!in)
    throw WeightError(std::string("cannot read ") + what + " '" + path.string() + "'");
  try {
    return json::parse(in);
  } catch (const json::exception &e) {
    throw WeightError(std::string(what) + " '" + path.string() + "' is malformed: " + e.what());
  }
}

// The safetensors files of a directory: the index's shards, else model.safetensors.
std::vector<std::string> directoryFiles(const fs::path &dir, const std::string &shownAs) {
  fs::path index = dir / "model.safetensors.index.json";
  if (fs::exists(index))
    return indexShards(index, readJsonFile(index, "checkpoint index"));
  if (fs::exists(dir / "model.safetensors"))
    return {(dir / "model.safetensors").string()};
  throw WeightError("checkpoint directory '" + shownAs +
                    "' has neither model.safetensors nor model.safetensors.index.json");
}

// What --weights may name: a directory, one .safetensors file, an index (its shards), or the
// config.json beside the weights (its directory).
std::vector<std::string> checkpointFiles(const std::string &path) {
  fs::path p(path);
  if (fs::is_directory(p))
    return directoryFiles(p, path);
  if (!fs::is_regular_file(p))
    throw WeightError("checkpoint '" + path + "' does not exist");
  if (p.extension() != ".json")
    return {path};
  json j = readJsonFile(p, "checkpoint index");
  if (j.is_object() && j.contains("weight_map"))
    return indexShards(p, j);
  fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  try {
    return directoryFiles(dir, dir.string());
  } catch (const WeightError &e) {
    throw WeightError("'" + path + "' is a JSON file without a weight_map, so cbc looks for the weights beside it: " +
                      e.what());
  }
}

} // namespace

Checkpoint::Checkpoint(const std::string &path) {
  for (const std::string &f : checkpointFiles(path)) {
    files_.push_back(std::make_unique<SafetensorsFile>(f));
    for (const std::string &n : files_.back()->names())
      if (!index_.emplace(n, files_.size() - 1).second)
        throw WeightError("tensor '" + n + "' is in both '" + files_[index_[n]]->path() + "' and '" + f + "'");
  }
}

bool Checkpoint::has(const std::string &name) const { return index_.count(name) != 0; }

const TensorView &Checkpoint::get(const std::string &name) const {
  auto it = index_.find(name);
  if (it == index_.end())
    throw WeightError("checkpoint is missing tensor '" + name + "'");
  return files_[it->second]->get(name);
}

void Checkpoint::releasePages() const {
  for (const auto &f : files_)
    f->releasePages();
}

std::vector<std::string> Checkpoint::names() const {
  std::vector<std::string> out;
  for (auto &[n, _] : index_)
    out.push_back(n);
  return out;
}

void writeSafetensors(const std::string &path,
                      const std::vector<std::pair<std::string, TensorView>> &tensors) {
  json header = json::object();
  uint64_t offset = 0;
  for (const auto &[name, t] : tensors) {
    header[name] = {{"dtype", t.dtype_name}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes}}};
    offset += t.bytes;
  }
  std::string h = header.dump();
  while ((h.size() + 8) % 8)
    h += ' ';
  std::ofstream out(path, std::ios::binary);
  if (!out)
    throw WeightError("cannot write '" + path + "'");
  uint64_t len = h.size();
  out.write(reinterpret_cast<const char *>(&len), 8);
  out.write(h.data(), (std::streamsize)h.size());
  for (const auto &[name, t] : tensors)
    out.write(reinterpret_cast<const char *>(t.data), (std::streamsize)t.bytes);
}

} // namespace cbc::rt
