#include "runtime/cpu/cpu_backend.h"

#include "runtime/cpu/op_context.h"
#include "runtime/thread_pool.h"

#include <algorithm>
#include <cstring>
#include <cblas.h>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>

namespace cbc::rt {

namespace {

// Calls fn(instruction, input index, weight index) for every input that is a weight.
template <class Fn> void forEachWeightUse(const Artefact &a, Fn fn) {
  const Program &p = a.program;
  for (const Instr &in : p.instrs)
    for (size_t i = 0; i < in.inputs.size(); ++i) {
      int v = in.inputs[i];
      if (v < 0 || v >= (int)p.values.size() || p.values[v].kind != Value::Weight)
        continue;
      int w = p.values[v].weight;
      if (w >= 0 && w < (int)a.weights.size())
        fn(in, i, w);
    }
}

// The input is a matrix product's weight: a linear's [N, K] or an expert stack's [E, N, K], as
// the ops' ODS `matrices` list them.
bool productWeight(const Instr &in, size_t i) {
  static constexpr struct {
    fb::Opcode opcode;
    size_t input;
  } kMatrices[] = {
#define CBC_OP(...)
#define CBC_MATRIX(NAME, INPUT) {fb::Opcode::NAME, INPUT},
#include "runtime/schema/ops.inc"
  };
  for (const auto &m : kMatrices)
    if (m.opcode == in.opcode && m.input == i)
      return true;
  return false;
}

// Weights read only by matrix products go to the format those read fastest where theirs packs
// (bf16 into the panels the AMX GEMM and the matrix-vector kernels read, runtime/cpu/formats.h)
// and their shape allows it. The embedding table stays row-major: a token reads its row.
void packMatrices(const Artefact &a, WeightStore &w) {
  // Per weight, the (rows, columns) of the matrices its uses multiply by; cleared for good when
  // a use is not a product or the uses disagree.
  std::vector<std::optional<std::pair<int64_t, int64_t>>> shape(w.size());
  std::vector<bool> product(w.size(), true);
  forEachWeightUse(a, [&](const Instr &in, size_t i, int wi) {
    const std::vector<int64_t> &dims = w.get(wi).shape();
    size_t rank = in.opcode == fb::Opcode::Linear ? 2 : 3;
    std::pair<int64_t, int64_t> s = dims.size() == rank ? std::pair{dims[rank - 2], dims[rank - 1]} : std::pair{0l, 0l};
    if (!productWeight(in, i) || dims.size() != rank || (shape[wi] && *shape[wi] != s))
      product[wi] = false;
    shape[wi] = s;
  });
  for (int i = 0; i < (int)w.size(); ++i)
    if (product[i] && shape[i])
      cpu::packForProducts(w.get(i));
}

class CpuBackend : public Backend {
public:
  CpuBackend(const Artefact &a, WeightStore weights, const BackendLimits &limits, int threads,
             std::shared_ptr<Communicator> comm);

  std::string name() const override { return "cpu"; }
  int64_t cacheBytesPerToken(int group) const override;
  int64_t stateBytesPerUnit() const override;
  void allocateCache(int32_t blocksPerGroup, int32_t stateUnits) override;
  void copyUnits(const std::vector<UnitCopy> &copies) override;
  bool transferUnits(int group, const std::vector<int32_t> &units, uint8_t *host, bool toHost) override;
  void run(const StepBatch &batch, std::vector<float> &logits) override;
  void setObserver(std::function<void(int)> observer) override { observer_ = std::move(observer); }
  bool readValue(int value, std::vector<float> &out) override;
  bool writeValue(int value, const std::vector<float> &in) override;

private:
  void checkArenaSlots() const;

