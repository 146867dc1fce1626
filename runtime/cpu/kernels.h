// Reference implementations of every step instruction, in plain fp32 C++. This file is the
// executable definition of the cbc ops: the CPU backend runs it and the generated CUDA
// kernels are tested against it.
#ifndef CBC_RUNTIME_CPU_KERNELS_H
#define CBC_RUNTIME_CPU_KERNELS_H

#include "runtime/cpu/matrix.h"
#include "runtime/schema/model_generated.h"

#include <cstdint>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace cbc::rt::cpu {

// Runs fn(i) for i in [0, n) on the backend's threads (ParallelFor: runtime/cpu/matrix.h).
void serialFor(int64_t n, const std::function<void(int64_t)> &fn);

// rows > 0: an index at or past `rows` reads row oovRow (cbc.math.embed's oov_row). held > 0:
// the table holds ids first .. first + held - 1 of a vocabulary-parallel table; other ids give zeros.
void embed(const int32_t *tokens, int64_t T, Matrix table, int64_t H, float scale, float *out, int64_t offset = 0,
           int64_t rows = 0, int64_t oovRow = 0, int64_t first = 0, int64_t held = 0);
// x[t] * rms(ref[t]) / sqrt(max(mean(x[t]^2), floor)) (cbc.math.match_rms).
void matchRms(const float *x, const float *ref, int64_t T, int64_t W, int64_t refW, float floor, float *out);
// max(x - mean - multiplier * std, 0) per row of W, the population std (cbc.math.gaussian_topk).
void gaussianTopk(const float *x, int64_t T, int64_t W, float multiplier, float *out);

// A hyper-connection's coefficients per token (cbc.stream.hc_weights): kind 0 pre, 1 pre and
// post, 2 pre, post and the Sinkhorn-normalised comb.
struct HcWeightsParams {
  int kind = 0;
  int64_t streams = 0, sinkhorn_iters = 0;
  float magnitude = 1, eps = 0, post_eps = 0;
};
void hcWeights(const float *mixes, int64_t T, const float *base, const float *scale, const HcWeightsParams &p,
               float *out);
// result[t] = sum_n w[t, offset + n] * streams[t, n] over N streams of H (cbc.stream.collapse).
void streamCollapse(const float *streams, const float *w, int64_t T, int64_t N, int64_t H, int64_t wWidth,
                    int64_t offset, float *out);
// result[t, k] = w[t, offset + k] * block[t] + (comb ? sum_j comb[j, k] streams[t, j] : streams[t, k]),
// comb the N x N after the N coefficients (cbc.stream.expand).
void streamExpand(const float *block, const float *streams, const float *w, int64_t T, int64_t N, int64_t H,
                  int64_t wWidth, int64_t offset, bool comb, float *out);

// y[M, N] = x[M, K] . w[N, K]^T + bias[N]; a bf16 w is widened to float32 on the fly.
void linear(const float *x, int64_t M, int64_t K, Matrix w, int64_t N, const float *bias, float *y,
            const ParallelFor &pfor = serialFor);

// Per head h of `heads`: W_h = rows [offset, offset + rows) of block h of w [heads * R, C];
// y[t, h] = W_h x[t, h] ([T, heads * rows] from [T, heads * C]), or W_h^T x[t, h] with
// `transpose` ([T, heads * C] from [T, heads * rows]).
void headLinear(const float *x, int64_t T, const float *w, int64_t heads, int64_t R, int64_t C, int64_t offset,
                int64_t rows, bool transpose, float *y, const ParallelFor &pfor = serialFor);

// y[t] = x[t] * f(positions[t] + offset), f(n) = 1 + beta * log(1 + floor(n / period)) (Log1pFloor),
// 1 + beta * log(max(n / period, 1)) (LogRatio) or (1 + n / period) ^ beta (Power), the last two
// in real division.
void positionScale(const float *x, int64_t T, int64_t width, const int32_t *positions, float beta, int64_t period,
                   int64_t offset, float *y, fb::PositionScaleForm form = fb::PositionScaleForm::Log1pFloor);

