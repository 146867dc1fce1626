#include "runtime/cpu/kernels.h"

#include "runtime/safetensors.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>

namespace cbc::rt::cpu {

void serialFor(int64_t n, const std::function<void(int64_t)> &fn) {
  for (int64_t i = 0; i < n; ++i)
    fn(i);
}

void embed(const int32_t *tokens, int64_t T, Matrix table, int64_t H, float scale, float *out, int64_t offset,
           int64_t rows, int64_t oovRow, int64_t first, int64_t held) {
  auto toFloatRow = storageTraits(table.format).toFloatRow;
  for (int64_t t = 0; t < T; ++t) {
    float *row = out + t * H;
    int64_t index = tokens[t] + offset - first;
    if (held > 0 && (index < 0 || index >= held)) { // another rank's id
      std::fill(row, row + H, 0.0f);
      continue;
    }
    toFloatRow(table.data, H, rows > 0 && index >= rows ? oovRow : index, row);
    for (int64_t j = 0; j < H; ++j)
      row[j] *= scale;
  }
}

void matchRms(const float *x, const float *ref, int64_t T, int64_t W, int64_t refW, float floor, float *out) {
  for (int64_t t = 0; t < T; ++t) {
    const float *xr = x + t * W, *rr = ref + t * refW;
    float xs = 0.0f, rs = 0.0f;
    for (int64_t j = 0; j < W; ++j)
      xs += xr[j] * xr[j];
    for (int64_t j = 0; j < refW; ++j)
      rs += rr[j] * rr[j];
    float factor = std::sqrt(rs / (float)refW) / std::sqrt(std::max(xs / (float)W, floor));
    for (int64_t j = 0; j < W; ++j)
      out[t * W + j] = xr[j] * factor;
  }
}

static float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

void hcWeights(const float *mixes, int64_t T, const float *base, const float *scale, const HcWeightsParams &p,
               float *out) {
  int64_t N = p.streams, W = p.kind == 0 ? N : p.kind == 1 ? 2 * N : (2 + N) * N;
  for (int64_t t = 0; t < T; ++t) {
    const float *m = mixes + t * W;
    float *o = out + t * W;
    for (int64_t n = 0; n < N; ++n)
      o[n] = sigmoid(m[n] * scale[0] + base[n]) + p.eps;
    if (p.kind >= 1)
      for (int64_t n = N; n < 2 * N; ++n)
        o[n] = p.magnitude * sigmoid(m[n] * scale[1] + base[n]) + p.post_eps;
    if (p.kind != 2)
      continue;
    float *c = o + 2 * N; // comb[j, k] at c[j * N + k]
    for (int64_t j = 0; j < N; ++j) {
      float mx = -INFINITY, sum = 0.0f;
      for (int64_t k = 0; k < N; ++k) {
        c[j * N + k] = m[2 * N + j * N + k] * scale[2] + base[2 * N + j * N + k];
        mx = std::max(mx, c[j * N + k]);
      }
      for (int64_t k = 0; k < N; ++k)
        sum += (c[j * N + k] = std::exp(c[j * N + k] - mx));
      for (int64_t k = 0; k < N; ++k)
        c[j * N + k] = c[j * N + k] / sum + p.eps;
    }
    auto normalise = [&](bool columns) {
      for (int64_t a = 0; a < N; ++a) {
        float sum = 0.0f;
        for (int64_t b = 0; b < N; ++b)
          sum += columns ? c[b * N + a] : c[a * N + b];
        for (int64_t b = 0; b < N; ++b)
          (columns ? c[b * N + a] : c[a * N + b]) /= sum + p.eps;
      }
    };
    normalise(true);
    for (int64_t i = 1; i < p.sinkhorn_iters; ++i) {
      normalise(false);
      normalise(true);
    }
  }
}

void streamCollapse(const float *streams, const float *w, int64_t T, int64_t N, int64_t H, int64_t wWidth,
                    int64_t offset, float *out) {
  for (int64_t t = 0; t < T; ++t) {
    const float *s = streams + t * N * H, *c = w ? w + t * wWidth + offset : nullptr;
    for (int64_t j = 0; j < H; ++j) {
      float acc = 0.0f;
      for (int64_t n = 0; n < N; ++n)
        acc += (c ? c[n] : 1.0f) * s[n * H + j];
      out[t * H + j] = c ? acc : acc / (float)N;
    }
  }
}

void streamExpand(const float *block, const float *streams, const float *w, int64_t T, int64_t N, int64_t H,
                  int64_t wWidth, int64_t offset, bool comb, float *out) {
  for (int64_t t = 0; t < T; ++t) {
    const float *s = streams + t * N * H, *post = w + t * wWidth + offset, *c = post + N, *y = block + t * H;
    float *o = out + t * N * H;
    for (int64_t k = 0; k < N; ++k)
      for (int64_t j = 0; j < H; ++j) {
        float residual = 0.0f;
        if (comb)
          for (int64_t i = 0; i < N; ++i)
            residual += c[i * N + k] * s[i * H + j];
        else
          residual = s[k * H + j];
        o[k * H + j] = post[k] * y[j] + residual;
      }
  }
}

void gaussianTopk(const float *x, int64_t T, int64_t W, float multiplier, float *out) {
  for (int64_t t = 0; t < T; ++t) {
    const float *xr = x + t * W;
    float sum = 0.0f;
    for (int64_t j = 0; j < W; ++j)
      sum += xr[j];
    float mean = sum / (float)W, ss = 0.0f;
    for (int64_t j = 0; j < W; ++j)
      ss += (xr[j] - mean) * (xr[j] - mean);
    float cutoff = mean + std::sqrt(ss / (float)W) * multiplier;
    for (int64_t j = 0; j < W; ++j)
      out[t * W + j] = std::max(xr[j] - cutoff, 0.0f);
  }
}

void linear(const float *x, int64_t M, int64_t K, Matrix w, int64_t N, const float *bias, float *y,
            const ParallelFor &pfor) {
  if (M == 0)
    return;
  matmul(x, M, K, w, N, y, pfor);
  if (bias)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n)
        y[m * N + n] += bias[n];
}

void headLinear(const float *x, int64_t T, const float *w, int64_t heads, int64_t R, int64_t C, int64_t offset,
                int64_t rows, bool transpose, float *y, const ParallelFor &pfor) {
  if (T == 0)
    return;
  int64_t in = transpose ? rows : C, out = transpose ? C : rows;
  pfor(heads, [&](int64_t h) {
    const float *wh = w + (h * R + offset) * C;
    // y_h [T, out] = x_h [T, in] . op(W_h), rows of x and y strided by all heads.
    cblas_sgemm(CblasRowMajor, CblasNoTrans, transpose ? CblasNoTrans : CblasTrans, (int)T, (int)out, (int)in, 1.0f,
                x + h * in, (int)(heads * in), wh, (int)C, 0.0f, y + h * out, (int)(heads * out));
  });
}

void sinusoidalPosition(const int32_t *positions, int64_t T, int64_t D, int64_t offset, const float *freq,
                        int64_t paddingRow, float *y) {
  int64_t h = D / 2;
  for (int64_t t = 0; t < T; ++t) {
    float *row = y + t * D;
    int64_t n = positions[t] + offset;
    std::fill(row, row + D, 0.0f);
    if (n == paddingRow)
      continue;
    for (int64_t i = 0; i < h; ++i) {
      float q = (float)n * freq[i];
      row[i] = std::sin(q);
      row[h + i] = std::cos(q);
    }
  }
}

void positionScale(const float *x, int64_t T, int64_t width, const int32_t *positions, float beta, int64_t period,
                   int64_t offset, float *y, fb::PositionScaleForm form) {
  for (int64_t t = 0; t < T; ++t) {
    int64_t n = positions[t] + offset;
    // The power form as transformers computes it: exp(beta * log1p(n / period)) in fp32.
    float f = form == fb::PositionScaleForm::LogRatio ? 1.0f + beta * std::log(std::max((float)n / (float)period, 1.0f))
              : form == fb::PositionScaleForm::Power  ? std::exp(beta * std::log1p((float)n / (float)period))
                                                      : 1.0f + beta * std::log(1.0f + (float)(n / period));
    for (int64_t j = 0; j < width; ++j)
      y[t * width + j] = x[t * width + j] * f;
  }
}

