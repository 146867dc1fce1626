#include "runtime/cpu/cpu_backend.h"

#include "runtime/cpu/kernels.h"
#include "runtime/thread_pool.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <stdexcept>

namespace cbc::rt {

namespace {

using cpu::Act;

cpu::RopeParams ropeParams(const Instr &in) {
  cpu::RopeParams p;
  p.head_dim = in.getInt("head_dim");
  p.rotary_dim = in.getInt("rotary_dim");
  p.interleaved = in.getString("pairing", "half") == "interleaved";
  for (double f : in.getFloats("inv_freq"))
    p.inv_freq.push_back((float)f);
  p.attention_factor = (float)in.getFloat("attention_factor", 1.0);
  if (in.has("inv_freq_long")) {
    for (double f : in.getFloats("inv_freq_long"))
      p.inv_freq_long.push_back((float)f);
    p.long_after = in.getInt("long_after");
  }
  if (in.has("dynamic_base")) {
    p.dynamic_base = in.getFloat("dynamic_base");
    p.dynamic_factor = in.getFloat("dynamic_factor");
    p.dynamic_max_positions = in.getInt("dynamic_max_positions");
  }
  return p;
}

// Everything an instruction needs to find its operands during one step.
struct StepContext {
  const StepBatch *batch = nullptr;
  std::vector<int64_t> seqLen;      // per token: the length its RoPE schedule sees
  std::vector<float> scratch[3];    // fused ops' intermediates
};

class CpuBackend : public Backend {
public:
  CpuBackend(const Artefact &a, WeightStore weights, const BackendLimits &limits, int threads);

  std::string name() const override { return "cpu"; }
  int64_t cacheBytesPerToken(int group) const override;
  int64_t stateBytesPerSlot() const override;
  void allocateCache(int32_t blocksPerGroup, int32_t stateSlots) override;
  void run(const StepBatch &batch, std::vector<float> &logits) override;
  void setObserver(std::function<void(int)> observer) override { observer_ = std::move(observer); }
  bool readValue(int value, std::vector<float> &out) override;
  bool writeValue(int value, const std::vector<float> &in) override;

private:
  using Exec = std::function<void(StepContext &)>;

  // Operand access.
  float *f32(int value);
  int32_t *i32(int value);
  const float *weight(int value) const;
  int64_t rows(int value) const;
  int64_t cols(int value) const { return artefact_.program.values[value].cols(); }
  const int32_t *arg(const std::string &name) const;
  const int32_t *groupTables(int group) const {
    return batch_->block_tables + (int64_t)group * batch_->table_slots * batch_->table_width;
  }

  Exec compile(const Instr &in);
  Exec compileFused(const Instr &in);
  // The length each token's RoPE schedule sees: its prompt, or its own position once past it.
  void seqLengths(StepContext &ctx) const {
    const StepBatch &b = *batch_;
    ctx.seqLen.resize(b.num_tokens);
    for (int64_t t = 0; t < b.num_tokens; ++t)
      ctx.seqLen[t] = std::max<int64_t>(b.prompt_lens[b.seq_ids[t]], (int64_t)b.positions[t] + 1);
  }
  void checkArenaSlots() const;

