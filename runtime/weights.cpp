#include "runtime/weights.h"

#include "runtime/checkpoint_config.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <limits>
#include <cstring>
#include <thread>

namespace cbc::rt {

namespace {

std::string shapeText(const std::vector<int64_t> &s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// The name a checkpoint actually uses: the artefact's name, else the first alias spelling
// (its first occurrence of `from` replaced by `to`) that the checkpoint has.
std::string resolveName(const Checkpoint &ckpt, const std::string &name, const ModelMeta &meta) {
  if (ckpt.has(name))
    return name;
  for (const auto &[from, to] : meta.weight_aliases) {
    size_t at = name.find(from);
    if (at == std::string::npos)
      continue;
    std::string alt = name.substr(0, at) + to + name.substr(at + from.size());
    if (ckpt.has(alt))
      return alt;
  }
  return name;
}

const float kFp4Values[16] = {+0.0f, +0.5f, +1.0f, +1.5f, +2.0f, +3.0f, +4.0f, +6.0f,
                              -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

// MXFP4: blocks [E, R, G, 16] bytes (two FP4 values each) and scales [E, R, G] (biased
// exponents), 32 values per scale. The dequantised tensor is [E, G*32, R].
HostTensor dequantMxfp4(const TensorView &blocks, const TensorView &scales, const std::string &name) {
  if (blocks.dtype != StDType::U8 || scales.dtype != StDType::U8 || blocks.shape.size() != 4 ||
      scales.shape.size() != 3 || blocks.shape[3] != 16 ||
      !std::equal(scales.shape.begin(), scales.shape.end(), blocks.shape.begin()))
    throw WeightError("tensor '" + name + "': MXFP4 blocks/scales have unexpected shapes or dtypes");
  int64_t E = blocks.shape[0], R = blocks.shape[1], G = blocks.shape[2];
  int64_t C = G * 32;
  HostTensor out(Storage::F32, {E, C, R});
  float *o = out.f32().data();
  for (int64_t e = 0; e < E; ++e)
    for (int64_t r = 0; r < R; ++r)
      for (int64_t g = 0; g < G; ++g) {
        int exp = (int)scales.data[(e * R + r) * G + g] - 127;
        const uint8_t *b = blocks.data + ((e * R + r) * G + g) * 16;
        for (int i = 0; i < 16; ++i) {
          int64_t c = g * 32 + 2 * i;
          o[(e * C + c) * R + r] = std::ldexp(kFp4Values[b[i] & 0x0f], exp);
          o[(e * C + c + 1) * R + r] = std::ldexp(kFp4Values[b[i] >> 4], exp);
        }
      }
  return out;
}

void transposeLastTwo(HostTensor &t) {
  std::vector<int64_t> shape = t.shape();
  size_t rank = shape.size();
  int64_t rows = shape[rank - 2], cols = shape[rank - 1];
  int64_t batch = rows * cols ? t.numel() / (rows * cols) : 0;
  std::swap(shape[rank - 2], shape[rank - 1]);
  HostTensor out(Storage::F32, shape);
  const float *in = t.f32().data();
  float *o = out.f32().data();
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        o[(b * cols + j) * rows + i] = in[(b * rows + i) * cols + j];
  t = std::move(out);
}

// splitmix64: the random weights depend only on the seed and the weight's name.
uint64_t splitmix(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

HostTensor randomTensor(const WeightEntry &w, uint64_t seed) {
  // The whole weight, whatever slice this rank keeps: every --tp draws the same model.
  std::vector<int64_t> whole = w.wholeShape();
  HostTensor t(Storage::F32, whole);
  float *data = t.f32().data();
  uint64_t nameHash = seed;
  for (char c : w.name)
    nameHash = nameHash * 1099511628211ull ^ (uint8_t)c;
  bool isNorm = w.norm_scale;
  // Uniform with variance 1/fan_in keeps activations and logits well spread.
  double scale = isNorm ? 0.1 : std::sqrt(3.0 / (double)std::max<int64_t>(1, whole.back()));
  // Chunks with their own streams, so large tensors fill in parallel with the same values.
  const int64_t chunk = 1 << 20;
  int64_t chunks = (t.numel() + chunk - 1) / chunk;
  auto fill = [&](int64_t c) {
    uint64_t state = nameHash ^ (0x9e3779b97f4a7c15ull * (uint64_t)(c + 1));
    int64_t end = std::min<int64_t>(t.numel(), (c + 1) * chunk);
    for (int64_t i = c * chunk; i < end; ++i) {
      double u = (double)(splitmix(state) >> 11) / (double)(1ull << 53) * 2 - 1;
      // bf16 values, as a bf16 checkpoint's: every backend holds them as it would a checkpoint's
      // (the CPU backend's matrices in bf16, exactly), so a large model fits as it would.
      data[i] = bf16ToFloat(floatToBf16((float)((isNorm ? 1.0 : 0.0) + u * scale)));
    }
  };
  int threads = (int)std::min<int64_t>(chunks, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int th = 1; th < threads; ++th)
    pool.emplace_back([&, th] {
      for (int64_t c = th; c < chunks; c += threads)
        fill(c);
    });
  for (int64_t c = 0; c < chunks; c += threads)
    fill(c);
  for (auto &p : pool)
    p.join();
  return t;
}

} // namespace

// The MXFP4 tensor a [blocks, scales] pair encodes. Blocks [E, R, G, 16] hold R output rows
// of G*32 inputs each; dequantised they are [E, G*32, R], the layout an unquantised
// checkpoint keeps the same weight in (transformers' convert_moe_packed_tensors).
HostTensor readMxfp4(const Checkpoint &ckpt, const std::vector<std::string> &pair, const ModelMeta &meta) {
  std::string blocks = resolveName(ckpt, pair[0], meta), scales = resolveName(ckpt, pair[1], meta);
  for (const auto &[name, requested] : {std::pair{blocks, pair[0]}, std::pair{scales, pair[1]}})
    if (!ckpt.has(name))
      throw WeightError("checkpoint is missing tensor '" + requested + "'");
  return dequantMxfp4(ckpt.get(blocks), ckpt.get(scales), blocks);
}

namespace {

// A stored tensor as float32: F32, BF16 and F16 convert exactly.
HostTensor toFloat(const TensorView &v, const std::string &name) {
  HostTensor t(Storage::F32, v.shape);
  int64_t n = v.numel();
  float *out = t.f32().data();
  switch (v.dtype) {
  case StDType::F32:
    if (n)
      std::memcpy(out, v.data, n * 4);
    break;
  case StDType::BF16:
    for (int64_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, v.data + 2 * i, 2);
      out[i] = bf16ToFloat(h);
    }
    break;
  case StDType::F16:
    for (int64_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, v.data + 2 * i, 2);
      out[i] = f16ToFloat(h);
    }
    break;
  case StDType::I32:
  case StDType::I64: // integer tables (a hash router's expert ids): exact in fp32 below 2^24
    for (int64_t i = 0; i < n; ++i) {
      int64_t x = 0;
      if (v.dtype == StDType::I64) {
        std::memcpy(&x, v.data + 8 * i, 8);
      } else {
        int32_t y;
        std::memcpy(&y, v.data + 4 * i, 4);
        x = y;
      }
      if (x <= -(1 << 24) || x >= (1 << 24))
        throw WeightError("tensor '" + name + "' in '" + v.file + "' holds the integer " + std::to_string(x) +
                          ", which cbc cannot keep exactly as a float (|x| < 2^24)");
      out[i] = (float)x;
    }
    break;
  default:
    throw WeightError("tensor '" + name + "' in '" + v.file + "' has dtype " + v.dtype_name +
                      "; cbc reads F32, BF16, F16, integer I32/I64 tables, block-scaled F8_E4M3 and, in ternary "
                      "models, packed ternary U8");
  }
  return t;
}

// A tensor stored F8_E4M3, with the float block scales the checkpoint keeps beside it as
// <name>_scale_inv (X.weight -> X.weight_scale_inv), in the artefact's block size.
HostTensor readFp8(const Checkpoint &ckpt, const std::string &name, const TensorView &q, const ModelMeta &meta) {
  if (meta.quantization != "fp8")
    throw WeightError("tensor '" + name + "' in '" + q.file +
                      "' is stored F8_E4M3, but the model was compiled without an fp8 quantization_config "
                      "(compile the checkpoint's own config.json)");
  std::string scaleName = name + "_scale_inv";
  if (!ckpt.has(scaleName))
    throw WeightError("checkpoint is missing tensor '" + scaleName + "', the block scales of F8_E4M3 tensor '" +
                      name + "'");
  const TensorView &s = ckpt.get(scaleName);
  if (s.dtype != StDType::F32 && s.dtype != StDType::BF16 && s.dtype != StDType::F16)
    throw WeightError("tensor '" + scaleName + "' (the block scales of '" + name + "') has dtype " + s.dtype_name +
                      "; block scales must be F32, BF16 or F16");
  return dequantFp8Blocks(q, toFloat(s, scaleName), meta.fp8_block_rows, meta.fp8_block_cols, name, scaleName);
}

// A packed ternary weight (BitLinear's): U8 [R / 4, C], four ternary codes per byte (bits 2i..2i+1 of row r hold
// row i * R / 4 + r, as code + 1), and its one-element <name>_scale; w = code / scale.
HostTensor readTernary(const Checkpoint &ckpt, const std::string &name, const TensorView &q) {
  std::string scaleName = name + "_scale";
  if (q.shape.size() != 2)
    throw WeightError("packed ternary tensor '" + name + "' has shape " + shapeText(q.shape) +
                      "; BitLinear weights are [rows / 4, cols]");
  if (!ckpt.has(scaleName))
    throw WeightError("checkpoint is missing tensor '" + scaleName + "', the scale of packed ternary tensor '" +
                      name + "'");
  HostTensor s = toFloat(ckpt.get(scaleName), scaleName);
  float scale = s.numel() == 1 ? s.f32()[0] : 0.0f;
  if (s.numel() != 1 || !(scale > 0.0f) || !std::isfinite(scale))
    throw WeightError("tensor '" + scaleName + "' (the scale of '" + name +
                      "') must hold one positive finite value");
  int64_t R4 = q.shape[0], C = q.shape[1];
  HostTensor out(Storage::F32, {4 * R4, C});
  float *o = out.f32().data();
  for (int i = 0; i < 4; ++i)
    for (int64_t r = 0; r < R4; ++r)
      for (int64_t c = 0; c < C; ++c) {
        int code = (q.data[r * C + c] >> (2 * i)) & 3;
        if (code == 3)
          throw WeightError("packed ternary tensor '" + name + "' holds the code 3 (row " + std::to_string(r) +
                            ", column " + std::to_string(c) + "), which is not a ternary value");
        o[(i * R4 + r) * C + c] = (float)(code - 1) / scale;
      }
  return out;
}

} // namespace

float fp8E4m3ToFloat(uint8_t v) {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int c = 0; c < 256; ++c) {
      int exp = (c >> 3) & 15, mant = c & 7;
      float mag = exp == 15 && mant == 7 ? std::numeric_limits<float>::quiet_NaN()
                  : exp == 0             ? std::ldexp((float)mant, -9) // subnormal: mant/8 * 2^-6
                                         : std::ldexp(8.0f + (float)mant, exp - 10); // 1.mant * 2^(exp-7)
      t[c] = c & 0x80 ? -mag : mag;
    }
    return t;
  }();
  return table[v];
}