void headPositionScale(const float *x, int64_t T, int64_t width, int64_t heads, const int32_t *positions,
                       const float *scale, const float *bias, float *y) {
  int64_t d = width / heads;
  for (int64_t t = 0; t < T; ++t) {
    float l = std::log((float)positions[t] + 1.0f);
    for (int64_t h = 0; h < heads; ++h) {
      float f = scale[h] * l + bias[h];
      for (int64_t j = h * d; j < (h + 1) * d; ++j)
        y[t * width + j] = x[t * width + j] * f;
    }
  }
}

void rmsNorm(const float *x, int64_t M, int64_t width, int64_t group, const float *w, float eps,
             float offset, float *y, bool perRow) {
  for (int64_t m = 0; m < M; ++m)
    for (int64_t g0 = 0; g0 < width; g0 += group) {
      const float *xr = x + m * width + g0;
      float *yr = y + m * width + g0;
      const float *wg = w && perRow ? w + g0 : w;
      double sumsq = 0;
      for (int64_t j = 0; j < group; ++j)
        sumsq += (double)xr[j] * xr[j];
      float inv = 1.0f / std::sqrt((float)(sumsq / group) + eps);
      for (int64_t j = 0; j < group; ++j)
        yr[j] = xr[j] * inv * (wg ? wg[j] + offset : 1.0f);
    }
}

void add(const float *a, const float *b, int64_t n, float *y) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = a[i] + b[i];
}

float activate(Act act, float x) {
  switch (act) {
  case Act::Silu:
    return x / (1.0f + std::exp(-x));
  case Act::GeluTanh: {
    const float k = 0.7978845608028654f; // sqrt(2 / pi)
    return 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
  }
  case Act::Gelu:
    return 0.5f * x * (1.0f + std::erf(x * 0.7071067811865476f));
  case Act::None:
    return x;
  case Act::Relu:
    return x > 0.0f ? x : 0.0f;
  case Act::Relu2:
    return x > 0.0f ? x * x : 0.0f;
  case Act::Sigmoid:
    return 1.0f / (1.0f + std::exp(-x));
  case Act::Softplus: // torch's threshold: x itself above 20
    return x > 20.0f ? x : std::log1p(std::exp(x));
  case Act::Exp:
    return std::exp(x);
  case Act::SignedSqrt: // sign(0) is 0
    return x > 0.0f ? std::sqrt(std::max(x, 1e-6f)) : x < 0.0f ? -std::sqrt(std::max(-x, 1e-6f)) : 0.0f;
  }
  return x;
}

namespace {
// silu(g) * u over contiguous halves, the common gated unit, in a loop the compiler vectorises
// (expf through libmvec: runtime/CMakeLists.txt).
__attribute__((target_clones("avx512f", "avx2", "default"))) void siluTimes(const float *g, const float *u,
                                                                          int64_t n, float *y) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}
} // namespace

std::optional<SwigluClamp> swigluForm(const fb::GluParams &p) {
  if (p.clamp())
    return SwigluClamp{(float)p.clamp()->limit(), (float)p.clamp()->alpha(), (float)p.clamp()->up_offset()};
  if (p.softcap())
    return SwigluClamp{.gate_cap = (float)p.softcap()->gate_cap(), .up_cap = (float)p.softcap()->up_cap()};
  return std::nullopt;
}

float swigluUnit(const SwigluClamp &f, float g, float u) {
  if (f.gate_cap > 0) // the sigmoid reads the raw gate; only the linear factor is capped
    return f.gate_cap * std::tanh(g / f.gate_cap) / (1.0f + std::exp(-g)) * (f.up_cap * std::tanh(u / f.up_cap));
  g = std::min(g, f.limit);
  u = std::clamp(u, -f.limit, f.limit);
  return (u + f.up_offset) * (g / (1.0f + std::exp(-f.alpha * g)));
}

void glu(const float *x, int64_t M, int64_t I, Act act, bool interleaved, const SwigluClamp *clamp, float *y) {
  for (int64_t m = 0; m < M; ++m) {
    const float *row = x + m * 2 * I;
    if (act == Act::Silu && !interleaved && !clamp) {
      siluTimes(row, row + I, I, y + m * I);
      continue;
    }
    for (int64_t i = 0; i < I; ++i) {
      float g = interleaved ? row[2 * i] : row[i];
      float u = interleaved ? row[2 * i + 1] : row[I + i];
      y[m * I + i] = clamp ? swigluUnit(*clamp, g, u) : activate(act, g) * u;
    }
  }
}

void l2Clip(const float *x, int64_t T, int64_t width, int64_t group, const float *scale, float threshold, float eps,
            float *y) {
  for (int64_t t = 0; t < T; ++t)
    for (int64_t g0 = 0; g0 < width; g0 += group) {
      const float *xg = x + t * width + g0;
      float *yg = y + t * width + g0;
      double ss = 0.0;
      for (int64_t j = 0; j < group; ++j) {
        yg[j] = scale ? xg[j] * scale[g0 + j] : xg[j];
        ss += (double)yg[j] * yg[j];
      }
      float factor = std::min(1.0f, threshold / ((float)std::sqrt(ss) + eps));
      for (int64_t j = 0; j < group; ++j)
        yg[j] *= factor;
    }
}

void streamAttend(const float *sources, int64_t T, int64_t N, int64_t H, const float *query, int64_t Q, float eps,
                  float *y) {
  std::vector<float> normed(N * H), score(N);
  float scale = 1.0f / std::sqrt((float)H);
  for (int64_t t = 0; t < T; ++t) {
    const float *s = sources + t * N * H;
    for (int64_t i = 0; i < N; ++i) {
      double ss = 0.0;
      for (int64_t h = 0; h < H; ++h)
        ss += (double)s[i * H + h] * s[i * H + h];
      float inv = 1.0f / std::sqrt((float)(ss / (double)H) + eps);
      for (int64_t h = 0; h < H; ++h)
        normed[i * H + h] = s[i * H + h] * inv;
    }
    for (int64_t q = 0; q < Q; ++q) {
      float best = -INFINITY, total = 0.0f;
      for (int64_t i = 0; i < N; ++i) {
        double dot = 0.0;
        for (int64_t h = 0; h < H; ++h)
          dot += (double)query[q * H + h] * normed[i * H + h];
        score[i] = (float)dot * scale;
        best = std::max(best, score[i]);
      }
      for (int64_t i = 0; i < N; ++i)
        total += score[i] = std::exp(score[i] - best);
      float *out = y + (t * Q + q) * H;
      std::fill(out, out + H, 0.0f);
      for (int64_t i = 0; i < N; ++i)
        for (int64_t h = 0; h < H; ++h)
          out[h] += score[i] / total * normed[i * H + h];
    }
  }
}

void softcap(const float *x, int64_t n, float cap, float *y) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = cap * std::tanh(x[i] / cap);
}

void sigmoidGate(const float *x, const float *g, int64_t M, int64_t width, int64_t gWidth, float *y,
                 bool sigmoid) {
  int64_t group = gWidth == 0 ? width : width / gWidth;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t j = 0; j < width; ++j) {
      float gv = gWidth == 0 ? g[0] : g[m * gWidth + j / group];
      y[m * width + j] = x[m * width + j] * (sigmoid ? 1.0f / (1.0f + std::exp(-gv)) : gv);
    }
}

void copyColumns(const float *x, int64_t M, int64_t xWidth, int64_t col0, int64_t width, float *y) {
  // memmove: the slots of a corrupt artefact may overlap.
  for (int64_t m = 0; m < M; ++m)
    std::memmove(y + m * width, x + m * xWidth + col0, width * sizeof(float));
}

void ropeFrequencies(const RopeParams &p, int64_t seqLen, std::vector<float> &freq) {
  if (!p.inv_freq_long.empty() && seqLen > p.long_after) {
    freq = p.inv_freq_long;
  } else if (p.dynamic_factor > 0 && seqLen > p.dynamic_max_positions) {
    // Dynamic NTK: the base grows with the request's length, as transformers recomputes it.
    double dim = (double)p.rotary_dim;
    double base = p.dynamic_base *
                  std::pow(p.dynamic_factor * (double)seqLen / (double)p.dynamic_max_positions -
                               (p.dynamic_factor - 1),
                           dim / (dim - 2));
    freq.resize(p.rotary_dim / 2);
    for (int64_t i = 0; i < p.rotary_dim / 2; ++i)
      freq[i] = 1.0f / (float)std::pow(base, (double)((float)(2 * i) / (float)dim));
  } else {
    freq = p.inv_freq;
  }
}