// cbc.math.l2_clip: each group of `group` features of a row, times scale (null: 1), shortened
// to y * min(1, threshold / (|y| + eps)).
void l2Clip(const float *x, int64_t T, int64_t width, int64_t group, const float *scale, float threshold, float eps,
            float *y);

// cbc.stream.attend: per token, Q queries [Q, H] attend over the N weightlessly RMS-normed
// sources of a [T, N * H] row (scores q . n_i / sqrt(H)); y is [T, Q * H].
void streamAttend(const float *sources, int64_t T, int64_t N, int64_t H, const float *query, int64_t Q, float eps,
                  float *y);

// cbc.math.head_position_scale: head h of row t times scale[h] * log(1 + positions[t]) + bias[h].
void headPositionScale(const float *x, int64_t T, int64_t width, int64_t heads, const int32_t *positions,
                       const float *scale, const float *bias, float *y);

// Sinusoidal position rows [T, D] (cbc.math.sinusoidal_position): sin | cos of n * f_i for the
// token's n = position + offset, f_i = exp(i * step) in fp32; a zero row for n == paddingRow.
void sinusoidalPosition(const int32_t *positions, int64_t T, int64_t D, int64_t offset, const float *freq,
                        int64_t paddingRow, float *y);

// RMS norm over groups of `group` features: y = x * rsqrt(mean(x^2) + eps) * (w + offset).
void rmsNorm(const float *x, int64_t M, int64_t width, int64_t group, const float *w, float eps,
             float offset, float *y, bool perRow = false);

void add(const float *a, const float *b, int64_t n, float *y);

// The activations are the artefact's closed set.
using Act = fb::Activation;
float activate(Act act, float x);

// A gated unit's special form. gate_cap 0: the clamped SwiGLU,
// (clamp(up, -limit, limit) + up_offset) * g * sigmoid(alpha * g) with g = min(gate, limit);
// gate_cap > 0: the soft-capped one, gate_cap tanh(g / gate_cap) * sigmoid(g) * up_cap tanh(up / up_cap).
struct SwigluClamp {
  float limit = 0, alpha = 0, up_offset = 1, gate_cap = 0, up_cap = 0;
};
std::optional<SwigluClamp> swigluForm(const fb::GluParams &p);
float swigluUnit(const SwigluClamp &f, float gate, float up);

// y[M, I] = act(gate) * up (or the clamped unit) over x[M, 2I] split in halves or interleaved
// columns.
void glu(const float *x, int64_t M, int64_t I, Act act, bool interleaved, const SwigluClamp *clamp, float *y);

void softcap(const float *x, int64_t n, float cap, float *y);

// y = x * sigmoid(g), or x * g without the sigmoid; g is [M, gWidth], one per width / gWidth columns.
// gWidth 0: g is one scalar for every element.
void sigmoidGate(const float *x, const float *g, int64_t M, int64_t width, int64_t gWidth, float *y,
                 bool sigmoid = true);

// y[M, sum of widths] = the inputs [M, width_i] side by side (cbc.math.concat).
void concatColumns(const std::vector<std::pair<const float *, int64_t>> &inputs, int64_t M, float *y);

// Copies columns [col0, col0 + width) of x[M, xWidth] into y[M, width].
void copyColumns(const float *x, int64_t M, int64_t xWidth, int64_t col0, int64_t width, float *y);

struct RopeParams {
  int64_t head_dim = 0, rotary_dim = 0;
  bool interleaved = false;
  std::vector<float> inv_freq, inv_freq_long;
  float attention_factor = 1;
  int64_t long_after = 0;            // longrope: long frequencies once seq_len > long_after
  double dynamic_base = 0, dynamic_factor = 0;
  int64_t dynamic_max_positions = 0; // dynamic NTK: base grows with seq_len beyond this
  std::vector<int8_t> sections;      // multimodal: the position component each frequency reads
  int64_t rotary_offset = 0;         // the rotated features start here in each head
};

