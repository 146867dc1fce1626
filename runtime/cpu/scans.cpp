// The per-request state scans (cbc.state.gated_delta, cbc.state.kda, cbc.state.lightning,
// cbc.state.ssd, cbc.state.selective_scan, cbc.state.mlstm) on the CPU. A file of their own so that only these loops are built with vector libm calls
// (see runtime/CMakeLists.txt).
#include "runtime/cpu/kernels.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace cbc::rt::cpu {

namespace {
float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }
float logSigmoid(float x) { return std::min(x, 0.0f) - std::log1p(std::exp(-std::fabs(x))); }

// The chunked forms' causal decay: M[i][j] *= exp(cum_i - cum_j) for j <= i, zero above.
void causalDecay(float *M, int64_t L, int64_t ld, const float *cum) {
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = 0; j < L; ++j)
      M[i * ld + j] = j <= i ? M[i * ld + j] * std::exp(cum[i] - cum[j]) : 0.0f;
}

// dst[i] = exp(offset + sign * cum_i) * src[i], rows of `width` (src rows `stride` apart).
void decayRows(float *dst, const float *src, int64_t stride, int64_t L, int64_t width, const float *cum,
               float sign, float offset) {
  for (int64_t i = 0; i < L; ++i) {
    float e = std::exp(offset + sign * cum[i]);
    for (int64_t d = 0; d < width; ++d)
      dst[i * width + d] = e * src[i * stride + d];
  }
}

// The state of (request r, head h) in a pool of `heads` states of `size` floats per unit, in the
// request's output unit and holding what it starts from.
float *headState(const StateRows &rows, float *pool, int64_t r, int64_t heads, int64_t h, int64_t size) {
  return startState(rows, pool + h * size, r, heads * size, size);
}

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

