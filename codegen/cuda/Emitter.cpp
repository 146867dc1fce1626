#include "codegen/cuda/Emitter.h"

#include "codegen/cuda/emit.h"
#include "runtime/schema/model_generated.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <algorithm>
#include <cstddef>
#include <cstdio>

namespace cbc::codegen {

namespace cuda {

using namespace mlir;

// The generated source declares the arguments itself (slots.h); the backends fill the runtime's
// declaration, so the two must agree byte for byte.
static_assert(sizeof(kernels::CbcArgs) == sizeof(cbc::CbcArgs));
static_assert(offsetof(kernels::CbcArgs, i) == offsetof(cbc::CbcArgs, i));
static_assert(offsetof(kernels::CbcArgs, f) == offsetof(cbc::CbcArgs, f));
static_assert(sizeof(kernels::CbcArgs::p) == kMaxPtrArgs * sizeof(void *));
static_assert(sizeof(kernels::CbcArgs::i) == kMaxIntArgs * sizeof(long long));
static_assert(sizeof(kernels::CbcArgs::f) == kMaxFloatArgs * sizeof(float));
// The runtime fills the greedy-sampling launch itself (gpu_backend.cpp, runGreedy).
static_assert(slots::Argmax::Logits == 0 && slots::Argmax::Tokens == 1 && slots::Argmax::NumPtr == 2);

namespace {

// Every file of codegen/cuda/kernels, embedded at build time (embed_kernels.cmake).
struct EmbeddedFile {
  const char *path, *text;
};
constexpr EmbeddedFile kEmbedded[] = {
#include "codegen/cuda/kernels/embedded.inc"
};
constexpr llvm::StringLiteral kKernelDir = "codegen/cuda/kernels/";

const char *embedded(llvm::StringRef path) {
  for (const EmbeddedFile &f : kEmbedded)
    if (path == f.path)
      return f.text;
  llvm::report_fatal_error(llvm::Twine("cbc codegen: no embedded kernel file ") + path);
}

// Appends `path` to `out` with its includes of other kernel files inlined where they stand,
// each file once, so that the generated source needs no include path but the CUDA headers.
void inlineFile(llvm::StringRef path, std::set<std::string> &done, std::string &out) {
  if (!done.insert(path.str()).second)
    return;
  llvm::StringRef text = embedded(path);
  while (!text.empty()) {
    auto [line, rest] = text.split('\n');
    text = rest;
    llvm::StringRef inc = line.trim();
    if (inc.consume_front("#include \"") && inc.starts_with(kKernelDir) && inc.consume_back("\"")) {
      inlineFile(inc, done, out);
      continue;
    }
    out += line;
    out += '\n';
  }
}

std::string hexFloat(float v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%af", v);
  return buf;
}

} // namespace

KernelArgOut Emitter::workspace(llvm::StringRef name, int64_t perToken, int64_t fixed) {
  auto it = workspaceByName_.find(name.str());
  int index;
  if (it != workspaceByName_.end()) {
    index = it->second;
    WorkspaceOut &w = prog_.workspaces[index];
    w.bytes_per_token = std::max(w.bytes_per_token, perToken);
    w.bytes_fixed = std::max(w.bytes_fixed, fixed);
  } else {
    index = (int)prog_.workspaces.size();
    prog_.workspaces.push_back({name.str(), perToken, fixed});
    workspaceByName_[name.str()] = index;
  }
  return {KernelArgOut::Workspace, index, "", 0, 0};
}

int Emitter::kernel(llvm::StringRef hint, llvm::StringRef header, const Instance &instance) {
  std::string inst = instance.text();
  std::string path = (llvm::Twine(kKernelDir) + header).str();
  if (std::find(headers_.begin(), headers_.end(), path) == headers_.end())
    headers_.push_back(path);
  auto it = kernelByInstance_.find(inst);
  if (it != kernelByInstance_.end())
    return it->second;
  int index = (int)kernels_.size();
  std::string name = "cbc_" + hint.str() + "_" + std::to_string(index);
  kernels_.push_back({name, inst, std::move(pendingTables_)});
  pendingTables_.clear();
  prog_.names.push_back(name);
  kernelByInstance_[inst] = index;
  return index;
}

std::string Emitter::table(llvm::ArrayRef<float> values) {
  std::vector<float> key(values.begin(), values.end());
  auto it = tableByValues_.find(key);
  if (it != tableByValues_.end())
    return it->second;
  std::string name = "cbc_table_" + std::to_string(tableByValues_.size());
  std::string text = "__device__ const float " + name + "[] = {";
  for (float v : values)
    text += hexFloat(v) + ", ";
  text += "};\n";
  tableByValues_[key] = name;
  tableText_[name] = text;
  pendingTables_.push_back(name);
  return name;
}

std::string Emitter::table(llvm::ArrayRef<int64_t> values) {
  std::vector<int64_t> key(values.begin(), values.end());
  auto it = intTableByValues_.find(key);
  if (it != intTableByValues_.end())
    return it->second;
  std::string name = "cbc_itable_" + std::to_string(intTableByValues_.size());
  std::string text = "__device__ const long long " + name + "[] = {";
  for (int64_t v : values)
    text += std::to_string(v) + "LL, ";
  text += "};\n";
  intTableByValues_[key] = name;
  tableText_[name] = text;
  pendingTables_.push_back(name);
  return name;
}

LaunchOut &Emitter::newLaunch() {
  LaunchOut l;
  l.instr = instr_;
  prog_.launches.push_back(l);
  return prog_.launches.back();
}

// The templates the kernels use, then per kernel its tables and one instantiation.
std::string Emitter::assembleSource() const {
  std::string out = "// Generated by cbc: the kernel templates of codegen/cuda/kernels, then one instantiation per "
                    "kernel.\n";
  std::set<std::string> done;
  inlineFile((llvm::Twine(kKernelDir) + "prelude.cuh").str(), done, out);
  for (const std::string &h : headers_)
    inlineFile(h, done, out);
  out += "\n";
  for (const Kernel &k : kernels_) {
    for (const std::string &t : k.tables)
      out += tableText_.at(t);
    out += "extern \"C\" __global__ void " + k.name + "(CbcArgs a) { " + k.instance + "(a); }\n";
  }
  return out;
}

// The device type of every value, by its id: an argument's int32, a result's element type.
LogicalResult Emitter::numberValues(Block &block) {
  ids_.emplace(block);
  prog_.value_dtypes.assign(ids_->size(), (int)fb::DType::I32);
  for (Operation &op : block)
    for (Value r : op.getResults()) {
      auto type = llvm::cast<RankedTensorType>(r.getType());
      if (type.getEncoding())
        return op.emitError("CUDA code generation takes plain weights, not ")
               << type.getEncoding() << "; run cbc-select-weight-formats first";
      Type t = type.getElementType();
      if (t.isF16())
        return op.emitError("CUDA code generation takes bf16 or f32 values, not f16 (use --dtype bf16 or f32, "
                            "or --no-cuda)");
      fb::DType d = t.isF32() ? fb::DType::F32 : t.isInteger(32) ? fb::DType::I32 : fb::DType::BF16;
      prog_.value_dtypes[id(r)] = (int)d;
    }
  return success();
}

FailureOr<KernelBundleOut> Emitter::run() {
  auto func = module_.lookupSymbol<func::FuncOp>("step");
  if (!func)
    return module_.emitError("no func.func @step");
  Block &block = func.getBody().front();
  auto plan = module_->getAttrOfType<CachePlanAttr>("cbc.cache_plan");
  if (!plan || plan.getKvDtype() == StorageType::f16)
    return module_.emitError("CUDA code generation needs a bf16 or f32 kv cache plan");
  kvType_ = plan.getKvDtype() == StorageType::f32 ? DeviceType::F32 : DeviceType::Bf16;
  blockSize_ = plan.getBlockSize();
  if (failed(numberValues(block)))
    return failure();
  Value output;
  int index = 0;
  for (Operation &op : block) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      output = ret.getOperand(0);
      continue;
    }
    if (isa<WeightRefOp>(op))
      continue;
    instr_ = index++;
    const OpEmitter *emit = emitterTable().find(op.getName().getStringRef());
    if (!emit)
      return op.emitError("no CUDA code generation for ") << op.getName();
    (*emit)(*this, op);
  }
  prog_.argmax_kernel = emitArgmax(*this, output);
  prog_.source = assembleSource();
  return prog_;
}