HostTensor dequantFp8Blocks(const TensorView &q, const HostTensor &scale, int64_t blockRows, int64_t blockCols,
                            const std::string &name, const std::string &scaleName) {
  size_t rank = q.shape.size();
  if (rank < 2)
    throw WeightError("F8_E4M3 tensor '" + name + "' has shape " + shapeText(q.shape) +
                      "; block-scaled FP8 needs at least 2 dimensions");
  if (blockRows <= 0 || blockCols <= 0)
    throw WeightError("F8_E4M3 tensor '" + name + "': the FP8 block size must be positive");
  int64_t R = q.shape[rank - 2], C = q.shape[rank - 1];
  std::vector<int64_t> want(q.shape.begin(), q.shape.end() - 2);
  int64_t SR = R ? (R - 1) / blockRows + 1 : 0, SC = C ? (C - 1) / blockCols + 1 : 0;
  want.push_back(SR);
  want.push_back(SC);
  if (scale.shape() != want)
    throw WeightError("tensor '" + scaleName + "' has shape " + shapeText(scale.shape()) + ", but F8_E4M3 tensor '" +
                      name + "' of shape " + shapeText(q.shape) + " in blocks of " + std::to_string(blockRows) +
                      "x" + std::to_string(blockCols) + " needs " + shapeText(want));
  HostTensor out(Storage::F32, q.shape);
  const float *s = scale.f32().data();
  float *o = out.f32().data();
  int64_t batch = R * C ? q.numel() / (R * C) : 0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < R; ++i) {
      const float *srow = s + (b * SR + i / blockRows) * SC;
      const uint8_t *qrow = q.data + (b * R + i) * C;
      float *orow = o + (b * R + i) * C;
      for (int64_t j = 0; j < C; ++j)
        orow[j] = fp8E4m3ToFloat(qrow[j]) * srow[j / blockCols];
    }
  return out;
}

