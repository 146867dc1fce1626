#include "runtime/artefact_check.h"

#include "runtime/schema/kernel_abi.h"
#include "runtime/schema/limits.h"
#include "runtime/schema/opcodes.h"

#include <flatbuffers/minireflect.h>

#include <array>
#include <cmath>
#include <cstring>
#include <set>
#include <string_view>

namespace cbc::rt {

namespace {

using fb::Opcode;

// Operand counts per opcode, as the ops' definitions (dialects/cbc) and the backends read them:
// inputs in [min_in, max_in], exactly `outs` outputs (-1: one or more).
struct Arity {
  Opcode opcode;
  int min_in, max_in, outs;
};
constexpr int kManyOperands = 1 << 16;
constexpr std::array<Arity, kNumOpcodes> kArity = {{
    {Opcode::Embed, 2, 2, 1},
    {Opcode::Linear, 2, 3, 1},             // bias
    {Opcode::RmsNorm, 1, 2, 1},            // weight
    {Opcode::Add, 2, 2, 1},
    {Opcode::Mul, 2, 2, 1},
    {Opcode::Gate, 2, 2, 1},
    {Opcode::Glu, 1, 1, 1},
    {Opcode::Split, 1, 1, -1},
    {Opcode::Concat, 1, kManyOperands, 1},
    {Opcode::Rope, 4, 4, 1},
    {Opcode::Act, 1, 1, 1},
    {Opcode::Softcap, 1, 1, 1},
    {Opcode::AddRmsNorm, 2, 3, 2},         // weight
    {Opcode::RmsNormGated, 2, 3, 1},       // weight
    {Opcode::KvAppend, 6, 6, 0},
    {Opcode::KvAttention, 7, 9, 1},        // sinks, distance bias
    {Opcode::KvRopeAppend, 6, 8, 1},       // q and k norms
    {Opcode::StateConv1d, 5, 6, 1},        // bias
    {Opcode::GatedDelta, 10, 10, 1},
    {Opcode::Ssd, 10, 10, 1},
    {Opcode::SelectiveScan, 10, 11, 1},    // gate
    {Opcode::RowsGather, 2, 2, 1},
    {Opcode::MoeRoute, 1, 2, 2},           // selection bias
    {Opcode::MoeExperts, 5, 7, 1},         // biases
    {Opcode::KvLatentAttention, 8, 9, 1},  // sparse selection
    {Opcode::HeadLinear, 2, 2, 1},
    {Opcode::PositionScale, 2, 2, 1},
    {Opcode::Lightning, 6, 6, 1},
    {Opcode::Kda, 10, 10, 1},
    {Opcode::KvIndexAppend, 5, 5, 0},
    {Opcode::KvIndexSelect, 8, 8, 1},
    {Opcode::LayerNorm, 3, 3, 1},
}};
constexpr bool arityIndexedByOpcode() {
  for (int i = 0; i < kNumOpcodes; ++i)
    if ((int)kArity[i].opcode != i)
      return false;
  return true;
}
static_assert(arityIndexedByOpcode(), "kArity must list the opcodes in order");

// Parameter-table fields a writer may leave out (absent: the feature is off). Every other
// table, struct, string and vector field must be there: the backends and `cbc dump` read them.
bool mayBeAbsent(std::string_view table, std::string_view field) {
  return (table == "RopeParams" && field == "inv_freq_long") || (table == "GluParams" && field == "clamp") ||
         (table == "MoeRouteParams" && field == "groups");
}

bool isHeadCount(std::string_view field) { return field == "heads" || field.find("_heads") != std::string_view::npos; }
bool isDimension(std::string_view field) {
  return field == "state_size" || field == "n_groups" || (field.size() > 4 && field.substr(field.size() - 4) == "_dim");
}

// Walks a parameter table through the schema's reflection tables, so that a new op's fields
// are checked without code here: every enum a known enumerator, no NaN, required fields
// present, counts and sizes within runtime/schema/limits.h.
struct ParamsChecker : flatbuffers::IterationVisitor {
  std::vector<const flatbuffers::TypeTable *> tables; // the objects being walked, innermost last
  const flatbuffers::TypeTable *pending = nullptr;    // the next object's type
  const flatbuffers::TypeTable *fieldType = nullptr;
  std::string_view field;
  bool inVector = false;
  std::string error;

