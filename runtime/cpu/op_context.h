// How the CPU backend compiles one instruction: a compile function per opcode checks the
// instruction's operands against what its kernel will index (a corrupt artefact must throw, not
// read out of bounds) and returns the closure that runs it each step.
#ifndef CBC_RUNTIME_CPU_OP_CONTEXT_H
#define CBC_RUNTIME_CPU_OP_CONTEXT_H

#include "runtime/backend.h"
#include "runtime/comm/communicator.h"
#include "runtime/cpu/kernels.h"
#include "runtime/schema/shape_rules.h"
#include "runtime/weights.h"

#include <array>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace cbc::rt::cpu {

// What a compiled instruction reads and writes while a step runs. The CPU backend owns it.
struct StepEnv {
  const Artefact *artefact = nullptr;
  const WeightStore *weights = nullptr;
  BackendLimits limits;
  std::unique_ptr<float[]> arenas[2]; // rows per token, rows per request
  std::map<int, std::unique_ptr<float[]>> kvPools;                       // layer -> pool
  std::map<std::pair<int, std::string>, std::vector<float>> statePools; // (layer, name) -> [slots][elems]
  std::map<int, KvLayout> kvLayouts;
  const StepBatch *batch = nullptr;
  ParallelFor pfor;
  std::vector<int64_t> seqLen;  // per token: the length its RoPE schedule sees
  std::vector<float> scratch[3]; // fused ops' intermediates
  Communicator *comm = nullptr;   // the tensor-parallel group (a group of one without --tp)
  std::vector<float> commScratch; // the ranks' gathered rows

  float *f32(int value);
  int32_t *i32(int value) { return reinterpret_cast<int32_t *>(f32(value)); }
  const float *weight(int value) const; // a weight held as float32
  Matrix matrix(int value) const;       // a weight in any format
  int64_t rows(int value) const; // the step's rows of an activation: tokens or logit rows
  const int32_t *arg(StepArg a) const;
  const float *injected() const { return batch->inject_embeds.data(); } // StepArg::InjectEmbeds
  const int32_t *groupTables(int group) const {
    return batch->block_tables + (int64_t)group * batch->table_slots * batch->table_width;
  }
  float *kvPool(int layer) { return kvPools.at(layer).get(); }
  float *statePool(int layer, const std::string &name);
  StateRows stateRows() const {
    return {batch->cu_seqlens.data(), batch->state_in.data(), batch->state_out.data(),
            batch->has_initial_state.data(), batch->num_requests};
  }
  // The length each token's RoPE schedule sees: its prompt, or its own position once past it.
  const int64_t *seqLengths();
};

using Exec = std::function<void(StepEnv &)>;

// One instruction at compile time: its operands, parameters and the checks every compile
// function shares. A failed check throws ArtefactError naming the instruction.
class OpContext {
public:
  OpContext(const Artefact &a, const WeightStore &w, const std::map<int, KvLayout> &kv,
            const std::map<int, int> &layerGroup, const Instr &in)
      : artefact(a), instr(in), I(in.inputs), O(in.outputs), weights_(w), kv_(kv), layerGroup_(layerGroup) {}

  const Artefact &artefact;
  const Instr &instr;
  const std::vector<int> &I, &O; // input and output value ids

  template <typename T> const T &params() const { return instr.get<T>(); }

  [[noreturn]] void fail(const std::string &why) const;
  void check(bool ok, const char *why) const {
    if (!ok)
      fail(why);
  }
  // At least nIn inputs and exactly nOut outputs.
  void need(size_t nIn, size_t nOut) const;
  // Activations processed row by row together, so in one arena (the same row count).
  void acts(std::initializer_list<int> ids) const;
  void needArg(size_t input, StepArg a) const;
  bool isAct(int v) const { return value(v).kind == Value::Activation; }
  bool isArg(int v, StepArg a) const { return value(v).kind == Value::Argument && value(v).arg == a; }
  const Value &value(int v) const { return artefact.program.values[v]; }
  int64_t cols(int v) const { return value(v).cols(); }
  const std::vector<int64_t> &weightShape(int v) const;
  int64_t weightNumel(int v) const;
  // The layer's cache layout, checking that the plan has the layer in `group`.
  const KvLayout &kvLayout(int layer, int group) const;
  // The shapes fit the op's rules (runtime/schema/shape_rules.h): `error` is the rule's verdict.
  void checkShape(shape::Error error) const {
    if (error)
      fail(std::string("breaks a shape rule: ") + error);
  }
  // The cache plan declares state `name` of `elems` elements for `layer`.
  void checkState(int layer, const std::string &name, int64_t elems) const;
  template <size_t N> void checkState(const fb::StateSite &site, const std::array<int64_t, N> &shape) const {
    int64_t elems = 1;
    for (int64_t d : shape)
      elems *= d;
    checkState(site.layer(), site.name()->str(), elems);
  }

private:
  const WeightStore &weights_;
  const std::map<int, KvLayout> &kv_;
  const std::map<int, int> &layerGroup_;
};

using CompileFn = Exec (*)(const OpContext &);

// The compile function of every opcode (op_table.cpp).
CompileFn compileFunction(fb::Opcode opcode);

// One per instruction op of the op table, named compile<Opcode> (ops_*.cpp): an op without one
// does not link.
#define CBC_OP(NAME, ...) Exec compile##NAME(const OpContext &c);
#include "runtime/schema/ops.inc"

// Shared by the ops that read a RoPE schedule.
RopeParams ropeParams(const fb::RopeParams &p);
void checkRope(const OpContext &c, const RopeParams &p);

} // namespace cbc::rt::cpu

#endif