void rope(const float *x, int64_t T, int64_t width, const RopeParams &p, const int32_t *positions,
          const int64_t *seqLen, float *y, const ParallelFor &pfor, const int32_t *sectionPositions,
          const float *freqLogScale) {
  int64_t heads = width / p.head_dim, half = p.rotary_dim / 2;
  pfor(T, [&](int64_t t) {
    std::vector<float> freq;
    ropeFrequencies(p, seqLen[t], freq);
    if (freqLogScale) // fp32, as transformers scales its fp32 frequencies
      for (int64_t i = 0; i < half; ++i)
        freq[i] *= std::exp(freqLogScale[i]);
    std::vector<float> c(half), s(half);
    for (int64_t i = 0; i < half; ++i) {
      // Angle in float32, then cos/sin scaled by the attention factor, as transformers does.
      int32_t pos = p.sections.empty() ? positions[t] : sectionPositions[p.sections[i] * T + t];
      float angle = (float)pos * freq[i];
      c[i] = std::cos(angle) * p.attention_factor;
      s[i] = std::sin(angle) * p.attention_factor;
    }
    for (int64_t h = 0; h < heads; ++h) {
      const float *xh = x + t * width + h * p.head_dim;
      float *yh = y + t * width + h * p.head_dim;
      int64_t o = p.rotary_offset;
      for (int64_t j = 0; j < p.head_dim; ++j)
        if (j < o || j >= o + p.rotary_dim)
          yh[j] = xh[j];
      for (int64_t i = 0; i < half; ++i) {
        int64_t a = o + (p.interleaved ? 2 * i : i), b = o + (p.interleaved ? 2 * i + 1 : i + half);
        float x1 = xh[a], x2 = xh[b];
        yh[a] = x1 * c[i] - x2 * s[i];
        yh[b] = x2 * c[i] + x1 * s[i];
      }
    }
  });
}

namespace {
// The cache row of position `pos` through a request's block-table row.
inline int64_t slotOf(const int32_t *row, int64_t pos, int64_t blockSize) {
  int32_t block = row[pos / blockSize];
  if (block < 0)
    throw std::runtime_error("paged cache: position " + std::to_string(pos) +
                             " has no block (scheduler bug)");
  return (int64_t)block * blockSize + pos % blockSize;
}
} // namespace

void kvAppend(const float *k, const float *v, int64_t T, const int32_t *positions,
              const int32_t *seqIds, const int32_t *slots, const int32_t *tables,
              int64_t tableWidth, const KvLayout &layout, float *pool) {
  int64_t vElems = layout.vElems();
  for (int64_t t = 0; t < T; ++t) {
    if (positions[t] < 0) // a token that writes no row (it closes no compressed window)
      continue;
    const int32_t *table = tables + (int64_t)slots[seqIds[t]] * tableWidth;
    float *row = pool + slotOf(table, positions[t], layout.block_size) * layout.row_elems;
    std::memcpy(row, k + t * layout.k_elems, layout.k_elems * sizeof(float));
    if (vElems) // a latent cache has no values (v may be null): memcpy from null is undefined
      std::memcpy(row + layout.k_elems, v + t * vElems, vElems * sizeof(float));
  }
}

namespace {
// Query heads per attention task: a task reads each cached row once for all its heads (a GQA
// group, or a block of a latent layer's heads, which all share one row).
constexpr int64_t kHeadsPerTask = 8;
} // namespace

void pagedAttention(const float *q, int64_t T, const int32_t *positions, const int32_t *seqIds,
                    const int32_t *slots, const int32_t *tables, int64_t tableWidth,
                    const KvLayout &layout,
                    const float *pool, const AttentionParams &p, float *out,
                    const ParallelFor &pfor) {
  int64_t H = p.num_heads, D = p.head_dim, Dv = p.v_head_dim;
  int64_t group = H / p.num_kv_heads, perTask = std::min(group, kHeadsPerTask);
  int64_t blocks = (group + perTask - 1) / perTask; // tasks per (token, kv head)
  pfor(T * p.num_kv_heads * blocks, [&](int64_t task) {
    int64_t t = task / (p.num_kv_heads * blocks), kvh = task / blocks % p.num_kv_heads;
    int64_t h0 = kvh * group + task % blocks * perTask, h1 = std::min(kvh * group + group, h0 + perTask);
    int64_t pos = positions[t];
    int64_t lo = 0;
    if (p.window > 0)
      lo = std::max<int64_t>(0, pos - p.window + 1);
    if (p.chunk > 0)
      lo = pos / p.chunk * p.chunk;
    int64_t hi = p.key_ends ? (int64_t)p.key_ends[t] - 1 : pos; // the last key it sees
    int64_t n = hi - lo + 1, G = h1 - h0;
    const int32_t *table = tables + (int64_t)slots[seqIds[t]] * tableWidth;
    thread_local std::vector<const float *> keys, values;
    thread_local std::vector<float> scores; // [G][n]
    keys.resize(n), values.resize(n), scores.resize(G * n);
    for (int64_t j = lo; j <= hi; ++j) {
      const float *row = pool + slotOf(table, j, layout.block_size) * layout.row_elems;
      keys[j - lo] = row + kvh * D;
      values[j - lo] = row + layout.k_elems + kvh * Dv;
    }
    scoreKeys(q + (t * H + h0) * D, G, D, keys.data(), n, scores.data());
    for (int64_t h = h0; h < h1; ++h) {
      float *sc = scores.data() + (h - h0) * n;
      // The blocks this head's selection lists, if it has one.
      const int32_t *listed = p.block_selection ? p.block_selection + (t * p.selection_heads + h * p.selection_heads / H) *
                                                                          p.selection_topk
                                                : nullptr;
      auto selected = [&](int64_t j) {
        return !listed || std::find(listed, listed + p.selection_topk, (int32_t)(j / p.selection_block)) !=
                              listed + p.selection_topk;
      };
      for (int64_t j = 0; j < n; ++j) {
        if (!selected(lo + j)) {
          sc[j] = -INFINITY;
          continue;
        }
        float s = sc[j] * p.scale;
        if (p.softcap > 0)
          s = p.softcap * std::tanh(s / p.softcap);
        if (p.distance_bias && pos - (lo + j) >= 0 && pos - (lo + j) < p.bias_extent)
          s += p.distance_bias[(t * H + h) * p.bias_extent + (pos - lo - j)];
        if (!p.alibi_slopes.empty())
          s -= p.alibi_slopes[h] * (float)(pos - lo - j);
        sc[j] = s;
      }
      bool hasSink = p.sinks || p.sink_rows;
      float sink = p.sink_rows ? p.sink_rows[t * H + h] : p.sinks ? p.sinks[h] : -INFINITY;
      float maxScore = std::max(sink, *std::max_element(sc, sc + n));
      for (int64_t j = 0; j < n; ++j) // vectorised (libmvec); the sum stays in order, in double
        sc[j] = std::exp(sc[j] - maxScore);
      double denom = hasSink ? std::exp((double)sink - maxScore) : 0.0;
      for (int64_t j = 0; j < n; ++j)
        denom += sc[j];
      float scale = (float)(1.0 / denom);
      for (int64_t j = 0; j < n; ++j)
        sc[j] *= scale;
    }
    sumValues(scores.data(), G, n, values.data(), Dv, out + (t * H + h0) * Dv);
  });
}

// Paged attention with one key head whose key is the whole cached row [latent | k_rope] and
// whose value is its latent: the query heads' two parts side by side, the value read from the
// row's start.
void latentAttention(const float *qLatent, const float *qRope, int64_t T, const int32_t *positions,
                     const int32_t *seqIds, const int32_t *slots, const int32_t *tables, int64_t tableWidth,
                     const KvLayout &layout, const float *pool, const LatentAttentionParams &p, float *out,
                     const ParallelFor &pfor) {
  int64_t H = p.num_heads, L = p.latent_dim, R = p.rope_dim;
  std::vector<float> q(T * H * (L + R));
  for (int64_t th = 0; th < T * H; ++th) {
    std::copy(qLatent + th * L, qLatent + (th + 1) * L, q.data() + th * (L + R));
    std::copy(qRope + th * R, qRope + (th + 1) * R, q.data() + th * (L + R) + L);
  }
  AttentionParams a;
  a.num_heads = H;
  a.num_kv_heads = 1;
  a.head_dim = L + R;
  a.v_head_dim = L;
  a.scale = p.scale;
  a.window = p.window;
  a.chunk = p.chunk;
  a.sinks = p.sinks;
  KvLayout valueAtStart = layout;
  valueAtStart.k_elems = 0;
  pagedAttention(q.data(), T, positions, seqIds, slots, tables, tableWidth, valueAtStart, pool, a, out, pfor);
}