// The frequencies a token uses, given its request's sequence length in this step.
void ropeFrequencies(const RopeParams &p, int64_t seqLen, std::vector<float> &freq);

// y = rope(x) for rows of heads; seqLen[t] is the sequence length of token t's request. With
// p.sections, frequency i of token t turns by sectionPositions[p.sections[i] * T + t]; with
// freqLogScale (LeRoPE), frequency i is multiplied by exp(freqLogScale[i]).
void rope(const float *x, int64_t T, int64_t width, const RopeParams &p, const int32_t *positions,
          const int64_t *seqLen, float *y, const ParallelFor &pfor, const int32_t *sectionPositions = nullptr,
          const float *freqLogScale = nullptr);

// The paged cache of one layer: blocks of `block_size` token rows, each row holding k then v.
struct KvLayout {
  int64_t block_size = 16;
  int64_t row_elems = 0;  // k_elems + v_elems
  int64_t k_elems = 0;
  // The index_key row of a sparse attention layer, last in the row; v is what lies between.
  int64_t index_elems = 0;
  int64_t vElems() const { return row_elems - k_elems - index_elems; }
  int64_t indexOffset() const { return row_elems - index_elems; }
};

// `tables` is one group's block tables, [slots, tableWidth]; request row r uses row slots[r].
void kvAppend(const float *k, const float *v, int64_t T, const int32_t *positions,
              const int32_t *seqIds, const int32_t *slots, const int32_t *tables,
              int64_t tableWidth, const KvLayout &layout, float *pool);

struct AttentionParams {
  int64_t num_heads = 0, num_kv_heads = 0, head_dim = 0, v_head_dim = 0;
  float scale = 1;
  int64_t window = 0, chunk = 0;
  float softcap = 0;
  const float *sinks = nullptr;     // [num_heads]: a logit per head in every softmax's denominator
  const float *sink_rows = nullptr; // [T, num_heads]: the same, one per query row
  // [T, num_heads * bias_extent]: added to the score of the key at distance p - j < bias_extent.
  const float *distance_bias = nullptr;
  int64_t bias_extent = 0;
  // [T, selection_heads * selection_topk] blocks of selection_block positions (-1: none): query
  // head h reads only the keys in the blocks selection head h / (H / selection_heads) lists.
  const int32_t *block_selection = nullptr;
  int64_t selection_heads = 0, selection_topk = 0, selection_block = 0;
  // One ALiBi slope per query head: the score of the key at distance p - j gains -slope * (p - j).
  std::vector<float> alibi_slopes;
  // [T]: token t attends to keys j < key_ends[t] (an image's rows to the image's end); null: j <= p.
  const int32_t *key_ends = nullptr;
};

void pagedAttention(const float *q, int64_t T, const int32_t *positions, const int32_t *seqIds,
                    const int32_t *slots, const int32_t *tables, int64_t tableWidth,
                    const KvLayout &layout,
                    const float *pool, const AttentionParams &p, float *out,
                    const ParallelFor &pfor);

// Latent attention: per head, scores scale * (q_latent . latent_j + q_rope . k_rope_j) over the
// cached rows [latent (L) | k_rope (R)] of `layout`, and the weighted sum of the latents.
struct LatentAttentionParams {
  int64_t num_heads = 0, latent_dim = 0, rope_dim = 0;
  float scale = 1;
  int64_t window = 0, chunk = 0;
  const float *sinks = nullptr; // [num_heads] logits joining each softmax; null: none
};
void latentAttention(const float *qLatent, const float *qRope, int64_t T, const int32_t *positions,
                     const int32_t *seqIds, const int32_t *slots, const int32_t *tables, int64_t tableWidth,
                     const KvLayout &layout, const float *pool, const LatentAttentionParams &p, float *out,
                     const ParallelFor &pfor);