  const Artefact &artefact_;
  WeightStore weights_;
  BackendLimits limits_;
  ThreadPool pool_;
  cpu::ParallelFor pfor_;
  // Allocated without zero-filling: pages are mapped only when a step first touches them.
  std::unique_ptr<float[]> arenas_[2];
  std::vector<Exec> program_;
  std::map<int, std::unique_ptr<float[]>> kvPools_; // layer -> pool
  std::map<std::pair<int, std::string>, std::vector<float>> statePools_; // (layer, name) -> [slots][elems]
  float *statePool(int layer, const std::string &name) {
    auto it = statePools_.find({layer, name});
    if (it == statePools_.end())
      throw std::runtime_error("cpu backend: layer " + std::to_string(layer) + " has no state '" + name + "'");
    return it->second.data();
  }
  cpu::StateRows stateRows() const {
    const StepBatch &b = *batch_;
    return {b.cu_seqlens.data(), b.slots.data(), b.has_initial_state.data(), b.num_requests};
  }
  std::map<int, cpu::KvLayout> kvLayouts_;
  std::map<int, int> layerGroup_;
  const StepBatch *batch_ = nullptr;
  std::function<void(int)> observer_;
};

CpuBackend::CpuBackend(const Artefact &a, WeightStore weights, const BackendLimits &limits,
                       int threads)
    : artefact_(a), weights_(std::move(weights)), limits_(limits), pool_(threads) {
  pfor_ = [this](int64_t n, const std::function<void(int64_t)> &fn) { pool_.parallelFor(n, fn); };
  checkArenaSlots();
  // Sized by the slots the values use (at most the declared row widths).
  int64_t extent[2] = {1, 1};
  for (const Value &v : a.program.values)
    if (v.kind == Value::Activation)
      extent[v.arena] = std::max(extent[v.arena], v.offset + v.cols());
  arenas_[0].reset(new float[extent[0] * limits.max_tokens]);
  arenas_[1].reset(new float[extent[1] * limits.max_requests]);
  for (const CacheLayer &l : a.cache_plan.layers) {
    cpu::KvLayout layout;
    layout.block_size = a.cache_plan.block_size;
    layout.row_elems = l.elemsPerToken();
    layout.k_elems = l.rows.empty() ? 0 : l.rows[0].second;
    kvLayouts_[l.layer] = layout;
    layerGroup_[l.layer] = l.group;
  }
  for (const Instr &in : a.program.instrs)
    program_.push_back(compile(in));
}

// A corrupt or hostile artefact must not make the backend write outside its arenas.
void CpuBackend::checkArenaSlots() const {
  const Program &p = artefact_.program;
  // Row widths stay within what int arithmetic (and BLAS's int sizes) can index.
  const int64_t maxWidth = std::numeric_limits<int32_t>::max();
  if (p.token_row_elems < 0 || p.token_row_elems > maxWidth || p.request_row_elems < 0 ||
      p.request_row_elems > maxWidth || limits_.max_tokens < 1 || limits_.max_requests < 1)
    throw ArtefactError("the program's arena rows are out of range");
  for (const Value &v : p.values) {
    if (v.kind != Value::Activation)
      continue;
    int64_t width = v.arena == 0 ? p.token_row_elems : p.request_row_elems;
    if (v.shape.size() != 2 || v.cols() <= 0 || v.offset > width || v.cols() > width - v.offset)
      throw ArtefactError("program value does not fit its arena slot");
  }
  // The engine reads vocab_size logits per sampled row.
  const Value &out = p.values[p.output];
  if (out.kind != Value::Activation || out.cols() != artefact_.meta.vocab_size)
    throw ArtefactError("the program's output is not a [rows, vocab_size] activation");
}

int64_t CpuBackend::cacheBytesPerToken(int group) const {
  int64_t bytes = 0;
  for (const CacheLayer &l : artefact_.cache_plan.layers)
    if (l.group == group)
      bytes += l.elemsPerToken() * 4;
  return bytes;
}

int64_t CpuBackend::stateBytesPerSlot() const {
  int64_t bytes = 0;
  for (const StateDecl &s : artefact_.cache_plan.states)
    bytes += s.elems() * 4;
  return bytes;
}

void CpuBackend::allocateCache(int32_t blocksPerGroup, int32_t slots) {
  // States are read only after a request's first chunk wrote them: zero-filled once here.
  for (const StateDecl &s : artefact_.cache_plan.states)
    statePools_[{s.layer, s.name}].assign((size_t)slots * s.elems(), 0.0f);
  for (auto &[layer, layout] : kvLayouts_)
    kvPools_[layer].reset(new float[std::max<size_t>(1, (size_t)blocksPerGroup * layout.block_size * layout.row_elems)]);
}

float *CpuBackend::f32(int value) {
  const Value &v = artefact_.program.values[value];
  if (v.kind != Value::Activation)
    throw std::runtime_error("cpu backend: value " + std::to_string(value) + " is not an activation");
  return arenas_[v.arena].get() + v.offset * (v.arena == 0 ? limits_.max_tokens : limits_.max_requests);
}

int32_t *CpuBackend::i32(int value) { return reinterpret_cast<int32_t *>(f32(value)); }

const float *CpuBackend::weight(int value) const {
  const Value &v = artefact_.program.values[value];
  if (v.kind != Value::Weight)
    throw std::runtime_error("cpu backend: value " + std::to_string(value) + " is not a weight");
  return weights_.get(v.weight).data.data();
}

// Activation rows: per token (T) or per logit row.
int64_t CpuBackend::rows(int value) const {
  const Value &v = artefact_.program.values[value];
  return v.arena == 1 ? batch_->num_logit_rows : batch_->num_tokens;
}

const int32_t *CpuBackend::arg(const std::string &name) const {
  const StepBatch &b = *batch_;
  if (name == "tokens") return b.tokens.data();
  if (name == "positions") return b.positions.data();
  if (name == "seq_ids") return b.seq_ids.data();
  if (name == "cu_seqlens") return b.cu_seqlens.data();
  if (name == "kv_lens") return b.kv_lens.data();
  if (name == "block_tables") return b.block_tables;
  if (name == "logit_rows") return b.logit_rows.data();
  if (name == "prompt_lens") return b.prompt_lens.data();
  if (name == "slots") return b.slots.data();
  if (name == "has_initial_state") return b.has_initial_state.data();
  throw std::runtime_error("cpu backend: unknown step argument '" + name + "'");
}

CpuBackend::Exec CpuBackend::compile(const Instr &in) {
  const auto &I = in.inputs;
  const auto &O = in.outputs;
  auto argName = [&](int idx) { return artefact_.program.values[I[idx]].arg_name; };
  auto need = [&](size_t nIn, size_t nOut) {
    if (I.size() < nIn || O.size() != nOut)
      throw ArtefactError("instruction " + in.op + " has the wrong number of operands");
  };
  const std::string &op = in.op;
  // A corrupt artefact must not make a kernel read or write out of bounds: each operand is
  // checked against what the kernel will index.
  const auto &values = artefact_.program.values;
  auto fail = [&](const std::string &why) {
    return ArtefactError("instruction " + op + " " + why);
  };
  // Activations processed row by row together share one arena (the same row count).
  auto acts = [&](std::initializer_list<int> ids) {
    int arena = -1;
    for (int v : ids) {
      if (values[v].kind != Value::Activation)
        throw fail("expects an activation operand");
      if (arena >= 0 && values[v].arena != arena)
        throw fail("mixes per-token and per-request rows");
      arena = values[v].arena;
    }
  };
  auto needArg = [&](size_t idx, const char *name) {
    if (values[I[idx]].kind != Value::Argument || values[I[idx]].arg_name != name)
      throw fail(std::string("expects the step argument '") + name + "'");
  };
  auto weightShape = [&](int v) -> const std::vector<int64_t> & {
    if (values[v].kind != Value::Weight)
      throw fail("expects a weight operand");
    return weights_.get(values[v].weight).shape;
  };
  auto weightNumel = [&](int v) {
    int64_t n = 1;
    for (int64_t d : weightShape(v))
      n *= d;
    return n;
  };
  auto check = [&](bool ok, const char *why) {
    if (!ok)
      throw fail(why);
  };

  if (op == "cbc.math.embed") {
    need(2, 1);
    needArg(0, "tokens");
    acts({O[0]});
    std::string tokens = argName(0);
    float scale = (float)in.getFloat("scale", 1.0);
    int64_t H = cols(O[0]);
    const auto &table = weightShape(I[1]);
    check(table.size() == 2 && table[1] == H && table[0] >= artefact_.meta.vocab_size,
          "has an embedding table that does not match the vocabulary and width");
    return [=, this](StepContext &) {
      cpu::embed(arg(tokens), batch_->num_tokens, weight(I[1]), H, scale, f32(O[0]));
    };
  }
  if (op == "cbc.math.linear") {
    need(2, 1);
    acts({I[0], O[0]});
    int64_t K = cols(I[0]), N = cols(O[0]);
    bool bias = I.size() > 2;
    check(weightNumel(I[1]) == N * K && weightShape(I[1]).size() == 2 && weightShape(I[1])[1] == K,
          "has a weight whose shape is not [out, in]");
    check(!bias || weightNumel(I[2]) == N, "has a bias of the wrong size");
    return [=, this](StepContext &) {
      cpu::linear(f32(I[0]), rows(I[0]), K, weight(I[1]), N, bias ? weight(I[2]) : nullptr, f32(O[0]));
    };
  }
  if (op == "cbc.math.rms_norm") {
    need(1, 1);
    acts({I[0], O[0]});
    int64_t width = cols(I[0]);
    int64_t group = in.getInt("group", width);
    float eps = (float)in.getFloat("eps"), offset = (float)in.getFloat("offset", 0.0);
    bool w = I.size() > 1;
    check(group > 0 && width % group == 0 && cols(O[0]) == width, "has an inconsistent width or group");
    check(!w || weightNumel(I[1]) == group, "has a weight of the wrong size");
    return [=, this](StepContext &) {
      cpu::rmsNorm(f32(I[0]), rows(I[0]), width, group, w ? weight(I[1]) : nullptr, eps, offset, f32(O[0]));
    };
  }
  if (op == "cbc.math.add") {
    need(2, 1);
    acts({I[0], I[1], O[0]});
    int64_t width = cols(I[0]);
    check(cols(I[1]) == width && cols(O[0]) == width, "adds operands of different widths");
    return [=, this](StepContext &) {
      cpu::add(f32(I[0]), f32(I[1]), rows(I[0]) * width, f32(O[0]));
    };
  }
  if (op == "cbc.math.glu") {
    need(1, 1);
    Act act = cpu::parseAct(in.getString("act"));
    bool inter = in.getString("layout", "halves") == "interleaved";
    float limit = (float)in.getFloat("limit", 0), alpha = (float)in.getFloat("alpha", 0);
    int64_t width = cols(O[0]);
    acts({I[0], O[0]});
    check(cols(I[0]) == 2 * width, "needs an input twice as wide as its output");
    return [=, this](StepContext &) {
      cpu::glu(f32(I[0]), rows(I[0]), width, act, inter, limit, alpha, f32(O[0]));
    };
  }
  if (op == "cbc.math.split") {
    need(1, O.size());
    int64_t width = cols(I[0]), total = 0;
    acts({I[0]});
    for (int o : O) {
      acts({I[0], o});
      total += cols(o);
    }
    check(total <= width, "splits more columns than its input has");
    return [=, this](StepContext &) {
      int64_t col = 0;
      for (int o : O) {
        cpu::copyColumns(f32(I[0]), rows(I[0]), width, col, cols(o), f32(o));
        col += cols(o);
      }
    };
  }
  if (op == "cbc.math.rope") {
    need(4, 1);
    cpu::RopeParams p = ropeParams(in);
    if ((int64_t)p.inv_freq.size() != p.rotary_dim / 2 || p.head_dim <= 0 ||
        cols(I[0]) % p.head_dim != 0 || p.rotary_dim < 0 || p.rotary_dim > p.head_dim ||
        (in.has("inv_freq_long") && (int64_t)p.inv_freq_long.size() != p.rotary_dim / 2))
      throw ArtefactError("cbc.math.rope has inconsistent attributes");
    acts({I[0], O[0]});
    check(cols(O[0]) == cols(I[0]), "changes the width");
    needArg(1, "positions");
    needArg(2, "seq_ids");
    needArg(3, "prompt_lens");
    std::string positions = argName(1), seqIds = argName(2), promptLens = argName(3);
    int64_t width = cols(I[0]);
    return [=, this](StepContext &ctx) {
      seqLengths(ctx);
      cpu::rope(f32(I[0]), batch_->num_tokens, width, p, batch_->positions.data(), ctx.seqLen.data(),
                f32(O[0]), pfor_);
    };
  }
  if (op == "cbc.math.act") {
    need(1, 1);
    Act act = cpu::parseAct(in.getString("act"));
    check(act != Act::GptOss, "has an activation that needs a gated unit");
    float scale = (float)in.getFloat("scale", 1.0);
    acts({I[0], O[0]});
    check(cols(O[0]) == cols(I[0]), "changes the width");
    return [=, this](StepContext &) {
      const float *x = f32(I[0]);
      float *y = f32(O[0]);
      for (int64_t i = 0, n = rows(I[0]) * cols(I[0]); i < n; ++i)
        y[i] = scale * cpu::activate(act, x[i]);
    };
  }
  if (op == "cbc.math.softcap") {
    need(1, 1);
    float cap = (float)in.getFloat("cap");
    acts({I[0], O[0]});
    check(cols(O[0]) == cols(I[0]), "changes the width");
    return [=, this](StepContext &) { cpu::softcap(f32(I[0]), rows(I[0]) * cols(I[0]), cap, f32(O[0])); };
  }
  if (op == "cbc.math.gate") {
    need(2, 1);
    acts({I[0], I[1], O[0]});
    int64_t width = cols(I[0]), gw = cols(I[1]);
    check(cols(O[0]) == width && (gw == 1 || gw == width), "has a gate of the wrong width");
    bool sigmoid = in.getString("act", "sigmoid") == "sigmoid";
    return [=, this](StepContext &) {
      cpu::sigmoidGate(f32(I[0]), f32(I[1]), rows(I[0]), width, gw, f32(O[0]), sigmoid);
    };
  }
  if (op == "cbc.kv.append") {
    need(6, 0);
    int layer = (int)in.getInt("layer");
    int group = (int)in.getInt("group");
    if (!kvLayouts_.count(layer) || group < 0 || group >= (int)artefact_.cache_plan.groups.size() ||
        layerGroup_.at(layer) != group)
      throw ArtefactError("cbc.kv.append refers to a layer the cache plan lacks");
    acts({I[0], I[1]});
    const cpu::KvLayout &kv = kvLayouts_.at(layer);
    check(kv.k_elems >= 0 && cols(I[0]) == kv.k_elems && cols(I[1]) == kv.row_elems - kv.k_elems,
          "writes rows that do not match the cache plan");
    needArg(2, "positions");
    needArg(3, "seq_ids");
    needArg(4, "slots");
    needArg(5, "block_tables");
    return [=, this](StepContext &) {
      const StepBatch &b = *batch_;
      cpu::kvAppend(f32(I[0]), f32(I[1]), b.num_tokens, b.positions.data(), b.seq_ids.data(),
                    b.slots.data(), groupTables(group), b.table_width, kvLayouts_.at(layer),
                    kvPools_.at(layer).get());
    };
  }
  if (op == "cbc.kv.attention") {
    need(7, 1);
    int layer = (int)in.getInt("layer");
    int group = (int)in.getInt("group");
    if (!kvLayouts_.count(layer) || group < 0 || group >= (int)artefact_.cache_plan.groups.size() ||
        layerGroup_.at(layer) != group)
      throw ArtefactError("cbc.kv.attention refers to a layer the cache plan lacks");
    acts({I[0], O[0]});
    cpu::AttentionParams p;
    p.num_heads = in.getInt("num_heads");
    p.num_kv_heads = in.getInt("num_kv_heads");
    p.head_dim = in.getInt("head_dim");
    p.v_head_dim = p.num_heads > 0 ? cols(O[0]) / p.num_heads : 0;
    p.scale = (float)in.getFloat("scale");
    p.window = in.getInt("window", 0);
    p.chunk = in.getInt("chunk", 0);
    p.softcap = (float)in.getFloat("softcap", 0.0);
    bool sinks = I.size() > 7;
    const cpu::KvLayout &kv = kvLayouts_.at(layer);
    const int64_t maxHeads = 1 << 20;
    check(p.num_heads > 0 && p.num_kv_heads > 0 && p.num_heads % p.num_kv_heads == 0 &&
              p.head_dim > 0 && p.num_heads <= maxHeads && p.num_kv_heads <= maxHeads &&
              p.head_dim <= maxHeads && cols(I[0]) == p.num_heads * p.head_dim &&
              cols(O[0]) == p.num_heads * p.v_head_dim &&
              p.num_kv_heads * p.head_dim <= kv.k_elems &&
              p.num_kv_heads * p.v_head_dim <= kv.row_elems - kv.k_elems,
          "has heads that do not match its operands or the cache plan");
    check(!sinks || weightNumel(I[7]) == p.num_heads, "has sinks of the wrong size");
    needArg(1, "positions");
    needArg(2, "seq_ids");
    needArg(5, "slots");
    needArg(6, "block_tables");
    return [=, this](StepContext &) mutable {
      const StepBatch &b = *batch_;
      p.sinks = sinks ? weight(I[7]) : nullptr;
      cpu::pagedAttention(f32(I[0]), b.num_tokens, b.positions.data(), b.seq_ids.data(),
                          b.slots.data(), groupTables(group), b.table_width, kvLayouts_.at(layer),
                          kvPools_.at(layer).get(), p, f32(O[0]), pfor_);
    };
  }
  if (op == "cbc.rows.gather") {
    need(2, 1);
    int64_t width = cols(I[0]);
    acts({I[0]});
    acts({O[0]});
    check(values[I[0]].arena == 0 && values[O[0]].arena == 1 && cols(O[0]) == width,
          "must gather token rows into request rows of the same width");
    needArg(1, "logit_rows");
    std::string rowsArg = argName(1);
    return [=, this](StepContext &) {
      cpu::gatherRows(f32(I[0]), width, arg(rowsArg), batch_->num_logit_rows, f32(O[0]));
    };
  }
  if (op == "cbc.moe.route") {
    need(1, 2);
    acts({I[0], O[0], O[1]});
    int64_t E = cols(I[0]), k = in.getInt("k");
    check(k >= 1 && k <= E && cols(O[0]) == k && cols(O[1]) == k, "has an inconsistent k");
    bool bias = I.size() == 2;
    check(!bias || weightNumel(I[1]) == E, "has a selection bias of the wrong size");
    std::string score = in.getString("score");
    check(score == "softmax" || score == "topk_softmax" || score == "sigmoid", "has an unknown score");
    cpu::RouteParams p;
    p.score = score == "sigmoid"        ? cpu::RouteScore::Sigmoid
              : score == "topk_softmax" ? cpu::RouteScore::TopkSoftmax
                                        : cpu::RouteScore::Softmax;
    p.renorm = in.getInt("renorm", 0) != 0;
    p.renorm_eps = (float)in.getFloat("renorm_eps", 0.0);
    p.scaling = (float)in.getFloat("scaling", 1.0);
    return [=, this](StepContext &) {
      cpu::RouteParams q = p;
      q.selection_bias = bias ? weight(I[1]) : nullptr;
      cpu::moeRoute(f32(I[0]), rows(I[0]), E, k, q, f32(O[0]), i32(O[1]));
    };
  }
  if (op == "cbc.math.concat") {
    check(!I.empty() && O.size() == 1, "has the wrong number of operands");
    int64_t total = 0;
    for (int i : I) {
      acts({i, O[0]});
      total += cols(i);
    }
    check(total == cols(O[0]), "has a result whose width is not the sum of its inputs'");
    return [=, this](StepContext &) {
      std::vector<std::pair<const float *, int64_t>> ins;
      for (int i : I)
        ins.emplace_back(f32(i), cols(i));
      cpu::concatColumns(ins, rows(O[0]), f32(O[0]));
    };
  }
  if (op == "cbc.moe.experts") {
    need(5, 1);
    Act act = cpu::parseAct(in.getString("act"));
    std::string layout = in.getString("layout", "halves");
    bool inter = layout == "interleaved", ungated = layout == "ungated";
    check(!ungated || act != Act::GptOss, "has an activation that needs a gated unit");
    float limit = (float)in.getFloat("limit", 0), alpha = (float)in.getFloat("alpha", 0);
    const auto &guShape = artefact_.program.values[I[3]].shape;
    if (guShape.size() != 3)
      throw ArtefactError("cbc.moe.experts: gate_up must be rank 3");
    int64_t E = guShape[0], I2 = guShape[1], H = guShape[2], k = cols(I[1]);
    int64_t inter1 = ungated ? I2 : I2 / 2; // the intermediate width
    bool biases = I.size() > 5;
    acts({I[0], I[1], I[2], O[0]});
    check(weightShape(I[3]) == guShape && (ungated || I2 % 2 == 0) && cols(I[0]) == H && cols(O[0]) == H &&
              cols(I[2]) == k && weightShape(I[4]) == std::vector<int64_t>{E, H, inter1},
          "has expert weights that do not match its operands");
    check(!biases || (I.size() > 6 && weightShape(I[5]) == std::vector<int64_t>{E, I2} &&
                      weightShape(I[6]) == std::vector<int64_t>{E, H}),
          "has expert biases of the wrong shape");
    return [=, this](StepContext &) {
      cpu::ExpertWeights w{weight(I[3]), weight(I[4]), biases ? weight(I[5]) : nullptr,
                           biases ? weight(I[6]) : nullptr, E, inter1, H, ungated};
      cpu::moeExperts(f32(I[0]), rows(I[0]), i32(I[1]), f32(I[2]), k, w, act, inter, limit, alpha, f32(O[0]));
    };
  }
  return compileFused(in);
}

// The fused ops: each runs the reference kernels of the ops it replaces.
CpuBackend::Exec CpuBackend::compileFused(const Instr &in) {
  const auto &I = in.inputs;
  const auto &O = in.outputs;
  const std::string &op = in.op;
  const auto &values = artefact_.program.values;
  auto fail = [&](const std::string &why) { return ArtefactError("instruction " + op + " " + why); };
  auto check = [&](bool ok, const char *why) {
    if (!ok)
      throw fail(why);
  };
  auto isAct = [&](int v) { return values[v].kind == Value::Activation; };
  auto isArg = [&](int v, const char *name) {
    return values[v].kind == Value::Argument && values[v].arg_name == name;
  };
  auto weightNumel = [&](int v) {
    check(values[v].kind == Value::Weight, "expects a weight operand");
    return weights_.get(values[v].weight).numel();
  };
  if (op == "cbc.math.add_rms_norm") {
    check(I.size() >= 2 && O.size() == 2, "has the wrong number of operands");
    int64_t width = cols(I[0]);
    check(isAct(I[0]) && isAct(I[1]) && isAct(O[0]) && isAct(O[1]) &&
              values[I[0]].arena == values[O[1]].arena && cols(I[1]) == width &&
              cols(O[0]) == width && cols(O[1]) == width && width > 0,
          "has operands of different widths");
    bool w = I.size() > 2;
    check(!w || weightNumel(I[2]) == width, "has a weight of the wrong size");
    float eps = (float)in.getFloat("eps"), offset = (float)in.getFloat("offset", 0.0);
    return [=, this](StepContext &) {
      int64_t rowsN = rows(I[0]);
      cpu::add(f32(I[0]), f32(I[1]), rowsN * width, f32(O[0]));
      cpu::rmsNorm(f32(O[0]), rowsN, width, width, w ? weight(I[2]) : nullptr, eps, offset, f32(O[1]));
    };
  }
  if (op == "cbc.kv.rope_append") {
    check(I.size() >= 6 && O.size() == 1, "has the wrong number of operands");
    int layer = (int)in.getInt("layer"), group = (int)in.getInt("group");
    check(kvLayouts_.count(layer) && group >= 0 && group < (int)artefact_.cache_plan.groups.size() &&
              layerGroup_.at(layer) == group,
          "refers to a layer the cache plan lacks");
    int64_t H = in.getInt("num_heads"), Hkv = in.getInt("num_kv_heads"), D = in.getInt("head_dim");
    check(H > 0 && Hkv > 0 && D > 0 && H <= (1 << 20) && Hkv <= (1 << 20) && D <= (1 << 20),
          "has bad head counts");
    int64_t qw = H * D, kw = Hkv * D;
    const cpu::KvLayout &kv = kvLayouts_.at(layer);
    check(isAct(I[0]) && isAct(O[0]) && cols(I[0]) == qw + 2 * kw && cols(O[0]) == qw &&
              kv.k_elems == kw && kv.row_elems == 2 * kw,
          "has widths that do not match its heads or the cache plan");
    check(isArg(I[1], "positions") && isArg(I[2], "seq_ids") && isArg(I[3], "prompt_lens") &&
              isArg(I[4], "slots") && isArg(I[5], "block_tables"),
          "expects the step's metadata arguments");
    bool norms = I.size() > 6;
    check(!norms || (I.size() == 8 && weightNumel(I[6]) == D && weightNumel(I[7]) == D),
          "has norm weights of the wrong size");
    float eps = (float)in.getFloat("eps", 1e-6), offset = (float)in.getFloat("norm_offset", 0.0);
    cpu::RopeParams p = ropeParams(in);
    p.head_dim = D;
    check((int64_t)p.inv_freq.size() == p.rotary_dim / 2 && p.rotary_dim > 0 && p.rotary_dim <= D &&
              (p.inv_freq_long.empty() || (int64_t)p.inv_freq_long.size() == p.rotary_dim / 2),
          "has inconsistent RoPE attributes");
    return [=, this](StepContext &ctx) {
      const StepBatch &b = *batch_;
      int64_t T = b.num_tokens;
      std::vector<float> &q = ctx.scratch[0], &k = ctx.scratch[1], &v = ctx.scratch[2];
      q.resize(T * qw);
      k.resize(T * kw);
      v.resize(T * kw);
      cpu::copyColumns(f32(I[0]), T, qw + 2 * kw, 0, qw, q.data());
      cpu::copyColumns(f32(I[0]), T, qw + 2 * kw, qw, kw, k.data());
      cpu::copyColumns(f32(I[0]), T, qw + 2 * kw, qw + kw, kw, v.data());
      if (norms) {
        cpu::rmsNorm(q.data(), T, qw, D, weight(I[6]), eps, offset, q.data());
        cpu::rmsNorm(k.data(), T, kw, D, weight(I[7]), eps, offset, k.data());
      }
      seqLengths(ctx);
      cpu::rope(q.data(), T, qw, p, b.positions.data(), ctx.seqLen.data(), f32(O[0]), pfor_);
      cpu::rope(k.data(), T, kw, p, b.positions.data(), ctx.seqLen.data(), k.data(), pfor_);
      cpu::kvAppend(k.data(), v.data(), T, b.positions.data(), b.seq_ids.data(), b.slots.data(),
                    groupTables(group), b.table_width, kvLayouts_.at(layer), kvPools_.at(layer).get());
    };
  }
  if (op == "cbc.math.rms_norm_gated") {
    check(I.size() >= 2 && O.size() == 1, "has the wrong number of operands");
    int64_t width = cols(I[0]);
    int64_t group = in.getInt("group", width);
    check(isAct(I[0]) && isAct(I[1]) && isAct(O[0]) && cols(I[1]) == width && cols(O[0]) == width &&
              group > 0 && width % group == 0,
          "has operands of different widths");
    bool w = I.size() > 2;
    check(!w || weightNumel(I[2]) == group || weightNumel(I[2]) == width, "has a weight of the wrong size");
    bool perRow = w && weightNumel(I[2]) == width && width != group;
    float eps = (float)in.getFloat("eps"), offset = (float)in.getFloat("offset", 0.0);
    bool silu = in.getString("act", "silu") == "silu";
    bool normFirst = in.getString("order", "norm_gate") == "norm_gate";
    return [=, this](StepContext &) {
      cpu::rmsNormGated(f32(I[0]), f32(I[1]), rows(I[0]), width, group, w ? weight(I[2]) : nullptr, perRow,
                        eps, offset, silu, normFirst, f32(O[0]));
    };
  }
  if (op == "cbc.state.conv1d") {
    check(I.size() >= 5 && O.size() == 1, "has the wrong number of operands");
    bool bias = I.size() == 6;
    size_t meta = bias ? 3 : 2;
    check(isArg(I[meta], "cu_seqlens") && isArg(I[meta + 1], "slots") &&
              isArg(I[meta + 2], "has_initial_state"),
          "expects the step's metadata arguments");
    int64_t C = cols(I[0]);
    check(values[I[1]].kind == Value::Weight && values[I[1]].shape.size() == 3 &&
              values[I[1]].shape[0] == C && values[I[1]].shape[1] == 1 && values[I[1]].shape[2] >= 1,
          "has a weight that is not [channels, 1, kernel]");
    int64_t K = values[I[1]].shape[2];
    check(!bias || weightNumel(I[2]) == C, "has a bias of the wrong size");
    check(isAct(I[0]) && isAct(O[0]) && cols(O[0]) == C && values[I[0]].arena == 0,
          "has operands of different widths");
    int layer = (int)in.getInt("layer");
    std::string state = in.getString("state", "conv");
    bool silu = in.getString("act", "none") == "silu";
    bool found = false;
    for (const StateDecl &d : artefact_.cache_plan.states)
      found |= d.layer == layer && d.name == state && d.elems() == C * (K - 1);
    check(found || K == 1, "has no matching state in the cache plan");
    return [=, this](StepContext &) {
      cpu::conv1dStates(f32(I[0]), C, K, weight(I[1]), bias ? weight(I[2]) : nullptr, silu, stateRows(),
                        K > 1 ? statePool(layer, state) : nullptr, f32(O[0]), pfor_);
    };
  }
  if (op == "cbc.state.scan") {
    std::string kind = in.getString("kind");
    int layer = (int)in.getInt("layer");
    std::string state = in.getString("state", "recurrent");
    auto checkState = [&](int64_t elems) {
      bool found = false;
      for (const StateDecl &d : artefact_.cache_plan.states)
        found |= d.layer == layer && d.name == state && d.elems() == elems;
      check(found, "has no matching state in the cache plan");
    };
    auto checkMeta = [&](size_t first) {
      check(I.size() == first + 3 && O.size() == 1, "has the wrong number of operands");
      check(isArg(I[first], "cu_seqlens") && isArg(I[first + 1], "slots") &&
                isArg(I[first + 2], "has_initial_state"),
            "expects the step's metadata arguments");
    };
    if (kind == "ssd_mamba2") {
      checkMeta(7);
      cpu::SsdParams p;
      p.heads = in.getInt("num_heads");
      p.head_dim = in.getInt("head_dim");
      p.groups = in.getInt("n_groups");
      p.state = in.getInt("state_size");
      p.dt_min = (float)in.getFloat("dt_min", 0.0);
      p.dt_max = (float)in.getFloat("dt_max", INFINITY);
      check(p.heads > 0 && p.head_dim > 0 && p.groups > 0 && p.state > 0 && p.heads % p.groups == 0 &&
                p.head_dim <= 4096 && p.state <= 4096 && p.heads <= 65536,
            "has bad head counts");
      check(isAct(I[0]) && isAct(I[1]) && isAct(I[2]) && isAct(I[3]) && isAct(O[0]) &&
                cols(I[0]) == p.heads * p.head_dim && cols(I[1]) == p.heads &&
                cols(I[2]) == p.groups * p.state && cols(I[3]) == p.groups * p.state &&
                cols(O[0]) == p.heads * p.head_dim,
            "has operands that do not match its heads");
      check(weightNumel(I[4]) == p.heads && weightNumel(I[5]) == p.heads && weightNumel(I[6]) == p.heads,
            "has A_log, dt_bias or D of the wrong size");
      checkState(p.heads * p.head_dim * p.state);
      return [=, this](StepContext &) mutable {
        p.A_log = weight(I[4]);
        p.dt_bias = weight(I[5]);
        p.D = weight(I[6]);
        cpu::ssdScan(f32(I[0]), f32(I[1]), f32(I[2]), f32(I[3]), p, stateRows(), statePool(layer, state),
                     f32(O[0]), pfor_);
      };
    }
    if (kind == "selective_mamba1") {
      bool gated = I.size() == 11;
      checkMeta(gated ? 8 : 7);
      cpu::SelectiveParams p;
      p.channels = cols(I[0]);
      p.groups = in.getInt("n_groups");
      p.state = in.getInt("state_size");
      check(p.groups > 0 && p.state > 0 && p.state <= 4096 && p.channels % p.groups == 0,
            "has bad group counts");
      check(isAct(I[0]) && isAct(I[1]) && isAct(I[2]) && isAct(I[3]) && isAct(O[0]) &&
                (!gated || (isAct(I[7]) && cols(I[7]) == p.channels)) && cols(I[1]) == p.channels &&
                cols(I[2]) == p.groups * p.state && cols(I[3]) == p.groups * p.state &&
                cols(O[0]) == p.channels,
            "has operands that do not match its channels");
      check(weightNumel(I[4]) == p.channels * p.state && weightNumel(I[5]) == p.channels &&
                weightNumel(I[6]) == p.channels,
            "has A_log, dt_bias or D of the wrong size");
      checkState(p.channels * p.state);
      return [=, this](StepContext &) mutable {
        p.A_log = weight(I[4]);
        p.dt_bias = weight(I[5]);
        p.D = weight(I[6]);
        cpu::selectiveScan(f32(I[0]), f32(I[1]), f32(I[2]), f32(I[3]), gated ? f32(I[7]) : nullptr, p,
                           stateRows(), statePool(layer, state), f32(O[0]), pfor_);
      };
    }
    if (kind == "gated_delta") {
      checkMeta(7);
      cpu::GatedDeltaParams p;
      p.k_heads = in.getInt("num_k_heads");
      p.v_heads = in.getInt("num_v_heads");
      p.k_dim = in.getInt("k_dim");
      p.v_dim = in.getInt("v_dim");
      p.beta_scale = (float)in.getFloat("beta_scale", 1.0);
      p.qk_l2norm = in.has("qk_l2norm");
      check(p.k_heads > 0 && p.v_heads > 0 && p.k_dim > 0 && p.v_dim > 0 && p.v_heads % p.k_heads == 0 &&
                p.k_dim <= 4096 && p.v_dim <= 4096 && p.v_heads <= 65536,
            "has bad head counts");
      check(isAct(I[0]) && isAct(I[1]) && isAct(I[2]) && isAct(I[3]) && isAct(I[4]) && isAct(O[0]) &&
                cols(I[0]) == p.k_heads * p.k_dim && cols(I[1]) == p.k_heads * p.k_dim &&
                cols(I[2]) == p.v_heads * p.v_dim && cols(I[3]) == p.v_heads &&
                cols(I[4]) == p.v_heads && cols(O[0]) == p.v_heads * p.v_dim,
            "has operands that do not match its heads");
      check(weightNumel(I[5]) == p.v_heads && weightNumel(I[6]) == p.v_heads,
            "has A_log or dt_bias of the wrong size");
      checkState(p.v_heads * p.k_dim * p.v_dim);
      return [=, this](StepContext &) mutable {
        p.A_log = weight(I[5]);
        p.dt_bias = weight(I[6]);
        cpu::gatedDeltaScan(f32(I[0]), f32(I[1]), f32(I[2]), f32(I[3]), f32(I[4]), p, stateRows(),
                            statePool(layer, state), f32(O[0]), pfor_);
      };
    }
    throw fail("has the unknown scan kind '" + kind + "'");
  }
  throw ArtefactError("the CPU backend does not implement '" + op +
                      "'; the artefact needs a newer runtime");
}

void CpuBackend::run(const StepBatch &batch, std::vector<float> &logits) {
  if (batch.num_tokens > limits_.max_tokens || batch.num_logit_rows > limits_.max_requests)
    throw std::runtime_error("cpu backend: step exceeds the backend's limits");
  batch_ = &batch;
  StepContext ctx;
  ctx.batch = &batch;
  for (size_t i = 0; i < program_.size(); ++i) {
    program_[i](ctx);
    if (observer_)
      observer_((int)i);
  }
  int out = artefact_.program.output;
  int64_t vocab = cols(out);
  const float *src = f32(out);
  logits.assign(src, src + batch.num_logit_rows * vocab);
  batch_ = nullptr;
}

bool CpuBackend::readValue(int value, std::vector<float> &out) {
  const Value &v = artefact_.program.values.at(value);
  if (v.kind != Value::Activation || !batch_)
    return false;
  int64_t n = rows(value) * v.cols();
  out.resize(n);
  if (v.dtype == DType::I32) {
    const int32_t *p = i32(value);
    for (int64_t i = 0; i < n; ++i)
      out[i] = (float)p[i];
  } else {
    std::copy(f32(value), f32(value) + n, out.begin());
  }
  return true;
}

bool CpuBackend::writeValue(int value, const std::vector<float> &in) {
  const Value &v = artefact_.program.values.at(value);
  if (v.kind != Value::Activation || !batch_ || (int64_t)in.size() != rows(value) * v.cols())
    return false;
  if (v.dtype == DType::I32) {
    int32_t *p = i32(value);
    for (size_t i = 0; i < in.size(); ++i)
      p[i] = (int32_t)in[i];
  } else {
    std::copy(in.begin(), in.end(), f32(value));
  }
  return true;
}

} // namespace

std::unique_ptr<Backend> makeCpuBackend(const Artefact &a, WeightStore weights,
                                        const BackendLimits &limits, int threads) {
  return std::make_unique<CpuBackend>(a, std::move(weights), limits, threads);
}

} // namespace cbc::rt
