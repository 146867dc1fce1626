#include "runtime/cpu/op_context.h"

#include <algorithm>
#include <stdexcept>

namespace cbc::rt::cpu {

float *StepEnv::f32(int value) {
  const Value &v = artefact->program.values[value];
  if (v.kind != Value::Activation)
    throw std::runtime_error("cpu backend: value " + std::to_string(value) + " is not an activation");
  return arenas[v.arena].get() + v.offset * (v.arena == 0 ? limits.max_tokens : limits.max_requests);
}

const float *StepEnv::weight(int value) const {
  const Value &v = artefact->program.values[value];
  if (v.kind != Value::Weight)
    throw std::runtime_error("cpu backend: value " + std::to_string(value) + " is not a weight");
  const HostTensor &t = weights->get(v.weight);
  // Only the operands cpuBf16Weights() names read bf16 weights; any other is a backend bug.
  if (t.format() != Storage::F32)
    throw std::logic_error("cpu backend: weight " + std::to_string(v.weight) + " is held as " +
                           formatName(t.format()));
  return t.f32().data();
}

Matrix StepEnv::matrix(int value) const {
  const Value &v = artefact->program.values[value];
  if (v.kind != Value::Weight)
    throw std::runtime_error("cpu backend: value " + std::to_string(value) + " is not a weight");
  return Matrix(weights->get(v.weight));
}

int64_t StepEnv::rows(int value) const {
  return artefact->program.values[value].arena == 1 ? batch->num_logit_rows : batch->num_tokens;
}

const int32_t *StepEnv::arg(StepArg a) const {
  const StepBatch &b = *batch;
  switch (a) {
  case StepArg::Tokens: return b.tokens.data();
  case StepArg::Positions: return b.positions.data();
  case StepArg::SeqIds: return b.seq_ids.data();
  case StepArg::CuSeqlens: return b.cu_seqlens.data();
  case StepArg::KvLens: return b.kv_lens.data();
  case StepArg::BlockTables: return b.block_tables;
  case StepArg::LogitRows: return b.logit_rows.data();
  case StepArg::PromptLens: return b.prompt_lens.data();
  case StepArg::Slots: return b.slots.data();
  case StepArg::HasInitialState: return b.has_initial_state.data();
  case StepArg::StateIn: return b.state_in.data();
  case StepArg::StateOut: return b.state_out.data();
  case StepArg::InjectRows: return b.inject_rows.data();
  case StepArg::InjectEmbeds: break; // rows of floats: StepEnv::injected()
  case StepArg::RopePositions: return b.rope_positions.data();
  case StepArg::KeyEnds: return b.key_ends.data();
  }
  throw std::runtime_error("cpu backend: unknown step argument");
}

float *StepEnv::statePool(int layer, const std::string &name) {
  auto it = statePools.find({layer, name});
  if (it == statePools.end())
    throw std::runtime_error("cpu backend: layer " + std::to_string(layer) + " has no state '" + name + "'");
  return it->second.data();
}

const int64_t *StepEnv::seqLengths() {
  const StepBatch &b = *batch;
  seqLen.resize(b.num_tokens);
  for (int64_t t = 0; t < b.num_tokens; ++t)
    seqLen[t] = std::max<int64_t>(b.prompt_lens[b.seq_ids[t]], (int64_t)b.positions[t] + 1);
  return seqLen.data();
}

void OpContext::fail(const std::string &why) const { throw ArtefactError("instruction " + instr.op + " " + why); }

void OpContext::need(size_t nIn, size_t nOut) const {
  if (I.size() < nIn || O.size() != nOut)
    fail("has the wrong number of operands");
}

void OpContext::acts(std::initializer_list<int> ids) const {
  int arena = -1;
  for (int v : ids) {
    if (!isAct(v))
      fail("expects an activation operand");
    if (arena >= 0 && value(v).arena != arena)
      fail("mixes per-token and per-request rows");
    arena = value(v).arena;
  }
}

void OpContext::needArg(size_t input, StepArg a) const {
  if (input >= I.size() || !isArg(I[input], a))
    fail("expects the step argument '" + std::string(stepArgName(a)) + "'");
}

const std::vector<int64_t> &OpContext::weightShape(int v) const {
  if (value(v).kind != Value::Weight)
    fail("expects a weight operand");
  return weights_.get(value(v).weight).shape();
}

int64_t OpContext::weightNumel(int v) const {
  int64_t n = 1;
  for (int64_t d : weightShape(v))
    n *= d;
  return n;
}

const KvLayout &OpContext::kvLayout(int layer, int group) const {
  auto it = kv_.find(layer);
  if (it == kv_.end() || group < 0 || group >= (int)artefact.cache_plan.groups.size() ||
      layerGroup_.at(layer) != group)
    fail("refers to a layer the cache plan lacks");
  return it->second;
}

void OpContext::checkState(int layer, const std::string &name, int64_t elems) const {
  for (const StateDecl &d : artefact.cache_plan.states)
    if (d.layer == layer && d.name == name && d.elems() == elems)
      return;
  fail("has no matching state in the cache plan");
}

} // namespace cbc::rt::cpu
