// The CUDA emitter's shared machinery, used by the per-op-group files (EmitMath, EmitKv,
// EmitState, EmitMoe): value ids and device types, kernels as instantiations of the templates
// in codegen/cuda/kernels (deduplicated by template and arguments), launches whose arguments
// are placed by slot name, workspaces, and the table of op emitters.
#ifndef CBC_CODEGEN_CUDA_EMITTER_H
#define CBC_CODEGEN_CUDA_EMITTER_H

#include "codegen/artefact_writer.h"
#include "codegen/step_values.h"
#include "codegen/cuda/kernels/slots.h"
#include "dialects/cbc/CbcOps.h"
#include "runtime/schema/kernel_abi.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/ErrorHandling.h"

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace cbc::codegen::cuda {

namespace slots = kernels::slots;

class Instance;

// A device element type as the kernel templates name it (bf16, float, int); Void for an absent
// operand.
enum class DeviceType { Void, Bf16, F32, I32 };
DeviceType deviceType(mlir::Value v);


// The arguments of one launch, placed by the slot names of the kernel's slot struct S. take()
// lays them out as the runtime packs them (pointers, then integers, then floats, each in slot
// order) and stops on a slot left empty: that is a bug in an emitter, not in the input.
template <class S> class SlotArgs {
  static_assert(S::NumPtr <= kMaxPtrArgs && S::NumInt <= kMaxIntArgs && S::NumFlt <= kMaxFloatArgs,
                "more slots than CbcArgs holds");

public:
  // `extraPtrs` pointers follow the named ones (a run started by the last named slot).
  explicit SlotArgs(int extraPtrs = 0) : p_(S::NumPtr + extraPtrs), i_(S::NumInt), f_(S::NumFlt) {
    if (p_.size() > (size_t)kMaxPtrArgs)
      llvm::report_fatal_error("cbc codegen: a launch has more pointers than CbcArgs holds");
  }
  SlotArgs &set(typename S::Ptr slot, KernelArgOut arg) { return put(p_, slot, arg, pointer(arg)); }
  SlotArgs &set(typename S::Int slot, KernelArgOut arg) {
    return put(i_, slot, arg, arg.kind == KernelArgOut::Runtime || arg.kind == KernelArgOut::Int);
  }
  SlotArgs &set(typename S::Flt slot, double value) {
    KernelArgOut arg;
    arg.kind = KernelArgOut::Float;
    arg.f = (float)value;
    return put(f_, slot, arg, true);
  }
  // Slot `first + k`, the k-th of a run of pointers.
  SlotArgs &setAt(typename S::Ptr first, size_t k, KernelArgOut arg) {
    return put(p_, (size_t)first + k, arg, pointer(arg));
  }
  std::vector<KernelArgOut> take() const {
    std::vector<KernelArgOut> out;
    for (const auto *kind : {&p_, &i_, &f_})
      for (const std::optional<KernelArgOut> &a : *kind) {
        if (!a)
          llvm::report_fatal_error("cbc codegen: a kernel launch leaves an argument slot empty");
        out.push_back(*a);
      }
    return out;
  }

private:
  static bool pointer(const KernelArgOut &a) {
    return a.kind == KernelArgOut::Value || a.kind == KernelArgOut::Cache || a.kind == KernelArgOut::Workspace;
  }
  SlotArgs &put(std::vector<std::optional<KernelArgOut>> &kind, size_t slot, const KernelArgOut &arg, bool kindOk) {
    if (slot >= kind.size() || kind[slot] || !kindOk)
      llvm::report_fatal_error(llvm::Twine("cbc codegen: argument slot ") + llvm::Twine(slot) +
                               " is out of range, filled twice or of the wrong kind");
    kind[slot] = arg;
    return *this;
  }
  std::vector<std::optional<KernelArgOut>> p_, i_, f_;
};

class Emitter {
public:
  explicit Emitter(mlir::ModuleOp module) : module_(module) {}
  mlir::FailureOr<KernelBundleOut> run();

  // ---- values ----
  // The value's id in the artefact (codegen/step_values.h).
  int id(mlir::Value v) const { return ids_->at(v); }
  // The rows of an activation, as cbc-schedule-step placed it: one per token, or one per request
  // (values derived from the gathered logit rows).
  RuntimeVar rowsVar(mlir::Value v) const {
    std::optional<BufferSlot> slot = bufferSlot(v);
    return slot && slot->rows == RowClass::Requests ? RuntimeVar::NumLogitRows : RuntimeVar::NumTokens;
  }
  DeviceType kvType() const { return kvType_; } // the kv pool's element type
  int64_t blockSize() const { return blockSize_; }

  // ---- launch arguments ----
  // The value's buffer, or a null pointer for an absent operand.
  KernelArgOut arg(mlir::Value v) const { return {KernelArgOut::Value, v ? id(v) : -1, "", 0, 0}; }
  static KernelArgOut runtime(RuntimeVar v) { return {KernelArgOut::Runtime, (int)v, "", 0, 0}; }
  static KernelArgOut integer(int64_t i) { return {KernelArgOut::Int, 0, "", i, 0}; }
  static KernelArgOut cache(int64_t layer) { return {KernelArgOut::Cache, (int)layer, "", 0, 0}; }
  // A per-request state pool of a layer, found by (layer, name).
  static KernelArgOut state(int64_t layer, llvm::StringRef name) {
    return {KernelArgOut::Cache, (int)layer, name.str(), 0, 0};
  }
  // A named scratch buffer shared by every launch that asks for it, sized for the largest.
  KernelArgOut workspace(llvm::StringRef name, int64_t bytesPerToken, int64_t bytesFixed);

  // ---- kernels and launches ----
  // The kernel that runs `instance`, a template of `header` (in codegen/cuda/kernels) with its
  // arguments; named after `hint`. Identical instances share one kernel.
  int kernel(llvm::StringRef hint, llvm::StringRef header, const Instance &instance);
  // The name of a __device__ const float table with these values, to pass as a template
  // argument; the table is emitted before the first kernel that uses it.
  std::string table(llvm::ArrayRef<float> values);
  std::string table(llvm::ArrayRef<int64_t> values); // a `const long long` table
  // A launch of the current instruction; grid.y and grid.z are 1 until set.
  template <class S> LaunchOut &launch(int kernelIndex, int block, const SlotArgs<S> &args, int smem = 0) {
    LaunchOut &l = newLaunch();
    l.grid[1].add = 1;
    l.grid[2].add = 1;
    l.kernel = kernelIndex;
    l.block = block;
    l.smem = smem;
    l.args = args.take();
    return l;
  }
  // A launch of the current instruction with nothing set (GEMMs, which only read grid.x).
  LaunchOut &newLaunch();

private:
  struct Kernel {
    std::string name, instance;
    std::vector<std::string> tables; // defined just before this kernel
  };
  mlir::LogicalResult numberValues(mlir::Block &block);
  std::string assembleSource() const;

  mlir::ModuleOp module_;
  DeviceType kvType_ = DeviceType::Bf16;
  int64_t blockSize_ = 16;
  KernelBundleOut prog_;
  std::optional<StepValueIds> ids_;
  std::vector<Kernel> kernels_;
  std::map<std::string, int> kernelByInstance_;
  std::vector<std::string> headers_; // in the order first needed
  std::map<std::vector<float>, std::string> tableByValues_;
  std::map<std::vector<int64_t>, std::string> intTableByValues_;
  std::map<std::string, std::string> tableText_; // name -> definition
  std::vector<std::string> pendingTables_;       // new since the last kernel
  std::map<std::string, int> workspaceByName_;
  int instr_ = -1;
};

// ---- template arguments ----
// A gated unit of the GLU and expert kernels, and its activation: from a GLU activation attribute,
// with the clamped-SwiGLU limit and alpha, or the soft-capped one's gate and up caps in their
// place (0 for the other units).
struct GluUnit {
  enum Kind { Gated, Ungated, ClampedSwiglu, SoftcappedSwiglu } kind = Gated;
  Activation act = Activation::none;
  double limit = 0, alpha = 0, up_offset = 1;
};
GluUnit gluUnit(mlir::Attribute act, bool ungated);

// A kernel instance: a template of codegen/cuda/kernels and its arguments, each added from what it
// stands for (a value's device type, an integer, a flag, an enumerator of a closed set, a table
// Emitter::table made, a nested instance), so that each kind of argument is spelled one way for
// every kernel. text() is the call the generated source makes: "cbc::rms_norm<bf16, float, bf16, 64>".
class Instance {
public:
  explicit Instance(llvm::StringRef name) : name_(name.str()) {}
  Instance &type(DeviceType t);
  Instance &type(mlir::Value v) { return type(deviceType(v)); }
  Instance &integer(int64_t v);
  // A trailing argument with a default: added only when v differs from it (`fallback`), so
  // that instances without it keep their names.
  Instance &integer(int64_t v, int64_t fallback) { return v == fallback ? *this : integer(v); }
  Instance &flag(bool b);
  Instance &choice(Activation a);
  Instance &choice(GluLayout l);
  Instance &choice(RopePairing p);
  Instance &choice(RouteScore s);
  Instance &choice(GroupScore s);
  Instance &choice(GroupFill f);
  Instance &choice(NormGateOrder o);
  Instance &choice(RetentionKind r);
  Instance &choice(GluUnit::Kind u);
  // A __device__ table's name, or a null pointer when `name` is empty.
  Instance &table(const std::string &name);
  Instance &instance(const Instance &inner);
  // The same arguments for another template (a kernel's chunked form, which takes more after them).
  Instance renamed(llvm::StringRef name) const {
    Instance other = *this;
    other.name_ = name.str();
    return other;
  }
  std::string text() const;

private:
  Instance &add(std::string arg) {
    args_.push_back(std::move(arg));
    return *this;
  }
  std::string name_;
  std::vector<std::string> args_;
};

int64_t cols(mlir::Value v);

// RoPE, shared by cbc.math.rope and cbc.kv.rope_append: the template arguments
// {RD, Pairing, FREQ, FREQ_LONG, LONG_AFTER, DYNAMIC, DYN_MAX} (see rope.cuh) and the slots
// every rotating kernel names alike.
void addRopeArgs(Instance &inst, Emitter &e, RopeAttr rope);
template <class S> void setRopeSlots(SlotArgs<S> &args, RopeAttr rope) {
  args.set(S::AttentionFactor, rope.getAttentionFactor().convertToDouble())
      .set(S::DynamicBase, rope.getDynamicBase().convertToDouble())
      .set(S::DynamicFactor, rope.getDynamicFactor().convertToDouble());
}

// ---- the op table ----
using OpEmitter = std::function<void(Emitter &, mlir::Operation &)>;
class EmitterTable {
public:
  template <class Op> void add(void (*fn)(Emitter &, Op)) {
    map_[Op::getOperationName()] = [fn](Emitter &e, mlir::Operation &op) { fn(e, llvm::cast<Op>(op)); };
  }
  const OpEmitter *find(llvm::StringRef opName) const {
    auto it = map_.find(opName);
    return it == map_.end() ? nullptr : &it->second;
  }

private:
  llvm::StringMap<OpEmitter> map_;
};
// One emitter per instruction op of the op table (runtime/schema/ops.inc), emit<Opcode>, in the
// Emit<Group>.cpp of its op group: an op without one does not link.
#define CBC_OP(NAME, ...) void emit##NAME(Emitter &e, NAME##Op op);
#include "runtime/schema/ops.inc"
const EmitterTable &emitterTable();

// Greedy sampling over the output logits; the runtime launches it itself.
int emitArgmax(Emitter &e, mlir::Value logits);

} // namespace cbc::codegen::cuda

#endif