namespace {
// One latent-attention head over listed cache rows [latent (L) | k_rope (R)]: the first `roped`
// rows score with both parts, the others (compressed entries: latents alone) with the latent
// part; one softmax with the head's sink (or none), the latents weighed into out [L].
void attendRows(const std::vector<const float *> &rows, size_t roped, const float *ql, const float *qr, int64_t L,
                int64_t R, float scale, const float *sink, float *out) {
  thread_local std::vector<float> scores;
  scores.resize(rows.size());
  float maxScore = sink ? *sink : -INFINITY;
  for (size_t i = 0; i < rows.size(); ++i) {
    float dot = 0;
    for (int64_t d = 0; d < L; ++d)
      dot += ql[d] * rows[i][d];
    if (i < roped)
      for (int64_t d = 0; d < R; ++d)
        dot += qr[d] * rows[i][L + d];
    scores[i] = dot * scale;
    maxScore = std::max(maxScore, scores[i]);
  }
  double denom = sink ? std::exp((double)*sink - maxScore) : 0.0;
  for (float &sc : scores)
    denom += sc = std::exp(sc - maxScore);
  std::fill(out, out + L, 0.0f);
  for (size_t i = 0; i < rows.size(); ++i) {
    float wgt = (float)(scores[i] / denom);
    for (int64_t d = 0; d < L; ++d)
      out[d] += wgt * rows[i][d];
  }
}
} // namespace

void compressedRows(const int32_t *positions, int64_t T, int64_t rate, int32_t *rows) {
  for (int64_t t = 0; t < T; ++t)
    rows[t] = (positions[t] + 1) % rate == 0 ? (positions[t] + 1) / rate - 1 : -1;
}

void latentAttentionWithEntries(const float *qLatent, const float *qRope, int64_t T, const int32_t *positions,
                                const int32_t *seqIds, const int32_t *slots, const int32_t *tables,
                                int64_t tableWidth, const KvLayout &layout, const float *pool,
                                const LatentAttentionParams &p, const LatentEntries &entries, float *out,
                                const ParallelFor &pfor) {
  int64_t H = p.num_heads, L = p.latent_dim, R = p.rope_dim;
  pfor(T * H, [&](int64_t th) {
    int64_t t = th / H, pos = positions[t];
    int64_t lo = p.window > 0 ? std::max<int64_t>(0, pos - p.window + 1) : p.chunk > 0 ? pos / p.chunk * p.chunk : 0;
    const int32_t *table = tables + (int64_t)slots[seqIds[t]] * tableWidth;
    const int32_t *entryTable = entries.tables + (int64_t)slots[seqIds[t]] * tableWidth;
    // The rows it reads: the layer's [lo, pos], then the entries (roped part: the layer's only).
    thread_local std::vector<const float *> rows;
    rows.clear();
    for (int64_t j = lo; j <= pos; ++j)
      rows.push_back(pool + slotOf(table, j, layout.block_size) * layout.row_elems);
    size_t own = rows.size();
    auto addEntry = [&](int64_t w) {
      rows.push_back(entries.pool + slotOf(entryTable, w, entries.layout->block_size) * entries.layout->row_elems);
    };
    if (entries.selection) {
      for (int64_t i = 0; i < entries.k; ++i)
        if (int32_t w = entries.selection[t * entries.k + i]; w >= 0)
          addEntry(w);
    } else {
      for (int64_t w = 0; w < (pos + 1) / entries.rate; ++w)
        addEntry(w);
    }
    attendRows(rows, own, qLatent + th * L, qRope + th * R, L, R, p.scale, p.sinks ? p.sinks + th % H : nullptr,
               out + th * L);
  });
}

void layerNorm(const float *x, int64_t rows, int64_t width, int64_t group, const float *w, const float *b,
               bool perFeature, float eps, float offset, float *y) {
  for (int64_t i = 0; i < rows * width; i += group) {
    const float *xr = x + i;
    int64_t wi = perFeature ? i % width : 0; // where this group's weight and bias entries start
    float mean = 0;
    for (int64_t j = 0; j < group; ++j)
      mean += xr[j];
    mean /= (float)group;
    float var = 0;
    for (int64_t j = 0; j < group; ++j)
      var += (xr[j] - mean) * (xr[j] - mean);
    float inv = 1.0f / std::sqrt(var / (float)group + eps);
    for (int64_t j = 0; j < group; ++j)
      y[i + j] = (xr[j] - mean) * inv * (w ? w[wi + j] + offset : 1.0f) + (b ? b[wi + j] : 0.0f);
  }
}

void indexAppend(const float *key, int64_t T, const int32_t *positions, const int32_t *seqIds,
                 const int32_t *slots, const int32_t *tables, int64_t tableWidth, const KvLayout &layout,
                 float *pool) {
  for (int64_t t = 0; t < T; ++t) {
    if (positions[t] < 0) // a token that writes no row (it closes no compressed window)
      continue;
    const int32_t *table = tables + (int64_t)slots[seqIds[t]] * tableWidth;
    float *row = pool + slotOf(table, positions[t], layout.block_size) * layout.row_elems + layout.indexOffset();
    std::memcpy(row, key + t * layout.index_elems, layout.index_elems * sizeof(float));
  }
}

void indexSelect(const float *q, const float *w, int64_t T, const int32_t *positions, const int32_t *seqIds,
                 const int32_t *slots, const int32_t *tables, int64_t tableWidth, const KvLayout &layout,
                 const float *pool, const IndexSelectParams &p, int32_t *out, const ParallelFor &pfor) {
  int64_t H = p.num_heads, D = p.head_dim, K = p.topk;
  pfor(T, [&](int64_t t) {
    int64_t n = ((int64_t)positions[t] + 1) / p.rate;
    const int32_t *table = tables + (int64_t)slots[seqIds[t]] * tableWidth;
    const float *qt = q + t * H * D;
    std::vector<float> wt(H), score(n);
    for (int64_t h = 0; h < H; ++h)
      wt[h] = w[t * H + h] * p.weight_scale;
    for (int64_t j = 0; j < n; ++j) {
      const float *k = pool + slotOf(table, j, layout.block_size) * layout.row_elems + layout.indexOffset();
      float s = 0;
      for (int64_t h = 0; h < H; ++h) {
        float dot = 0;
        for (int64_t d = 0; d < D; ++d)
          dot += qt[h * D + d] * k[d];
        s += wt[h] * std::max(dot * p.key_scale, 0.0f);
      }
      score[j] = s;
    }
    int64_t keep = std::min(K, n);
    std::vector<int32_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    // Equal scores go to the lower position, so the selection never depends on layout.
    std::partial_sort(order.begin(), order.begin() + keep, order.end(), [&](int32_t a, int32_t b) {
      return score[a] > score[b] || (score[a] == score[b] && a < b);
    });
    // Written in ascending position order, as the CUDA kernel writes them.
    std::sort(order.begin(), order.begin() + keep);
    int32_t *o = out + t * K;
    std::copy(order.begin(), order.begin() + keep, o);
    std::fill(o + keep, o + K, -1);
  });
}

