#include "runtime/artefact_check.h"

#include "runtime/schema/kernel_abi.h"
#include "runtime/schema/limits.h"
#include "runtime/schema/opcodes.h"

#include "runtime/schema/model_bfbs_generated.h"

#include <flatbuffers/reflection.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <string_view>

namespace cbc::rt {

namespace {

using fb::Opcode;

// The schema's reflection data, embedded at build time: each parameter field's declared kind.
const reflection::Schema &schema() {
  static const reflection::Schema *s = reflection::GetSchema(fb::ModelBinarySchema::data());
  return *s;
}

bool declares(const reflection::Field &f, const char *kind) {
  return f.attributes() && f.attributes()->LookupByKey(kind) != nullptr;
}

bool isScalar(reflection::BaseType t) { return t >= reflection::UType && t <= reflection::Double; }
bool isReal(reflection::BaseType t) { return t == reflection::Float || t == reflection::Double; }

// Scalars of base type `t` at `p`. FlatBuffers' own GetAnyValueI lives in its static library,
// which Debian builds without -fPIC, so the Python module (a shared object) cannot link it.
int64_t intAt(reflection::BaseType t, const uint8_t *p) {
  using flatbuffers::ReadScalar;
  switch (t) {
  case reflection::Byte: return ReadScalar<int8_t>(p);
  case reflection::Short: return ReadScalar<int16_t>(p);
  case reflection::UShort: return ReadScalar<uint16_t>(p);
  case reflection::Int: return ReadScalar<int32_t>(p);
  case reflection::UInt: return ReadScalar<uint32_t>(p);
  case reflection::Long:
  case reflection::ULong: return ReadScalar<int64_t>(p);
  default: return ReadScalar<uint8_t>(p); // UType, Bool, UByte
  }
}
double realAt(reflection::BaseType t, const uint8_t *p) {
  return t == reflection::Float ? flatbuffers::ReadScalar<float>(p) : flatbuffers::ReadScalar<double>(p);
}

// Walks a parameter table by the schema, so that a new op's fields are checked without code
// here: every enum a known enumerator, no NaN, and the kind each field declares (see model.fbs)
// within runtime/schema/limits.h. Presence of `required` fields is the FlatBuffers verifier's.
class ParamsChecker {
public:
  std::string error;

  void table(const reflection::Object &obj, const flatbuffers::Table &t) {
    for (const reflection::Field *f : fieldsOf(obj)) {
      reflection::BaseType type = f->type()->base_type();
      const uint8_t *p = t.GetAddressOf(f->offset()); // absent: the field's default
      if (isReal(type))
        real(*f, p ? realAt(type, p) : f->default_real(), false);
      else if (isScalar(type))
        integer(*f, p ? intAt(type, p) : f->default_integer());
      else if (type == reflection::Vector)
        vector(*f, flatbuffers::GetFieldAnyV(t, *f));
      else if (type == reflection::Obj)
        object(*f, t);
    }
  }

private:
  // In declaration order, so that the first fault reported is the first field's.
  static std::vector<const reflection::Field *> fieldsOf(const reflection::Object &obj) {
    std::vector<const reflection::Field *> fields(obj.fields()->begin(), obj.fields()->end());
    std::sort(fields.begin(), fields.end(), [](auto *a, auto *b) { return a->id() < b->id(); });
    return fields;
  }

  void fail(const reflection::Field &f, const std::string &why) {
    if (error.empty())
      error = "field '" + f.name()->str() + "' " + why;
  }

  void object(const reflection::Field &f, const flatbuffers::Table &t) {
    const reflection::Object &obj = *schema().objects()->Get(f.type()->index());
    if (!obj.is_struct()) {
      if (const flatbuffers::Table *inner = flatbuffers::GetFieldT(t, f))
        table(obj, *inner);
      return;
    }
    const flatbuffers::Struct *st = flatbuffers::GetFieldStruct(t, f);
    for (const reflection::Field *sf : st ? fieldsOf(obj) : std::vector<const reflection::Field *>{}) {
      reflection::BaseType type = sf->type()->base_type();
      const uint8_t *p = st->GetAddressOf(sf->offset());
      if (isReal(type))
        real(*sf, realAt(type, p), false);
      else if (isScalar(type))
        integer(*sf, intAt(type, p));
    }
  }

  void vector(const reflection::Field &f, const flatbuffers::VectorOfAny *v) {
    reflection::BaseType element = f.type()->element();
    for (flatbuffers::uoffset_t i = 0; v && isReal(element) && i < v->size(); ++i)
      real(f, realAt(element, v->Data() + flatbuffers::GetTypeSize(element) * i), true);
  }

  void integer(const reflection::Field &f, int64_t v) {
    std::string n = std::to_string(v);
    if (f.type()->index() >= 0) { // an enum
      if (!schema().enums()->Get(f.type()->index())->values()->LookupByKey(v))
        fail(f, "has the unknown value " + n);
    } else if (declares(f, "layer")) {
      if (v < 0 || v >= limits::kMaxLayers)
        fail(f, "is no layer (" + n + ")");
    } else if (declares(f, "heads")) {
      if (v < 1 || v > limits::kMaxHeads)
        fail(f, "has " + n + " heads, outside [1, " + std::to_string(limits::kMaxHeads) + "]");
    } else if (declares(f, "dim")) {
      if (v < 0 || v > limits::kMaxDim)
        fail(f, "is " + n + ", outside [0, " + std::to_string(limits::kMaxDim) + "]");
    } else if (f.type()->base_type() == reflection::Long && (v < 0 || v > limits::kMaxTensorElems)) {
      fail(f, "is " + n + ", outside [0, 2^40]");
    }
  }