// A compressed layer's entries (latent rows of `rate` positions each) that a latent attention
// also reads: those complete at the query, or the listed ones ([T, k], -1 for none).
struct LatentEntries {
  const int32_t *tables = nullptr; // the compressed layer's group's tables
  const KvLayout *layout = nullptr;
  const float *pool = nullptr;
  int64_t rate = 0;
  const int32_t *selection = nullptr;
  int64_t k = 0;
};
// Latent attention over the window (or all) of a layer's cached rows and a compressed layer's
// entries, in one softmax per head.
void latentAttentionWithEntries(const float *qLatent, const float *qRope, int64_t T, const int32_t *positions,
                                const int32_t *seqIds, const int32_t *slots, const int32_t *tables,
                                int64_t tableWidth, const KvLayout &layout, const float *pool,
                                const LatentAttentionParams &p, const LatentEntries &entries, float *out,
                                const ParallelFor &pfor);
// The cache row each token writes in a compressed layer: window (p + 1) / rate - 1 for a token
// closing its window, -1 (none) for the others.
void compressedRows(const int32_t *positions, int64_t T, int64_t rate, int32_t *rows);

// Sparse (indexed) attention. indexAppend writes each token's indexer key into the layer's
// index_key row; indexSelect scores, per query t, every visible cached key j <= positions[t]
// with sum_h w[t,h] * weightScale * relu(keyScale * q[t,h] . k_j), and keeps the topk best in
// ascending position order, equal scores to the lower position, padded with -1 when fewer are visible.
// torch.nn.LayerNorm over each group of `group` features of rows of `width`: (x - mean) *
// rsqrt(biased var + eps) * (w + offset) + b; a null w is 1 and a null b is 0. w and b hold one
// entry per feature of a group, or with `perFeature` one per feature of the row.
void layerNorm(const float *x, int64_t rows, int64_t width, int64_t group, const float *w, const float *b,
               bool perFeature, float eps, float offset, float *y);

struct IndexSelectParams {
  int64_t num_heads = 0, head_dim = 0, topk = 0;
  float key_scale = 1, weight_scale = 1;
  int64_t rate = 1; // the keys are compressed entries of `rate` positions: p sees (p + 1) / rate of them
};
// cbc.kv.pool_select: index_key rows [k | g] of 2 head_dim with `ape` (learned pooling), else k of
// head_dim (the mean); pools of `pool` positions; `w` null: every head weighs 1.
struct PoolSelectParams {
  int64_t num_heads = 0, head_dim = 0, pools = 0, pool = 0;
  float key_scale = 1, weight_scale = 1;
  const float *key_norm = nullptr; // the pooled key RMS-normed with key_norm + norm_offset
  float eps = 0, norm_offset = 0;
  std::vector<float> key_freqs; // rotate-half RoPE of the pooled key at its pool's first position
  bool blocks = false;          // pool indices out, not positions
};
void poolSelect(const float *q, const float *w, int64_t T, const int32_t *positions, const int32_t *seqIds,
                const int32_t *slots, const int32_t *tables, int64_t tableWidth, const KvLayout &layout,
                const float *pool, const float *ape, const PoolSelectParams &p, int32_t *out, const ParallelFor &pfor);
void indexAppend(const float *key, int64_t T, const int32_t *positions, const int32_t *seqIds,
                 const int32_t *slots, const int32_t *tables, int64_t tableWidth, const KvLayout &layout,
                 float *pool);
void indexSelect(const float *q, const float *w, int64_t T, const int32_t *positions, const int32_t *seqIds,
                 const int32_t *slots, const int32_t *tables, int64_t tableWidth, const KvLayout &layout,
                 const float *pool, const IndexSelectParams &p, int32_t *out, const ParallelFor &pfor);