// A complete pool's key (cbc.kv.pool_select): learned or mean pooling of its rows, then the
// optional norm and rotation.
static void pooledKey(const float *pool, const int32_t *table, const KvLayout &layout, const float *ape,
                      const PoolSelectParams &p, int64_t i, float *key) {
  int64_t D = p.head_dim, K = p.pool;
  auto row = [&](int64_t j) {
    return pool + slotOf(table, i * K + j, layout.block_size) * layout.row_elems + layout.indexOffset();
  };
  for (int64_t f = 0; f < D; ++f) {
    if (!ape) { // the mean
      float acc = 0;
      for (int64_t j = 0; j < K; ++j)
        acc += row(j)[f];
      key[f] = acc / (float)K;
      continue;
    }
    // Per feature, its tokens' keys weighted by softmax(g + ape) over the pool.
    float m = -INFINITY, sum = 0, acc = 0;
    for (int64_t j = 0; j < K; ++j)
      m = std::max(m, row(j)[D + f] + ape[j * D + f]);
    for (int64_t j = 0; j < K; ++j) {
      float e = std::exp(row(j)[D + f] + ape[j * D + f] - m);
      sum += e;
      acc += e * row(j)[f];
    }
    key[f] = acc / sum;
  }
  if (p.key_norm)
    rmsNorm(key, 1, D, D, p.key_norm, p.eps, p.norm_offset, key);
  int64_t half = (int64_t)p.key_freqs.size();
  for (int64_t f = 0; f < half; ++f) {
    float angle = (float)(i * K) * p.key_freqs[f], c = std::cos(angle), sn = std::sin(angle);
    float x1 = key[f], x2 = key[f + half];
    key[f] = x1 * c - x2 * sn;
    key[f + half] = x2 * c + x1 * sn;
  }
}

void poolSelect(const float *q, const float *w, int64_t T, const int32_t *positions, const int32_t *seqIds,
                const int32_t *slots, const int32_t *tables, int64_t tableWidth, const KvLayout &layout,
                const float *pool, const float *ape, const PoolSelectParams &p, int32_t *out, const ParallelFor &pfor) {
  int64_t H = p.num_heads, D = p.head_dim, N = p.pools, K = p.pool;
  int64_t width = p.blocks ? N + 1 : N * K + K - 1;
  pfor(T, [&](int64_t t) {
    int64_t pos = positions[t], complete = (pos + 1) / K;
    int32_t *o = out + t * width;
    std::fill(o, o + width, -1);
    std::vector<int32_t> chosen(complete);
    std::iota(chosen.begin(), chosen.end(), 0);
    if (complete > N) {
      const int32_t *table = tables + (int64_t)slots[seqIds[t]] * tableWidth;
      const float *qt = q + t * H * D;
      std::vector<float> score(complete), key(D);
      for (int64_t i = 0; i < complete; ++i) {
        pooledKey(pool, table, layout, ape, p, i, key.data());
        float s = 0;
        for (int64_t h = 0; h < H; ++h) {
          float dot = 0;
          for (int64_t f = 0; f < D; ++f)
            dot += qt[h * D + f] * key[f];
          s += (w ? w[t * H + h] : 1.0f) * p.weight_scale * std::max(dot * p.key_scale, 0.0f);
        }
        score[i] = s;
      }
      // Equal scores go to the lower pool, as in cbc.kv.index_select.
      std::partial_sort(chosen.begin(), chosen.begin() + N, chosen.end(), [&](int32_t a, int32_t b) {
        return score[a] > score[b] || (score[a] == score[b] && a < b);
      });
      chosen.resize(N);
      std::sort(chosen.begin(), chosen.end());
    }
    if (p.blocks) {
      std::copy(chosen.begin(), chosen.end(), o);
      if (complete * K <= pos) // the open pool
        o[chosen.size()] = (int32_t)complete;
      return;
    }
    for (size_t i = 0; i < chosen.size(); ++i)
      for (int64_t j = 0; j < K; ++j)
        o[i * K + j] = (int32_t)(chosen[i] * K + j);
    for (int64_t j = 0; complete * K + j <= pos; ++j) // the open pool, up to the query
      o[N * K + j] = (int32_t)(complete * K + j);
  });
}

void blockSelect(const float *q, int64_t T, const int32_t *positions, const int32_t *seqIds, const int32_t *slots,
                 const int32_t *tables, int64_t tableWidth, const KvLayout &layout, const float *pool,
                 const BlockSelectParams &p, int32_t *out, const ParallelFor &pfor) {
  int64_t H = p.num_heads, D = p.head_dim, B = p.block, K = p.topk;
  pfor(T * H, [&](int64_t th) {
    int64_t t = th / H, h = th % H, pos = positions[t], nb = pos / B + 1;
    const int32_t *table = tables + (int64_t)slots[seqIds[t]] * tableWidth;
    const float *qh = q + th * D;
    std::vector<float> score(nb, -INFINITY);
    for (int64_t j = 0; j <= pos; ++j) {
      const float *k = pool + slotOf(table, j, layout.block_size) * layout.row_elems + layout.indexOffset();
      float dot = 0;
      for (int64_t d = 0; d < D; ++d)
        dot += qh[d] * k[d];
      score[j / B] = std::max(score[j / B], dot);
    }
    for (int64_t i = 0; i < p.local; ++i)
      score[std::max<int64_t>(nb - 1 - i, 0)] = INFINITY;
    int64_t keep = std::min(K, nb);
    std::vector<int32_t> order(nb);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + keep, order.end(), [&](int32_t a, int32_t b) {
      return score[a] > score[b] || (score[a] == score[b] && a < b);
    });
    std::sort(order.begin(), order.begin() + keep);
    int32_t *o = out + th * K;
    std::copy(order.begin(), order.begin() + keep, o);
    std::fill(o + keep, o + K, -1);
  });
}

void sparseLatentAttention(const float *qLatent, const float *qRope, int64_t T, const int32_t *seqIds,
                           const int32_t *slots, const int32_t *tables, int64_t tableWidth, const KvLayout &layout,
                           const float *pool, const LatentAttentionParams &p, const int32_t *selection, int64_t k,
                           float *out, const ParallelFor &pfor) {
  int64_t H = p.num_heads, L = p.latent_dim, R = p.rope_dim;
  pfor(T * H, [&](int64_t th) {
    int64_t t = th / H;
    const int32_t *table = tables + (int64_t)slots[seqIds[t]] * tableWidth, *sel = selection + t * k;
    thread_local std::vector<const float *> rows;
    rows.clear();
    for (int64_t i = 0; i < k; ++i)
      if (sel[i] >= 0)
        rows.push_back(pool + slotOf(table, sel[i], layout.block_size) * layout.row_elems);
    attendRows(rows, rows.size(), qLatent + th * L, qRope + th * R, L, R, p.scale,
               p.sinks ? p.sinks + th % H : nullptr, out + th * L);
  });
}

void gatherRows(const float *x, int64_t width, const int32_t *rows, int64_t n, float *y) {
  for (int64_t r = 0; r < n; ++r)
    std::memcpy(y + r * width, x + (int64_t)rows[r] * width, width * sizeof(float));
}

namespace {
// Group-limited routing: the selection scores of the experts outside the kept groups become
// the fill. Groups tie to the lower index.
void maskRouteGroups(float *keys, int64_t E, const RouteParams &p) {
  int64_t G = p.group_count, per = E / G;
  std::vector<float> groupScore(G);
  for (int64_t g = 0; g < G; ++g) {
    const float *c = keys + g * per;
    float best = -INFINITY, second = -INFINITY;
    for (int64_t i = 0; i < per; ++i) {
      if (c[i] > best) {
        second = best;
        best = c[i];
      } else if (c[i] > second) {
        second = c[i];
      }
    }
    groupScore[g] = p.group_score == fb::GroupScore::Max ? best : best + second;
  }
  std::vector<int64_t> order(G);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return groupScore[a] > groupScore[b]; });
  float fill = p.group_fill == fb::GroupFill::Zero ? 0.0f : -INFINITY;
  for (int64_t r = p.group_keep; r < G; ++r)
    std::fill(keys + order[r] * per, keys + (order[r] + 1) * per, fill);
}
} // namespace