  // Scalars may be infinite (a dt limit of inf); vector elements (frequencies, decay rates) not.
  void real(const reflection::Field &f, double v, bool element) {
    if (std::isnan(v))
      fail(f, "is NaN");
    else if (element && !std::isfinite(v))
      fail(f, "has an infinite element");
    else if (element && declares(f, "positive") && v <= 0)
      fail(f, "has the non-positive element " + std::to_string(v));
  }
};

std::string paramsError(const Instr &in) {
  fb::OpParams type = opcodeInfo(in.opcode).params;
  if (type == fb::OpParams::NONE || !in.params)
    return "";
  // The union's member names its table: OpParams's enumerator is the table's name.
  std::string name = "cbc.fb." + std::string(fb::EnumNameOpParams(type));
  const reflection::Object *obj = schema().objects()->LookupByKey(name.c_str());
  if (!obj)
    return "table " + name + " is not in the schema";
  ParamsChecker checker;
  checker.table(*obj, *static_cast<const flatbuffers::Table *>(in.params));
  return checker.error;
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

void checkState(const Instr &in, const fb::StateSite &site, const CachePlan &plan) {
  for (const StateDecl &d : plan.states)
    if (d.layer == site.layer() && d.name == site.name()->str())
      return;
  throw ArtefactError("instruction " + in.op + " uses the state '" + site.name()->str() + "' of layer " +
                      std::to_string(site.layer()) + ", which the cache plan lacks");
}

// Dynamic dimensions: an argument's any (block tables are [requests, ?]), an activation's rows.
// An activation may have no columns (the empty roped part of a latent layer without RoPE).
void checkValueShapes(const Program &p) {
  for (size_t i = 0; i < p.values.size(); ++i) {
    const Value &v = p.values[i];
    bool ok = v.shape.size() <= 8;
    for (size_t d = 0; ok && d < v.shape.size(); ++d)
      ok = (v.shape[d] == -1 && (d == 0 || v.kind == Value::Argument)) ||
           (v.shape[d] >= (v.kind == Value::Activation && d == 1 ? 0 : 1) && v.shape[d] <= limits::kMaxTensorElems);
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

// A gather's workspace holds every rank's rows of its value, one row per token of the step.
void checkGather(const GatherDesc &g, const Artefact &a) {
  const KernelBundle &k = *a.kernels;
  if (g.workspace < 0 || g.workspace >= (int)k.workspaces.size())
    throw ArtefactError("a gather uses an unknown workspace");
  const Value &x = a.program.values[g.x];
  if (x.kind != Value::Activation)
    throw ArtefactError("a gather reads a value that is not an activation");
  if (k.workspaces[g.workspace].bytes_per_token < a.ranks * x.cols() * (int64_t)dtypeBytes(k.value_dtypes[g.x]))
    throw ArtefactError("a gather's workspace is too small for every rank's rows");
}

} // namespace

void checkKernels(const Artefact &a) {
  const KernelBundle &k = *a.kernels;
  if (k.value_dtypes.size() != a.program.values.size())
    throw ArtefactError("the kernel bundle does not describe every program value");
  for (const WorkspaceDesc &w : k.workspaces)
    if (w.bytes_per_token > limits::kMaxTensorElems || w.bytes_fixed > limits::kMaxTensorElems)
      throw ArtefactError("workspace '" + w.name + "' is larger than cbc's limits");
  for (const Launch &l : k.launches) {
    checkLaunchArgs(l, k, a.cache_plan);
    if (l.gather)
      checkGather(*l.gather, a);
  }
}

void checkProgramAgainstPlan(const Artefact &a) {
  checkMeta(a.meta, a.cache_plan);
  checkValueShapes(a.program);
  checkArenas(a.program);
  for (const Instr &in : a.program.instrs) {
    if (const fb::CacheSite *site = cacheSiteOf(in))
      checkSite(in, *site, a.cache_plan);
    if (const fb::StateSite *site = stateSiteOf(in))
      checkState(in, *site, a.cache_plan);
  }
}

void checkInstr(const Instr &in) {
  // The counts the op's ODS operand and result lists allow (runtime/schema/ops.inc).
  const OpcodeInfo &op = opcodeInfo(in.opcode);
  auto within = [](int n, int min, int max) { return n >= min && (max < 0 || n <= max); };
  int nIn = (int)in.inputs.size(), nOut = (int)in.outputs.size();
  if (!within(nIn, op.min_inputs, op.max_inputs) || !within(nOut, op.min_outputs, op.max_outputs))
    throw ArtefactError("instruction " + in.op + " has " + std::to_string(nIn) + " inputs and " +
                        std::to_string(nOut) + " outputs, which the op does not take");
  std::string err = paramsError(in);
  if (!err.empty())
    throw ArtefactError("instruction " + in.op + ": parameter " + err);
}

} // namespace cbc::rt
