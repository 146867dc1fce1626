#include "runtime/cuda/gpu_backend.h"

#include "runtime/engine_sizing.h"
#include "runtime/memory_estimate.h"
#include "runtime/safetensors.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <exception>
#include <map>
#include <stdexcept>

namespace cbc::rt {

namespace {

// The per-step integers, indexed by RuntimeVar.
using RuntimeVars = std::array<int64_t, kNumRuntimeVars>;

class GpuBackend : public Backend {
public:
  GpuBackend(const Artefact &a, const WeightSource &weights, std::unique_ptr<Device> device,
             const BackendLimits &limits, std::shared_ptr<Communicator> comm);
  ~GpuBackend() override;

  std::string name() const override { return "cuda (" + device_->name() + ")"; }
  int64_t cacheBytesPerToken(int group) const override;
  int64_t stateBytesPerUnit() const override {
    int64_t bytes = 0;
    for (const StateDecl &s : a_.cache_plan.states)
      bytes += s.elems() * 4;
    return bytes;
  }
  void allocateCache(int32_t blocksPerGroup, int32_t stateUnits) override;
  void copyUnits(const std::vector<UnitCopy> &copies) override;
  bool transferUnits(int group, const std::vector<int32_t> &units, uint8_t *host, bool toHost) override;
  void run(const StepBatch &batch, std::vector<float> &logits) override;
  bool runGreedy(const StepBatch &batch, std::vector<int32_t> &tokens) override;
  void setObserver(std::function<void(int)> observer) override { observer_ = std::move(observer); }
  bool readValue(int value, std::vector<float> &out) override;
  bool writeValue(int value, const std::vector<float> &in) override;
  bool setLaunchTimes(LaunchTimes *times) override;

private:
  void *valuePtr(int v) const;
  void execute(const StepBatch &batch);
  void launchAll(const RuntimeVars &vars);
  int64_t gridDim(const GridDim &g, const RuntimeVars &vars) const;
  bool launchGemm(const Launch &l, const uint32_t grid[3]);
  bool gatherRanks(const GatherDesc &g, int64_t rows);
  void addLaunchTimes(int start, const std::vector<std::pair<size_t, int>> &marks);
  CbcArgs kernelArgs(const Launch &l, const RuntimeVars &vars);
  void uploadBatch(const StepBatch &b);
  void *alloc(size_t bytes) {
    void *p = device_->alloc(std::max<size_t>(bytes, 16));
    owned_.push_back(p);
    return p;
  }