HostTensor readTensorAsFloat(const Checkpoint &ckpt, const std::string &requested,
                             const ModelMeta &meta) {
  std::string name = resolveName(ckpt, requested, meta);
  if (!ckpt.has(name))
    throw WeightError("checkpoint is missing tensor '" + requested + "'");
  const TensorView &v = ckpt.get(name);
  if (v.dtype == StDType::F8E4M3)
    return readFp8(ckpt, name, v, meta);
  if (v.dtype == StDType::U8 && meta.quantization == "ternary")
    return readTernary(ckpt, name, v);
  if (v.dtype == StDType::F8E5M2)
    throw WeightError("tensor '" + name + "' in '" + v.file +
                      "' has dtype F8_E5M2; cbc dequantises FP8 stored as F8_E4M3 (e4m3fn) only");
  return toFloat(v, name);
}

namespace {

// Tensors of one format laid end to end in one of `shape` (as many elements as they hold).
HostTensor joined(const std::vector<HostTensor> &pieces, const std::vector<int64_t> &shape) {
  HostTensor out(pieces[0].format(), shape);
  uint8_t *dst = out.data();
  for (const HostTensor &p : pieces) {
    if (p.bytes())
      std::memcpy(dst, p.data(), p.bytes());
    dst += p.bytes();
  }
  return out;
}

// Rows viewed as [outer][segments...], reordered to [segments...][outer].
void regroupRows(HostTensor &t, const std::vector<int64_t> &regroup, const std::string &name) {
  int64_t outer = regroup[0], perGroup = 0;
  for (size_t i = 1; i < regroup.size(); ++i)
    perGroup += regroup[i];
  int64_t rows = t.shape().empty() ? 0 : t.shape()[0];
  if (rows < outer * perGroup)
    throw WeightError("weight '" + name + "' has " + std::to_string(rows) +
                      " rows, fewer than the regroup covers");
  int64_t rowElems = rows ? t.numel() / rows : 0;
  HostTensor out = t; // rows past the regrouped ones stay in place
  const float *in = t.f32().data();
  float *o = out.f32().data();
  int64_t dst = 0;
  for (size_t s = 1, segStart = 0; s < regroup.size(); segStart += regroup[s], ++s)
    for (int64_t g = 0; g < outer; ++g)
      for (int64_t r = 0; r < regroup[s]; ++r, ++dst)
        std::copy_n(in + (g * perGroup + segStart + r) * rowElems, rowElems, o + dst * rowElems);
  t = std::move(out);
}

// The part as [R, C] (leading dimensions flattened), cut into n blocks of R / n rows placed
// along the diagonal of a zero [R, n * C] matrix.
void blockDiagonal(HostTensor &t, int64_t n, const std::string &name) {
  if (t.shape().empty())
    throw WeightError("weight '" + name + "' has no dimensions to place on a diagonal");
  int64_t C = t.shape().back(), R = C ? t.numel() / C : 0;
  if (R % n != 0)
    throw WeightError("weight '" + name + "' has " + std::to_string(R) + " rows, which " +
                      std::to_string(n) + " diagonal blocks cannot share");
  int64_t per = R / n;
  HostTensor out(Storage::F32, {R, n * C}); // zero-filled
  const float *in = t.f32().data();
  float *o = out.f32().data();
  for (int64_t r = 0; r < R; ++r)
    std::copy_n(in + r * C, C, o + r * n * C + (r / per) * C);
  t = std::move(out);
}

// Runs of leading-dimension rows multiplied by their factors: [rows, factor, ...].
void scaleRows(HostTensor &t, const std::vector<double> &scales, const std::string &name) {
  int64_t rows = t.shape().empty() ? 0 : t.shape()[0], covered = 0;
  for (size_t i = 0; i + 1 < scales.size(); i += 2)
    covered += (int64_t)scales[i];
  if (covered != rows)
    throw WeightError("weight '" + name + "' has " + std::to_string(rows) + " rows but its row_scales cover " +
                      std::to_string(covered));
  int64_t rowElems = rows ? t.numel() / rows : 0, row = 0;
  float *data = t.f32().data();
  for (size_t i = 0; i + 1 < scales.size(); i += 2) {
    float f = (float)scales[i + 1];
    for (int64_t end = row + (int64_t)scales[i]; row < end; ++row)
      for (int64_t j = 0; j < rowElems; ++j)
        data[row * rowElems + j] *= f;
  }
}

// One part of a program weight: its tensors read as float32 and concatenated along dimension 0
// (their trailing dimensions must agree), each first flattened to a matrix when asked.
HostTensor readConcatenated(const Checkpoint &ckpt, const std::vector<std::string> &names, const WeightEntry &w,
                            const ModelMeta &meta) {
  std::vector<HostTensor> pieces;
  std::vector<int64_t> shape;
  for (const std::string &n : names) {
    HostTensor t = readTensorAsFloat(ckpt, n, meta);
    const std::vector<int64_t> &s = t.shape();
    if (w.flatten && !s.empty()) // a matrix of the last dimension, whatever the rank
      t.reshape({s.back() ? t.numel() / s.back() : 0, s.back()});
    if (!pieces.empty() && (t.shape().empty() || t.shape().size() != shape.size() ||
                            !std::equal(t.shape().begin() + 1, t.shape().end(), shape.begin() + 1)))
      throw WeightError("tensor '" + n + "' has shape " + shapeText(t.shape()) +
                        ", which cannot be concatenated with " + shapeText(shape) + " for program weight '" +
                        w.name + "'");
    if (pieces.empty())
      shape = t.shape();
    else
      shape[0] += t.shape()[0];
    pieces.push_back(std::move(t));
  }
  if (pieces.size() == 1)
    return std::move(pieces[0]);
  return joined(pieces, shape);
}

// One program weight from the checkpoint: parts concatenated, transposed, stacked, checked.
HostTensor assemble(const WeightEntry &w, const Checkpoint &ckpt, const ModelMeta &meta) {
  const std::vector<int64_t> whole = w.wholeShape(); // before a rank takes its slice
  std::vector<HostTensor> parts;
  for (const auto &names : w.parts) {
    HostTensor part = w.mxfp4 ? readMxfp4(ckpt, names, meta) : readConcatenated(ckpt, names, w, meta);
    if (w.block_diag > 0)
      blockDiagonal(part, w.block_diag, w.name);
    if (!w.regroup.empty())
      regroupRows(part, w.regroup, w.name);
    if (w.flatten) {
      int64_t want = 1;
      for (int64_t d : whole)
        want *= d;
      if (part.numel() != want)
        throw WeightError("tensor '" + names[0] + "' and the rest of its part hold " + std::to_string(part.numel()) +
                          " elements but '" + w.name + "' needs " + shapeText(whole));
      // With a transpose the part holds the result's last two dimensions swapped.
      std::vector<int64_t> shape = whole;
      if (w.transpose && shape.size() >= 2)
        std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
      part.reshape(shape);
    }
    if (w.transpose) {
      if (part.shape().size() < 2)
        throw WeightError("tensor '" + names[0] + "' must have at least 2 dimensions");
      transposeLastTwo(part);
    }
    parts.push_back(std::move(part));
  }
  HostTensor out;
  if (w.stack) {
    for (const HostTensor &p : parts)
      if (p.shape() != parts[0].shape())
        throw WeightError("expert tensors of '" + w.name + "' differ in shape: " + shapeText(p.shape()) + " vs " +
                          shapeText(parts[0].shape()));
    std::vector<int64_t> shape = {(int64_t)parts.size()};
    shape.insert(shape.end(), parts[0].shape().begin(), parts[0].shape().end());
    out = joined(parts, shape);
  } else {
    out = std::move(parts[0]);
  }
  // A scalar stored 0-dimensional (a module's buffer, xIELU's beta) fills a one-element weight.
  if (out.shape().empty() && whole == std::vector<int64_t>{1})
    out.reshape(whole);
  if (out.shape() != whole) {
    std::string names;
    for (const auto &p : w.parts)
      for (const auto &n : p)
        names += (names.empty() ? "" : " + ") + n;
    if (names.size() > 160)
      names = names.substr(0, 160) + "...";
    throw WeightError("tensor '" + names + "' has shape " + shapeText(out.shape()) +
                      " but the model needs " + shapeText(whole) + " for '" + w.name + "'");
  }
  if (!w.row_scales.empty())
    scaleRows(out, w.row_scales, w.name);
  return out;
}

// The element ranges of the whole weight (row-major) that rank `rank` keeps, in its order: the
// whole of it without a shard; else, for each index before the shard dimension, each segment's
// piece (as takeShard cuts it).
std::vector<std::pair<int64_t, int64_t>> keptRanges(const WeightEntry &w, const std::vector<int64_t> &whole, int rank) {
  int64_t numel = 1;
  for (int64_t d : whole)
    numel *= d;
  if (w.shard_dim < 0)
    return {{0, numel}};
  int64_t outer = 1, inner = 1, dim = whole[w.shard_dim];
  for (int d = 0; d < w.shard_dim; ++d)
    outer *= whole[d];
  for (size_t d = w.shard_dim + 1; d < whole.size(); ++d)
    inner *= whole[d];
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t o = 0; o < outer; ++o) {
    int64_t start = 0;
    for (size_t i = 0; i < w.shard_segments.size(); ++i) {
      int64_t seg = w.shard_segments[i], p = w.shard_pieces[i], piece = seg / p;
      out.push_back({(o * dim + start + (rank * p / w.shard_ranks) * piece) * inner, piece * inner});
      start += seg;
    }
  }
  return out;
}