// Block selection (cbc.kv.block_select): per query t and head h, s(j) = q[t,h] . k_j over the
// visible index keys j <= positions[t]; each block of `block` positions scores its maximum, the
// `local` blocks ending at the query's own score +inf; the topk best blocks in ascending order
// (equal scores to the lower block), -1 padded.
struct BlockSelectParams {
  int64_t num_heads = 0, head_dim = 0, block = 0, topk = 0, local = 1;
};
void blockSelect(const float *q, int64_t T, const int32_t *positions, const int32_t *seqIds, const int32_t *slots,
                 const int32_t *tables, int64_t tableWidth, const KvLayout &layout, const float *pool,
                 const BlockSelectParams &p, int32_t *out, const ParallelFor &pfor);
// Latent attention of query t over only the rows selection[t, 0..k) (-1: none): the work per
// query is k rows, independent of the context length.
void sparseLatentAttention(const float *qLatent, const float *qRope, int64_t T, const int32_t *seqIds,
                           const int32_t *slots, const int32_t *tables, int64_t tableWidth, const KvLayout &layout,
                           const float *pool, const LatentAttentionParams &p, const int32_t *selection, int64_t k,
                           float *out, const ParallelFor &pfor);

void gatherRows(const float *x, int64_t width, const int32_t *rows, int64_t n, float *y);

// Router: per token, the top-k expert ids and their mixing weights (cbc.moe.route).
using RouteScore = fb::RouteScore;
struct RouteParams {
  RouteScore score = RouteScore::Softmax;
  const float *selection_bias = nullptr; // [E]: added to the scores only to choose experts
  bool renorm = false;
  float renorm_eps = 0.0f;
  float scaling = 1.0f;
  // Group-limited choice: group_count groups of E / group_count experts, the group_keep best
  // kept, the others' selection scores replaced by the fill. group_count 0: none.
  int64_t group_count = 0, group_keep = 0;
  fb::GroupScore group_score = fb::GroupScore::Top2Sum;
  fb::GroupFill group_fill = fb::GroupFill::NegInf;
  // The last `sinks` logits are sink experts every token takes, normalised with the chosen ones.
  int64_t sinks = 0;
  float threshold = 0.0f; // sparsemixer: the relative gap below a round's best that drops an expert
  bool bias_on_logits = false; // selection keys are logit + bias rather than score + bias
  // Hash routing: row t takes the experts table[tokens[t]] ([vocab, k], ids as floats).
  const int32_t *tokens = nullptr;
  const float *table = nullptr;
  int64_t vocab = 0;
};
void moeRoute(const float *logits, int64_t T, int64_t E, int64_t k, const RouteParams &p, float *weights,
              int32_t *ids);

struct ExpertWeights {
  Matrix gate_up;             // [E, 2I, H]; ungated: the up projection [E, I, H]
  Matrix down;                // [E, H, I]
  const float *gate_up_bias;  // [E, 2I] ([E, I] ungated) or null
  const float *down_bias;     // [E, H] or null
  int64_t E = 0, I = 0, H = 0;
  bool ungated = false;       // down(act(up x)) rather than down(glu(gate_up x))
  int64_t identity = 0;       // ids E .. E + identity - 1 are identity experts: weight * x
  bool scale_input = false;   // the weight scales the expert's input, not its output
  int64_t null = 0;           // the next `null` ids are null experts: they contribute nothing
  // Expert parallelism: these E experts are ids first .. first + E - 1 of `routed` (the others
  // run on other ranks); identity experts come after all `routed` and count where `owns_identity`.
  int64_t first = 0, routed = -1; // routed -1: E
  bool owns_identity = true;
};

void moeExperts(const float *x, int64_t T, const int32_t *ids, const float *weights, int64_t k,
                const ExpertWeights &w, Act act, bool interleaved, const SwigluClamp *clamp, float *out,
                const ParallelFor &pfor = serialFor);

// Each (token, choice) pair's expert w[ids[pair]] ([E, N, K]) projects the token's row of x
// ([T, K]) into the pair's block of out ([T, k N]); with `mix` ([T, k]) it projects the pair's
// block of x ([T, k K]) and adds mix[pair] times the result into the token's row of out ([T, N]).
void moeSlotLinear(const float *x, int64_t T, const int32_t *ids, const float *mix, int64_t k, Matrix w, int64_t E,
                   int64_t N, int64_t K, float *out, const ParallelFor &pfor = serialFor);