  const Artefact &artefact_;
  WeightStore weights_;
  BackendLimits limits_;
  ThreadPool pool_;
  cpu::StepEnv env_;
  std::map<int, int> layerGroup_;
  int32_t blocksPerGroup_ = 0, stateUnits_ = 0;
  std::vector<cpu::Exec> program_;
  std::function<void(int)> observer_;
  std::shared_ptr<Communicator> comm_;
};

CpuBackend::CpuBackend(const Artefact &a, WeightStore weights, const BackendLimits &limits, int threads,
                       std::shared_ptr<Communicator> comm)
    : artefact_(a), weights_(std::move(weights)), limits_(limits), pool_(threads),
      comm_(comm ? std::move(comm) : singleRank()) {
  checkRanks(a.ranks, *comm_);
  // The pool is the only owner of the cores: every BLAS call runs on the thread that makes it
  // (the GEMMs split their columns over the pool, runtime/cpu/matrix.h). OpenBLAS's own
  // threads, one per core unless told, would otherwise run beside the pool's (oversubscribing
  // the cores: --threads 1 was faster than 2) and spin in sched_yield between calls.
  openblas_set_num_threads(1);
  checkArenaSlots();
  packMatrices(a, weights_);
  env_.artefact = &artefact_;
  env_.weights = &weights_;
  env_.limits = limits;
  env_.comm = comm_.get();
  env_.pfor = [this](int64_t n, const std::function<void(int64_t)> &fn) { pool_.parallelFor(n, fn); };
  // Sized by the slots the values use (at most the declared row widths). Allocated without
  // zero-filling: pages are mapped only when a step first touches them.
  int64_t extent[2] = {1, 1};
  for (const Value &v : a.program.values)
    if (v.kind == Value::Activation)
      extent[v.arena] = std::max(extent[v.arena], v.offset + v.cols());
  env_.arenas[0].reset(new float[extent[0] * limits.max_tokens]);
  env_.arenas[1].reset(new float[extent[1] * limits.max_requests]);
  for (const CacheLayer &l : a.cache_plan.layers) {
    cpu::KvLayout layout;
    layout.block_size = a.cache_plan.block_size;
    layout.row_elems = l.elemsPerToken();
    layout.k_elems = l.rows.empty() || l.rows[0].first == "index_key" ? 0 : l.rows[0].second;
    for (const auto &[name, elems] : l.rows)
      if (name == "index_key")
        layout.index_elems = elems;
    env_.kvLayouts[l.layer] = layout;
    layerGroup_[l.layer] = l.group;
  }
  for (const Instr &in : a.program.instrs) {
    cpu::CompileFn compile = cpu::compileFunction(in.opcode);
    if (!compile)
      throw ArtefactError("the CPU backend does not implement '" + in.op + "'; the artefact needs a newer runtime");
    program_.push_back(compile(cpu::OpContext(a, weights_, env_.kvLayouts, layerGroup_, in)));
  }
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
    if (v.shape.size() != 2 || v.cols() < 0 || v.offset > width || v.cols() > width - v.offset)
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

int64_t CpuBackend::stateBytesPerUnit() const {
  int64_t bytes = 0;
  for (const StateDecl &s : artefact_.cache_plan.states)
    bytes += s.elems() * 4;
  return bytes;
}

void CpuBackend::allocateCache(int32_t blocksPerGroup, int32_t stateUnits) {
  // States are read only after a request's first chunk wrote them: zero-filled once here.
  for (const StateDecl &s : artefact_.cache_plan.states)
    env_.statePools[{s.layer, s.name}].assign((size_t)stateUnits * s.elems(), 0.0f);
  for (auto &[layer, layout] : env_.kvLayouts)
    env_.kvPools[layer].reset(
        new float[std::max<size_t>(1, (size_t)blocksPerGroup * layout.block_size * layout.row_elems)]);
  blocksPerGroup_ = blocksPerGroup;
  stateUnits_ = stateUnits;
}

void CpuBackend::copyUnits(const std::vector<UnitCopy> &copies) {
  const CachePlan &plan = artefact_.cache_plan;
  for (const UnitCopy &c : copies) {
    bool state = isStateCopy(plan, c, blocksPerGroup_, stateUnits_, "cpu");
    if (state) {
      for (auto &[key, pool] : env_.statePools) {
        size_t n = pool.size() / stateUnits_;
        std::copy_n(pool.data() + c.src * n, n, pool.data() + c.dst * n);
      }
      continue;
    }
    for (auto &[layer, layout] : env_.kvLayouts)
      if (layerGroup_.at(layer) == c.group) {
        int64_t n = layout.block_size * layout.row_elems;
        float *pool = env_.kvPools.at(layer).get();
        std::copy_n(pool + c.src * n, n, pool + c.dst * n);
      }
  }
}

bool CpuBackend::transferUnits(int group, const std::vector<int32_t> &units, uint8_t *host, bool toHost) {
  const CachePlan &plan = artefact_.cache_plan;
  if (group < 0 || group >= (int)plan.groups.size())
    throw std::logic_error("cpu backend: a unit transfer names no cache group");
  bool state = plan.groups[group].kind == CacheGroup::State;
  auto move = [&](float *unit, int64_t n) {
    if (toHost)
      std::memcpy(host, unit, n * sizeof(float));
    else
      std::memcpy(unit, host, n * sizeof(float));
    host += n * sizeof(float);
  };
  for (int32_t u : units) {
    if (u < 0 || u >= (state ? stateUnits_ : blocksPerGroup_))
      throw std::logic_error("cpu backend: a unit transfer names no unit of its group");
    if (state) {
      for (auto &[key, pool] : env_.statePools) {
        int64_t n = (int64_t)pool.size() / stateUnits_;
        move(pool.data() + u * n, n);
      }
      continue;
    }
    for (auto &[layer, layout] : env_.kvLayouts)
      if (layerGroup_.at(layer) == group) {
        int64_t n = layout.block_size * layout.row_elems;
        move(env_.kvPools.at(layer).get() + u * n, n);
      }
  }
  return true;
}

void CpuBackend::run(const StepBatch &batch, std::vector<float> &logits) {
  if (batch.num_tokens > limits_.max_tokens || batch.num_logit_rows > limits_.max_requests)
    throw std::runtime_error("cpu backend: step exceeds the backend's limits");
  env_.batch = &batch;
  for (size_t i = 0; i < program_.size(); ++i) {
    program_[i](env_);
    if (observer_)
      observer_((int)i);
  }
  int out = artefact_.program.output;
  int64_t vocab = artefact_.program.values[out].cols();
  const float *src = env_.f32(out);
  logits.assign(src, src + batch.num_logit_rows * vocab);
  env_.batch = nullptr;
}

bool CpuBackend::readValue(int value, std::vector<float> &out) {
  const Value &v = artefact_.program.values.at(value);
  if (v.kind != Value::Activation || !env_.batch)
    return false;
  int64_t n = env_.rows(value) * v.cols();
  out.resize(n);
  if (v.dtype == DType::I32) {
    const int32_t *p = env_.i32(value);
    for (int64_t i = 0; i < n; ++i)
      out[i] = (float)p[i];
  } else {
    std::copy(env_.f32(value), env_.f32(value) + n, out.begin());
  }
  return true;
}

bool CpuBackend::writeValue(int value, const std::vector<float> &in) {
  const Value &v = artefact_.program.values.at(value);
  if (v.kind != Value::Activation || !env_.batch || (int64_t)in.size() != env_.rows(value) * v.cols())
    return false;
  if (v.dtype == DType::I32) {
    int32_t *p = env_.i32(value);
    for (size_t i = 0; i < in.size(); ++i)
      p[i] = (int32_t)in[i];
  } else {
    std::copy(in.begin(), in.end(), env_.f32(value));
  }
  return true;
}

} // namespace

std::vector<bool> cpuBf16Weights(const Artefact &a) {
  std::vector<int> matrixUses(a.weights.size(), 0), uses(a.weights.size(), 0);
  forEachWeightUse(a, [&](const Instr &in, size_t i, int w) {
    ++uses[w];
    matrixUses[w] += productWeight(in, i) || (in.opcode == fb::Opcode::Embed && i == 1);
  });
  std::vector<bool> out(a.weights.size());
  for (size_t w = 0; w < out.size(); ++w)
    out[w] = uses[w] > 0 && uses[w] == matrixUses[w];
  return out;
}

std::unique_ptr<Backend> makeCpuBackend(const Artefact &a, WeightStore weights, const BackendLimits &limits,
                                        int threads, std::shared_ptr<Communicator> comm) {
  return std::make_unique<CpuBackend>(a, std::move(weights), limits, threads, std::move(comm));
}

} // namespace cbc::rt