// Copies elements [first, first + count) of the tensors laid end to end (bf16) to `dst`,
// touching only their bytes: `ends[i]` is where tensor i ends, in elements.
void copyElements(const std::vector<const TensorView *> &tensors, const std::vector<int64_t> &ends, int64_t first,
                  int64_t count, uint8_t *dst) {
  size_t t = std::upper_bound(ends.begin(), ends.end(), first) - ends.begin();
  while (count > 0) {
    int64_t begin = t == 0 ? 0 : ends[t - 1], n = std::min(count, ends[t] - first);
    std::memcpy(dst, static_cast<const uint8_t *>(tensors[t]->data) + (first - begin) * 2, (size_t)n * 2);
    dst += n * 2;
    first += n;
    count -= n;
    ++t;
  }
}

// A weight read straight into bf16 when the checkpoint stores every part of it in BF16 and
// assembling only concatenates and stacks (byte copies): no float32 copy of it ever exists, so
// loading peaks at the weights' own size. Concatenating along the first dimension and stacking
// both lay the tensors end to end, so rank `rank`'s slice of a sharded weight is ranges of their
// bytes, and only those are read (a rank touches its slice of the checkpoint, not the rest).
// Returns false, having read nothing, for any other weight (or a shape the float path must
// report), which then takes the float path.
bool assembleBf16(const WeightEntry &w, const Checkpoint &ckpt, const ModelMeta &meta, int rank, HostTensor &out) {
  if (w.mxfp4 || w.transpose || w.flatten || w.block_diag > 0 || !w.regroup.empty() || !w.row_scales.empty() ||
      w.parts.empty() || (!w.stack && w.parts.size() != 1))
    return false;
  std::vector<std::vector<const TensorView *>> views;
  std::vector<int64_t> partShape;
  for (const auto &names : w.parts) {
    std::vector<const TensorView *> part;
    std::vector<int64_t> shape;
    for (const std::string &n : names) {
      std::string name = resolveName(ckpt, n, meta);
      if (!ckpt.has(name))
        return false;
      const TensorView &v = ckpt.get(name);
      if (v.dtype != StDType::BF16 || v.shape.empty())
        return false;
      if (shape.empty())
        shape = v.shape;
      else if (v.shape.size() != shape.size() || !std::equal(v.shape.begin() + 1, v.shape.end(), shape.begin() + 1))
        return false;
      else
        shape[0] += v.shape[0];
      part.push_back(&v);
    }
    if (!partShape.empty() && shape != partShape)
      return false;
    partShape = shape;
    views.push_back(std::move(part));
  }
  std::vector<int64_t> shape = partShape;
  if (w.stack)
    shape.insert(shape.begin(), (int64_t)views.size());
  if (shape != w.wholeShape())
    return false;
  std::vector<const TensorView *> tensors;
  std::vector<int64_t> ends;
  for (const auto &part : views)
    for (const TensorView *v : part) {
      tensors.push_back(v);
      ends.push_back((ends.empty() ? 0 : ends.back()) + (int64_t)(v->bytes / 2));
    }
  out = HostTensor(Storage::BF16, w.shape);
  uint8_t *dst = out.data();
  for (const auto &[first, count] : keptRanges(w, shape, rank)) {
    copyElements(tensors, ends, first, count, dst);
    dst += count * 2;
  }
  return true;
}

} // namespace

