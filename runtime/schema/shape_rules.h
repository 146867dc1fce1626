// The shape rules of the instruction ops that both sides check: the ops' verifiers
// (dialects/cbc/CbcOps.cpp) when the compiler builds a program, and the CPU backend
// (runtime/cpu/ops_*.cpp) when it loads an artefact, which is untrusted input and must be refused
// before a kernel indexes out of bounds. Each rule takes the op's sizes (widths of its row
// operands, element counts of its weights, its integer attributes) and returns the message of the
// first rule they break, or nullptr when they fit; the verifier emits it as the op's error and the
// loader names the instruction before it. A state op's state shape is here too: the cache plan
// declares it from the verifier's side and the CPU backend checks the plan against it.
#ifndef CBC_RUNTIME_SCHEMA_SHAPE_RULES_H
#define CBC_RUNTIME_SCHEMA_SHAPE_RULES_H

#include <array>
#include <cstdint>

namespace cbc::shape {

using Error = const char *; // nullptr: the shapes fit

// cbc.state.conv1d: x [T, channels], a torch Conv1d weight [channels, group, kernel] (group 1:
// depthwise).
struct Conv1d {
  int64_t channels, weight_rank, weight_channels, group, kernel, bias, result;
  bool has_bias;
  int64_t initial = 0;
  bool has_initial = false;
  int64_t taps = 0; // the per-token taps' width
  bool has_taps = false;
  int64_t dilation = 1;
};
constexpr Error check(const Conv1d &s) {
  if ((s.weight_rank != 3 && s.weight_rank != 2) || s.weight_channels != s.channels || s.group < 1 ||
      s.channels % s.group != 0 || s.kernel < 1)
    return "weight must be [channels, group, kernel] with group dividing channels, or [channels, kernel]";
  if (s.has_bias && s.bias != s.channels)
    return "bias must have one entry per channel";
  if (s.has_initial && s.initial != s.channels)
    return "initial must have one entry per channel";
  if (s.has_taps && (s.group != 1 || s.taps <= 0 || s.taps % s.kernel != 0 || s.channels % (s.taps / s.kernel) != 0))
    return "taps must be [T, n * kernel] with n dividing the channels of a depthwise conv";
  if (s.dilation < 1 || (s.dilation > 1 && (s.group != 1 || s.has_taps)))
    return "dilation must be positive, and above 1 only on a depthwise conv without taps";
  if (s.result != s.channels)
    return "result width must equal the channel count";
  return nullptr;
}
// The last (kernel - 1) * dilation inputs of every channel.
constexpr std::array<int64_t, 2> stateShape(const Conv1d &s) { return {s.channels, (s.kernel - 1) * s.dilation}; }

// cbc.state.ngram_embed: table [rows, dim]; n = len(multipliers) >= 2, P = len(primes) heads.
struct NgramEmbed {
  int64_t n, heads_per_ngram, primes, prime_sum, table_rank, table_rows, table_dim, result;
  int64_t eos;
};
constexpr Error check(const NgramEmbed &s) {
  if (s.n < 2 || s.heads_per_ngram < 1 || s.primes != (s.n - 1) * s.heads_per_ngram)
    return "needs at least 2 multipliers and (n - 1) * heads_per_ngram primes";
  if (s.table_rank != 2 || s.table_rows < s.prime_sum)
    return "table must be [rows, dim] with at least the primes' sum of rows";
  if (s.eos < 0 || s.eos >= (1 << 24))
    return "eos must be a token id below 2^24";
  if (s.result != s.primes * s.table_dim)
    return "result width must be the number of primes times the table's width";
  return nullptr;
}
// The last n - 1 token ids.
constexpr std::array<int64_t, 2> stateShape(const NgramEmbed &s) { return {1, s.n - 1}; }

// cbc.state.shift: x [T, channels]; initial [channels].
struct Shift {
  int64_t channels, initial, result;
  bool has_initial;
};
constexpr Error check(const Shift &s) {
  if (s.has_initial && s.initial != s.channels)
    return "initial must have one entry per channel";
  if (s.result != s.channels)
    return "result width must equal the channel count";
  return nullptr;
}
// The last input of every channel.
constexpr std::array<int64_t, 2> stateShape(const Shift &s) { return {s.channels, 1}; }

// cbc.state.window_pool: x [T, 2 * S * dim] (S = 2 with overlap), ape [rate, S * dim], the norm
// [dim], the result [T, dim].
struct WindowPool {
  int64_t rate, dim, x, ape_rank, ape_rows, ape_cols, norm, result;
  bool overlap, has_norm;
  int64_t halves() const { return overlap ? 2 : 1; }
};
constexpr Error check(const WindowPool &s) {
  if (s.rate <= 0 || s.dim <= 0)
    return "rate and dim must be positive";
  if (s.x != 2 * s.halves() * s.dim)
    return "x width must be 2 * dim, or 4 * dim with overlap";
  if (s.ape_rank != 2 || s.ape_rows != s.rate || s.ape_cols != s.halves() * s.dim)
    return "ape must be [rate, dim], or [rate, 2 * dim] with overlap";
  if (s.has_norm && s.norm != s.dim)
    return "norm must have dim entries";
  if (s.result != s.dim)
    return "result width must be dim";
  return nullptr;
}
// The running pooled entry of the open window (and with overlap the next window's): per feature
// the largest logit, the softmax sum and the weighted kv, three rows of dim each.
constexpr std::array<int64_t, 2> stateShape(const WindowPool &s) { return {s.halves() * 3, s.dim}; }

// cbc.state.wkv: k, v and the result [T, C], time_decay and time_first [C].
struct Wkv {
  int64_t channels, v, time_decay, time_first, result;
};
constexpr Error check(const Wkv &s) {
  if (s.channels <= 0 || s.v != s.channels || s.result != s.channels)
    return "k, v and result must have the same positive width";
  if (s.time_decay != s.channels || s.time_first != s.channels)
    return "time_decay and time_first must have one entry per channel";
  return nullptr;
}
// The numerator, the denominator and their exponent of every channel.
constexpr std::array<int64_t, 2> stateShape(const Wkv &s) { return {3, s.channels}; }

// cbc.state.rg_lru: x, the two gates and the result [T, C], recurrent_param [C].
struct RgLru {
  int64_t channels, input_gate, recurrent_gate, recurrent_param, result;
};
constexpr Error check(const RgLru &s) {
  if (s.channels <= 0 || s.input_gate != s.channels || s.recurrent_gate != s.channels || s.result != s.channels)
    return "x, the gates and result must have the same positive width";
  if (s.recurrent_param != s.channels)
    return "recurrent_param must have one entry per channel";
  return nullptr;
}
// The recurrence's h of every channel.
constexpr std::array<int64_t, 2> stateShape(const RgLru &s) { return {1, s.channels}; }

// cbc.state.mlstm: q, k [T, H * dk], v and the result [T, H * dv], the two gates [T, H].
struct Mlstm {
  int64_t heads, k_dim, v_dim;
  int64_t q, k, v, input_gate, forget_gate, result; // widths
};
constexpr Error check(const Mlstm &s) {
  if (s.heads <= 0 || s.k_dim <= 0 || s.v_dim <= 0)
    return "num_heads, k_dim and v_dim must be positive";
  if (s.q != s.heads * s.k_dim || s.k != s.heads * s.k_dim)
    return "q and k must be [T, num_heads * k_dim]";
  if (s.v != s.heads * s.v_dim || s.result != s.heads * s.v_dim)
    return "v and result must be [T, num_heads * v_dim]";
  if (s.input_gate != s.heads || s.forget_gate != s.heads)
    return "input_gate and forget_gate must be [T, num_heads]";
  return nullptr;
}
// Each head's C [dk, dv], n [dk] and m.
constexpr std::array<int64_t, 2> stateShape(const Mlstm &s) { return {s.heads, s.k_dim * (s.v_dim + 1) + 1}; }

// cbc.state.gated_delta.
struct GatedDelta {
  int64_t k_heads, v_heads, k_dim, v_dim;
  int64_t q, k, v, a, b, result; // widths
  int64_t a_log, dt_bias;        // elements
};
constexpr Error check(const GatedDelta &s) {
  if (s.k_heads <= 0 || s.v_heads <= 0 || s.k_dim <= 0 || s.v_dim <= 0 || s.v_heads % s.k_heads != 0)
    return "num_v_heads must be a positive multiple of num_k_heads";
  if (s.q != s.k_heads * s.k_dim || s.k != s.k_heads * s.k_dim || s.v != s.v_heads * s.v_dim)
    return "q and k must be [T, num_k_heads * k_dim] and v [T, num_v_heads * v_dim]";
  if (s.a != s.v_heads || s.b != s.v_heads)
    return "a and b must be [T, num_v_heads]";
  if (s.a_log != s.v_heads || s.dt_bias != s.v_heads)
    return "A_log and dt_bias must have num_v_heads entries";
  if (s.result != s.v_heads * s.v_dim)
    return "result width must be num_v_heads * v_dim";
  return nullptr;
}
// One k_dim x v_dim matrix per value head.
constexpr std::array<int64_t, 3> stateShape(const GatedDelta &s) { return {s.v_heads, s.k_dim, s.v_dim}; }

// cbc.state.kda.
struct Kda {
  int64_t heads, k_dim, v_dim;
  int64_t q, k, v, f, b, result; // widths
  int64_t a_log, dt_bias;        // elements
};
constexpr Error check(const Kda &s) {
  if (s.heads <= 0 || s.k_dim <= 0 || s.v_dim <= 0)
    return "num_heads, k_dim and v_dim must be positive";
  if (s.q != s.heads * s.k_dim || s.k != s.heads * s.k_dim || s.v != s.heads * s.v_dim)
    return "q and k must be [T, num_heads * k_dim] and v [T, num_heads * v_dim]";
  if (s.f != s.heads * s.k_dim)
    return "f must be [T, num_heads * k_dim]";
  if (s.b != s.heads)
    return "b must be [T, num_heads]";
  if (s.a_log != s.heads)
    return "A_log must have num_heads entries";
  if (s.dt_bias != s.heads * s.k_dim)
    return "dt_bias must have num_heads * k_dim entries";
  if (s.result != s.heads * s.v_dim)
    return "result width must be num_heads * v_dim";
  return nullptr;
}
// One k_dim x v_dim matrix per head.
constexpr std::array<int64_t, 3> stateShape(const Kda &s) { return {s.heads, s.k_dim, s.v_dim}; }

// cbc.state.ssd.
struct Ssd {
  int64_t heads, head_dim, groups, state_size;
  int64_t x, dt, B, C, result; // widths
  int64_t a_log, dt_bias, D;   // elements
};
constexpr Error check(const Ssd &s) {
  if (s.heads <= 0 || s.head_dim <= 0 || s.groups <= 0 || s.state_size <= 0 || s.heads % s.groups != 0)
    return "num_heads must be a positive multiple of n_groups";
  if (s.x != s.heads * s.head_dim || s.dt != s.heads)
    return "x must be [T, num_heads * head_dim] and dt [T, num_heads]";
  if (s.B != s.groups * s.state_size || s.C != s.groups * s.state_size)
    return "B and C must be [T, n_groups * state_size]";
  if (s.a_log != s.heads || s.dt_bias != s.heads || s.D != s.heads)
    return "A_log, dt_bias and D must have num_heads entries";
  if (s.result != s.heads * s.head_dim)
    return "result width must be num_heads * head_dim";
  return nullptr;
}
// One head_dim x state_size matrix per head.
constexpr std::array<int64_t, 3> stateShape(const Ssd &s) { return {s.heads, s.head_dim, s.state_size}; }

// cbc.state.selective_scan: `channels` is the width of x.
struct SelectiveScan {
  int64_t channels, groups, state_size;
  int64_t dt, z, B, C, result; // widths; z 0 without a gate
  bool gated;
  int64_t a_log, dt_bias, D; // elements
};
constexpr Error check(const SelectiveScan &s) {
  if (s.channels <= 0 || s.dt != s.channels || (s.gated && s.z != s.channels))
    return "x, dt and z must be [T, channels]";
  if (s.groups <= 0 || s.state_size <= 0 || s.channels % s.groups != 0)
    return "n_groups must divide the channel count";
  if (s.B != s.groups * s.state_size || s.C != s.groups * s.state_size)
    return "B and C must be [T, n_groups * state_size]";
  if (s.a_log != s.channels * s.state_size)
    return "A_log must be [channels, state_size]";
  if (s.dt_bias != s.channels || s.D != s.channels)
    return "dt_bias and D must have one entry per channel";
  if (s.result != s.channels)
    return "result width must equal the channel count";
  return nullptr;
}
// state_size values per channel.
constexpr std::array<int64_t, 2> stateShape(const SelectiveScan &s) { return {s.channels, s.state_size}; }

// cbc.state.lightning.
struct Lightning {
  int64_t heads, head_dim, decay_rates;
  int64_t q, k, v, result; // widths
  int64_t ranks = 1;       // decay holds the rates of this many ranks' heads
};
constexpr Error check(const Lightning &s) {
  if (s.heads <= 0 || s.head_dim <= 0)
    return "num_heads and head_dim must be positive";
  int64_t w = s.heads * s.head_dim;
  if (s.q != w || s.k != w || s.v != w)
    return "q, k and v must be [T, num_heads * head_dim]";
  if (s.result != w)
    return "result width must be num_heads * head_dim";
  if (s.ranks < 1)
    return "ranks must be positive";
  if (s.decay_rates != s.heads * s.ranks)
    return "decay must have num_heads entries for each of its ranks";
  return nullptr;
}
// One head_dim x head_dim matrix (k^T v) per head.
constexpr std::array<int64_t, 3> stateShape(const Lightning &s) { return {s.heads, s.head_dim, s.head_dim}; }

// Grouped-query heads, shared by the attention ops.
constexpr Error checkHeads(int64_t heads, int64_t kv_heads, int64_t head_dim) {
  if (heads <= 0 || kv_heads <= 0 || head_dim <= 0)
    return "head counts and head_dim must be positive";
  if (heads % kv_heads != 0)
    return "num_heads must be a multiple of num_kv_heads";
  return nullptr;
}

// cbc.kv.attention: the value head width is result / heads.
struct KvAttention {
  int64_t heads, kv_heads, head_dim, bias_extent;
  int64_t q, result, distance_bias; // widths; distance_bias 0 without one
  bool has_bias;
  int64_t sinks; // elements (-1: not a vector)
  bool has_sinks;
  int64_t selection = 0, selection_heads = 0, selection_block = 0; // selection: its width (0: none)
  bool has_selection = false;
};
constexpr Error check(const KvAttention &s) {
  if (Error e = checkHeads(s.heads, s.kv_heads, s.head_dim))
    return e;
  if (s.q != s.heads * s.head_dim)
    return "q width must be num_heads * head_dim";
  if (s.result % s.heads != 0)
    return "result width must be a multiple of num_heads";
  if (s.has_sinks && s.sinks != s.heads)
    return "sinks must have one entry per query head";
  if (s.has_bias != (s.bias_extent > 0))
    return "a distance bias needs a positive bias_extent, and bias_extent a distance bias";
  if (s.has_bias && s.distance_bias != s.heads * s.bias_extent)
    return "distance_bias width must be num_heads * bias_extent";
  if (s.has_selection != (s.selection_heads > 0) || (s.has_selection && s.selection_block <= 0))
    return "a block selection needs positive selection_heads and selection_block, and they a block selection";
  if (s.has_selection && (s.heads % s.selection_heads != 0 || s.selection % s.selection_heads != 0))
    return "selection_heads must divide num_heads and the block selection's width";
  return nullptr;
}

// cbc.kv.rope_append: the fused q|k|v row and the rotated q it returns.
struct KvRopeAppend {
  int64_t heads, kv_heads, head_dim, rope_head_dim;
  int64_t qkv, q; // widths
};
constexpr Error check(const KvRopeAppend &s) {
  if (Error e = checkHeads(s.heads, s.kv_heads, s.head_dim))
    return e;
  if (s.qkv != (s.heads + 2 * s.kv_heads) * s.head_dim)
    return "qkv width must be (num_heads + 2 * num_kv_heads) * head_dim";
  if (s.q != s.heads * s.head_dim)
    return "result width must be num_heads * head_dim";
  if (s.rope_head_dim != s.head_dim)
    return "rope head_dim must equal head_dim";
  return nullptr;
}

// cbc.stream.hc_weights: kind 0 collapse (pre), 1 independent (pre, post), 2 manifold (pre, post,
// comb), one of them (the enum: the loader checks an artefact's first); mixes and result are (2 + N) N, 2 N or N wide, base as wide, scale one factor per part.
struct HcWeights {
  int64_t kind, streams, mixes, base, scale, result, sinkhorn_iters;
};
constexpr int64_t hcWeightsWidth(int64_t kind, int64_t n) { return kind == 0 ? n : kind == 1 ? 2 * n : (2 + n) * n; }
constexpr Error check(const HcWeights &s) {
  if (s.streams < 1 || s.streams > 16)
    return "streams must be between 1 and 16";
  if (s.mixes != hcWeightsWidth(s.kind, s.streams) || s.result != s.mixes)
    return "mixes and result width must be N, 2 N or (2 + N) N as the kind has coefficients";
  if (s.base != s.mixes)
    return "base must have one entry per column of mixes";
  if (s.scale != s.kind + 1)
    return "scale must have one factor per kind of coefficient";
  if ((s.kind == 2) != (s.sinkhorn_iters > 0))
    return "sinkhorn_iters must be positive for a manifold kind and 0 otherwise";
  return nullptr;
}

// cbc.stream.collapse and cbc.stream.expand: N streams of H side by side; the N coefficients at
// column offset of weights (and, with comb, the N x N matrix after them).
struct Streams {
  int64_t count, streams, weights, offset, block, result;
  bool expand, comb;
  bool has_weights = true; // collapse without weights: the mean
};
constexpr Error check(const Streams &s) {
  if (s.count < 1 || s.count > 16)
    return "count must be between 1 and 16";
  if (s.streams % s.count != 0 || s.streams == 0)
    return "streams width must be count * hidden";
  if (s.has_weights && (s.offset < 0 || s.offset + s.count * (s.comb ? 1 + s.count : 1) > s.weights))
    return "weights must hold the coefficients from offset on";
  int64_t hidden = s.streams / s.count;
  if (s.expand ? (s.block != hidden || s.result != s.streams) : s.result != hidden)
    return "block and result widths must be the streams' hidden width (expand: result as the streams)";
  return nullptr;
}

// cbc.kv.latent_attention.
struct KvLatentAttention {
  int64_t heads, latent_dim, rope_dim;
  int64_t q_latent, q_rope, result, selection; // widths; selection -1 without one
};
constexpr Error check(const KvLatentAttention &s) {
  if (s.heads <= 0 || s.latent_dim <= 0 || s.rope_dim < 0)
    return "num_heads and latent_dim must be positive and rope_dim not negative";
  if (s.q_latent != s.heads * s.latent_dim || s.result != s.heads * s.latent_dim)
    return "q_latent and result width must be num_heads * latent_dim";
  if (s.q_rope != s.heads * s.rope_dim)
    return "q_rope width must be num_heads * rope_dim";
  if (s.selection == 0)
    return "selection must list at least one row per query";
  return nullptr;
}

// cbc.kv.index_select.
struct KvIndexSelect {
  int64_t heads, head_dim, topk;
  int64_t q, weights, result; // widths
};
constexpr Error check(const KvIndexSelect &s) {
  if (s.heads <= 0 || s.head_dim <= 0 || s.topk <= 0)
    return "num_heads, head_dim and topk must be positive";
  if (s.q != s.heads * s.head_dim)
    return "q width must be num_heads * head_dim";
  if (s.weights != s.heads)
    return "weights must have one column per head";
  if (s.result != s.topk)
    return "result width must be topk";
  return nullptr;
}

// cbc.kv.pool_select: ape [pool, head_dim] (its rank and dims), key_norm [head_dim]; the
// optional ones' fields unused when absent.
struct KvPoolSelect {
  int64_t heads, head_dim, pools, pool;
  int64_t q, weights, result;     // widths
  int64_t ape_rank, ape_rows, ape_cols;
  bool has_weights = true, has_ape = true, blocks = false;
  bool has_norm = false;
  int64_t norm = 0;   // key_norm's elements
  double eps = 0;     // with key_norm
  int64_t freqs = 0;  // len(key_freqs)
};
constexpr Error check(const KvPoolSelect &s) {
  if (s.heads <= 0 || s.head_dim <= 0 || s.pools <= 0 || s.pool <= 0)
    return "num_heads, head_dim, pools and pool must be positive";
  if (s.q != s.heads * s.head_dim)
    return "q width must be num_heads * head_dim";
  if (s.has_weights && s.weights != s.heads)
    return "weights must have one column per head";
  if (s.has_ape && (s.ape_rank != 2 || s.ape_rows != s.pool || s.ape_cols != s.head_dim))
    return "ape must be [pool, head_dim]";
  if (s.has_norm && (s.norm != s.head_dim || !(s.eps > 0)))
    return "key_norm must have head_dim entries and a positive eps";
  if (2 * s.freqs > s.head_dim)
    return "key_freqs must have at most head_dim / 2 entries";
  if (s.result != (s.blocks ? s.pools + 1 : s.pools * s.pool + s.pool - 1))
    return "result width must be pools * pool + pool - 1 (with blocks: pools + 1)";
  return nullptr;
}
// The index_key row a pool selection reads: [k | g] with ape, else k.
constexpr int64_t indexElems(const KvPoolSelect &s) { return s.has_ape ? 2 * s.head_dim : s.head_dim; }

// cbc.math.group_dot: a, b [T, groups * D], result [T, groups].
struct GroupDot {
  int64_t groups, a, b, result;
};
constexpr Error check(const GroupDot &s) {
  if (s.groups <= 0 || s.a <= 0 || s.a % s.groups != 0 || s.b != s.a)
    return "a and b must have the same width, a positive multiple of groups";
  if (s.result != s.groups)
    return "result width must be groups";
  return nullptr;
}

// cbc.kv.block_select.
struct KvBlockSelect {
  int64_t heads, head_dim, block, topk, local;
  int64_t q, result; // widths
};
constexpr Error check(const KvBlockSelect &s) {
  if (s.heads <= 0 || s.head_dim <= 0 || s.block <= 0 || s.topk <= 0)
    return "num_heads, head_dim, block and topk must be positive";
  if (s.local < 0 || s.local > s.topk)
    return "local must be between 0 and topk";
  if (s.q != s.heads * s.head_dim)
    return "q width must be num_heads * head_dim";
  if (s.result != s.heads * s.topk)
    return "result width must be num_heads * topk";
  return nullptr;
}

// cbc.math.l2_clip: x and the result [T, width] in groups of `group`; scale [width] (-1: not a vector).
struct L2Clip {
  int64_t width, group, scale, result;
  double threshold, eps;
  bool has_scale;
};
constexpr Error check(const L2Clip &s) {
  if (s.group <= 0 || s.width % s.group != 0)
    return "group must be positive and divide the row";
  if (s.has_scale && s.scale != s.width)
    return "scale must have one entry per feature of the row";
  if (!(s.threshold > 0) || !(s.threshold < 1e30) || !(s.eps >= 0) || !(s.eps < 1e30))
    return "threshold must be positive and eps non-negative, both finite";
  if (s.result != s.width)
    return "result width must equal the input width";
  return nullptr;
}

// cbc.stream.attend: sources [T, count * H], query [queries, H] (or [H]: one), result [T, queries * H].
struct StreamAttend {
  int64_t count, sources, query_rank, queries, query_width, result;
  double eps;
};
constexpr Error check(const StreamAttend &s) {
  if (s.count <= 0 || s.sources % s.count != 0)
    return "sources must hold count rows of one width";
  if (s.query_rank < 1 || s.query_rank > 2 || s.query_width != s.sources / s.count || s.queries <= 0)
    return "query must be [queries, width of a source] or [width of a source]";
  if (s.result != s.queries * s.query_width)
    return "result must hold one row per query";
  if (!(s.eps > 0) || !(s.eps < 1e30))
    return "eps must be positive and finite";
  return nullptr;
}

// cbc.math.head_position_scale: x and the result [T, width], scale and bias [H] (-1: not a
// vector), H heads of width / H.
struct HeadPositionScale {
  int64_t width, scale, bias, result;
};
constexpr Error check(const HeadPositionScale &s) {
  if (s.scale <= 0 || s.bias != s.scale)
    return "scale and bias must be vectors of one entry per head";
  if (s.width % s.scale != 0)
    return "x must hold whole heads";
  if (s.result != s.width)
    return "result width must equal the input width";
  return nullptr;
}

// cbc.math.head_linear: a [weight_rows, weight_cols] weight of `heads` blocks.
struct HeadLinear {
  int64_t heads, offset, rows, weight_rank, weight_rows, weight_cols;
  bool transpose;
  int64_t x, result; // widths
};
constexpr Error check(const HeadLinear &s) {
  if (s.heads <= 0 || s.weight_rank != 2 || s.weight_rows % s.heads != 0)
    return "weight must be [heads * R, C] with heads positive";
  int64_t R = s.weight_rows / s.heads;
  if (s.offset < 0 || s.rows <= 0 || s.offset + s.rows > R)
    return "rows [offset, offset + rows) must lie within each head's weight rows";
  int64_t in = s.transpose ? s.rows : s.weight_cols, out = s.transpose ? s.weight_cols : s.rows;
  if (s.x != s.heads * in || s.result != s.heads * out)
    return "x and result widths must be heads times the rows (or columns) each head reads and writes";
  return nullptr;
}

// cbc.math.sinusoidal_position: its frequencies need two of them, ln(base) / (h - 1) with h > 1.
struct SinusoidalPosition {
  int64_t width;
};
constexpr Error check(const SinusoidalPosition &s) {
  if (s.width < 4)
    return "result width must be at least 4 (two frequencies)";
  return nullptr;
}

} // namespace cbc::shape

#endif