// ---- template arguments ----

DeviceType deviceType(Value v) {
  if (!v)
    return DeviceType::Void;
  Type t = llvm::cast<RankedTensorType>(v.getType()).getElementType();
  return t.isBF16() ? DeviceType::Bf16 : t.isInteger(32) ? DeviceType::I32 : DeviceType::F32;
}

Instance &Instance::type(DeviceType t) {
  switch (t) {
  case DeviceType::Void: return add("void");
  case DeviceType::Bf16: return add("bf16");
  case DeviceType::F32: return add("float");
  case DeviceType::I32: return add("int");
  }
  llvm_unreachable("a device type without a name");
}

Instance &Instance::integer(int64_t v) { return add(std::to_string(v)); }
Instance &Instance::flag(bool b) { return add(b ? "true" : "false"); }

Instance &Instance::choice(Activation a) {
  switch (a) {
  case Activation::none: return add("cbc::Act::none");
  case Activation::silu: return add("cbc::Act::silu");
  case Activation::gelu: return add("cbc::Act::gelu");
  case Activation::gelu_tanh: return add("cbc::Act::gelu_tanh");
  case Activation::relu: return add("cbc::Act::relu");
  case Activation::relu2: return add("cbc::Act::relu2");
  case Activation::sigmoid: return add("cbc::Act::sigmoid");
  case Activation::softplus: return add("cbc::Act::softplus");
  case Activation::exp: return add("cbc::Act::exp");
  case Activation::signed_sqrt: return add("cbc::Act::signed_sqrt");
  }
  llvm_unreachable("an activation without a kernel");
}