  const Artefact &a_;
  const KernelBundle &k_;
  std::unique_ptr<Device> device_;
  BackendLimits limits_;
  std::shared_ptr<Communicator> comm_;
  std::vector<void *> owned_;
  std::vector<void *> weightPtrs_;     // per manifest entry
  void *arenas_[2] = {nullptr, nullptr};
  int64_t arenaRows_[2] = {0, 0};
  void *args_[kNumStepArgs] = {};      // step argument buffers (block tables apart)
  std::map<int, void *> caches_;       // layer -> paged cache
  std::map<std::pair<int, std::string>, void *> states_; // (layer, name) -> [units][elems] fp32
  int32_t blocksPerGroup_ = 0, stateUnits_ = 0;
  std::vector<void *> workspaces_;
  void *tables_ = nullptr;
  size_t tableBytes_ = 0;
  int64_t injectWidth_ = 1; // floats per row of StepArg::InjectEmbeds
  void *greedyTokens_ = nullptr;
  std::function<void(int)> observer_;
  LaunchTimes *times_ = nullptr;
  const StepBatch *batch_ = nullptr;
};

size_t elemBytes(DType d) { return d == DType::BF16 || d == DType::F16 ? 2 : 4; }

} // namespace

void Device::joinGroup(std::shared_ptr<Communicator> comm) {
  if (comm->size() > 1)
    throw std::runtime_error("the device " + name() + " has no collectives, so it cannot run a --tp artefact");
}

void Device::allGather(const void *in, size_t bytes, void *out) { copy(out, in, bytes); }

namespace {

// A host tensor in the device dtype: its bytes when its format is that dtype's, else its rows
// widened to float32 (exact) and, for bf16, rounded.
std::vector<uint8_t> convert(const HostTensor &t, DType d) {
  if (d != DType::F32 && d != DType::BF16)
    throw std::runtime_error("gpu backend: weights must be bf16 or f32 on the device");
  Format want = d == DType::F32 ? Storage::F32 : Storage::BF16;
  std::vector<uint8_t> out(formatBytes(want, t.numel()));
  if (out.empty()) // an empty vector's data() may be null: memcpy's arguments must not be
    return out;
  if (t.format() == want) {
    std::memcpy(out.data(), t.data(), out.size());
    return out;
  }
  int64_t cols = t.shape().empty() ? 1 : t.shape().back(), rows = t.numel() / cols;
  auto toFloatRow = storageTraits(t.format()).toFloatRow;
  std::vector<float> row(cols);
  auto *f32 = reinterpret_cast<float *>(out.data());
  auto *bf16 = reinterpret_cast<uint16_t *>(out.data());
  for (int64_t r = 0; r < rows; ++r) {
    toFloatRow(t.data(), cols, r, want == Storage::F32 ? f32 + r * cols : row.data());
    if (want == Storage::BF16)
      for (int64_t c = 0; c < cols; ++c)
        bf16[r * cols + c] = floatToBf16(row[c]);
  }
  return out;
}

GpuBackend::GpuBackend(const Artefact &a, const WeightSource &weights, std::unique_ptr<Device> device,
                       const BackendLimits &limits, std::shared_ptr<Communicator> comm)
    : a_(a), k_(a.kernels.value()), device_(std::move(device)), limits_(limits),
      comm_(comm ? std::move(comm) : singleRank()) {
  checkRanks(a.ranks, *comm_);
  device_->joinGroup(comm_);
  const Program &p = a.program;
  if (k_.value_dtypes.size() != p.values.size())
    throw ArtefactError("the kernel bundle does not describe every program value");
  device_->loadKernels(k_);
  // Weights, once, in their device dtype, streamed so the host never holds them all.
  std::vector<DType> weightType(a.weights.size(), DType::BF16);
  for (size_t v = 0; v < p.values.size(); ++v)
    if (p.values[v].kind == Value::Weight)
      weightType[p.values[v].weight] = k_.value_dtypes[v];
  weightPtrs_.assign(a.weights.size(), nullptr);
  // A weight the device holds in bf16 comes straight from a bf16 checkpoint, as this rank's slice.
  std::vector<bool> asBf16(a.weights.size());
  for (size_t i = 0; i < asBf16.size(); ++i)
    asBf16[i] = weightType[i] == DType::BF16;
  WeightStore::stream(
      a, weights,
      [&](int index, HostTensor &&t) {
        std::vector<uint8_t> bytes = convert(t, weightType[index]);
        weightPtrs_[index] = alloc(bytes.size());
        if (!bytes.empty())
          device_->upload(weightPtrs_[index], bytes.data(), bytes.size());
        device_->synchronize(); // the host buffer is freed next
      },
      asBf16);
  arenaRows_[0] = limits.max_tokens;
  arenaRows_[1] = limits.max_requests;
  arenas_[0] = alloc((size_t)p.token_row_elems * 4 * limits.max_tokens);
  arenas_[1] = alloc((size_t)p.request_row_elems * 4 * limits.max_requests);
  for (const Value &v : p.values)
    if (v.kind == Value::Activation &&
        (v.arena < 0 || v.arena > 1 ||
         v.offset + v.cols() > (v.arena == 0 ? p.token_row_elems : p.request_row_elems)))
      throw ArtefactError("program value does not fit its arena slot");
  for (const Value &v : p.values) // the width of injected embeddings: a row of any token's
    if (v.kind == Value::Argument && v.arg == StepArg::InjectEmbeds && v.shape.size() == 2)
      injectWidth_ = std::max<int64_t>(1, v.shape[1]);
  for (int i = 0; i < kNumStepArgs; ++i) {
    StepArg a = (StepArg)i;
    if (a == StepArg::BlockTables)
      continue; // sized per step
    bool perToken = a == StepArg::Tokens || a == StepArg::Positions || a == StepArg::SeqIds ||
                    a == StepArg::InjectRows || a == StepArg::InjectEmbeds || a == StepArg::RopePositions ||
                    a == StepArg::KeyEnds;
    int64_t perRow = a == StepArg::InjectEmbeds ? injectWidth_ : a == StepArg::RopePositions ? 3 : 1;
    args_[i] = alloc(4 * ((perToken ? limits.max_tokens : limits.max_requests) + 1) * perRow);
  }
  for (const WorkspaceDesc &w : k_.workspaces)
    workspaces_.push_back(alloc((size_t)(w.bytes_per_token * limits.max_tokens + w.bytes_fixed)));
  greedyTokens_ = alloc(4 * limits.max_requests);
  // Every launch must refer only to things this backend has.
  for (const Launch &l : k_.launches) {
    int np = 0, ni = 0, nf = 0;
    for (const KernelArg &arg : l.args) {
      switch (arg.kind) {
      case KernelArg::Value:
      case KernelArg::Cache:
      case KernelArg::Workspace:
        ++np;
        break;
      case KernelArg::Runtime:
      case KernelArg::Int:
        ++ni;
        break;
      case KernelArg::Float:
        ++nf;
        break;
      }
      if (arg.kind == KernelArg::Workspace && (arg.index < 0 || arg.index >= (int)workspaces_.size()))
        throw ArtefactError("a launch uses an unknown workspace");
    }
    if (np > kMaxPtrArgs || ni > kMaxIntArgs || nf > kMaxFloatArgs)
      throw ArtefactError("a launch has too many arguments");
  }
}

GpuBackend::~GpuBackend() {
  for (void *p : owned_)
    device_->release(p);
}

int64_t GpuBackend::cacheBytesPerToken(int group) const {
  int64_t bytes = 0;
  for (const CacheLayer &l : a_.cache_plan.layers)
    if (l.group == group)
      bytes += l.elemsPerToken() * (int64_t)dtypeBytes(a_.cache_plan.kv_dtype);
  return bytes;
}

void GpuBackend::allocateCache(int32_t blocksPerGroup, int32_t stateUnits) {
  for (const StateDecl &st : a_.cache_plan.states)
    states_[{st.layer, st.name}] = alloc((size_t)stateUnits * st.elems() * 4);
  for (const CacheLayer &l : a_.cache_plan.layers)
    caches_[l.layer] = alloc((size_t)blocksPerGroup * a_.cache_plan.block_size * l.elemsPerToken() *
                             dtypeBytes(a_.cache_plan.kv_dtype));
  blocksPerGroup_ = blocksPerGroup;
  stateUnits_ = stateUnits;
}

void GpuBackend::copyUnits(const std::vector<UnitCopy> &copies) {
  const CachePlan &plan = a_.cache_plan;
  for (const UnitCopy &c : copies) {
    bool state = isStateCopy(plan, c, blocksPerGroup_, stateUnits_, "gpu");
    auto copyUnit = [&](void *pool, size_t bytes) {
      device_->copy(static_cast<char *>(pool) + c.dst * bytes, static_cast<char *>(pool) + c.src * bytes, bytes);
    };
    if (state) {
      for (const StateDecl &st : plan.states)
        copyUnit(states_.at({st.layer, st.name}), (size_t)st.elems() * 4);
      continue;
    }
    for (const CacheLayer &l : plan.layers)
      if (l.group == c.group)
        copyUnit(caches_.at(l.layer),
                 (size_t)plan.block_size * l.elemsPerToken() * dtypeBytes(plan.kv_dtype));
  }
}

void *GpuBackend::valuePtr(int v) const {
  if (v < 0)
    return nullptr;
  const Value &val = a_.program.values[v];
  switch (val.kind) {
  case Value::Argument:
    return val.arg == StepArg::BlockTables ? tables_ : args_[(int)val.arg];
  case Value::Weight:
    return weightPtrs_[val.weight];
  case Value::Activation:
    return static_cast<char *>(arenas_[val.arena]) + val.offset * 4 * arenaRows_[val.arena];
  }
  return nullptr;
}

int64_t GpuBackend::gridDim(const GridDim &g, const RuntimeVars &vars) const {
  int64_t base = g.var ? (vars[(int)*g.var] * g.mul + g.div - 1) / g.div : 0;
  return base + g.add;
}

bool GpuBackend::launchGemm(const Launch &l, const uint32_t grid[3]) {
  const GemmDesc &g = *l.gemm;
  const Value &w = a_.program.values[g.w];
  GemmCall call;
  call.x = valuePtr(g.x);
  call.w = valuePtr(g.w);
  call.bias = valuePtr(g.bias);
  call.out = valuePtr(g.out);
  call.M = grid[0];
  call.N = w.shape.size() == 2 ? w.shape[0] : 0;
  call.K = w.shape.size() == 2 ? w.shape[1] : 0;
  call.x_type = k_.value_dtypes[g.x];
  call.w_type = k_.value_dtypes[g.w];
  call.bias_type = g.bias >= 0 ? k_.value_dtypes[g.bias] : DType::BF16;
  call.out_type = k_.value_dtypes[g.out];
  if (call.M > 0)
    device_->gemm(call);
  return call.M > 0;
}

// Every rank's rows of the gathered value, into its workspace ([ranks][rows][cols]); the
// ranks run the same plan, so they agree on `rows` and on whether to call at all.
bool GpuBackend::gatherRanks(const GatherDesc &g, int64_t rows) {
  const Value &x = a_.program.values[g.x];
  size_t bytes = (size_t)rows * x.cols() * dtypeBytes(k_.value_dtypes[g.x]);
  if (bytes == 0)
    return false;
  device_->allGather(valuePtr(g.x), bytes, workspaces_[g.workspace]);
  return true;
}

// A launch's arguments packed by kind, in order, as the kernels' CbcArgs reads them.
CbcArgs GpuBackend::kernelArgs(const Launch &l, const RuntimeVars &vars) {
  CbcArgs args{};
  int np = 0, ni = 0, nf = 0;
  for (const KernelArg &arg : l.args) {
    switch (arg.kind) {
    case KernelArg::Value: args.p[np++] = valuePtr(arg.index); break;
    case KernelArg::Cache: {
      if (!arg.name.empty()) { // a per-request state of the layer
        auto st = states_.find({arg.index, arg.name});
        if (st == states_.end())
          throw ArtefactError("a launch uses a state the cache plan lacks");
        args.p[np++] = st->second;
        break;
      }
      auto it = caches_.find(arg.index);
      if (it == caches_.end())
        throw ArtefactError("a launch uses the cache of a layer the plan lacks");
      args.p[np++] = it->second;
      break;
    }
    case KernelArg::Workspace: args.p[np++] = workspaces_[arg.index]; break;
    case KernelArg::Runtime: args.i[ni++] = vars[arg.index]; break;
    case KernelArg::Int: args.i[ni++] = arg.i; break;
    case KernelArg::Float: args.f[nf++] = arg.f; break;
    }
  }
  return args;
}

void GpuBackend::launchAll(const RuntimeVars &vars) {
  // Profiling: a timestamp before the first launch and one after each launch issued.
  int start = times_ ? device_->recordTimestamp() : -1;
  std::vector<std::pair<size_t, int>> marks;
  for (size_t li = 0; li < k_.launches.size(); ++li) {
    const Launch &l = k_.launches[li];
    // The observer sees each instruction once its last launch has run.
    struct Notify {
      GpuBackend *self;
      size_t li;
      ~Notify() {
        const auto &ls = self->k_.launches;
        if (self->observer_ && std::uncaught_exceptions() == 0 &&
            (li + 1 == ls.size() || ls[li + 1].instr != ls[li].instr)) {
          self->device_->synchronize();
          self->observer_(ls[li].instr);
        }
      }
    } notify{this, li};
    uint32_t grid[3];
    bool empty = false;
    for (int d = 0; d < 3; ++d) {
      int64_t n = gridDim(l.grid[d], vars);
      empty |= n <= 0;
      grid[d] = (uint32_t)std::max<int64_t>(n, 0);
    }
    bool issued = false;
    if (l.gemm)
      issued = launchGemm(l, grid);
    else if (l.gather)
      issued = gatherRanks(*l.gather, grid[0]);
    else if (!empty) {
      device_->launch(l.kernel, grid, l.block, l.smem, kernelArgs(l, vars));
      issued = true;
    }
    if (times_ && issued)
      marks.emplace_back(li, device_->recordTimestamp());
  }
  if (times_)
    addLaunchTimes(start, marks);
}

// Each issued launch's time is the time from the mark before it to the mark after it.
void GpuBackend::addLaunchTimes(int start, const std::vector<std::pair<size_t, int>> &marks) {
  device_->synchronize();
  int prev = start;
  for (const auto &[li, mark] : marks) {
    times_->ms[li] += device_->elapsedMs(prev, mark);
    times_->calls[li] += 1;
    prev = mark;
  }
  times_->steps += 1;
  device_->resetTimestamps();
}

bool GpuBackend::setLaunchTimes(LaunchTimes *times) {
  if (times) {
    if (device_->recordTimestamp() < 0)
      return false;
    device_->synchronize();
    device_->resetTimestamps();
    times->ms.resize(k_.launches.size(), 0.0);
    times->calls.resize(k_.launches.size(), 0);
  }
  times_ = times;
  return true;
}

void GpuBackend::uploadBatch(const StepBatch &b) {
  auto up = [&](StepArg a, const std::vector<int32_t> &v) {
    if (!v.empty())
      device_->upload(args_[(int)a], v.data(), v.size() * 4);
  };
  up(StepArg::Tokens, b.tokens);
  up(StepArg::Positions, b.positions);
  up(StepArg::SeqIds, b.seq_ids);
  up(StepArg::CuSeqlens, b.cu_seqlens);
  up(StepArg::KvLens, b.kv_lens);
  up(StepArg::LogitRows, b.logit_rows);
  up(StepArg::PromptLens, b.prompt_lens);
  up(StepArg::Slots, b.slots);
  up(StepArg::HasInitialState, b.has_initial_state);
  up(StepArg::StateIn, b.state_in);
  up(StepArg::StateOut, b.state_out);
  up(StepArg::InjectRows, b.inject_rows);
  up(StepArg::RopePositions, b.rope_positions);
  up(StepArg::KeyEnds, b.key_ends);
  if (!b.inject_embeds.empty()) {
    if ((int64_t)b.inject_embeds.size() != (int64_t)b.inject_rows.size() * injectWidth_)
      throw std::runtime_error("gpu backend: injected embeddings of another width than the model's");
    device_->upload(args_[(int)StepArg::InjectEmbeds], b.inject_embeds.data(), b.inject_embeds.size() * 4);
  }
  size_t tableBytes = (size_t)(b.num_groups * b.table_slots * b.table_width) * 4;
  if (tableBytes > tableBytes_) {
    tables_ = alloc(tableBytes);
    tableBytes_ = tableBytes;
  }
  if (tableBytes)
    device_->upload(tables_, b.block_tables, tableBytes);
}

void GpuBackend::execute(const StepBatch &b) {
  if (b.num_tokens > limits_.max_tokens || b.num_logit_rows > limits_.max_requests ||
      b.num_requests > limits_.max_requests)
    throw std::runtime_error("gpu backend: the step exceeds the backend's limits");
  uploadBatch(b);
  // Split-K attention: more splits when few tokens share the step (decode), bounded by the
  // workspace sized for max_tokens partial results.
  int64_t maxKv = 1;
  for (int32_t len : b.kv_lens)
    maxKv = std::max<int64_t>(maxKv, len);
  int64_t splits = std::max<int64_t>(
      1, std::min<int64_t>({16, limits_.max_tokens / std::max<int64_t>(1, b.num_tokens), (maxKv + 255) / 256}));
  RuntimeVars vars{};
  vars[(int)RuntimeVar::NumTokens] = b.num_tokens;
  vars[(int)RuntimeVar::NumRequests] = b.num_requests;
  vars[(int)RuntimeVar::NumLogitRows] = b.num_logit_rows;
  vars[(int)RuntimeVar::TableWidth] = b.table_width;
  vars[(int)RuntimeVar::TableSlots] = b.table_slots;
  vars[(int)RuntimeVar::AttnSplits] = splits;
  vars[(int)RuntimeVar::MaxTokens] = limits_.max_tokens;
  vars[(int)RuntimeVar::PrefillTiles] = prefillTiles(b.cu_seqlens.data(), b.num_requests);
  vars[(int)RuntimeVar::NumInjected] = (int64_t)b.inject_rows.size();
  vars[(int)RuntimeVar::Rank] = comm_->rank();
  // Pure decode steps replay as CUDA Graphs, keyed by everything baked into the launches (a step
  // with injected rows is never replayed: their count is baked in).
  bool decode = b.num_tokens == b.num_requests && b.inject_rows.empty();
  uint64_t key = ((uint64_t)b.num_tokens << 40) ^ ((uint64_t)b.num_logit_rows << 24) ^ ((uint64_t)splits << 16) ^
                 ((uint64_t)b.table_width << 1) ^ (uint64_t)b.table_slots ^ ((uint64_t)(uintptr_t)tables_ << 3);
  decode = decode && !observer_ && !times_; // an observer or a profile needs every launch issued, not replayed
  if (decode && device_->replay(key))
    return;
  if (decode && device_->beginCapture()) {
    launchAll(vars);
    if (device_->endCaptureAndReplay(key))
      return;
  }
  launchAll(vars);
}

bool GpuBackend::transferUnits(int group, const std::vector<int32_t> &units, uint8_t *host, bool toHost) {
  const CachePlan &plan = a_.cache_plan;
  if (group < 0 || group >= (int)plan.groups.size())
    throw std::logic_error("gpu backend: a unit transfer names no cache group");
  bool state = plan.groups[group].kind == CacheGroup::State;
  auto move = [&](void *pool, int32_t unit, size_t bytes) {
    char *at = static_cast<char *>(pool) + unit * bytes;
    if (toHost)
      device_->download(host, at, bytes);
    else
      device_->upload(at, host, bytes);
    host += bytes;
  };
  for (int32_t u : units) {
    if (u < 0 || u >= (state ? stateUnits_ : blocksPerGroup_))
      throw std::logic_error("gpu backend: a unit transfer names no unit of its group");
    if (state) {
      for (const StateDecl &st : plan.states)
        move(states_.at({st.layer, st.name}), u, (size_t)st.elems() * 4);
      continue;
    }
    for (const CacheLayer &l : plan.layers)
      if (l.group == group)
        move(caches_.at(l.layer), u, (size_t)plan.block_size * l.elemsPerToken() * dtypeBytes(plan.kv_dtype));
  }
  return true;
}

void GpuBackend::run(const StepBatch &b, std::vector<float> &logits) {
  batch_ = &b;
  execute(b);
  int out = a_.program.output;
  int64_t vocab = a_.program.values[out].cols();
  logits.resize(b.num_logit_rows * vocab);
  if (!logits.empty())
    device_->download(logits.data(), valuePtr(out), logits.size() * 4);
}

bool GpuBackend::runGreedy(const StepBatch &b, std::vector<int32_t> &tokens) {
  if (k_.argmax_kernel < 0)
    return false;
  batch_ = &b;
  execute(b);
  tokens.resize(b.num_logit_rows);
  if (tokens.empty())
    return true;
  CbcArgs args{};
  args.p[0] = valuePtr(a_.program.output);
  args.p[1] = greedyTokens_;
  uint32_t grid[3] = {(uint32_t)b.num_logit_rows, 1, 1};
  device_->launch(k_.argmax_kernel, grid, kArgmaxThreads, 0, args);
  device_->download(tokens.data(), greedyTokens_, tokens.size() * 4);
  return true;
}

bool GpuBackend::readValue(int value, std::vector<float> &out) {
  const Value &v = a_.program.values.at(value);
  if (v.kind != Value::Activation || !batch_)
    return false;
  int64_t n = (v.arena == 1 ? batch_->num_logit_rows : batch_->num_tokens) * v.cols();
  DType d = k_.value_dtypes[value];
  std::vector<uint8_t> raw(n * elemBytes(d));
  device_->synchronize();
  if (!raw.empty()) // no rows this step: nothing to copy, and raw.data() may be null
    device_->download(raw.data(), valuePtr(value), raw.size());
  out.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    if (d == DType::BF16)
      out[i] = bf16ToFloat(reinterpret_cast<uint16_t *>(raw.data())[i]);
    else if (d == DType::I32)
      out[i] = (float)reinterpret_cast<int32_t *>(raw.data())[i];
    else
      out[i] = reinterpret_cast<float *>(raw.data())[i];
  }
  return true;
}

bool GpuBackend::writeValue(int value, const std::vector<float> &in) {
  const Value &v = a_.program.values.at(value);
  if (v.kind != Value::Activation || !batch_)
    return false;
  int64_t n = (v.arena == 1 ? batch_->num_logit_rows : batch_->num_tokens) * v.cols();
  if ((int64_t)in.size() != n)
    return false;
  DType d = k_.value_dtypes[value];
  std::vector<uint8_t> raw(n * elemBytes(d));
  for (int64_t i = 0; i < n; ++i) {
    if (d == DType::BF16)
      reinterpret_cast<uint16_t *>(raw.data())[i] = floatToBf16(in[i]);
    else if (d == DType::I32)
      reinterpret_cast<int32_t *>(raw.data())[i] = (int32_t)in[i];
    else
      reinterpret_cast<float *>(raw.data())[i] = in[i];
  }
  if (!raw.empty())
    device_->upload(valuePtr(value), raw.data(), raw.size());
  return true;
}

} // namespace