// The delta rule token by token; `logDecay(t, i)` is row i's log decay at token t. Two passes
// over S per token: decay it while reading S^T k, then add k u^T while reading S^T q.
template <class LogDecay>
void deltaRuleRecurrent(int64_t n, const float *q, const float *k, const float *v, const float *beta, int64_t dk,
                        int64_t dv, int64_t qStride, int64_t vStride, float *S, float *out, int64_t outStride,
                        LogDecay logDecay) {
  std::vector<float> u(dv);
  for (int64_t t = 0; t < n; ++t) {
    const float *qt = q + t * qStride, *kt = k + t * qStride, *vt = v + t * vStride;
    std::fill(u.begin(), u.end(), 0.0f);
    for (int64_t i = 0; i < dk; ++i) {
      float *Srow = S + i * dv;
      float decay = std::exp(logDecay(t, i)), ki = kt[i];
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
} // namespace

// Inputs are already normalised: q scaled, k unit length, g the log decay, beta the rate.
void gatedDeltaRecurrent(int64_t n, const float *q, const float *k, const float *v, const float *g,
                         const float *beta, int64_t dk, int64_t dv, int64_t qStride, int64_t vStride,
                         float *S, float *out, int64_t outStride) {
  deltaRuleRecurrent(n, q, k, v, beta, dk, dv, qStride, vStride, S, out, outStride,
                     [g](int64_t t, int64_t) { return g[t]; });
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
    causalDecay(P.data(), L, chunk, cum.data());
    decayRows(Kd.data(), qc, qStride, L, dk, cum.data(), 1.0f, 0.0f); // exp(cum_i) q_i, borrowing Kd
    cblas_sgemm(RM, N, N, l, DV, DK, 1.0f, Kd.data(), DK, S, DV, 0.0f, oc, os);
    cblas_sgemm(RM, N, N, l, DV, l, 1.0f, P.data(), ld, U.data(), DV, 1.0f, oc, os);
    // S = exp(cum_last) S + sum_j exp(cum_last - cum_j) k_j v_new_j^T.
    float last = cum[L - 1];
    decayRows(Kd.data(), kc, qStride, L, dk, cum.data(), -1.0f, last);
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
    float *S = headState(rows, pool, r, Hv, h, dk * dv);
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

// ----- Kimi delta attention: the gated delta rule with a decay per key channel -----

// Inputs are already normalised: q scaled, k unit length, g the log decays [n, dk], beta the rates.
void kdaRecurrent(int64_t n, const float *q, const float *k, const float *v, const float *g, const float *beta,
                  int64_t dk, int64_t dv, int64_t qStride, int64_t vStride, float *S, float *out, int64_t outStride) {
  deltaRuleRecurrent(n, q, k, v, beta, dk, dv, qStride, vStride, S, out, outStride,
                     [g, dk](int64_t t, int64_t i) { return g[t * dk + i]; });
}

namespace {
// The chunk's pairwise products under the per-channel decay between rows j <= i:
// A[i][j] = beta_i sum_d k_i k_j exp(G_i - G_j) (strictly lower) and P[i][j] = sum_d q_i k_j
// exp(G_i - G_j) (lower, diagonal included). The exponent is never positive, so nothing
// overflows, which a factored exp(G_i) exp(-G_j) would for strong decays.
void kdaPairs(int64_t L, int64_t dk, const float *q, const float *k, int64_t qStride, const float *G,
              const float *beta, int64_t ld, float *A, float *P) {
  std::vector<float> e(dk);
  for (int64_t i = 0; i < L; ++i) {
    const float *qi = q + i * qStride, *ki = k + i * qStride, *Gi = G + i * dk;
    for (int64_t j = 0; j <= i; ++j) {
      const float *kj = k + j * qStride, *Gj = G + j * dk;
      for (int64_t d = 0; d < dk; ++d)
        e[d] = std::exp(Gi[d] - Gj[d]) * kj[d];
      float a = 0, pq = 0;
      for (int64_t d = 0; d < dk; ++d) {
        a += ki[d] * e[d];
        pq += qi[d] * e[d];
      }
      A[i * ld + j] = j < i ? beta[i] * a : 0.0f;
      P[i * ld + j] = pq;
    }
    for (int64_t j = i + 1; j < L; ++j)
      A[i * ld + j] = P[i * ld + j] = 0.0f;
  }
}
} // namespace

// The chunked (UT transform) form with per-channel decays: as gatedDeltaChunked, with
// G_i = sum of g over the chunk's rows up to i, per channel.
void kdaChunked(int64_t n, const float *q, const float *k, const float *v, const float *g, const float *beta,
                int64_t dk, int64_t dv, int64_t qStride, int64_t vStride, float *S, float *out, int64_t outStride,
                int64_t chunk) {
  const auto RM = CblasRowMajor;
  const auto N = CblasNoTrans, T = CblasTrans;
  std::vector<float> G(chunk * dk), A(chunk * chunk), P(chunk * chunk), U(chunk * dv), W(chunk * dk);
  int os = (int)outStride, DK = (int)dk, DV = (int)dv, ld = (int)chunk;
  for (int64_t c0 = 0; c0 < n; c0 += chunk) {
    int64_t L = std::min(chunk, n - c0);
    int l = (int)L;
    const float *qc = q + c0 * qStride, *kc = k + c0 * qStride, *vc = v + c0 * vStride;
    for (int64_t i = 0; i < L; ++i)
      for (int64_t d = 0; d < dk; ++d)
        G[i * dk + d] = (i ? G[(i - 1) * dk + d] : 0.0f) + g[(c0 + i) * dk + d];
    kdaPairs(L, dk, qc, kc, qStride, G.data(), beta + c0, chunk, A.data(), P.data());
    // (I + A) U = beta v and (I + A) W = beta k exp(G): the delta-rule updates of the chunk solved
    // at once; then v_new = U - W S (in U).
    for (int64_t i = 0; i < L; ++i) {
      float bt = beta[c0 + i];
      for (int64_t d = 0; d < dv; ++d)
        U[i * dv + d] = bt * vc[i * vStride + d];
      for (int64_t d = 0; d < dk; ++d)
        W[i * dk + d] = bt * std::exp(G[i * dk + d]) * kc[i * qStride + d];
    }
    cblas_strsm(RM, CblasLeft, CblasLower, N, CblasUnit, l, DV, 1.0f, A.data(), ld, U.data(), DV);
    cblas_strsm(RM, CblasLeft, CblasLower, N, CblasUnit, l, DK, 1.0f, A.data(), ld, W.data(), DK);
    cblas_sgemm(RM, N, N, l, DV, DK, -1.0f, W.data(), DK, S, DV, 1.0f, U.data(), DV);
    // o = (q exp(G)) S + P v_new, with W reused for q exp(G).
    float *oc = out + c0 * outStride;
    for (int64_t i = 0; i < L; ++i)
      for (int64_t d = 0; d < dk; ++d)
        W[i * dk + d] = std::exp(G[i * dk + d]) * qc[i * qStride + d];
    cblas_sgemm(RM, N, N, l, DV, DK, 1.0f, W.data(), DK, S, DV, 0.0f, oc, os);
    cblas_sgemm(RM, N, N, l, DV, l, 1.0f, P.data(), ld, U.data(), DV, 1.0f, oc, os);
    // S = diag(exp(G_last)) S + sum_j (k_j exp(G_last - G_j)) v_new_j^T.
    const float *last = G.data() + (L - 1) * dk;
    for (int64_t d = 0; d < dk; ++d) {
      float e = std::exp(last[d]);
      for (int64_t j = 0; j < dv; ++j)
        S[d * dv + j] *= e;
    }
    for (int64_t i = 0; i < L; ++i)
      for (int64_t d = 0; d < dk; ++d)
        W[i * dk + d] = std::exp(last[d] - G[i * dk + d]) * kc[i * qStride + d];
    cblas_sgemm(RM, T, N, DK, DV, l, 1.0f, W.data(), DK, U.data(), DV, 1.0f, S, DV);
  }
}

void kdaScan(const float *q, const float *k, const float *v, const float *f, const float *b, const KdaParams &p,
             const StateRows &rows, float *pool, float *out, const ParallelFor &pfor, int64_t chunk) {
  int64_t H = p.heads, dk = p.k_dim, dv = p.v_dim;
  pfor(rows.num_requests * H, [&](int64_t rh) {
    int64_t r = rh / H, h = rh % H;
    int64_t begin = rows.cu_seqlens[r], n = rows.cu_seqlens[r + 1] - begin;
    float *S = headState(rows, pool, r, H, h, dk * dv);
    if (n == 0)
      return;
    // Per-token inputs of this head, normalised once; the gate per channel.
    std::vector<float> qn(n * dk), kn(n * dk), g(n * dk), beta(n);
    float rate = std::exp(p.A_log[h]);
    const float *dt = p.dt_bias + h * dk;
    for (int64_t t = 0; t < n; ++t) {
      int64_t row = begin + t;
      normaliseQk(q + row * H * dk + h * dk, k + row * H * dk + h * dk, dk, true, &qn[t * dk], &kn[t * dk]);
      const float *ft = f + row * H * dk + h * dk;
      for (int64_t d = 0; d < dk; ++d) {
        float x = ft[d] + dt[d];
        g[t * dk + d] = p.bounded ? p.lower_bound / (1.0f + std::exp(-rate * x)) : -rate * softplus(x);
      }
      beta[t] = 1.0f / (1.0f + std::exp(-b[row * H + h]));
    }
    const float *vh = v + begin * H * dv + h * dv;
    float *oh = out + begin * H * dv + h * dv;
    if (n == 1)
      kdaRecurrent(n, qn.data(), kn.data(), vh, g.data(), beta.data(), dk, dv, dk, H * dv, S, oh, H * dv);
    else
      kdaChunked(n, qn.data(), kn.data(), vh, g.data(), beta.data(), dk, dv, dk, H * dv, S, oh, H * dv, chunk);
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
    causalDecay(M.data(), L, chunk, cum.data());
    // y = diag(exp(cum)) C S^T + M X.
    decayRows(Cd.data(), Cc, bcStride, L, N, cum.data(), 1.0f, 0.0f);
    float *oc = out + c0 * xStride;
    cblas_sgemm(RM, NT, TR, l, iP, iN, 1.0f, Cd.data(), iN, S, iN, 0.0f, oc, xs);
    cblas_sgemm(RM, NT, NT, l, iP, l, 1.0f, M.data(), ld, X.data(), iP, 1.0f, oc, xs);
    for (int64_t i = 0; i < L; ++i)
      for (int64_t p = 0; p < P; ++p)
        oc[i * xStride + p] += D * xc[i * xStride + p];
    // S = exp(cum_last) S + sum_j exp(cum_last - cum_j) X_j^T B_j.
    float last = cum[L - 1];
    decayRows(Xd.data(), X.data(), P, L, P, cum.data(), -1.0f, last);
    cblas_sgemm(RM, TR, NT, iP, iN, l, 1.0f, Xd.data(), iP, Bc, bs, std::exp(last), S, iN);
  }
}

void ssdScan(const float *x, const float *dt, const float *B, const float *C, const SsdParams &p,
             const StateRows &rows, float *pool, float *out, const ParallelFor &pfor, int64_t chunk) {
  int64_t H = p.heads, P = p.head_dim, N = p.state, G = p.groups, perGroup = H / G;
  pfor(rows.num_requests * H, [&](int64_t rh) {
    int64_t r = rh / H, h = rh % H, g = h / perGroup;
    int64_t begin = rows.cu_seqlens[r], n = rows.cu_seqlens[r + 1] - begin;
    float *S = headState(rows, pool, r, H, h, P * N);
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
      float *S = headState(rows, pool, r, I, i, N);
      int64_t g = i / perGroup;
      for (int64_t k = 0; k < N; ++k)
        a[k] = -std::exp(p.A_log[i * N + k]);
      for (int64_t t = begin; t < end; ++t) {
        float d = softplus(dt[t * I + i] + p.dt_bias[i]), xv = x[t * I + i], y = 0.0f;
        const float *Bt = B + t * G * N + g * N, *Ct = C + t * G * N + g * N;
        // The state update has no loop-carried dependence, so it vectorises (exp included, with
        // libmvec); the dot product stays a separate, in-order reduction.
        for (int64_t k = 0; k < N; ++k)
          S[k] = std::exp(d * a[k]) * S[k] + d * Bt[k] * xv;
        for (int64_t k = 0; k < N; ++k)
          y += S[k] * Ct[k];
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

// Lightning attention, one token at a time: S = exp(-decay) S + k^T v, o = q S.
void lightningRecurrent(int64_t n, const float *q, const float *k, const float *v, float decay, int64_t d,
                        int64_t stride, float *S, float *out) {
  float r = std::exp(-decay);
  for (int64_t t = 0; t < n; ++t) {
    const float *qt = q + t * stride, *kt = k + t * stride, *vt = v + t * stride;
    float *o = out + t * stride;
    std::fill_n(o, d, 0.0f);
    for (int64_t i = 0; i < d; ++i) {
      float *Srow = S + i * d;
      float ki = kt[i], qi = qt[i];
      for (int64_t j = 0; j < d; ++j) {
        Srow[j] = r * Srow[j] + ki * vt[j];
        o[j] += qi * Srow[j];
      }
    }
  }
}

// The block form: within a block of L rows, o_i = sum_{j<=i} exp(-decay (i-j)) (q_i . k_j) v_j
// plus exp(-decay (i+1)) q_i S; then S = exp(-decay L) S + sum_j exp(-decay (L-1-j)) k_j^T v_j.
// The products are BLAS calls.
void lightningBlocks(int64_t n, const float *q, const float *k, const float *v, float decay, int64_t d,
                     int64_t stride, float *S, float *out, int64_t block) {
  const auto RM = CblasRowMajor;
  const auto N = CblasNoTrans, T = CblasTrans;
  std::vector<float> P(block * block), Qd(block * d), Kd(block * d), e(block + 1);
  for (int64_t i = 0; i <= block; ++i) // e[i] = exp(-decay i), every distance a block needs
    e[i] = std::exp(-decay * (float)i);
  int st = (int)stride, D = (int)d, ld = (int)block;
  for (int64_t c0 = 0; c0 < n; c0 += block) {
    int64_t L = std::min(block, n - c0);
    int l = (int)L;
    const float *qc = q + c0 * stride, *kc = k + c0 * stride, *vc = v + c0 * stride;
    float *oc = out + c0 * stride;
    cblas_sgemm(RM, N, T, l, l, D, 1.0f, qc, st, kc, st, 0.0f, P.data(), ld);
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < L; ++j)
        P[i * block + j] = j <= i ? P[i * block + j] * e[i - j] : 0.0f;
    for (int64_t i = 0; i < L; ++i) {
      float eq = e[i + 1], ek = e[L - 1 - i];
      for (int64_t c = 0; c < d; ++c) {
        Qd[i * d + c] = eq * qc[i * stride + c];
        Kd[i * d + c] = ek * kc[i * stride + c];
      }
    }
    cblas_sgemm(RM, N, N, l, D, D, 1.0f, Qd.data(), D, S, D, 0.0f, oc, st);
    cblas_sgemm(RM, N, N, l, D, l, 1.0f, P.data(), ld, vc, st, 1.0f, oc, st);
    cblas_sgemm(RM, T, N, D, D, l, 1.0f, Kd.data(), D, vc, st, e[L], S, D);
  }
}

void lightningScan(const float *q, const float *k, const float *v, const LightningParams &p,
                   const StateRows &rows, float *pool, float *out, const ParallelFor &pfor, int64_t block) {
  int64_t H = p.heads, d = p.head_dim;
  pfor(rows.num_requests * H, [&](int64_t rh) {
    int64_t r = rh / H, h = rh % H;
    int64_t begin = rows.cu_seqlens[r], n = rows.cu_seqlens[r + 1] - begin;
    float *S = headState(rows, pool, r, H, h, d * d);
    int64_t at = begin * H * d + h * d;
    if (n == 1)
      lightningRecurrent(n, q + at, k + at, v + at, p.decay[p.first_head + h], d, H * d, S, out + at);
    else if (n > 1)
      lightningBlocks(n, q + at, k + at, v + at, p.decay[p.first_head + h], d, H * d, S, out + at, block);
  });
}

// The mLSTM cell token by token: the decay and the input weight are taken relative to the
// running stabiliser m, so C and n stay finite whatever the gates.
void mlstmRecurrent(const MlstmHead &x, int64_t n, float *S, float *out) {
  int64_t dk = x.k_dim, dv = x.v_dim;
  float *C = S, *nv = S + dk * dv, &m = nv[dk];
  float scale = 1.0f / std::sqrt((float)dk);
  for (int64_t t = 0; t < n; ++t) {
    const float *qt = x.q + t * x.qk_stride, *kt = x.k + t * x.qk_stride, *vt = x.v + t * x.v_stride;
    float lf = logSigmoid(x.fg[t * x.gate_stride]), i = x.ig[t * x.gate_stride];
    float mNew = std::max(lf + m, i), decay = std::exp(lf + m - mNew), gain = std::exp(i - mNew);
    float *o = out + t * x.v_stride;
    std::fill_n(o, dv, 0.0f);
    float qn = 0.0f;
    for (int64_t a = 0; a < dk; ++a) {
      float ka = gain * kt[a], qa = scale * qt[a];
      float *Crow = C + a * dv;
      for (int64_t j = 0; j < dv; ++j) {
        Crow[j] = decay * Crow[j] + ka * vt[j];
        o[j] += qa * Crow[j];
      }
      nv[a] = decay * nv[a] + ka;
      qn += qa * nv[a];
    }
    float denom = std::max(std::fabs(qn), std::exp(-mNew)) + x.eps;
    for (int64_t j = 0; j < dv; ++j)
      o[j] /= denom;
    m = mNew;
  }
}

// The chunkwise form: within a chunk, with b_t the cumulative log forget gate from its start and
// m_t = b_t + max(m0, max_{s<=t}(i_s - b_s)) (the recurrence's stabiliser), row t reads
// e^(b_t+m0-m_t) q C0 + sum_{s<=t} e^(b_t-b_s+i_s-m_t) (q.k_s) v_s and the like for n; the state
// leaves the chunk as the same sums at its last row. Every weight is at most 1. The products are
// BLAS calls, so the state is read once per chunk rather than once per row.
void mlstmChunks(const MlstmHead &x, int64_t n, float *S, float *out, int64_t block) {
  const auto RM = CblasRowMajor;
  const auto N = CblasNoTrans, T = CblasTrans;
  int64_t dk = x.k_dim, dv = x.v_dim;
  float *C = S, *nv = S + dk * dv, &m0 = nv[dk];
  float scale = 1.0f / std::sqrt((float)dk);
  std::vector<float> P(block * block), Q(block * dk), Qg(block * dk), K(block * dk), Kw(block * dk), V(block * dv);
  std::vector<float> b(block), m(block), qn(block);
  for (int64_t c0 = 0; c0 < n; c0 += block) {
    int64_t L = std::min(block, n - c0);
    int l = (int)L, DK = (int)dk, DV = (int)dv, ld = (int)block;
    float run = m0, cum = 0.0f;
    for (int64_t t = 0; t < L; ++t) {
      int64_t row = c0 + t;
      cum += logSigmoid(x.fg[row * x.gate_stride]);
      b[t] = cum;
      run = std::max(run, x.ig[row * x.gate_stride] - cum);
      m[t] = cum + run;
      for (int64_t a = 0; a < dk; ++a) {
        Q[t * dk + a] = scale * x.q[row * x.qk_stride + a];
        K[t * dk + a] = x.k[row * x.qk_stride + a];
      }
      std::copy_n(x.v + row * x.v_stride, dv, &V[t * dv]);
    }
    float mL = m[L - 1], carry = std::exp(b[L - 1] + m0 - mL);
    cblas_sgemm(RM, N, T, l, l, DK, 1.0f, Q.data(), DK, K.data(), DK, 0.0f, P.data(), ld);
    for (int64_t t = 0; t < L; ++t) {
      float g = std::exp(b[t] + m0 - m[t]), sum = 0.0f;
      for (int64_t s = 0; s < L; ++s) {
        float &p = P[t * block + s];
        p = s <= t ? p * std::exp(b[t] - b[s] + x.ig[(c0 + s) * x.gate_stride] - m[t]) : 0.0f;
        sum += p;
      }
      float qn0 = 0.0f;
      for (int64_t a = 0; a < dk; ++a) {
        Qg[t * dk + a] = g * Q[t * dk + a];
        qn0 += Q[t * dk + a] * nv[a];
      }
      qn[t] = sum + g * qn0;
      float w = std::exp(b[L - 1] - b[t] + x.ig[(c0 + t) * x.gate_stride] - mL);
      for (int64_t a = 0; a < dk; ++a)
        Kw[t * dk + a] = w * K[t * dk + a];
    }
    float *oc = out + c0 * x.v_stride;
    int os = (int)x.v_stride;
    cblas_sgemm(RM, N, N, l, DV, DK, 1.0f, Qg.data(), DK, C, DV, 0.0f, oc, os);
    cblas_sgemm(RM, N, N, l, DV, l, 1.0f, P.data(), ld, V.data(), DV, 1.0f, oc, os);
    for (int64_t t = 0; t < L; ++t) {
      float denom = std::max(std::fabs(qn[t]), std::exp(-m[t])) + x.eps;
      for (int64_t j = 0; j < dv; ++j)
        oc[t * x.v_stride + j] /= denom;
    }
    cblas_sgemm(RM, T, N, DK, DV, l, 1.0f, Kw.data(), DK, V.data(), DV, carry, C, DV);
    for (int64_t a = 0; a < dk; ++a) {
      float sum = 0.0f;
      for (int64_t t = 0; t < L; ++t)
        sum += Kw[t * dk + a];
      nv[a] = carry * nv[a] + sum;
    }
    m0 = mL;
  }
}

void mlstmScan(const float *q, const float *k, const float *v, const float *ig, const float *fg,
               const MlstmParams &p, const StateRows &rows, float *pool, float *out, const ParallelFor &pfor,
               int64_t block) {
  int64_t H = p.heads, dk = p.k_dim, dv = p.v_dim, size = dk * (dv + 1) + 1;
  pfor(rows.num_requests * H, [&](int64_t rh) {
    int64_t r = rh / H, h = rh % H;
    int64_t begin = rows.cu_seqlens[r], n = rows.cu_seqlens[r + 1] - begin;
    float *S = headState(rows, pool, r, H, h, size);
    MlstmHead x{q + (begin * H + h) * dk, k + (begin * H + h) * dk, v + (begin * H + h) * dv,
                ig + begin * H + h, fg + begin * H + h, H * dk, H * dv, H, dk, dv, p.eps};
    if (n == 1)
      mlstmRecurrent(x, n, S, out + (begin * H + h) * dv);
    else if (n > 1)
      mlstmChunks(x, n, S, out + (begin * H + h) * dv, block);
  });
}

} // namespace cbc::rt::cpu