  void fail(const std::string &why) {
    if (error.empty())
      error = "field '" + std::string(field) + "' " + why;
  }
  void StartSequence() override { tables.push_back(pending); }
  void EndSequence() override { tables.pop_back(); }
  void StartVector() override { inVector = true; }
  void EndVector() override { inVector = false; }

  void Field(size_t, size_t, flatbuffers::ElementaryType type, bool repeating, const flatbuffers::TypeTable *ref,
             const char *name, const uint8_t *val) override {
    field = name ? name : "?";
    fieldType = ref;
    pending = ref; // a nested table or struct starts its sequence next
    const flatbuffers::TypeTable *owner = tables.back();
    bool object = type == flatbuffers::ET_SEQUENCE && ref && ref->st != flatbuffers::ST_ENUM;
    if (!val && (repeating || object || type == flatbuffers::ET_STRING) &&
        !mayBeAbsent(owner ? tableName(owner) : "", field))
      fail("is missing");
  }
  // The reflection tables carry no type names: the union's entry that matches identifies it.
  static std::string_view tableName(const flatbuffers::TypeTable *t) {
    const flatbuffers::TypeTable *u = fb::OpParamsTypeTable();
    for (size_t i = 0; i < u->num_elems; ++i)
      if (u->type_codes[i].sequence_ref >= 0 && u->type_refs[u->type_codes[i].sequence_ref]() == t)
        return u->names[i];
    return "";
  }
  void enumValue(int64_t v, const char *name) {
    if (fieldType && fieldType->st == flatbuffers::ST_ENUM && !name)
      fail("has the unknown value " + std::to_string(v));
  }
  void Char(int8_t v, const char *name) override { enumValue(v, name); }
  void UChar(uint8_t v, const char *name) override { enumValue(v, name); }
  void Short(int16_t v, const char *name) override { enumValue(v, name); }
  void UShort(uint16_t v, const char *name) override { enumValue(v, name); }
  void Int(int32_t v, const char *name) override {
    enumValue(v, name);
    if (field == "layer" && (v < 0 || v >= limits::kMaxLayers))
      fail("is no layer (" + std::to_string(v) + ")");
  }
  void UInt(uint32_t v, const char *name) override { enumValue(v, name); }
  void Long(int64_t v) override {
    if (isHeadCount(field) && (v < 1 || v > limits::kMaxHeads))
      fail("has " + std::to_string(v) + " heads, outside [1, " + std::to_string(limits::kMaxHeads) + "]");
    else if (isDimension(field) && (v < 0 || v > limits::kMaxDim))
      fail("is " + std::to_string(v) + ", outside [0, " + std::to_string(limits::kMaxDim) + "]");
    else if (v < 0 || v > limits::kMaxTensorElems)
      fail("is " + std::to_string(v) + ", outside [0, 2^40]");
  }
  // Scalars may be infinite (a dt limit of inf); array elements (frequencies, decay rates) not,
  // and an inverse frequency is positive.
  void real(double v) {
    if (std::isnan(v))
      fail("is NaN");
    else if (inVector && !std::isfinite(v))
      fail("has an infinite element");
    else if (inVector && field.substr(0, 8) == "inv_freq" && v <= 0)
      fail("has the non-positive frequency " + std::to_string(v));
  }
  void Float(float v) override { real(v); }
  void Double(double v) override { real(v); }
};

std::string paramsError(const Instr &in) {
  fb::OpParams type = opcodeInfo(in.opcode).params;
  if (type == fb::OpParams::NONE || !in.params)
    return "";
  ParamsChecker checker;
  checker.tables.push_back(nullptr); // the union member's own sequence is pushed next
  checker.pending = fb::OpParamsTypeTable()->type_refs[(int)type - 1]();
  flatbuffers::IterateObject(static_cast<const uint8_t *>(in.params), checker.pending, &checker);
  return checker.error;
}

// The cache site of a cache op, or null.
const fb::CacheSite *siteOf(const Instr &in) {
  using P = fb::OpParams;
  switch (opcodeInfo(in.opcode).params) {
  case P::KvAppendParams: return in.get<fb::KvAppendParams>().site();
  case P::KvAttentionParams: return in.get<fb::KvAttentionParams>().site();
  case P::KvRopeAppendParams: return in.get<fb::KvRopeAppendParams>().site();
  case P::KvLatentAttentionParams: return in.get<fb::KvLatentAttentionParams>().site();
  case P::KvIndexAppendParams: return in.get<fb::KvIndexAppendParams>().site();
  case P::KvIndexSelectParams: return in.get<fb::KvIndexSelectParams>().site();
  default: return nullptr;
  }
}

// The layer and state name of a state op; layer -1 for other ops.
std::pair<int, const flatbuffers::String *> stateOf(const Instr &in) {
  using P = fb::OpParams;
  switch (opcodeInfo(in.opcode).params) {
  case P::Conv1dParams: return {in.get<fb::Conv1dParams>().layer(), in.get<fb::Conv1dParams>().state()};
  case P::GatedDeltaParams: return {in.get<fb::GatedDeltaParams>().layer(), in.get<fb::GatedDeltaParams>().state()};
  case P::SsdParams: return {in.get<fb::SsdParams>().layer(), in.get<fb::SsdParams>().state()};
  case P::SelectiveScanParams:
    return {in.get<fb::SelectiveScanParams>().layer(), in.get<fb::SelectiveScanParams>().state()};
  case P::LightningParams: return {in.get<fb::LightningParams>().layer(), in.get<fb::LightningParams>().state()};
  case P::KdaParams: return {in.get<fb::KdaParams>().layer(), in.get<fb::KdaParams>().state()};
  default: return {-1, nullptr};
  }
}

void checkSite(const Instr &in, const fb::CacheSite &site, const CachePlan &plan) {
  for (const CacheLayer &l : plan.layers)
    if (l.layer == site.layer()) {
      if (l.group != site.group())
        break;
      return;
    }
  throw ArtefactError("instruction " + in.op + " uses the cache of layer " + std::to_string(site.layer()) +
                      " in group " + std::to_string(site.group()) + ", which the cache plan lacks");
}

void checkState(const Instr &in, int layer, const flatbuffers::String &name, const CachePlan &plan) {
  for (const StateDecl &d : plan.states)
    if (d.layer == layer && d.name == name.str())
      return;
  throw ArtefactError("instruction " + in.op + " uses the state '" + name.str() + "' of layer " +
                      std::to_string(layer) + ", which the cache plan lacks");
}

// Dynamic dimensions: an argument's any (block tables are [requests, ?]), an activation's rows.
void checkValueShapes(const Program &p) {
  for (size_t i = 0; i < p.values.size(); ++i) {
    const Value &v = p.values[i];
    bool ok = v.shape.size() <= 8;
    for (size_t d = 0; ok && d < v.shape.size(); ++d)
      ok = (v.shape[d] == -1 && (d == 0 || v.kind == Value::Argument)) ||
           (v.shape[d] >= 1 && v.shape[d] <= limits::kMaxTensorElems);
    if (v.kind == Value::Activation)
      ok = ok && v.shape.size() >= 1 && v.shape.size() <= 2 && v.offset <= limits::kMaxTensorElems;
    if (!ok)
      throw ArtefactError("program value %" + std::to_string(i) + " has a bad shape");
  }
}

void checkMeta(const ModelMeta &m, const CachePlan &plan) {
  if (m.vocab_size > limits::kMaxVocab || m.hidden_size < 0 || m.hidden_size > limits::kMaxDim ||
      m.num_layers < 0 || m.num_layers > limits::kMaxLayers || m.max_positions > limits::kMaxPositions)
    throw ArtefactError("artefact metadata has a vocabulary, hidden size, layer count or max positions beyond cbc's "
                        "limits (runtime/schema/limits.h)");
  if (plan.block_size > limits::kMaxBlockSize)
    throw ArtefactError("cache plan has a block size of " + std::to_string(plan.block_size) + ", above " +
                        std::to_string(limits::kMaxBlockSize));
  // The backends key caches by layer and states by (layer, name): a second entry would
  // silently replace the first.
  std::set<int> layers;
  for (const CacheLayer &l : plan.layers)
    if (l.layer < 0 || l.layer >= limits::kMaxLayers || !layers.insert(l.layer).second)
      throw ArtefactError("cache plan lists layer " + std::to_string(l.layer) + " twice, or it is no layer");
  std::set<std::pair<int, std::string>> states;
  for (const StateDecl &d : plan.states)
    if (d.layer < 0 || d.layer >= limits::kMaxLayers || !states.insert({d.layer, d.name}).second)
      throw ArtefactError("cache plan lists the state '" + d.name + "' of layer " + std::to_string(d.layer) +
                          " twice, or it is no layer");
}

// Both backends allocate arenas of these widths and address values at their offsets.
void checkArenas(const Program &p) {
  if (p.token_row_elems < 0 || p.token_row_elems > limits::kMaxTensorElems || p.request_row_elems < 0 ||
      p.request_row_elems > limits::kMaxTensorElems)
    throw ArtefactError("the program's arena rows are out of range");
  for (size_t i = 0; i < p.values.size(); ++i) {
    const Value &v = p.values[i];
    if (v.kind == Value::Activation && v.offset + v.cols() > (v.arena == 0 ? p.token_row_elems : p.request_row_elems))
      throw ArtefactError("program value %" + std::to_string(i) + " does not fit its arena slot");
  }
}

bool planHasLayer(const CachePlan &plan, int layer) {
  for (const CacheLayer &l : plan.layers)
    if (l.layer == layer)
      return true;
  return false;
}

bool planHasState(const CachePlan &plan, int layer, const std::string &name) {
  for (const StateDecl &d : plan.states)
    if (d.layer == layer && d.name == name)
      return true;
  return false;
}

// A launch's arguments as the CUDA backend packs them (runtime/schema/kernel_abi.h).
void checkLaunchArgs(const Launch &l, const KernelBundle &k, const CachePlan &plan) {
  int np = 0, ni = 0, nf = 0;
  for (const KernelArg &arg : l.args) {
    bool pointer = arg.kind == KernelArg::Value || arg.kind == KernelArg::Cache || arg.kind == KernelArg::Workspace;
    np += pointer;
    ni += arg.kind == KernelArg::Runtime || arg.kind == KernelArg::Int;
    nf += arg.kind == KernelArg::Float;
    if (arg.kind == KernelArg::Workspace && (arg.index < 0 || arg.index >= (int)k.workspaces.size()))
      throw ArtefactError("a launch uses an unknown workspace");
    if (arg.kind == KernelArg::Cache && !(arg.name.empty() ? planHasLayer(plan, arg.index)
                                                          : planHasState(plan, arg.index, arg.name)))
      throw ArtefactError("a launch uses the cache or a state of layer " + std::to_string(arg.index) +
                          ", which the cache plan lacks");
  }
  if (np > kMaxPtrArgs || ni > kMaxIntArgs || nf > kMaxFloatArgs)
    throw ArtefactError("a launch has too many arguments");
}

} // namespace

void checkKernels(const Artefact &a) {
  const KernelBundle &k = *a.kernels;
  if (k.value_dtypes.size() != a.program.values.size())
    throw ArtefactError("the kernel bundle does not describe every program value");
  for (const WorkspaceDesc &w : k.workspaces)
    if (w.bytes_per_token > limits::kMaxTensorElems || w.bytes_fixed > limits::kMaxTensorElems)
      throw ArtefactError("workspace '" + w.name + "' is larger than cbc's limits");
  for (const Launch &l : k.launches)
    checkLaunchArgs(l, k, a.cache_plan);
}

void checkProgramAgainstPlan(const Artefact &a) {
  checkMeta(a.meta, a.cache_plan);
  checkValueShapes(a.program);
  checkArenas(a.program);
  for (const Instr &in : a.program.instrs) {
    if (const fb::CacheSite *site = siteOf(in))
      checkSite(in, *site, a.cache_plan);
    auto [layer, state] = stateOf(in);
    if (state)
      checkState(in, layer, *state, a.cache_plan);
  }
}

void checkInstr(const Instr &in) {
  const Arity &arity = kArity[(int)in.opcode];
  int nIn = (int)in.inputs.size(), nOut = (int)in.outputs.size();
  if (nIn < arity.min_in || nIn > arity.max_in || (arity.outs >= 0 ? nOut != arity.outs : nOut < 1))
    throw ArtefactError("instruction " + in.op + " has " + std::to_string(nIn) + " inputs and " +
                        std::to_string(nOut) + " outputs, which the op does not take");
  std::string err = paramsError(in);
  if (!err.empty())
    throw ArtefactError("instruction " + in.op + ": parameter " + err);
}

} // namespace cbc::rt
