#include "runtime/cpu/kernels.h"

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

void embed(const int32_t *tokens, int64_t T, const float *table, int64_t H, float scale, float *out) {
  for (int64_t t = 0; t < T; ++t) {
    const float *row = table + (int64_t)tokens[t] * H;
    for (int64_t j = 0; j < H; ++j)
      out[t * H + j] = row[j] * scale;
  }
}

void linear(const float *x, int64_t M, int64_t K, const float *w, int64_t N, const float *bias,
            float *y) {
  if (M == 0)
    return;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)M, (int)N, (int)K, 1.0f, x, (int)K, w,
              (int)K, 0.0f, y, (int)N);
  if (bias)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n)
        y[m * N + n] += bias[n];
}

void rmsNorm(const float *x, int64_t M, int64_t width, int64_t group, const float *w, float eps,
             float offset, float *y) {
  for (int64_t m = 0; m < M; ++m)
    for (int64_t g0 = 0; g0 < width; g0 += group) {
      const float *xr = x + m * width + g0;
      float *yr = y + m * width + g0;
      double sumsq = 0;
      for (int64_t j = 0; j < group; ++j)
        sumsq += (double)xr[j] * xr[j];
      float inv = 1.0f / std::sqrt((float)(sumsq / group) + eps);
      for (int64_t j = 0; j < group; ++j)
        yr[j] = xr[j] * inv * (w ? w[j] + offset : 1.0f);
    }
}

void add(const float *a, const float *b, int64_t n, float *y) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = a[i] + b[i];
}

Act parseAct(const std::string &name) {
  if (name == "silu") return Act::Silu;
  if (name == "gelu_tanh") return Act::GeluTanh;
  if (name == "gelu") return Act::Gelu;
  if (name == "gpt_oss") return Act::GptOss;
  if (name == "none") return Act::None;
  if (name == "relu") return Act::Relu;
  if (name == "relu2") return Act::Relu2;
  throw std::runtime_error("unknown activation '" + name + "'");
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
  case Act::GptOss:
    return x; // handled in glu()
  case Act::None:
    return x;
  case Act::Relu:
    return x > 0.0f ? x : 0.0f;
  case Act::Relu2:
    return x > 0.0f ? x * x : 0.0f;
  }
  return x;
}

void glu(const float *x, int64_t M, int64_t I, Act act, bool interleaved, float limit, float alpha,
         float *y) {
  for (int64_t m = 0; m < M; ++m) {
    const float *row = x + m * 2 * I;
    for (int64_t i = 0; i < I; ++i) {
      float g = interleaved ? row[2 * i] : row[i];
      float u = interleaved ? row[2 * i + 1] : row[I + i];
      if (act == Act::GptOss) {
        g = std::min(g, limit);
        u = std::clamp(u, -limit, limit);
        y[m * I + i] = (u + 1.0f) * (g / (1.0f + std::exp(-alpha * g)));
      } else {
        y[m * I + i] = activate(act, g) * u;
      }
    }
  }
}

void softcap(const float *x, int64_t n, float cap, float *y) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = cap * std::tanh(x[i] / cap);
}