namespace {
// Sigmoid routing with sink experts: the logits are [T, E + S]; the S sinks (ids 0..S-1) and the
// k chosen experts (ids S + e) share one normalisation of their sigmoid scores.
void moeRouteSinks(const float *logits, int64_t T, int64_t E, int64_t k, const RouteParams &p, float *weights,
                   int32_t *ids) {
  int64_t S = p.sinks, W = S + k;
  std::vector<float> probs(E + S), keys(E);
  std::vector<int32_t> order(E);
  for (int64_t t = 0; t < T; ++t) {
    const float *l = logits + t * (E + S);
    for (int64_t e = 0; e < E + S; ++e)
      probs[e] = 1.0f / (1.0f + std::exp(-l[e]));
    for (int64_t e = 0; e < E; ++e)
      keys[e] = p.selection_bias ? probs[e] + p.selection_bias[e] : probs[e];
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return keys[a] > keys[b]; });
    float *w = weights + t * W;
    int32_t *id = ids + t * W;
    double sum = 0;
    for (int64_t i = 0; i < S; ++i) {
      id[i] = (int32_t)i;
      sum += w[i] = probs[E + i];
    }
    for (int64_t j = 0; j < k; ++j) {
      id[S + j] = (int32_t)(S + order[j]);
      sum += w[S + j] = probs[order[j]];
    }
    for (int64_t j = 0; j < W; ++j)
      w[j] = (float)(w[j] / sum) * p.scaling;
  }
}
// Sparsemixer weights of the k experts chosen by logit: round j weighs its expert (logit m) by
// its softmax among the experts not chosen before it and within `threshold` of m, relatively:
// (m - l) / max(|l|, m) <= threshold (a NaN quotient keeps the expert, as in transformers).
void sparsemixerWeights(const float *l, int64_t E, const int32_t *id, int64_t k, float threshold, float *w) {
  for (int64_t j = 0; j < k; ++j) {
    float m = l[id[j]];
    double sum = 0;
    for (int64_t e = 0; e < E; ++e) {
      if (std::find(id, id + j, (int32_t)e) != id + j || (m - l[e]) / std::max(std::fabs(l[e]), m) > threshold)
        continue;
      sum += std::exp((double)(l[e] - m));
    }
    w[j] = (float)(1.0 / sum);
  }
}
} // namespace

void moeRoute(const float *logits, int64_t T, int64_t E, int64_t k, const RouteParams &p, float *weights,
              int32_t *ids) {
  if (p.sinks > 0)
    return moeRouteSinks(logits, T, E - p.sinks, k, p, weights, ids);
  std::vector<float> probs(E), keys(E);
  std::vector<int32_t> order(E);
  for (int64_t t = 0; t < T; ++t) {
    const float *l = logits + t * E;
    if (p.score == RouteScore::TopkSoftmax || p.score == RouteScore::Sparsemixer) {
      std::copy(l, l + E, probs.begin());
    } else if (p.score == RouteScore::Sigmoid) {
      for (int64_t e = 0; e < E; ++e)
        probs[e] = 1.0f / (1.0f + std::exp(-l[e]));
    } else if (p.score == RouteScore::SqrtSoftplus) {
      for (int64_t e = 0; e < E; ++e) // softplus as torch computes it: linear above 20
        probs[e] = std::sqrt(l[e] > 20.0f ? l[e] : std::log1p(std::exp(l[e])));
    } else {
      float m = *std::max_element(l, l + E);
      double sum = 0;
      for (int64_t e = 0; e < E; ++e)
        sum += probs[e] = std::exp(l[e] - m);
      for (float &q : probs)
        q = (float)(q / sum);
    }
    for (int64_t e = 0; e < E; ++e)
      keys[e] = p.selection_bias ? (p.bias_on_logits ? l[e] : probs[e]) + p.selection_bias[e] : probs[e];
    if (p.group_count > 0)
      maskRouteGroups(keys.data(), E, p);
    std::iota(order.begin(), order.end(), 0);
    if (p.table) { // hash routing: the table's experts for the token, in the table's order
      int64_t token = p.tokens[t];
      if (token < 0 || token >= p.vocab)
        throw std::runtime_error("cbc.moe.route: token " + std::to_string(token) + " is outside the routing table");
      for (int64_t j = 0; j < k; ++j) {
        float id = p.table[token * k + j];
        if (!(id >= 0 && id < (float)E))
          throw std::runtime_error("cbc.moe.route: the routing table names an expert outside [0, experts)");
        order[j] = (int32_t)id;
      }
    } else {
      std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return keys[a] > keys[b]; });
    }
    float *w = weights + t * k;
    for (int64_t j = 0; j < k; ++j) {
      ids[t * k + j] = order[j];
      w[j] = probs[order[j]];
    }
    if (p.score == RouteScore::Sparsemixer) {
      sparsemixerWeights(l, E, ids + t * k, k, p.threshold, w);
    } else if (p.score == RouteScore::TopkSoftmax) {
      float m = w[0];
      double sum = 0;
      for (int64_t j = 0; j < k; ++j)
        sum += w[j] = std::exp(w[j] - m);
      for (int64_t j = 0; j < k; ++j)
        w[j] = (float)(w[j] / sum);
    } else if (p.renorm) {
      float sum = 0;
      for (int64_t j = 0; j < k; ++j)
        sum += w[j];
      for (int64_t j = 0; j < k; ++j)
        w[j] /= sum + p.renorm_eps;
    }
    for (int64_t j = 0; j < k; ++j)
      w[j] *= p.scaling;
  }
}

void concatColumns(const std::vector<std::pair<const float *, int64_t>> &inputs, int64_t M, float *y) {
  int64_t width = 0;
  for (const auto &in : inputs)
    width += in.second;
  int64_t col = 0;
  for (const auto &[x, w] : inputs) {
    for (int64_t m = 0; m < M; ++m)
      std::memcpy(y + m * width + col, x + m * w, w * sizeof(float));
    col += w;
  }
}

void moeExperts(const float *x, int64_t T, const int32_t *ids, const float *weights, int64_t k,
                const ExpertWeights &w, Act act, bool interleaved, const SwigluClamp *clamp, float *out,
                const ParallelFor &pfor) {
  int64_t H = w.H, I = w.I, G = w.ungated ? I : 2 * I; // gate_up rows per expert
  std::fill(out, out + T * H, 0.0f);
  // Tokens grouped by expert, experts in ascending order: one GEMM pair per expert.
  std::vector<std::vector<std::pair<int64_t, float>>> routed(w.E);
  int64_t all = w.routed < 0 ? w.E : w.routed; // routed experts over every rank
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < k; ++j) {
      int32_t e = ids[t * k + j];
      if (e < 0 || e >= all + w.identity + w.null)
        throw std::runtime_error("moe: expert id out of range");
      if (e >= all + w.identity) // a null expert: the token skips the block
        continue;
      if (e >= all) { // an identity expert
        if (w.owns_identity)
          for (int64_t h = 0; h < H; ++h)
            out[t * H + h] += weights[t * k + j] * x[t * H + h];
        continue;
      }
      if (e < w.first || e >= w.first + w.E) // another rank's expert
        continue;
      routed[e - w.first].emplace_back(t, weights[t * k + j]);
    }
  std::vector<float> xs, gu, act1, ys;
  for (int64_t e = 0; e < w.E; ++e) {
    int64_t n = (int64_t)routed[e].size();
    if (n == 0)
      continue;
    xs.resize(n * H);
    for (int64_t i = 0; i < n; ++i) {
      const float *row = x + routed[e][i].first * H;
      float scale = w.scale_input ? routed[e][i].second : 1.0f;
      for (int64_t h = 0; h < H; ++h)
        xs[i * H + h] = scale * row[h];
    }
    gu.resize(n * G);
    linear(xs.data(), n, H, w.gate_up.at(e * G * H), G, w.gate_up_bias ? w.gate_up_bias + e * G : nullptr,
           gu.data(), pfor);
    act1.resize(n * I);
    if (w.ungated)
      for (int64_t i = 0; i < n * I; ++i)
        act1[i] = activate(act, gu[i]);
    else
      glu(gu.data(), n, I, act, interleaved, clamp, act1.data());
    ys.resize(n * H);
    linear(act1.data(), n, I, w.down.at(e * H * I), H, w.down_bias ? w.down_bias + e * H : nullptr,
           ys.data(), pfor);
    for (int64_t i = 0; i < n; ++i) {
      float *o = out + routed[e][i].first * H;
      float wt = w.scale_input ? 1.0f : routed[e][i].second;
      for (int64_t h = 0; h < H; ++h)
        o[h] += wt * ys[i * H + h];
    }
  }
}