Instance &Instance::choice(GluLayout l) {
  switch (l) {
  case GluLayout::halves: return add("cbc::Glu::halves");
  case GluLayout::interleaved: return add("cbc::Glu::interleaved");
  }
  llvm_unreachable("a GLU layout without a kernel");
}

Instance &Instance::choice(RopePairing p) {
  switch (p) {
  case RopePairing::half: return add("cbc::Pairing::half");
  case RopePairing::interleaved: return add("cbc::Pairing::interleaved");
  }
  llvm_unreachable("a RoPE pairing without a kernel");
}

Instance &Instance::choice(RouteScore s) {
  switch (s) {
  case RouteScore::softmax: return add("cbc::Score::softmax");
  case RouteScore::topk_softmax: return add("cbc::Score::topk_softmax");
  case RouteScore::sigmoid: return add("cbc::Score::sigmoid");
  case RouteScore::sparsemixer: return add("cbc::Score::sparsemixer");
  case RouteScore::sqrt_softplus: return add("cbc::Score::sqrt_softplus");
  }
  llvm_unreachable("a route score without a kernel");
}

Instance &Instance::choice(GroupScore s) {
  return add(s == GroupScore::max ? "cbc::GroupScore::max" : "cbc::GroupScore::top2_sum");
}

Instance &Instance::choice(GroupFill f) {
  return add(f == GroupFill::zero ? "cbc::GroupFill::zero" : "cbc::GroupFill::neg_inf");
}

Instance &Instance::choice(NormGateOrder o) {
  switch (o) {
  case NormGateOrder::norm_gate: return add("cbc::GateOrder::norm_gate");
  case NormGateOrder::gate_norm: return add("cbc::GateOrder::gate_norm");
  }
  llvm_unreachable("a gate order without a kernel");
}

Instance &Instance::choice(RetentionKind r) {
  switch (r) {
  case RetentionKind::all: return add("cbc::Retention::all");
  case RetentionKind::window: return add("cbc::Retention::window");
  case RetentionKind::chunk: return add("cbc::Retention::chunk");
  }
  llvm_unreachable("a retention without a kernel");
}

Instance &Instance::choice(GluUnit::Kind u) {
  switch (u) {
  case GluUnit::Gated: return add("cbc::Unit::gated");
  case GluUnit::Ungated: return add("cbc::Unit::ungated");
  case GluUnit::ClampedSwiglu: return add("cbc::Unit::clamped_swiglu");
  case GluUnit::SoftcappedSwiglu: return add("cbc::Unit::softcapped_swiglu");
  }
  llvm_unreachable("a gated unit without a kernel");
}

Instance &Instance::table(const std::string &name) { return add(name.empty() ? "nullptr" : name); }
Instance &Instance::instance(const Instance &inner) { return add(inner.text()); }

std::string Instance::text() const {
  std::string s = "cbc::" + name_ + "<";
  for (size_t i = 0; i < args_.size(); ++i)
    s += (i ? ", " : "") + args_[i];
  return s + ">";
}

GluUnit gluUnit(Attribute act, bool ungated) {
  if (auto clamp = llvm::dyn_cast<ClampedSwigluAttr>(act))
    return {GluUnit::ClampedSwiglu, Activation::none, clamp.getLimit().convertToDouble(),
            clamp.getAlpha().convertToDouble(), clamp.getUpOffset().convertToDouble()};
  if (auto cap = llvm::dyn_cast<SoftcappedSwigluAttr>(act))
    return {GluUnit::SoftcappedSwiglu, Activation::none, cap.getGateCap().convertToDouble(),
            cap.getUpCap().convertToDouble()};
  return {ungated ? GluUnit::Ungated : GluUnit::Gated, llvm::cast<ActivationAttr>(act).getValue()};
}

int64_t cols(Value v) { return llvm::cast<RankedTensorType>(v.getType()).getDimSize(1); }

void addRopeArgs(Instance &inst, Emitter &e, RopeAttr rope) {
  bool isLong = (bool)rope.getInvFreqLong(), dynamic = rope.getDynamicBase().convertToDouble() != 0;
  inst.integer(rope.getRotaryDim())
      .choice(rope.getPairing())
      .table(e.table(rope.getInvFreq().asArrayRef()))
      .table(isLong ? e.table(rope.getInvFreqLong().asArrayRef()) : "")
      .integer(isLong ? rope.getLongAfter() : 0)
      .flag(dynamic)
      .integer(dynamic ? rope.getDynamicMaxPositions() : 0);
}

// ---- the op table ----

const EmitterTable &emitterTable() {
  static const EmitterTable table = [] {
    EmitterTable t;
#define CBC_OP(NAME, ...) t.add(emit##NAME);
#include "runtime/schema/ops.inc"
    return t;
  }();
  return table;
}

} // namespace cuda

bool hasCudaEmitter(llvm::StringRef opName) { return cuda::emitterTable().find(opName) != nullptr; }

mlir::FailureOr<KernelBundleOut> emitCuda(mlir::ModuleOp module) { return cuda::Emitter(module).run(); }

} // namespace cbc::codegen