void sigmoidGate(const float *x, const float *g, int64_t M, int64_t width, int64_t gWidth, float *y,
                 bool sigmoid) {
  for (int64_t m = 0; m < M; ++m)
    for (int64_t j = 0; j < width; ++j) {
      float gv = g[m * gWidth + (gWidth == 1 ? 0 : j)];
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
          const int64_t *seqLen, float *y, const ParallelFor &pfor) {
  int64_t heads = width / p.head_dim, half = p.rotary_dim / 2;
  pfor(T, [&](int64_t t) {
    std::vector<float> freq;
    ropeFrequencies(p, seqLen[t], freq);
    std::vector<float> c(half), s(half);
    for (int64_t i = 0; i < half; ++i) {
      // Angle in float32, then cos/sin scaled by the attention factor, as transformers does.
      float angle = (float)positions[t] * freq[i];
      c[i] = std::cos(angle) * p.attention_factor;
      s[i] = std::sin(angle) * p.attention_factor;
    }
    for (int64_t h = 0; h < heads; ++h) {
      const float *xh = x + t * width + h * p.head_dim;
      float *yh = y + t * width + h * p.head_dim;
      for (int64_t i = 0; i < half; ++i) {
        int64_t a = p.interleaved ? 2 * i : i, b = p.interleaved ? 2 * i + 1 : i + half;
        float x1 = xh[a], x2 = xh[b];
        yh[a] = x1 * c[i] - x2 * s[i];
        yh[b] = x2 * c[i] + x1 * s[i];
      }
      for (int64_t j = p.rotary_dim; j < p.head_dim; ++j)
        yh[j] = xh[j];
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
  int64_t vElems = layout.row_elems - layout.k_elems;
  for (int64_t t = 0; t < T; ++t) {
    const int32_t *table = tables + (int64_t)slots[seqIds[t]] * tableWidth;
    float *row = pool + slotOf(table, positions[t], layout.block_size) * layout.row_elems;
    std::memcpy(row, k + t * layout.k_elems, layout.k_elems * sizeof(float));
    std::memcpy(row + layout.k_elems, v + t * vElems, vElems * sizeof(float));
  }
}

void pagedAttention(const float *q, int64_t T, const int32_t *positions, const int32_t *seqIds,
                    const int32_t *slots, const int32_t *tables, int64_t tableWidth,
                    const KvLayout &layout,
                    const float *pool, const AttentionParams &p, float *out,
                    const ParallelFor &pfor) {
  int64_t H = p.num_heads, D = p.head_dim, Dv = p.v_head_dim;
  int64_t group = H / p.num_kv_heads;
  pfor(T * H, [&](int64_t th) {
    int64_t t = th / H, h = th % H, kvh = h / group;
    int64_t pos = positions[t];
    int64_t lo = 0;
    if (p.window > 0)
      lo = std::max<int64_t>(0, pos - p.window + 1);
    if (p.chunk > 0)
      lo = pos / p.chunk * p.chunk;
    const float *qh = q + (t * H + h) * D;
    const int32_t *table = tables + (int64_t)slots[seqIds[t]] * tableWidth;
    std::vector<float> scores(pos - lo + 1);
    float maxScore = -INFINITY;
    for (int64_t j = lo; j <= pos; ++j) {
      const float *kr = pool + slotOf(table, j, layout.block_size) * layout.row_elems + kvh * D;
      float dot = 0;
      for (int64_t d = 0; d < D; ++d)
        dot += qh[d] * kr[d];
      float s = dot * p.scale;
      if (p.softcap > 0)
        s = p.softcap * std::tanh(s / p.softcap);
      scores[j - lo] = s;
      maxScore = std::max(maxScore, s);
    }
    float sink = p.sinks ? p.sinks[h] : -INFINITY;
    maxScore = std::max(maxScore, sink);
    double denom = p.sinks ? std::exp((double)sink - maxScore) : 0.0;
    for (float &s : scores) {
      s = std::exp(s - maxScore);
      denom += s;
    }
    float *oh = out + (t * H + h) * Dv;
    std::fill(oh, oh + Dv, 0.0f);
    for (int64_t j = lo; j <= pos; ++j) {
      const float *vr =
          pool + slotOf(table, j, layout.block_size) * layout.row_elems + layout.k_elems + kvh * Dv;
      float w = (float)(scores[j - lo] / denom);
      for (int64_t d = 0; d < Dv; ++d)
        oh[d] += w * vr[d];
    }
  });
}

void gatherRows(const float *x, int64_t width, const int32_t *rows, int64_t n, float *y) {
  for (int64_t r = 0; r < n; ++r)
    std::memcpy(y + r * width, x + (int64_t)rows[r] * width, width * sizeof(float));
}

void moeRoute(const float *logits, int64_t T, int64_t E, int64_t k, const RouteParams &p, float *weights,
              int32_t *ids) {
  std::vector<float> probs(E), keys(E);
  std::vector<int32_t> order(E);
  for (int64_t t = 0; t < T; ++t) {
    const float *l = logits + t * E;
    if (p.score == RouteScore::TopkSoftmax) {
      std::copy(l, l + E, probs.begin());
    } else if (p.score == RouteScore::Sigmoid) {
      for (int64_t e = 0; e < E; ++e)
        probs[e] = 1.0f / (1.0f + std::exp(-l[e]));
    } else {
      float m = *std::max_element(l, l + E);
      double sum = 0;
      for (int64_t e = 0; e < E; ++e)
        sum += probs[e] = std::exp(l[e] - m);
      for (float &q : probs)
        q = (float)(q / sum);
    }
    for (int64_t e = 0; e < E; ++e)
      keys[e] = p.selection_bias ? probs[e] + p.selection_bias[e] : probs[e];
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return keys[a] > keys[b]; });
    float *w = weights + t * k;
    for (int64_t j = 0; j < k; ++j) {
      ids[t * k + j] = order[j];
      w[j] = probs[order[j]];
    }
    if (p.score == RouteScore::TopkSoftmax) {
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
                const ExpertWeights &w, Act act, bool interleaved, float limit, float alpha,
                float *out) {
  int64_t H = w.H, I = w.I, G = w.ungated ? I : 2 * I; // gate_up rows per expert
  std::fill(out, out + T * H, 0.0f);
  // Tokens grouped by expert, experts in ascending order: one GEMM pair per expert.
  std::vector<std::vector<std::pair<int64_t, float>>> routed(w.E);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < k; ++j) {
      int32_t e = ids[t * k + j];
      if (e < 0 || e >= w.E)
        throw std::runtime_error("moe: expert id out of range");
      routed[e].emplace_back(t, weights[t * k + j]);
    }
  std::vector<float> xs, gu, act1, ys;
  for (int64_t e = 0; e < w.E; ++e) {
    int64_t n = (int64_t)routed[e].size();
    if (n == 0)
      continue;
    xs.resize(n * H);
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(&xs[i * H], x + routed[e][i].first * H, H * sizeof(float));
    gu.resize(n * G);
    linear(xs.data(), n, H, w.gate_up + e * G * H, G, w.gate_up_bias ? w.gate_up_bias + e * G : nullptr,
           gu.data());
    act1.resize(n * I);
    if (w.ungated)
      for (int64_t i = 0; i < n * I; ++i)
        act1[i] = activate(act, gu[i]);
    else
      glu(gu.data(), n, I, act, interleaved, limit, alpha, act1.data());
    ys.resize(n * H);
    linear(act1.data(), n, I, w.down + e * H * I, H, w.down_bias ? w.down_bias + e * H : nullptr,
           ys.data());
    for (int64_t i = 0; i < n; ++i) {
      float *o = out + routed[e][i].first * H;
      float wt = routed[e][i].second;
      for (int64_t h = 0; h < H; ++h)
        o[h] += wt * ys[i * H + h];
    }
  }
}

void rmsNormGated(const float *x, const float *z, int64_t M, int64_t width, int64_t group,
                  const float *w, bool perRow, float eps, float offset, bool silu, bool normFirst, float *y) {
  auto act = [&](float v) { return silu ? v / (1.0f + std::exp(-v)) : 1.0f / (1.0f + std::exp(-v)); };
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

void conv1dStates(const float *x, int64_t C, int64_t K, const float *w, const float *bias, bool silu,
                  const StateRows &rows, float *pool, float *y, const ParallelFor &pfor) {
  int64_t H = K - 1;
  pfor(rows.num_requests, [&](int64_t r) {
    int64_t begin = rows.cu_seqlens[r], end = rows.cu_seqlens[r + 1];
    float *state = pool + (int64_t)rows.slots[r] * C * H;
    if (!rows.has_initial[r])
      std::fill(state, state + C * H, 0.0f);
    std::vector<float> hist(H);
    for (int64_t c = 0; c < C; ++c) {
      std::copy(state + c * H, state + (c + 1) * H, hist.begin());
      for (int64_t t = begin; t < end; ++t) {
        float xv = x[t * C + c];
        float acc = bias ? bias[c] : 0.0f;
        for (int64_t j = 0; j < H; ++j)
          acc += w[c * K + j] * hist[j];
        acc += w[c * K + H] * xv;
        y[t * C + c] = silu ? acc / (1.0f + std::exp(-acc)) : acc;
        if (H > 0) {
          std::copy(hist.begin() + 1, hist.end(), hist.begin());
          hist[H - 1] = xv;
        }
      }
      std::copy(hist.begin(), hist.end(), state + c * H);
    }
  });
}

namespace {
float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

// l2-normalised copies of q (also scaled by dk^-1/2) and k.
void normaliseQk(const float *q, const float *k, int64_t dk, bool l2, float *qn, float *kn) {
  double sq = 0, sk = 0;
  for (int64_t i = 0; i < dk; ++i) {
    sq += (double)q[i] * q[i];
    sk += (double)k[i] * k[i];
  }
  float iq = l2 ? 1.0f / std::sqrt((float)sq + 1e-6f) : 1.0f;
  float ik = l2 ? 1.0f / std::sqrt((float)sk + 1e-6f) : 1.0f;
  float scale = 1.0f / std::sqrt((float)dk);
  for (int64_t i = 0; i < dk; ++i) {
    qn[i] = q[i] * iq * scale;
    kn[i] = k[i] * ik;
  }
}
} // namespace

// Inputs are already normalised: q scaled, k unit length, g the log decay, beta the rate.
void gatedDeltaRecurrent(int64_t n, const float *q, const float *k, const float *v, const float *g,
                         const float *beta, int64_t dk, int64_t dv, int64_t qStride, int64_t vStride,
                         float *S, float *out, int64_t outStride) {
  std::vector<float> u(dv);
  for (int64_t t = 0; t < n; ++t) {
    const float *qt = q + t * qStride, *kt = k + t * qStride, *vt = v + t * vStride;
    float decay = std::exp(g[t]);
    // Two passes over S: decay it while reading S^T k, then add k u^T while reading S^T q.
    std::fill(u.begin(), u.end(), 0.0f);
    for (int64_t i = 0; i < dk; ++i) {
      float *Srow = S + i * dv;
      float ki = kt[i];
      for (int64_t j = 0; j < dv; ++j) {
        Srow[j] *= decay;
        u[j] += Srow[j] * ki;
      }
    }
    for (int64_t j = 0; j < dv; ++j)
      u[j] = (vt[j] - u[j]) * beta[t];
    float *o = out + t * outStride;
    std::fill_n(o, dv, 0.0f);
    for (int64_t i = 0; i < dk; ++i) {
      float *Srow = S + i * dv;
      float ki = kt[i], qi = qt[i];
      for (int64_t j = 0; j < dv; ++j) {
        Srow[j] += ki * u[j];
        o[j] += Srow[j] * qi;
      }
    }
  }
}

// The chunked (UT transform) form: within a chunk, the delta-rule updates are solved as one
// unit lower-triangular system; across chunks the state carries. The products are BLAS calls.
void gatedDeltaChunked(int64_t n, const float *q, const float *k, const float *v, const float *g,
                       const float *beta, int64_t dk, int64_t dv, int64_t qStride, int64_t vStride,
                       float *S, float *out, int64_t outStride, int64_t chunk) {
  const auto RM = CblasRowMajor;
  const auto N = CblasNoTrans, T = CblasTrans;
  std::vector<float> cum(chunk), A(chunk * chunk), P(chunk * chunk), U(chunk * dv), W(chunk * dk),
      Kd(chunk * dk);
  int qs = (int)qStride, os = (int)outStride, DK = (int)dk, DV = (int)dv;
  for (int64_t c0 = 0; c0 < n; c0 += chunk) {
    int64_t L = std::min(chunk, n - c0);
    int l = (int)L, ld = (int)chunk;
    const float *qc = q + c0 * qStride, *kc = k + c0 * qStride, *vc = v + c0 * vStride;
    float acc = 0;
    for (int64_t i = 0; i < L; ++i)
      cum[i] = acc += g[c0 + i];
    // T = I + A with strictly lower A[i][j] = beta_i (k_i . k_j) exp(cum_i - cum_j); the unit
    // diagonal is implied by the solve.
    cblas_sgemm(RM, N, T, l, l, DK, 1.0f, kc, qs, kc, qs, 0.0f, A.data(), ld);
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < i; ++j)
        A[i * chunk + j] *= beta[c0 + i] * std::exp(cum[i] - cum[j]);
    // T U = beta v and T W = beta k exp(cum).
    for (int64_t i = 0; i < L; ++i) {
      float b = beta[c0 + i], e = b * std::exp(cum[i]);
      for (int64_t d = 0; d < dv; ++d)
        U[i * dv + d] = b * vc[i * vStride + d];
      for (int64_t d = 0; d < dk; ++d)
        W[i * dk + d] = e * kc[i * qStride + d];
    }
    cblas_strsm(RM, CblasLeft, CblasLower, N, CblasUnit, l, DV, 1.0f, A.data(), ld, U.data(), DV);
    cblas_strsm(RM, CblasLeft, CblasLower, N, CblasUnit, l, DK, 1.0f, A.data(), ld, W.data(), DK);
    // v_new = U - W S (in U).
    cblas_sgemm(RM, N, N, l, DV, DK, -1.0f, W.data(), DK, S, DV, 1.0f, U.data(), DV);
    // o = diag(exp(cum)) q S + (q k^T masked causally, times exp(cum_i - cum_j)) v_new.
    float *oc = out + c0 * outStride;
    cblas_sgemm(RM, N, T, l, l, DK, 1.0f, qc, qs, kc, qs, 0.0f, P.data(), ld);
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < L; ++j)
        P[i * chunk + j] = j <= i ? P[i * chunk + j] * std::exp(cum[i] - cum[j]) : 0.0f;
    for (int64_t i = 0; i < L; ++i) {
      float e = std::exp(cum[i]);
      for (int64_t d = 0; d < dk; ++d)
        Kd[i * dk + d] = e * qc[i * qStride + d]; // exp(cum_i) q_i, borrowing Kd
    }
    cblas_sgemm(RM, N, N, l, DV, DK, 1.0f, Kd.data(), DK, S, DV, 0.0f, oc, os);
    cblas_sgemm(RM, N, N, l, DV, l, 1.0f, P.data(), ld, U.data(), DV, 1.0f, oc, os);
    // S = exp(cum_last) S + sum_j exp(cum_last - cum_j) k_j v_new_j^T.
    float last = cum[L - 1];
    for (int64_t j = 0; j < L; ++j) {
      float e = std::exp(last - cum[j]);
      for (int64_t d = 0; d < dk; ++d)
        Kd[j * dk + d] = e * kc[j * qStride + d];
    }
    cblas_sgemm(RM, T, N, DK, DV, l, 1.0f, Kd.data(), DK, U.data(), DV, std::exp(last), S, DV);
  }
}

void gatedDeltaScan(const float *q, const float *k, const float *v, const float *a, const float *b,
                    const GatedDeltaParams &p, const StateRows &rows, float *pool, float *out,
                    const ParallelFor &pfor, int64_t chunk) {
  int64_t Hk = p.k_heads, Hv = p.v_heads, dk = p.k_dim, dv = p.v_dim, ratio = Hv / Hk;
  pfor(rows.num_requests * Hv, [&](int64_t rh) {
    int64_t r = rh / Hv, h = rh % Hv, kh = h / ratio;
    int64_t begin = rows.cu_seqlens[r], n = rows.cu_seqlens[r + 1] - begin;
    float *S = pool + ((int64_t)rows.slots[r] * Hv + h) * dk * dv;
    if (!rows.has_initial[r])
      std::fill(S, S + dk * dv, 0.0f);
    if (n == 0)
      return;
    // Per-token inputs of this head, normalised once.
    std::vector<float> qn(n * dk), kn(n * dk), g(n), beta(n);
    for (int64_t t = 0; t < n; ++t) {
      int64_t row = begin + t;
      normaliseQk(q + row * Hk * dk + kh * dk, k + row * Hk * dk + kh * dk, dk, p.qk_l2norm,
                  &qn[t * dk], &kn[t * dk]);
      g[t] = -std::exp(p.A_log[h]) * softplus(a[row * Hv + h] + p.dt_bias[h]);
      beta[t] = p.beta_scale * (1.0f / (1.0f + std::exp(-b[row * Hv + h])));
    }
    const float *vh = v + begin * Hv * dv + h * dv;
    float *oh = out + begin * Hv * dv + h * dv;
    if (n == 1)
      gatedDeltaRecurrent(n, qn.data(), kn.data(), vh, g.data(), beta.data(), dk, dv, dk, Hv * dv, S,
                          oh, Hv * dv);
    else
      gatedDeltaChunked(n, qn.data(), kn.data(), vh, g.data(), beta.data(), dk, dv, dk, Hv * dv, S, oh,
                        Hv * dv, chunk);
  });
}

// One token at a time: S = exp(dt a) S + dt x B^T, y = S C + D x.
void ssdRecurrent(int64_t n, const float *x, const float *dt, float a, const float *B, const float *C,
                  float D, int64_t P, int64_t N, int64_t xStride, int64_t bcStride, float *S, float *out) {
  for (int64_t t = 0; t < n; ++t) {
    const float *xt = x + t * xStride, *Bt = B + t * bcStride, *Ct = C + t * bcStride;
    float decay = std::exp(dt[t] * a);
    float *o = out + t * xStride;
    for (int64_t p = 0; p < P; ++p) {
      float *Sp = S + p * N;
      float xd = dt[t] * xt[p], y = 0.0f;
      for (int64_t k = 0; k < N; ++k) {
        Sp[k] = Sp[k] * decay + xd * Bt[k];
        y += Sp[k] * Ct[k];
      }
      o[p] = y + D * xt[p];
    }
  }
}

// The SSD form: within a chunk, y = (C B^T masked by the decays) (dt x) plus the decayed
// start state read through C; across chunks the state carries. The products are BLAS calls.
void ssdChunked(int64_t n, const float *x, const float *dt, float a, const float *B, const float *C, float D,
                int64_t P, int64_t N, int64_t xStride, int64_t bcStride, float *S, float *out, int64_t chunk) {
  const auto RM = CblasRowMajor;
  const auto NT = CblasNoTrans, TR = CblasTrans;
  std::vector<float> cum(chunk), M(chunk * chunk), X(chunk * P), Cd(chunk * N), Xd(chunk * P);
  int iP = (int)P, iN = (int)N, ld = (int)chunk, xs = (int)xStride, bs = (int)bcStride;
  for (int64_t c0 = 0; c0 < n; c0 += chunk) {
    int64_t L = std::min(chunk, n - c0);
    int l = (int)L;
    const float *xc = x + c0 * xStride, *Bc = B + c0 * bcStride, *Cc = C + c0 * bcStride;
    float acc = 0;
    for (int64_t i = 0; i < L; ++i)
      cum[i] = acc += dt[c0 + i] * a;
    for (int64_t i = 0; i < L; ++i)
      for (int64_t p = 0; p < P; ++p)
        X[i * P + p] = dt[c0 + i] * xc[i * xStride + p];
    // M = (C B^T) with M[i][j] scaled by exp(cum_i - cum_j) for j <= i, zero above.
    cblas_sgemm(RM, NT, TR, l, l, iN, 1.0f, Cc, bs, Bc, bs, 0.0f, M.data(), ld);
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < L; ++j)
        M[i * chunk + j] = j <= i ? M[i * chunk + j] * std::exp(cum[i] - cum[j]) : 0.0f;
    // y = diag(exp(cum)) C S^T + M X.
    for (int64_t i = 0; i < L; ++i) {
      float e = std::exp(cum[i]);
      for (int64_t k = 0; k < N; ++k)
        Cd[i * N + k] = e * Cc[i * bcStride + k];
    }
    float *oc = out + c0 * xStride;
    cblas_sgemm(RM, NT, TR, l, iP, iN, 1.0f, Cd.data(), iN, S, iN, 0.0f, oc, xs);
    cblas_sgemm(RM, NT, NT, l, iP, l, 1.0f, M.data(), ld, X.data(), iP, 1.0f, oc, xs);
    for (int64_t i = 0; i < L; ++i)
      for (int64_t p = 0; p < P; ++p)
        oc[i * xStride + p] += D * xc[i * xStride + p];
    // S = exp(cum_last) S + sum_j exp(cum_last - cum_j) X_j^T B_j.
    float last = cum[L - 1];
    for (int64_t j = 0; j < L; ++j) {
      float e = std::exp(last - cum[j]);
      for (int64_t p = 0; p < P; ++p)
        Xd[j * P + p] = e * X[j * P + p];
    }
    cblas_sgemm(RM, TR, NT, iP, iN, l, 1.0f, Xd.data(), iP, Bc, bs, std::exp(last), S, iN);
  }
}

void ssdScan(const float *x, const float *dt, const float *B, const float *C, const SsdParams &p,
             const StateRows &rows, float *pool, float *out, const ParallelFor &pfor, int64_t chunk) {
  int64_t H = p.heads, P = p.head_dim, N = p.state, G = p.groups, perGroup = H / G;
  pfor(rows.num_requests * H, [&](int64_t rh) {
    int64_t r = rh / H, h = rh % H, g = h / perGroup;
    int64_t begin = rows.cu_seqlens[r], n = rows.cu_seqlens[r + 1] - begin;
    float *S = pool + ((int64_t)rows.slots[r] * H + h) * P * N;
    if (!rows.has_initial[r])
      std::fill(S, S + P * N, 0.0f);
    if (n == 0)
      return;
    std::vector<float> dts(n);
    for (int64_t t = 0; t < n; ++t)
      dts[t] = std::clamp(softplus(dt[(begin + t) * H + h] + p.dt_bias[h]), p.dt_min, p.dt_max);
    float a = -std::exp(p.A_log[h]);
    const float *xh = x + begin * H * P + h * P, *Bg = B + begin * G * N + g * N, *Cg = C + begin * G * N + g * N;
    float *oh = out + begin * H * P + h * P;
    if (n == 1)
      ssdRecurrent(n, xh, dts.data(), a, Bg, Cg, p.D[h], P, N, H * P, G * N, S, oh);
    else
      ssdChunked(n, xh, dts.data(), a, Bg, Cg, p.D[h], P, N, H * P, G * N, S, oh, chunk);
  });
}

void selectiveScan(const float *x, const float *dt, const float *B, const float *C, const float *z,
                   const SelectiveParams &p, const StateRows &rows, float *pool, float *out,
                   const ParallelFor &pfor) {
  const int64_t I = p.channels, N = p.state, G = p.groups, perGroup = I / G, block = 64;
  int64_t blocks = (I + block - 1) / block;
  pfor(rows.num_requests * blocks, [&](int64_t rb) {
    int64_t r = rb / blocks, i0 = (rb % blocks) * block, i1 = std::min(I, i0 + block);
    int64_t begin = rows.cu_seqlens[r], end = rows.cu_seqlens[r + 1];
    std::vector<float> a(N);
    for (int64_t i = i0; i < i1; ++i) {
      float *S = pool + ((int64_t)rows.slots[r] * I + i) * N;
      if (!rows.has_initial[r])
        std::fill(S, S + N, 0.0f);
      int64_t g = i / perGroup;
      for (int64_t k = 0; k < N; ++k)
        a[k] = -std::exp(p.A_log[i * N + k]);
      for (int64_t t = begin; t < end; ++t) {
        float d = softplus(dt[t * I + i] + p.dt_bias[i]), xv = x[t * I + i], y = 0.0f;
        const float *Bt = B + t * G * N + g * N, *Ct = C + t * G * N + g * N;
        for (int64_t k = 0; k < N; ++k) {
          S[k] = std::exp(d * a[k]) * S[k] + d * Bt[k] * xv;
          y += S[k] * Ct[k];
        }
        y += p.D[i] * xv;
        if (z) {
          float zv = z[t * I + i];
          y *= zv / (1.0f + std::exp(-zv));
        }
        out[t * I + i] = y;
      }
    }
  });
}

} // namespace cbc::rt::cpu