void moeSlotLinear(const float *x, int64_t T, const int32_t *ids, const float *mix, int64_t k, Matrix w, int64_t E,
                   int64_t N, int64_t K, float *out, const ParallelFor &pfor) {
  if (mix)
    std::fill(out, out + T * N, 0.0f);
  // The pairs grouped by expert, experts in ascending order: one GEMM per expert.
  std::vector<std::vector<int64_t>> routed(E);
  for (int64_t pair = 0; pair < T * k; ++pair) {
    int32_t e = ids[pair];
    if (e < 0 || e >= E)
      throw std::runtime_error("moe: expert id out of range");
    routed[e].push_back(pair);
  }
  std::vector<float> xs, ys;
  for (int64_t e = 0; e < E; ++e) {
    int64_t n = (int64_t)routed[e].size();
    if (n == 0)
      continue;
    xs.resize(n * K);
    for (int64_t i = 0; i < n; ++i) {
      int64_t pair = routed[e][i];
      const float *row = x + (mix ? pair : pair / k) * K;
      std::copy(row, row + K, xs.begin() + i * K);
    }
    ys.resize(n * N);
    linear(xs.data(), n, K, w.at(e * N * K), N, nullptr, ys.data(), pfor);
    for (int64_t i = 0; i < n; ++i) {
      int64_t pair = routed[e][i];
      const float *y = ys.data() + i * N;
      if (!mix) {
        std::copy(y, y + N, out + pair * N);
        continue;
      }
      float *o = out + pair / k * N;
      for (int64_t c = 0; c < N; ++c)
        o[c] += mix[pair] * y[c];
    }
  }
}

void rmsNormGated(const float *x, const float *z, int64_t M, int64_t width, int64_t group,
                  const float *w, bool perRow, float eps, float offset, Act gateAct, bool normFirst, float *y) {
  auto act = [&](float v) { return activate(gateAct, v); };
  std::vector<float> tmp(group);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t g0 = 0; g0 < width; g0 += group) {
      const float *xr = x + m * width + g0, *zr = z + m * width + g0;
      float *yr = y + m * width + g0;
      const float *wg = w && perRow ? w + g0 : w;
      for (int64_t j = 0; j < group; ++j)
        tmp[j] = normFirst ? xr[j] : xr[j] * act(zr[j]);
      double sumsq = 0;
      for (int64_t j = 0; j < group; ++j)
        sumsq += (double)tmp[j] * tmp[j];
      float inv = 1.0f / std::sqrt((float)(sumsq / group) + eps);
      for (int64_t j = 0; j < group; ++j) {
        float n = tmp[j] * inv * (wg ? wg[j] + offset : 1.0f);
        yr[j] = normFirst ? n * act(zr[j]) : n;
      }
    }
}

void groupDot(const float *a, const float *b, int64_t T, int64_t width, int64_t groups, float scale, Act act,
              float *y) {
  int64_t D = width / groups;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t g = 0; g < groups; ++g) {
      const float *ar = a + t * width + g * D, *br = b + t * width + g * D;
      float acc = 0.0f;
      for (int64_t i = 0; i < D; ++i)
        acc += ar[i] * br[i];
      y[t * groups + g] = activate(act, scale * acc);
    }
}

void ngramEmbed(const int32_t *tokens, Matrix table, int64_t D, const NgramParams &p, const StateRows &rows,
                float *pool, float *y, const ParallelFor &pfor) {
  int64_t n = (int64_t)p.multipliers.size(), H = n - 1, P = (int64_t)p.primes.size();
  auto toFloatRow = storageTraits(table.format).toFloatRow;
  pfor(rows.num_requests, [&](int64_t r) {
    int64_t begin = rows.cu_seqlens[r], end = rows.cu_seqlens[r + 1];
    float *state = startState(rows, pool, r, H, H);
    if (!rows.has_initial[r]) // before the start: EOS
      std::fill(state, state + H, (float)p.eos);
    std::vector<int64_t> hist(H + end - begin); // the state's ids, oldest first, then this step's
    for (int64_t i = 0; i < H; ++i)
      hist[i] = (int64_t)state[i];
    for (int64_t t = begin; t < end; ++t)
      hist[H + t - begin] = tokens[t];
    std::vector<int64_t> ctx(n);
    for (int64_t t = begin; t < end; ++t) {
      int64_t now = H + t - begin;
      // c_s: the token s back, or EOS once the walk back has crossed an EOS.
      ctx[0] = hist[now];
      bool crossed = false;
      for (int64_t s = 1; s < n; ++s) {
        crossed = crossed || (s > 1 && hist[now - s + 1] == p.eos); // an EOS between it and the token
        ctx[s] = crossed ? p.eos : hist[now - s];
      }
      uint64_t mixed = 0;
      for (int64_t m = 2; m <= n; ++m) {
        mixed ^= (uint64_t)ctx[m - 1] * (uint64_t)p.multipliers[m - 1];
        if (m == 2)
          mixed ^= (uint64_t)ctx[0] * (uint64_t)p.multipliers[0];
        for (int64_t k = 0; k < p.heads_per_ngram; ++k) {
          int64_t g = (m - 2) * p.heads_per_ngram + k;
          int64_t row = (int64_t)(mixed % (uint64_t)p.primes[g]) + p.offsets[g];
          toFloatRow(table.data, D, row, y + (t * P + g) * D);
        }
      }
    }
    for (int64_t i = 0; i < H; ++i)
      state[i] = (float)hist[end - begin + i];
  });
}

namespace {
// A running softmax per feature over the slots pooled so far (the state's accumulators): the
// largest logit m, the sum l of exp(g - m) and the kv weighted by them, rescaled as m grows.
// A zero accumulator (l = 0) is empty whatever its m.
struct Pooled {
  float *m, *l, *acc;
  Pooled(float *at, int64_t D) : m(at), l(at + D), acc(at + 2 * D) {}
  void add(const float *kv, const float *g, const float *ape, int64_t D) {
    for (int64_t f = 0; f < D; ++f) {
      float logit = g[f] + ape[f], mn = std::max(m[f], logit);
      float c = std::exp(m[f] - mn), e = std::exp(logit - mn);
      l[f] = l[f] * c + e;
      acc[f] = acc[f] * c + e * kv[f];
      m[f] = mn;
    }
  }
  void clear(int64_t D) { std::fill(m, m + 3 * D, 0.0f); }
};
} // namespace

void windowPool(const float *x, const int32_t *positions, const float *ape, const WindowPoolParams &p,
                const StateRows &rows, float *pool, float *y, const ParallelFor &pfor) {
  int64_t R = p.rate, D = p.dim, S = p.overlap ? 2 : 1, size = S * 3 * D;
  pfor(rows.num_requests, [&](int64_t r) {
    float *state = startState(rows, pool, r, size, size);
    // The entry of the open window; with overlap also the next one, which pools the open
    // window's first halves.
    Pooled cur(state, D), next(state + 3 * D, D);
    for (int64_t t = rows.cu_seqlens[r]; t < rows.cu_seqlens[r + 1]; ++t) {
      int64_t pos = positions[t], s = pos % R, w = pos / R;
      const float *kv = x + t * 2 * S * D, *g = kv + S * D, *a = ape + s * S * D;
      cur.add(kv + (S - 1) * D, g + (S - 1) * D, a + (S - 1) * D, D); // the window's own half
      if (p.overlap)
        next.add(kv, g, a, D);
      float *yt = y + t * D;
      if (s != R - 1) {
        std::fill(yt, yt + D, 0.0f);
        continue;
      }
      for (int64_t f = 0; f < D; ++f)
        yt[f] = cur.acc[f] / cur.l[f];
      if (p.norm) {
        double ss = 0;
        for (int64_t f = 0; f < D; ++f)
          ss += (double)yt[f] * yt[f];
        float inv = 1.0f / std::sqrt((float)(ss / (double)D) + p.eps);
        for (int64_t f = 0; f < D; ++f)
          yt[f] = yt[f] * inv * p.norm[f];
      }
      if (p.rope) {
        int32_t first = (int32_t)(w * R);
        int64_t len = pos + 1;
        rope(yt, 1, D, *p.rope, &first, &len, yt, serialFor);
      }
      if (p.overlap) { // the next entry already holds this window's first halves
        std::copy(next.m, next.m + 3 * D, cur.m);
        next.clear(D);
      } else {
        cur.clear(D);
      }
    }
  });
}

float *startState(const StateRows &rows, float *pool, int64_t r, int64_t stride, int64_t size) {
  float *S = pool + rows.state_out[r] * stride;
  const float *in = pool + rows.state_in[r] * stride;
  if (!rows.has_initial[r])
    std::fill(S, S + size, 0.0f);
  else if (in != S)
    std::copy(in, in + size, S);
  return S;
}

// Request r's conv state: its K - 1 inputs per channel, a fresh request's set to `initial`.
static float *convState(const StateRows &rows, float *pool, int64_t r, int64_t C, int64_t H, const float *initial) {
  float *state = startState(rows, pool, r, C * H, C * H);
  if (initial && !rows.has_initial[r])
    for (int64_t c = 0; c < C; ++c)
      std::fill(state + c * H, state + (c + 1) * H, initial[c]);
  return state;
}