HostTensor takeShard(const HostTensor &whole, const WeightEntry &w, int rank) {
  if (w.shard_dim < 0)
    throw std::logic_error("takeShard: weight '" + w.name + "' has no shard");
  const std::vector<int64_t> &shape = whole.shape();
  int64_t outer = 1, inner = 1, dim = shape[w.shard_dim];
  for (int d = 0; d < w.shard_dim; ++d)
    outer *= shape[d];
  for (size_t d = w.shard_dim + 1; d < shape.size(); ++d)
    inner *= shape[d];
  HostTensor out(Storage::F32, w.shape);
  const float *src = whole.f32().data();
  float *dst = out.f32().data();
  int64_t kept = w.shape[w.shard_dim];
  for (int64_t o = 0; o < outer; ++o) {
    int64_t start = 0, at = 0;
    for (size_t i = 0; i < w.shard_segments.size(); ++i) {
      int64_t seg = w.shard_segments[i], p = w.shard_pieces[i], piece = seg / p;
      int64_t first = start + (rank * p / w.shard_ranks) * piece;
      std::copy_n(src + (o * dim + first) * inner, piece * inner, dst + (o * kept + at) * inner);
      start += seg;
      at += piece;
    }
  }
  return out;
}

void WeightStore::stream(const Artefact &a, const WeightSource &source,
                         const std::function<void(int, HostTensor &&)> &consume, const std::vector<bool> &asBf16) {
  std::unique_ptr<Checkpoint> ckpt;
  if (!source.checkpoint_dir.empty()) {
    checkCheckpointConfig(a, source.checkpoint_dir);
    ckpt = std::make_unique<Checkpoint>(source.checkpoint_dir);
  }
  for (size_t wi = 0; wi < a.weights.size(); ++wi) {
    const WeightEntry &w = a.weights[wi];
    HostTensor t;
    bool sliced = false; // read as this rank's slice already
    if (!ckpt)
      t = randomTensor(w, source.seed);
    else if (wi < asBf16.size() && asBf16[wi] && assembleBf16(w, *ckpt, a.meta, source.rank, t))
      sliced = true;
    else
      t = assemble(w, *ckpt, a.meta);
    if (w.shard_dim >= 0 && !sliced)
      t = takeShard(t, w, source.rank);
    if (!ckpt) {
      consume((int)wi, std::move(t));
      continue;
    }
    // The mapped pages this weight was read from are copied: without this, peak resident memory
    // holds the checkpoint twice (its file pages and the weights made of them).
    ckpt->releasePages();
    consume((int)wi, std::move(t));
  }
}