std::unique_ptr<Backend> makeGpuBackend(const Artefact &a, const WeightSource &weights,
                                        std::unique_ptr<Device> device, const BackendLimits &limits,
                                        std::shared_ptr<Communicator> comm) {
  if (!a.kernels)
    throw ArtefactError("the artefact has no CUDA kernels; compile it without --no-cuda, with a cbc built with CUDA");
  return std::make_unique<GpuBackend>(a, weights, std::move(device), limits, std::move(comm));
}

std::unique_ptr<Backend> openCudaBackend(const Artefact &a, const WeightSource &weights, EngineOptions &options,
                                         std::string &why, std::shared_ptr<Communicator> comm) {
  if (!comm)
    comm = singleRank();
  if (!a.kernels) { // the same artefact on every rank: the same verdict
    why = "the artefact has no CUDA kernels: it was compiled with --no-cuda or by a cbc built without CUDA";
    return nullptr;
  }
  std::unique_ptr<Device> device;
  int64_t free = -1;
  EngineOptions sized = options;
  try {
    device = openCudaDevice(comm->rank());
    free = device->freeMemory();
    sized = sizeFromMachine(a, options, true, free, [&](const EngineOptions &o) {
      return estimateGpuMemory(a, 0, {o.max_batch_tokens, o.max_requests}).total();
    });
  } catch (const std::exception &e) {
    why = e.what();
    device.reset();
  }
  // The ranks of a group take one backend: a GPU on every rank, or none.
  if (!everyRank(*comm, device != nullptr)) {
    if (why.empty())
      why = "another rank of the group has no usable GPU";
    return nullptr;
  }
  shareBudgets(*comm, sized);
  BackendLimits limits{sized.max_batch_tokens, sized.max_requests};
  checkFits(estimateGpuMemory(a, sized.cache_memory_bytes, limits), free);
  WeightSource slice = weights;
  slice.rank = comm->rank();
  std::unique_ptr<Backend> backend;
  try {
    backend = makeGpuBackend(a, slice, std::move(device), limits, comm);
  } catch (const WeightError &) {
    throw;
  } catch (const MemoryError &) {
    throw;
  } catch (const std::exception &e) { // kernels this GPU cannot load, a failed collective setup
    why = e.what();
  }
  if (!everyRank(*comm, backend != nullptr)) {
    if (why.empty())
      why = "the CUDA backend failed on another rank of the group";
    return nullptr;
  }
  options = sized;
  return backend;
}

} // namespace cbc::rt