// Gated RMS norm over groups: norm first, y = rmsnorm(x) * (w + offset) * act(z), or gate first,
// y = rmsnorm(x * act(z)) * (w + offset). `w` has `group` entries shared by every group, or
// `width` entries (perRow).
void rmsNormGated(const float *x, const float *z, int64_t M, int64_t width, int64_t group,
                  const float *w, bool perRow, float eps, float offset, Act act, bool normFirst, float *y);

// The per-request metadata every state op reads.
// The step's per-request rows of the state scans: request r reads its state from unit
// state_in[r] of the pool (unless it starts fresh) and leaves it in unit state_out[r].
// cbc.math.group_dot: y[t, g] = act(scale * sum_i a[t, g D + i] b[t, g D + i]), D = width / groups.
void groupDot(const float *a, const float *b, int64_t T, int64_t width, int64_t groups, float scale, Act act,
              float *y);

struct StateRows {
  const int32_t *cu_seqlens = nullptr; // [R + 1]
  const int32_t *state_in = nullptr;   // [R]
  const int32_t *state_out = nullptr;  // [R]
  const int32_t *has_initial = nullptr;
  int64_t num_requests = 0;
};

// Request r's state, `size` floats at the start of each unit of `stride` floats in `pool`: the
// copy in unit state_out[r], holding what the request starts from (zeros for a fresh request,
// else what unit state_in[r] holds).
float *startState(const StateRows &rows, float *pool, int64_t r, int64_t stride, int64_t size);

// Causal conv over each request's rows, carrying the last K-1 inputs per request in `pool`
// ([slots][C][K-1], oldest first). w is [C, G, K]: groups of G channels mix inside the group (1:
// depthwise). `residual`: y = x + act(conv x). `initial` (or zeros): a fresh request's inputs
// before its first row. `form` adds per-token taps, the lag order and an output scale.
struct ConvForm {
  const float *taps = nullptr; // [T, width]: width / K runs of channels, K taps each (depthwise)
  int64_t width = 0;
  bool lag_order = false; // weight and taps index j weighs the input j rows back
  float scale = 1.0f;
  int64_t dilation = 1; // tap j reads the input (K - 1 - j) * dilation rows back (depthwise)
};
// cbc.state.ngram_embed: per token the table rows of its hashed n-grams, side by side; the
// request's last n - 1 ids in its state (fp32).
struct NgramParams {
  int64_t eos = 0, heads_per_ngram = 1;
  std::vector<int64_t> multipliers, primes, offsets; // offsets: the primes' prefix sums
};
void ngramEmbed(const int32_t *tokens, Matrix table, int64_t D, const NgramParams &p, const StateRows &rows,
                float *pool, float *y, const ParallelFor &pfor);
// cbc.state.window_pool: each window of `rate` tokens pooled into one entry (see the op).
struct WindowPoolParams {
  int64_t rate = 0, dim = 0;
  bool overlap = false;
  const float *norm = nullptr;
  float eps = 1e-6f;
  std::optional<RopeParams> rope;
};
void windowPool(const float *x, const int32_t *positions, const float *ape, const WindowPoolParams &p,
                const StateRows &rows, float *pool, float *y, const ParallelFor &pfor);

void conv1dStates(const float *x, int64_t C, int64_t K, const float *w, const float *bias, Act act,
                  const StateRows &rows, float *pool, float *y, const ParallelFor &pfor, bool residual = false,
                  int64_t G = 1, const float *initial = nullptr, const ConvForm &form = {});