namespace {

// Float32 values whose low 16 bits are all zero are bf16 values: keeping the high halves loses
// nothing. Leaves `t` float32 when any value is not.
void keepAsBf16(HostTensor &t) {
  if (t.format() != Storage::F32)
    return;
  const float *f = t.f32().data();
  size_t n = (size_t)t.numel();
  for (size_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, f + i, 4);
    if (u & 0xffffu)
      return;
  }
  HostTensor held(Storage::BF16, t.shape());
  uint16_t *h = held.bf16().data();
  for (size_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, f + i, 4);
    h[i] = (uint16_t)(u >> 16);
  }
  t = std::move(held);
}

} // namespace

WeightStore WeightStore::load(const Artefact &a, const WeightSource &source,
                              const std::function<void(size_t, size_t)> &progress,
                              const std::vector<bool> &keepBf16) {
  WeightStore store;
  stream(
      a, source,
      [&](int index, HostTensor &&t) {
        if ((size_t)index < keepBf16.size() && keepBf16[index])
          keepAsBf16(t);
        if (progress)
          progress((size_t)index, a.weights.size());
        store.tensors_.push_back(std::move(t));
      },
      keepBf16);
  return store;
}

std::vector<bool> storedAsBf16(const Artefact &a, const WeightSource &source, const std::vector<bool> &candidates) {
  std::vector<bool> out(a.weights.size(), false);
  if (source.checkpoint_dir.empty()) { // random weights: bf16 values, none rescaled
    for (size_t wi = 0; wi < out.size() && wi < candidates.size(); ++wi)
      out[wi] = candidates[wi];
    return out;
  }
  std::unique_ptr<Checkpoint> opened;
  try {
    opened = std::make_unique<Checkpoint>(source.checkpoint_dir);
  } catch (const std::exception &) {
    return out; // loading reports what is wrong with the checkpoint, in its own words
  }
  const Checkpoint &ckpt = *opened;
  for (size_t wi = 0; wi < a.weights.size() && wi < candidates.size(); ++wi) {
    const WeightEntry &w = a.weights[wi];
    if (!candidates[wi] || w.mxfp4 || !w.row_scales.empty() || w.parts.empty())
      continue;
    bool all = true;
    for (const auto &part : w.parts)
      for (const std::string &n : part) {
        std::string name = resolveName(ckpt, n, a.meta);
        all = all && ckpt.has(name) && ckpt.get(name).dtype == StDType::BF16;
      }
    out[wi] = all;
  }
  return out;
}

