#include "runtime/safetensors.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cbc::rt {

namespace fs = std::filesystem;
using nlohmann::json;

float bf16ToFloat(uint16_t v) {
  uint32_t bits = (uint32_t)v << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

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
  size_t bytes;
};

DTypeInfo parseDtype(const std::string &s) {
  if (s == "F32") return {StDType::F32, 4};
  if (s == "F16") return {StDType::F16, 2};
  if (s == "BF16") return {StDType::BF16, 2};
  if (s == "U8") return {StDType::U8, 1};
  if (s == "I8") return {StDType::I8, 1};
  if (s == "I32") return {StDType::I32, 4};
  if (s == "I64") return {StDType::I64, 8};
  if (s == "F64") return {StDType::Other, 8};
  if (s == "F8_E4M3") return {StDType::F8E4M3, 1};
  if (s == "F8_E5M2") return {StDType::F8E5M2, 1};
  if (s == "BOOL") return {StDType::Other, 1};
  if (s == "I16" || s == "U16") return {StDType::Other, 2};
  return {StDType::Other, 0};
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
    throw WeightError("checkpoint file '" + path + "' has a bad header (its length " +
                      std::to_string(headerLen) + " exceeds the file)");
  json header;
  try {
    header = json::parse(reinterpret_cast<const char *>(base + 8),
                         reinterpret_cast<const char *>(base + 8 + headerLen));
  } catch (const json::exception &e) {
    throw WeightError("checkpoint file '" + path + "' has a bad header: " + e.what());
  }
  if (!header.is_object())
    throw WeightError("checkpoint file '" + path + "' has a bad header (not an object)");
  const uint8_t *dataStart = base + 8 + headerLen;
  size_t dataSize = size_ - 8 - headerLen;
  for (auto &[name, info] : header.items()) {
    if (name == "__metadata__")
      continue;
    auto bad = [&](const std::string &why) {
      return WeightError("checkpoint file '" + path + "': tensor '" + name + "' " + why);
    };
    try {
      if (!info.is_object() || !info.contains("dtype") || !info.contains("shape") ||
          !info.contains("data_offsets"))
        throw bad("has a malformed header entry");
      TensorView t;
      t.file = path;
      t.dtype_name = info["dtype"].get<std::string>();
      DTypeInfo d = parseDtype(t.dtype_name);
      t.dtype = d.dtype;
      for (const auto &dim : info["shape"]) {
        int64_t v = dim.get<int64_t>();
        if (v < 0)
          throw bad("has a negative dimension");
        t.shape.push_back(v);
      }
      auto offs = info["data_offsets"];
      if (!offs.is_array() || offs.size() != 2)
        throw bad("has malformed data_offsets");
      uint64_t begin = offs[0].get<uint64_t>(), end = offs[1].get<uint64_t>();
      if (begin > end || end > dataSize)
        throw bad("extends past the end of the file (truncated?)");
      if (d.bytes && (uint64_t)t.numel() * d.bytes != end - begin)
        throw bad("has " + std::to_string(end - begin) + " bytes but its shape needs " +
                  std::to_string(t.numel() * d.bytes));
      t.data = dataStart + begin;
      t.bytes = end - begin;
      tensors_.emplace(name, std::move(t));
    } catch (const json::exception &e) {
      throw bad(std::string("has a malformed header entry: ") + e.what());
    }
  }
  unmapOnThrow.armed = false;
}

SafetensorsFile::~SafetensorsFile() {
  if (map_)
    munmap(map_, size_);
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

Checkpoint::Checkpoint(const std::string &path) {
  std::vector<std::string> files;
  if (fs::is_regular_file(path)) {
    files.push_back(path);
  } else if (fs::is_directory(path)) {
    fs::path dir(path);
    if (fs::exists(dir / "model.safetensors.index.json")) {
      std::ifstream in(dir / "model.safetensors.index.json");
      json index;
      try {
        index = json::parse(in);
      } catch (const json::exception &e) {
        throw WeightError("checkpoint index '" + (dir / "model.safetensors.index.json").string() +
                          "' is malformed: " + e.what());
      }
      if (!index.contains("weight_map") || !index["weight_map"].is_object())
        throw WeightError("checkpoint index '" + (dir / "model.safetensors.index.json").string() +
                          "' has no weight_map");
      std::map<std::string, bool> seen;
      for (auto &[tensor, file] : index["weight_map"].items())
        if (file.is_string() && !seen[file.get<std::string>()]) {
          seen[file.get<std::string>()] = true;
          files.push_back((dir / file.get<std::string>()).string());
        }
    } else if (fs::exists(dir / "model.safetensors")) {
      files.push_back((dir / "model.safetensors").string());
    } else {
      throw WeightError("checkpoint directory '" + path +
                        "' has neither model.safetensors nor model.safetensors.index.json");
    }
  } else {
    throw WeightError("checkpoint '" + path + "' does not exist");
  }
  for (const std::string &f : files) {
    files_.push_back(std::make_unique<SafetensorsFile>(f));
    for (const std::string &n : files_.back()->names())
      index_.emplace(n, files_.size() - 1);
  }
}

bool Checkpoint::has(const std::string &name) const { return index_.count(name) != 0; }

const TensorView &Checkpoint::get(const std::string &name) const {
  auto it = index_.find(name);
  if (it == index_.end())
    throw WeightError("checkpoint is missing tensor '" + name + "'");
  return files_[it->second]->get(name);
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