// RWKV's WKV recurrence per channel (cbc.state.wkv): the state ([slots][3][C]) is the numerator,
// the denominator and their exponent, empty (0, 0, -1e30) for a fresh request.
void wkvScan(const float *k, const float *v, int64_t C, const float *timeDecay, const float *timeFirst,
             const StateRows &rows, float *pool, float *y, const ParallelFor &pfor);

// Griffin's RG-LRU per channel (cbc.state.rg_lru): the state ([slots][C]) is h; a fresh
// request's first row takes its scaled input whole and forgets the state.
void rgLruScan(const float *x, const float *inputGate, const float *recurrentGate, const float *param, int64_t C,
               const StateRows &rows, float *pool, float *y, const ParallelFor &pfor);

// Each request's rows one row later (cbc.state.shift): the state ([slots][C]) is the previous
// input, `initial` (or zeros) for a fresh request.
void shiftStates(const float *x, int64_t C, const float *initial, const StateRows &rows, float *pool, float *y,
                 const ParallelFor &pfor);

struct GatedDeltaParams {
  int64_t k_heads = 0, v_heads = 0, k_dim = 0, v_dim = 0;
  float beta_scale = 1.0f;
  bool qk_l2norm = true;
  const float *A_log = nullptr, *dt_bias = nullptr;
};

// The gated delta rule per request and value head, state [v_heads][k_dim][v_dim] in `pool`.
// Requests with one row use the token recurrence; longer chunks use the chunked form (UT
// transform over chunks of `chunk` rows), which transformers uses for prefill.
void gatedDeltaScan(const float *q, const float *k, const float *v, const float *a, const float *b,
                    const GatedDeltaParams &p, const StateRows &rows, float *pool, float *out,
                    const ParallelFor &pfor, int64_t chunk = 64);
// The two forms, for one request and head (exposed for tests).
void gatedDeltaRecurrent(int64_t n, const float *q, const float *k, const float *v, const float *g,
                         const float *beta, int64_t dk, int64_t dv, int64_t qStride, int64_t vStride,
                         float *state, float *out, int64_t outStride);
void gatedDeltaChunked(int64_t n, const float *q, const float *k, const float *v, const float *g,
                       const float *beta, int64_t dk, int64_t dv, int64_t qStride, int64_t vStride,
                       float *state, float *out, int64_t outStride, int64_t chunk);

// Kimi delta attention (cbc.state.kda): the delta rule with a log decay per key channel, state
// [heads][k_dim][v_dim] per slot in `pool`. q, k and f are [T, H*dk], v [T, H*dv], b [T, H].
struct KdaParams {
  int64_t heads = 0, k_dim = 0, v_dim = 0;
  bool bounded = false;     // the bounded sigmoid gate (else softplus)
  float lower_bound = 0.0f; // the bounded gate's
  const float *A_log = nullptr, *dt_bias = nullptr;
};
// Requests with one row use the token recurrence; longer ones the chunked form.
void kdaScan(const float *q, const float *k, const float *v, const float *f, const float *b, const KdaParams &p,
             const StateRows &rows, float *pool, float *out, const ParallelFor &pfor, int64_t chunk = 64);
// The two forms for one request and head, on normalised inputs: q scaled and unit k [n, dk]
// (rows qStride apart), v rows vStride apart, g the log decays [n, dk], beta [n]; S [dk, dv].
void kdaRecurrent(int64_t n, const float *q, const float *k, const float *v, const float *g, const float *beta,
                  int64_t dk, int64_t dv, int64_t qStride, int64_t vStride, float *S, float *out, int64_t outStride);
void kdaChunked(int64_t n, const float *q, const float *k, const float *v, const float *g, const float *beta,
                int64_t dk, int64_t dv, int64_t qStride, int64_t vStride, float *S, float *out, int64_t outStride,
                int64_t chunk);