namespace {

// A tensor of decoder layer N >= numLayers ("...layers.N....") or of a module named `mtp` or
// `mtp_<something>` (`mtp.`, HY-V4's `model.mtp_layers.`, Mistral Large 4's `mtp_dspark.`): the
// multi-token-prediction heads some checkpoints ship beside the decoder.
bool isMtpTensor(const std::string &name, int64_t numLayers) {
  for (size_t start = 0; start < name.size();) {
    size_t dot = name.find('.', start);
    std::string part = name.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (dot != std::string::npos && (part == "mtp" || part.rfind("mtp_", 0) == 0))
      return true;
    start = dot == std::string::npos ? name.size() : dot + 1;
  }
  for (size_t at = name.find("layers."); at != std::string::npos; at = name.find("layers.", at + 1)) {
    if (at > 0 && name[at - 1] != '.')
      continue;
    size_t p = at + 7, end = p;
    while (end < name.size() && end - p < 9 && std::isdigit((unsigned char)name[end]))
      ++end;
    if (end > p && end < name.size() && name[end] == '.' && std::stoll(name.substr(p, end - p)) >= numLayers)
      return true;
  }
  return false;
}

} // namespace

std::string checkpointName(const Checkpoint &ckpt, const std::string &name, const ModelMeta &meta) {
  std::string found = resolveName(ckpt, name, meta);
  return ckpt.has(found) ? found : "";
}