// A depthwise conv whose tap j reads the input (K - 1 - j) * dilation rows back: the state keeps
// the last (K - 1) * dilation inputs, oldest first.
static void conv1dDilated(const float *x, int64_t C, int64_t K, const float *w, const float *bias, Act act,
                          const StateRows &rows, float *pool, float *y, const ParallelFor &pfor, bool residual,
                          const float *initial, const ConvForm &f) {
  int64_t d = f.dilation, H = (K - 1) * d;
  pfor(rows.num_requests, [&](int64_t r) {
    int64_t begin = rows.cu_seqlens[r], end = rows.cu_seqlens[r + 1];
    float *state = convState(rows, pool, r, C, H, initial);
    std::vector<float> hist(H + end - begin); // the state, then this step's inputs
    for (int64_t c = 0; c < C; ++c) {
      std::copy(state + c * H, state + (c + 1) * H, hist.begin());
      for (int64_t t = begin; t < end; ++t)
        hist[H + t - begin] = x[t * C + c];
      for (int64_t t = begin; t < end; ++t) {
        int64_t now = H + t - begin;
        float acc = bias ? bias[c] : 0.0f;
        for (int64_t j = 0; j < K; ++j)
          acc += w[c * K + j] * hist[now - (K - 1 - j) * d];
        y[t * C + c] = f.scale * (activate(act, acc) + (residual ? x[t * C + c] : 0.0f));
      }
      std::copy(hist.end() - H, hist.end(), state + c * H);
    }
  });
}

// A depthwise conv whose taps change per token (ConvForm::taps) or count back from the row.
static void conv1dDynamic(const float *x, int64_t C, int64_t K, const float *w, const float *bias, Act act,
                          const StateRows &rows, float *pool, float *y, const ParallelFor &pfor, bool residual,
                          const float *initial, const ConvForm &f) {
  int64_t H = K - 1, D = f.taps ? C / (f.width / K) : C;
  pfor(rows.num_requests, [&](int64_t r) {
    int64_t begin = rows.cu_seqlens[r], end = rows.cu_seqlens[r + 1];
    float *state = convState(rows, pool, r, C, H, initial);
    std::vector<float> hist(H + 1);
    for (int64_t c = 0; c < C; ++c) {
      std::copy(state + c * H, state + (c + 1) * H, hist.begin());
      for (int64_t t = begin; t < end; ++t) {
        hist[H] = x[t * C + c]; // hist[j]: the input K - 1 - j rows back
        const float *dyn = f.taps ? f.taps + t * f.width + (c / D) * K : nullptr;
        float acc = bias ? bias[c] : 0.0f;
        for (int64_t j = 0; j < K; ++j) {
          int64_t i = f.lag_order ? K - 1 - j : j; // the weight's index for that input
          acc += (w[c * K + i] + (dyn ? dyn[i] : 0.0f)) * hist[j];
        }
        y[t * C + c] = f.scale * (activate(act, acc) + (residual ? x[t * C + c] : 0.0f));
        std::copy(hist.begin() + 1, hist.end(), hist.begin());
      }
      std::copy(hist.begin(), hist.begin() + H, state + c * H);
    }
  });
}

void conv1dStates(const float *x, int64_t C, int64_t K, const float *w, const float *bias, Act act,
                  const StateRows &rows, float *pool, float *y, const ParallelFor &pfor, bool residual, int64_t G,
                  const float *initial, const ConvForm &form) {
  if (form.taps || form.lag_order)
    return conv1dDynamic(x, C, K, w, bias, act, rows, pool, y, pfor, residual, initial, form);
  if (form.dilation > 1)
    return conv1dDilated(x, C, K, w, bias, act, rows, pool, y, pfor, residual, initial, form);
  int64_t H = K - 1;
  pfor(rows.num_requests, [&](int64_t r) {
    int64_t begin = rows.cu_seqlens[r], end = rows.cu_seqlens[r + 1];
    float *state = convState(rows, pool, r, C, H, initial);
    // One group of G channels at a time: its outputs read only its own inputs.
    std::vector<float> hist(G * H);
    for (int64_t g0 = 0; g0 < C; g0 += G) {
      std::copy(state + g0 * H, state + (g0 + G) * H, hist.begin());
      for (int64_t t = begin; t < end; ++t) {
        const float *xr = x + t * C + g0;
        for (int64_t c = g0; c < g0 + G; ++c) {
          const float *wc = w + c * G * K;
          float acc = bias ? bias[c] : 0.0f;
          for (int64_t i = 0; i < G; ++i) {
            for (int64_t j = 0; j < H; ++j)
              acc += wc[i * K + j] * hist[i * H + j];
            acc += wc[i * K + H] * xr[i];
          }
          y[t * C + c] = form.scale * (activate(act, acc) + (residual ? x[t * C + c] : 0.0f));
        }
        for (int64_t i = 0; H > 0 && i < G; ++i) {
          std::copy(hist.begin() + i * H + 1, hist.begin() + (i + 1) * H, hist.begin() + i * H);
          hist[i * H + H - 1] = xr[i];
        }
      }
      std::copy(hist.begin(), hist.end(), state + g0 * H);
    }
  });
}

void wkvScan(const float *k, const float *v, int64_t C, const float *timeDecay, const float *timeFirst,
             const StateRows &rows, float *pool, float *y, const ParallelFor &pfor) {
  pfor(rows.num_requests, [&](int64_t r) {
    int64_t begin = rows.cu_seqlens[r], end = rows.cu_seqlens[r + 1];
    float *num = startState(rows, pool, r, 3 * C, 3 * C), *den = num + C, *exponent = den + C;
    if (!rows.has_initial[r])
      std::fill(exponent, exponent + C, -1e30f);
    for (int64_t c = 0; c < C; ++c) {
      float w = -std::exp(timeDecay[c]), u = timeFirst[c], a = num[c], b = den[c], p = exponent[c];
      for (int64_t t = begin; t < end; ++t) {
        float kt = k[t * C + c], vt = v[t * C + c];
        float q = std::max(p, kt + u), e1 = std::exp(p - q), e2 = std::exp(kt + u - q);
        y[t * C + c] = (e1 * a + e2 * vt) / (e1 * b + e2);
        float q2 = std::max(p + w, kt);
        e1 = std::exp(p + w - q2);
        e2 = std::exp(kt - q2);
        a = e1 * a + e2 * vt;
        b = e1 * b + e2;
        p = q2;
      }
      num[c] = a;
      den[c] = b;
      exponent[c] = p;
    }
  });
}

// softplus as torch computes it: x itself above 20.
static float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

void rgLruScan(const float *x, const float *inputGate, const float *recurrentGate, const float *param, int64_t C,
               const StateRows &rows, float *pool, float *y, const ParallelFor &pfor) {
  pfor(rows.num_requests, [&](int64_t r) {
    int64_t begin = rows.cu_seqlens[r], end = rows.cu_seqlens[r + 1];
    float *h = startState(rows, pool, r, C, C);
    for (int64_t c = 0; c < C; ++c) {
      float state = h[c], sp = softplus(param[c]);
      for (int64_t t = begin; t < end; ++t) {
        int64_t i = t * C + c;
        bool reset = t == begin && !rows.has_initial[r];
        float logA = -8.0f * sigmoid(recurrentGate[i]) * sp;
        float in = x[i] * sigmoid(inputGate[i]);
        float a = reset ? 0.0f : std::exp(logA), scale = reset ? 1.0f : std::sqrt(1.0f - std::exp(2.0f * logA));
        state = a * state + in * scale;
        y[i] = state;
      }
      h[c] = state;
    }
  });
}

void shiftStates(const float *x, int64_t C, const float *initial, const StateRows &rows, float *pool, float *y,
                 const ParallelFor &pfor) {
  pfor(rows.num_requests, [&](int64_t r) {
    int64_t begin = rows.cu_seqlens[r], end = rows.cu_seqlens[r + 1];
    float *state = startState(rows, pool, r, C, C);
    if (initial && !rows.has_initial[r])
      std::copy(initial, initial + C, state);
    for (int64_t t = begin; t < end; ++t) {
      std::copy(state, state + C, y + t * C);
      std::copy(x + t * C, x + (t + 1) * C, state);
    }
  });
}

} // namespace cbc::rt::cpu
