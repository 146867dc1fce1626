// Latent attention over a window of a layer's cached rows plus a compressed layer's entries
// (cbc.kv.latent_attention with entries): one block per (token, head) walks the rows in order
// with an online softmax, each thread holding its share of the head's L features. Plain and
// untuned: a row costs one block reduction.
#ifndef CBC_CODEGEN_CUDA_KERNELS_LATENT_ENTRIES_CUH
#define CBC_CODEGEN_CUDA_KERNELS_LATENT_ENTRIES_CUH

#include "codegen/cuda/kernels/prelude.cuh"

namespace cbc {

// The dot product of this thread's features with a row, summed over the block (NW warps).
template <int L, int FPT, class TKV>
__device__ __forceinline__ float entries_dot(const float *q, const TKV *row, float *partial) {
  float s = 0.0f;
  for (int i = 0; i < FPT; ++i) {
    int f = threadIdx.x + i * blockDim.x;
    if (f < L)
      s += q[i] * ld(row, f);
  }
  s = warp_sum(s);
  __syncthreads(); // the previous row's sums are read
  if ((threadIdx.x & 31) == 0)
    partial[threadIdx.x / 32] = s;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < (int)(blockDim.x + 31) / 32; ++w)
    total += partial[w];
  return total;
}

// TS: the sinks' type (void: none). WINDOW: the keys j > p - WINDOW of the layer (0: all);
// RATE: the entries' windows; K > 0: only the entries Selection lists ([T, K], -1 for none).
template <class TQ, class TKV, class TS, class TO, int H, int L, int B, int ROW, int EROW, int WINDOW, int RATE, int K>
__device__ __forceinline__ void latent_entries(const CbcArgs &a) {
  using S = slots::LatentEntries;
  constexpr int FPT = (L + 127) / 128;
  const TQ *q = (const TQ *)a.p[S::QLatent];
  const TKV *pool = (const TKV *)a.p[S::Pool], *entries = (const TKV *)a.p[S::EntryPool];
  const int *positions = (const int *)a.p[S::Positions], *seq_ids = (const int *)a.p[S::SeqIds];
  const int *slots = (const int *)a.p[S::Slots], *selection = (const int *)a.p[S::Selection];
  const TS *sinks = (const TS *)a.p[S::Sinks];
  TO *out = (TO *)a.p[S::Out];
  long long t = blockIdx.x;
  int h = blockIdx.y, pos = positions[t], width = a.i[S::TableWidth];
  long long slot = slots[seq_ids[t]];
  const int *tables = (const int *)a.p[S::Tables];
  const int *own = tables + ((long long)a.i[S::Group] * a.i[S::TableSlots] + slot) * width;
  const int *entryTable = tables + ((long long)a.i[S::EntryGroup] * a.i[S::TableSlots] + slot) * width;
  float scale = a.f[S::ScoreScale];
  __shared__ float partial[32];
  float qf[FPT], acc[FPT];
  for (int i = 0; i < FPT; ++i) {
    int f = threadIdx.x + i * blockDim.x;
    qf[i] = f < L ? ld(q, (t * H + h) * L + f) : 0.0f;
    acc[i] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;
  if constexpr (present<TS>) {
    m = ld(sinks, h);
    l = 1.0f;
  }
  auto visit = [&](const TKV *row) {
    float s = entries_dot<L, FPT>(qf, row, partial) * scale;
    float mn = fmaxf(m, s), c = expf(m - mn), p = expf(s - mn);
    l = l * c + p;
    for (int i = 0; i < FPT; ++i) {
      int f = threadIdx.x + i * blockDim.x;
      acc[i] = acc[i] * c + (f < L ? p * ld(row, f) : 0.0f);
    }
    m = mn;
  };
  int lo = WINDOW > 0 && pos - WINDOW + 1 > 0 ? pos - WINDOW + 1 : 0;
  for (int j = lo; j <= pos; ++j)
    visit(pool + ((long long)own[j / B] * B + j % B) * ROW);
  auto entry = [&](int w) { return entries + ((long long)entryTable[w / B] * B + w % B) * EROW; };
  if constexpr (K > 0) {
    for (int i = 0; i < K; ++i)
      if (int w = selection[t * K + i]; w >= 0)
        visit(entry(w));
  } else {
    for (int w = 0; w < (pos + 1) / RATE; ++w)
      visit(entry(w));
  }
  for (int i = 0; i < FPT; ++i) {
    int f = threadIdx.x + i * blockDim.x;
    if (f < L)
      st(out, (t * H + h) * L + f, acc[i] / l);
  }
}

} // namespace cbc

#endif