std::map<std::string, TensorRole> checkpointRoles(const Artefact &a, const Checkpoint &ckpt) {
  std::map<std::string, TensorRole> roles;
  for (const std::string &n : ckpt.names())
    roles[n] = TensorRole::Unused;
  for (const WeightEntry &w : a.weights)
    for (const auto &part : w.parts)
      for (const std::string &requested : part) {
        std::string n = checkpointName(ckpt, requested, a.meta);
        if (n.empty())
          continue;
        bool fp8 = !w.mxfp4 && ckpt.get(n).dtype == StDType::F8E4M3;
        bool ternary = a.meta.quantization == "ternary" && ckpt.get(n).dtype == StDType::U8;
        roles[n] = fp8 ? TensorRole::Fp8 : ternary ? TensorRole::Ternary : TensorRole::Read;
        if (fp8 && ckpt.has(n + "_scale_inv"))
          roles[n + "_scale_inv"] = TensorRole::Fp8Scales;
        if (ternary && ckpt.has(n + "_scale"))
          roles[n + "_scale"] = TensorRole::TernaryScales;
      }
  for (auto &[n, role] : roles)
    if (role == TensorRole::Unused && isMtpTensor(n, a.meta.num_layers))
      role = TensorRole::MtpLayer;
  return roles;
}

} // namespace cbc::rt