// The state space dual scan (cbc.state.ssd): per head, S [P, N] carries across a
// request's rows; x [T, H*P], dt [T, H] (before bias and softplus), B, C [T, G*N].
struct SsdParams {
  int64_t heads = 0, head_dim = 0, groups = 0, state = 0;
  const float *A_log = nullptr, *dt_bias = nullptr, *D = nullptr;
  float dt_min = 0.0f, dt_max = INFINITY;
};
void ssdScan(const float *x, const float *dt, const float *B, const float *C, const SsdParams &p,
             const StateRows &rows, float *pool, float *out, const ParallelFor &pfor, int64_t chunk = 64);
// The two forms for one request and head, from discretised inputs: dt after softplus, `a` the
// head's (negative) continuous decay. Rows of x/out step by xStride, of B/C by bcStride.
void ssdRecurrent(int64_t n, const float *x, const float *dt, float a, const float *B, const float *C,
                  float D, int64_t P, int64_t N, int64_t xStride, int64_t bcStride, float *S, float *out);
void ssdChunked(int64_t n, const float *x, const float *dt, float a, const float *B, const float *C, float D,
                int64_t P, int64_t N, int64_t xStride, int64_t bcStride, float *S, float *out, int64_t chunk);

// The selective scan (cbc.state.selective_scan): per channel, S [N] carries;
// x, dt (before bias and softplus), z (optional) [T, I], B, C [T, G*N], A_log [I, N].
struct SelectiveParams {
  int64_t channels = 0, groups = 0, state = 0;
  const float *A_log = nullptr, *dt_bias = nullptr, *D = nullptr;
};
void selectiveScan(const float *x, const float *dt, const float *B, const float *C, const float *z,
                   const SelectiveParams &p, const StateRows &rows, float *pool, float *out,
                   const ParallelFor &pfor);

// Lightning attention (cbc.state.lightning): per head, S [d, d] carries with a constant decay,
// S = exp(-decay[h]) S + k^T v, o = q S; q, k, v and out are [T, H*d].
struct LightningParams {
  int64_t heads = 0, head_dim = 0;
  std::vector<float> decay; // one rate per head (of every rank, with first_head this rank's first)
  int64_t first_head = 0;
};
// Requests with one row use the token recurrence; longer ones the block form over blocks of
// `block` rows (transformers' prefill form), from the request's own state either way.
void lightningScan(const float *q, const float *k, const float *v, const LightningParams &p,
                   const StateRows &rows, float *pool, float *out, const ParallelFor &pfor, int64_t block = 64);
// The two forms for one request and head, rows `stride` apart (exposed for tests).
void lightningRecurrent(int64_t n, const float *q, const float *k, const float *v, float decay, int64_t d,
                        int64_t stride, float *S, float *out);
void lightningBlocks(int64_t n, const float *q, const float *k, const float *v, float decay, int64_t d,
                     int64_t stride, float *S, float *out, int64_t block);

// The mLSTM cell (cbc.state.mlstm): per head, C [dk, dv], n [dk] and the stabiliser m, fp32,
// zero for a fresh request; q, k are [T, H*dk], v and out [T, H*dv], the gates [T, H].
struct MlstmParams {
  int64_t heads = 0, k_dim = 0, v_dim = 0;
  float eps = 1e-6f;
};
// Requests with one row use the token recurrence; longer ones the chunkwise form over chunks of
// `block` rows, from the request's own state either way.
void mlstmScan(const float *q, const float *k, const float *v, const float *ig, const float *fg,
               const MlstmParams &p, const StateRows &rows, float *pool, float *out, const ParallelFor &pfor,
               int64_t block = 64);
// One request's head for the two forms (exposed for tests): its first row's q, k, v and gates,
// the strides between rows, and the state S [dk * (dv + 1) + 1] (C, n, m) it carries.
struct MlstmHead {
  const float *q, *k, *v, *ig, *fg;
  int64_t qk_stride, v_stride, gate_stride, k_dim, v_dim;
  float eps;
};
void mlstmRecurrent(const MlstmHead &x, int64_t n, float *S, float *out);
void mlstmChunks(const MlstmHead &x, int64_t n, float *S, float *out, int64_t block);

} // namespace cbc::rt::cpu

#endif
