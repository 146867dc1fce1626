#include "runtime/artefact.h"

#include "runtime/artefact_check.h"
#include "runtime/schema/integrity.h"
#include "runtime/schema/limits.h"
#include "runtime/schema/opcodes.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

namespace cbc::rt {

const char *dtypeName(DType d) {
  switch (d) {
  case DType::F32: return "f32";
  case DType::BF16: return "bf16";
  case DType::F16: return "f16";
  case DType::I32: return "i32";
  }
  return "?";
}

size_t dtypeBytes(DType d) { return d == DType::BF16 || d == DType::F16 ? 2 : 4; }

// The sites come from the op table: a new cache or state op needs no case here, and one whose
// table lacks its site field does not compile. CBC_SITE_<kind>_<site> is the case of an opcode
// whose op's site is <site>, in the function that returns sites of <kind>.
#define CBC_SITE_Cache_Cache(NAME, PARAMS)                                                                             \
  case fb::Opcode::NAME: return in.get<fb::PARAMS>().site();
#define CBC_SITE_Cache_State(NAME, PARAMS)
#define CBC_SITE_Cache_None(NAME, PARAMS)
#define CBC_SITE_State_State(NAME, PARAMS)                                                                             \
  case fb::Opcode::NAME: return in.get<fb::PARAMS>().state();
#define CBC_SITE_State_Cache(NAME, PARAMS)
#define CBC_SITE_State_None(NAME, PARAMS)

const fb::CacheSite *cacheSiteOf(const Instr &in) {
  switch (in.opcode) {
#define CBC_OP(NAME, CODE, OP_NAME, PARAMS, MIN_IN, MAX_IN, MIN_OUT, MAX_OUT, SITE) CBC_SITE_Cache_##SITE(NAME, PARAMS)
#include "runtime/schema/ops.inc"
  default: return nullptr;
  }
}

const fb::StateSite *stateSiteOf(const Instr &in) {
  switch (in.opcode) {
#define CBC_OP(NAME, CODE, OP_NAME, PARAMS, MIN_IN, MAX_IN, MIN_OUT, MAX_OUT, SITE) CBC_SITE_State_##SITE(NAME, PARAMS)
#include "runtime/schema/ops.inc"
  default: return nullptr;
  }
}

std::optional<int> layerOf(const Instr &in) {
  if (const fb::CacheSite *site = cacheSiteOf(in))
    return site->layer();
  if (const fb::StateSite *site = stateSiteOf(in))
    return site->layer();
  return std::nullopt;
}

namespace {

DType toDType(fb::DType d) {
  switch (d) {
  case fb::DType::F32: return DType::F32;
  case fb::DType::BF16: return DType::BF16;
  case fb::DType::F16: return DType::F16;
  case fb::DType::I32: return DType::I32;
  }
  throw ArtefactError("unknown dtype in artefact");
}

std::string str(const flatbuffers::String *s) { return s ? s->str() : std::string(); }

// Element by element through memcpy: the verifier checks a vector's bounds but not that a
// (corrupt) offset keeps 8-byte elements aligned.
template <typename T, typename V> std::vector<T> vec(const flatbuffers::Vector<V> *v) {
  std::vector<T> out;
  if (v) {
    const uint8_t *p = v->Data();
    for (flatbuffers::uoffset_t i = 0; i < v->size(); ++i) {
      V x;
      std::memcpy(&x, p + (size_t)i * sizeof(V), sizeof(V));
      out.push_back((T)flatbuffers::EndianScalar(x));
    }
  }
  return out;
}

Value readValue(const fb::Value &v) {
  Value val;
  int kind = (int)v.kind(); // check before the cast: a stray byte is no enumerator
  if (kind < Value::Argument || kind > Value::Activation)
    throw ArtefactError("unknown value kind in program");
  val.kind = (Value::Kind)kind;
  val.dtype = toDType(v.dtype());
  val.shape = vec<int64_t>(v.shape());
  if (val.kind == Value::Argument && v.arg() >= kNumStepArgs)
    throw ArtefactError("a program argument is no step argument");
  val.arg = (StepArg)v.arg();
  val.weight = v.weight();
  val.arena = v.arena();
  val.offset = v.offset();
  if (val.kind == Value::Activation && (val.arena < 0 || val.arena > 1 || val.offset < 0))
    throw ArtefactError("activation value without a valid arena slot");
  return val;
}

Instr readInstr(const fb::Instr &i, int numValues) {
  Instr in;
  if (!isValidOpcode((int)i.opcode()))
    throw ArtefactError("instruction with the unknown opcode " + std::to_string((int)i.opcode()) +
                        "; the artefact needs a newer runtime");
  in.opcode = i.opcode();
  const OpcodeInfo &info = opcodeInfo(in.opcode);
  in.op = std::string(info.op_name);
  if (i.params_type() != info.params || (info.params != fb::OpParams::NONE && !i.params()))
    throw ArtefactError("instruction " + in.op + " carries the wrong parameter table");
  in.params = i.params();
  in.inputs = vec<int>(i.inputs());
  in.outputs = vec<int>(i.outputs());
  for (const std::vector<int> *ids : {&in.inputs, &in.outputs})
    for (int id : *ids)
      if (id < 0 || id >= numValues)
        throw ArtefactError("instruction refers to value " + std::to_string(id) + ", outside the program's " +
                            std::to_string(numValues) + " values");
  checkInstr(in);
  return in;
}

Program readProgram(const fb::Program &p) {
  Program out;
  out.output = p.output();
  out.token_row_elems = p.token_row_elems();
  out.request_row_elems = p.request_row_elems();
  if (p.values())
    for (const fb::Value *v : *p.values())
      out.values.push_back(readValue(*v));
  int numValues = (int)out.values.size();
  if (p.instrs())
    for (const fb::Instr *i : *p.instrs())
      out.instrs.push_back(readInstr(*i, numValues));
  if (out.output < 0 || out.output >= numValues)
    throw ArtefactError("program output is not a value of the program");
  return out;
}

CacheGroup readGroup(const fb::CacheGroup &g) {
  CacheGroup grp;
  grp.id = g.id();
  if ((int)g.retention() < 0 || (int)g.retention() > 3)
    throw ArtefactError("cache group has an unknown retention");
  grp.retention = (CacheGroup::Retention)g.retention();
  if ((int)g.kind() < 0 || (int)g.kind() > 2)
    throw ArtefactError("cache group has an unknown kind");
  grp.kind = (CacheGroup::Kind)g.kind();
  grp.tokens = g.tokens();
  grp.layers = vec<int>(g.layers());
  grp.bytes_per_token = g.bytes_per_token();
  grp.bytes_per_unit = g.bytes_per_unit();
  if (grp.bytes_per_token < 0 || grp.bytes_per_token > (1ll << 40) || grp.bytes_per_unit < 0 ||
      grp.bytes_per_unit > (1ll << 40))
    throw ArtefactError("a cache group has implausible sizes");
  // Window, chunk and compression lengths divide positions; a bound keeps block arithmetic in range.
  if (grp.retention != CacheGroup::All && (grp.tokens <= 0 || grp.tokens > (1ll << 40)))
    throw ArtefactError("a windowed cache group has a window of " + std::to_string(grp.tokens) + " tokens");
  return grp;
}

CacheLayer readLayer(const fb::CacheLayer &l, const std::vector<CacheGroup> &groups) {
  CacheLayer layer;
  layer.layer = l.layer();
  layer.group = l.group();
  if (layer.group < 0 || layer.group >= (int)groups.size() || groups[layer.group].kind == CacheGroup::State)
    throw ArtefactError("cache layer refers to an unknown group");
  if (l.rows())
    for (const fb::CacheRow *r : *l.rows()) {
      if (r->elems() <= 0 || r->elems() > (1ll << 31))
        throw ArtefactError("cache layer row '" + r->name()->str() + "' has " + std::to_string(r->elems()) +
                            " elements per token");
      layer.rows.emplace_back(r->name()->str(), r->elems());
    }
  return layer;
}

StateDecl readState(const fb::StateDecl &sd) {
  StateDecl st;
  st.layer = sd.layer();
  st.name = sd.name()->str();
  st.shape = vec<int64_t>(sd.shape());
  int64_t n = 1;
  for (int64_t d : st.shape) {
    if (d <= 0 || d > (1ll << 31))
      throw ArtefactError("a per-request state has a bad shape");
    n *= d;
    if (n > (1ll << 40))
      throw ArtefactError("a per-request state is implausibly large");
  }
  return st;
}

// Block tables are numbered by group from 0, so the groups that have them come first.
void checkGroupOrder(const std::vector<CacheGroup> &groups) {
  auto rank = [](CacheGroup::Kind k) { return k == CacheGroup::Paged ? 0 : k == CacheGroup::Static ? 1 : 2; };
  for (size_t i = 1; i < groups.size(); ++i)
    if (rank(groups[i].kind) < rank(groups[i - 1].kind) || groups[i - 1].kind == CacheGroup::State)
      throw ArtefactError("cache groups are not ordered paged, static, then one state group");
}

// Every state belongs to the state group, whose unit holds exactly all of them.
void checkStateGroup(const CachePlan &plan) {
  const CacheGroup *group = nullptr;
  for (const CacheGroup &g : plan.groups)
    if (g.kind == CacheGroup::State)
      group = &g;
  int64_t bytes = 0;
  for (const StateDecl &s : plan.states) {
    if (!group || std::find(group->layers.begin(), group->layers.end(), s.layer) == group->layers.end())
      throw ArtefactError("the state '" + s.name + "' of layer " + std::to_string(s.layer) + " is in no state group");
    bytes += s.elems() * 4;
  }
  if (group && group->bytes_per_unit != bytes)
    throw ArtefactError("the state group's unit is not the size of its states");
}

CachePlan readCachePlan(const fb::CachePlan &c) {
  CachePlan out;
  out.block_size = c.block_size();
  if (out.block_size <= 0 || out.block_size > (1 << 20))
    throw ArtefactError("cache plan has a block size of " + std::to_string(out.block_size));
  out.kv_dtype = toDType(c.kv_dtype());
  out.length_dependent_above = c.length_dependent_above();
  if (out.length_dependent_above < 0)
    throw ArtefactError("cache plan has a negative length_dependent_above");
  if (c.groups())
    for (const fb::CacheGroup *g : *c.groups()) {
      out.groups.push_back(readGroup(*g));
      if (out.groups.back().id != (int)out.groups.size() - 1)
        throw ArtefactError("cache groups are not numbered in order");
    }
  checkGroupOrder(out.groups);
  if (c.layers())
    for (const fb::CacheLayer *l : *c.layers())
      out.layers.push_back(readLayer(*l, out.groups));
  if (c.states())
    for (const fb::StateDecl *sd : *c.states())
      out.states.push_back(readState(*sd));
  checkStateGroup(out);
  return out;
}

// The rows of the table that embeds the step's tokens, all ranks' together (vocab_size where it
// holds no more).
int64_t inputVocab(const Artefact &a) {
  for (const Instr &in : a.program.instrs) {
    if (in.opcode != fb::Opcode::Embed || in.inputs.size() < 2)
      continue;
    const Value &ids = a.program.values[in.inputs[0]], &table = a.program.values[in.inputs[1]];
    if (ids.kind != Value::Argument || ids.arg != StepArg::Tokens || table.kind != Value::Weight ||
        in.get<fb::EmbedParams>().offset() != 0)
      continue;
    std::vector<int64_t> whole = a.weights[table.weight].wholeShape();
    return whole.size() == 2 ? std::max(a.meta.vocab_size, whole[0]) : a.meta.vocab_size;
  }
  return a.meta.vocab_size;
}

ModelMeta readMeta(const fb::ModelMeta &meta) {
  ModelMeta m;
  m.model_type = str(meta.model_type());
  m.vocab_size = meta.vocab_size();
  m.hidden_size = meta.hidden_size();
  m.num_layers = meta.num_layers();
  m.max_positions = meta.max_positions();
  m.eos_token_ids = vec<int64_t>(meta.eos_token_ids());
  m.bos_token_id = meta.bos_token_id();
  m.checkpoint_dtype = str(meta.checkpoint_dtype());
  m.quantization = str(meta.quantization());
  m.fp8_block_rows = meta.fp8_block_rows();
  m.fp8_block_cols = meta.fp8_block_cols();
  m.injected_token = meta.injected_token();
  if (m.injected_token < -1 || m.injected_token >= std::max<int64_t>(m.vocab_size, 0))
    throw ArtefactError("artefact metadata has an injected token outside the vocabulary");
  auto blockOk = [](int64_t b) { return b > 0 && b <= (1ll << 31); };
  if ((m.quantization == "fp8") != (m.fp8_block_rows != 0 || m.fp8_block_cols != 0) ||
      (m.quantization == "fp8" && !(blockOk(m.fp8_block_rows) && blockOk(m.fp8_block_cols))))
    throw ArtefactError("artefact metadata has a bad fp8 block size");
  if (meta.weight_aliases())
    for (const fb::AliasPair *p : *meta.weight_aliases())
      m.weight_aliases.emplace_back(p->from()->str(), p->to()->str());
  if (m.vocab_size <= 0 || m.max_positions <= 0)
    throw ArtefactError("artefact metadata has a non-positive vocabulary or max positions");
  return m;
}

// The checks that keep the loader's allocations and index arithmetic in range.
void checkWeight(const WeightEntry &e) {
  for (int64_t r : e.regroup)
    if (r <= 0 || r > (1ll << 31))
      throw ArtefactError("weight '" + e.name + "' has a bad regroup");
  if (e.block_diag < 0 || e.block_diag > (1ll << 31))
    throw ArtefactError("weight '" + e.name + "' has a bad block_diag");
  bool scalesOk = e.row_scales.size() % 2 == 0;
  for (size_t i = 0; scalesOk && i < e.row_scales.size(); i += 2)
    scalesOk = e.row_scales[i] >= 1 && e.row_scales[i] <= (double)(1ll << 40) &&
               e.row_scales[i] == std::floor(e.row_scales[i]) && std::isfinite(e.row_scales[i + 1]);
  if (!scalesOk)
    throw ArtefactError("weight '" + e.name + "' has bad row_scales");
  // Weights are allocated from these shapes (random weights without a checkpoint).
  int64_t numel = 1;
  for (int64_t d : e.shape) {
    if (d <= 0 || d > (1ll << 40) || numel > (1ll << 40) / d)
      throw ArtefactError("weight '" + e.name + "' has a bad shape");
    numel *= d;
  }
  if (e.shape.empty() || e.parts.empty())
    throw ArtefactError("weight '" + e.name + "' has no shape or no checkpoint tensors");
  if (e.shard_dim >= 0) {
    bool ok = e.shard_dim < (int)e.shape.size() && e.shard_ranks >= 2 && e.shard_ranks <= limits::kMaxRanks &&
              !e.shard_segments.empty() && e.shard_segments.size() == e.shard_pieces.size();
    int64_t extent = 0;
    for (size_t i = 0; ok && i < e.shard_segments.size(); ++i) {
      int64_t seg = e.shard_segments[i], p = e.shard_pieces[i];
      ok = p >= 1 && e.shard_ranks % p == 0 && seg >= 1 && seg <= (1ll << 40) && seg % p == 0;
      extent += ok ? seg / p : 0;
    }
    if (!ok || extent != e.shape[e.shard_dim])
      throw ArtefactError("weight '" + e.name + "' has a bad shard");
  }
  for (const auto &names : e.parts)
    if (names.empty() || (e.mxfp4 && names.size() != 2))
      throw ArtefactError("weight '" + e.name + "' has an empty part, or an MXFP4 part without blocks and scales");
}

WeightEntry readWeight(const fb::WeightEntry &w) {
  WeightEntry e;
  e.name = w.name()->str();
  e.dtype = toDType(w.dtype());
  e.shape = vec<int64_t>(w.shape());
  for (const fb::WeightPart *part : *w.parts()) {
    std::vector<std::string> names;
    for (const flatbuffers::String *s : *part->names())
      names.push_back(s->str());
    e.parts.push_back(std::move(names));
  }
  e.stack = w.combine() == fb::Combine::Stack;
  e.transpose = w.transpose();
  if ((int)w.dequant() < 0 || w.dequant() > fb::Dequant::MAX)
    throw ArtefactError("weight '" + e.name + "' has an unknown dequantisation");
  e.mxfp4 = w.dequant() == fb::Dequant::Mxfp4;
  e.norm_scale = w.norm_scale();
  e.flatten = w.flatten();
  e.regroup = vec<int64_t>(w.regroup());
  e.block_diag = w.block_diag();
  e.row_scales = vec<double>(w.row_scales());
  if (const fb::Shard *sh = w.shard()) {
    e.shard_dim = sh->dim() < 0 ? (int)e.shape.size() : sh->dim(); // a negative dim fails the check
    e.shard_ranks = sh->ranks();
    e.shard_segments = vec<int64_t>(sh->segments());
    e.shard_pieces = vec<int64_t>(sh->pieces());
  }
  checkWeight(e);
  return e;
}

Launch readLaunch(const fb::Launch &l, const KernelBundle &kb, const Program &program) {
  Launch launch;
  launch.instr = l.instr();
  launch.kernel = l.kernel();
  if (launch.kernel >= (int)kb.names.size() || launch.kernel < -1)
    throw ArtefactError("a launch refers to an unknown kernel");
  if (launch.instr < 0 || launch.instr >= (int)program.instrs.size())
    throw ArtefactError("a launch refers to an unknown instruction");
  if (l.grid()) {
    if (l.grid()->size() > 3)
      throw ArtefactError("a launch has more than three grid dimensions");
    for (uint32_t d = 0; d < l.grid()->size(); ++d) {
      const fb::GridDim *g = l.grid()->Get(d);
      if (g->var() < -1 || g->var() >= kNumRuntimeVars)
        throw ArtefactError("a launch grid uses an unknown per-step value");
      launch.grid[d] = {g->var() < 0 ? std::nullopt : std::optional<RuntimeVar>((RuntimeVar)g->var()), g->mul(),
                        g->div(), g->add()};
      if (launch.grid[d].div <= 0 || launch.grid[d].mul < 0 || launch.grid[d].add < 0)
        throw ArtefactError("a launch has a bad grid dimension");
    }
  }
  launch.block = l.block();
  launch.smem = l.smem();
  if (launch.kernel >= 0 && (launch.block <= 0 || launch.block > 1024 || launch.smem < 0))
    throw ArtefactError("a launch has a bad block size or shared memory size");
  int numValues = (int)program.values.size();
  if (l.args())
    for (const fb::KernelArg *arg : *l.args()) {
      KernelArg ka;
      if ((int)arg->kind() < 0 || (int)arg->kind() > 5)
        throw ArtefactError("a launch argument has an unknown kind");
      ka.kind = (KernelArg::Kind)arg->kind();
      ka.index = arg->index();
      ka.name = str(arg->name());
      ka.i = arg->i();
      ka.f = arg->f();
      // Value -1 is a null pointer (an absent optional operand).
      if (ka.kind == KernelArg::Value && (ka.index < -1 || ka.index >= numValues))
        throw ArtefactError("a launch argument refers to an unknown value");
      if (ka.kind == KernelArg::Runtime && (ka.index < 0 || ka.index >= kNumRuntimeVars))
        throw ArtefactError("a launch uses an unknown per-step value");
      launch.args.push_back(std::move(ka));
    }
  if (const fb::Gemm *g = l.gemm()) {
    GemmDesc gd{g->x(), g->w(), g->bias(), g->out()};
    for (int v : {gd.x, gd.w, gd.out})
      if (v < 0 || v >= numValues)
        throw ArtefactError("a GEMM refers to an unknown value");
    if (gd.bias >= numValues || gd.bias < -1)
      throw ArtefactError("a GEMM refers to an unknown bias");
    launch.gemm = gd;
  }
  if (const fb::Gather *g = l.gather()) {
    if (g->x() < 0 || g->x() >= numValues)
      throw ArtefactError("a gather refers to an unknown value");
    launch.gather = GatherDesc{g->x(), g->workspace()};
  }
  if (launch.kernel < 0 && launch.gemm.has_value() == launch.gather.has_value())
    throw ArtefactError("a launch is neither a kernel, a GEMM nor a gather");
  if (launch.kernel >= 0 && (launch.gemm || launch.gather))
    throw ArtefactError("a kernel launch also describes a GEMM or a gather");
  return launch;
}

KernelBundle readKernels(const fb::KernelBundle &k, const Program &program) {
  KernelBundle kb;
  kb.source = str(k.source());
  kb.ptx = str(k.ptx());
  kb.source_hash = str(k.source_hash());
  if (k.names())
    for (const flatbuffers::String *s : *k.names())
      kb.names.push_back(s->str());
  kb.ptx_arch = str(k.ptx_arch());
  kb.argmax_kernel = k.argmax_kernel();
  if (kb.argmax_kernel < -1 || kb.argmax_kernel >= (int)kb.names.size())
    throw ArtefactError("the argmax kernel is not one of the artefact's kernels");
  if (k.launches())
    for (const fb::Launch *l : *k.launches())
      kb.launches.push_back(readLaunch(*l, kb, program));
  if (k.workspaces())
    for (const fb::Workspace *w : *k.workspaces()) {
      if (w->bytes_per_token() < 0 || w->bytes_fixed() < 0)
        throw ArtefactError("a workspace has a negative size");
      kb.workspaces.push_back({str(w->name()), w->bytes_per_token(), w->bytes_fixed()});
    }
  if (k.value_dtypes())
    for (auto d : *k.value_dtypes())
      kb.value_dtypes.push_back(toDType((fb::DType)d));
  if (k.cubins())
    for (const fb::Cubin *c : *k.cubins()) {
      KernelImage img;
      img.arch = c->arch()->str();
      img.image = vec<uint8_t>(c->image());
      img.registers = vec<int>(c->registers());
      img.spills = vec<int>(c->spills());
      img.shared_bytes = vec<int>(c->shared_bytes());
      kb.cubins.push_back(std::move(img));
    }
  return kb;
}

// The format version, read before the whole buffer is verified: an artefact of another version
// may not verify against this schema, and it deserves "recompile" rather than "corrupt".
uint32_t formatVersion(const uint8_t *data, size_t size) {
  flatbuffers::Verifier verifier(data, size);
  flatbuffers::uoffset_t root = verifier.VerifyOffset(0);
  const auto *model = reinterpret_cast<const flatbuffers::Table *>(data + root);
  if (!root || !model->VerifyTableStart(verifier) ||
      !model->VerifyField<uint32_t>(verifier, fb::Model::VT_FORMAT_VERSION, 4))
    throw ArtefactError("corrupt artefact: the FlatBuffers verifier rejected it");
  return model->GetField<uint32_t>(fb::Model::VT_FORMAT_VERSION, 0);
}

void checkVersion(uint32_t version) {
  if (version != kFormatVersion)
    throw ArtefactError("artefact format version " + std::to_string(version) + " is not the runtime's version " +
                        std::to_string(kFormatVersion) + "; recompile it with this cbc");
}

// The FlatBuffer's length: the bytes before the integrity trailer, which is checked first so
// that no changed byte reaches the parser. Bytes without a trailer are an artefact of a
// version before the trailer (the version error says "recompile") or a damaged one.
size_t checkedLength(const uint8_t *data, size_t size, bool verifyChecksum) {
  if (!hasTrailer(data, size)) {
    checkVersion(formatVersion(data, size));
    throw ArtefactError("corrupt artefact: its checksum trailer is missing (truncated, or not written by cbc compile)");
  }
  if (verifyChecksum && !checksumMatches(data, size))
    throw ArtefactError("corrupt artefact: checksum mismatch (the file was changed after cbc compile wrote it)");
  return size - kTrailerBytes;
}

// The bytes, owned and aligned for the tables read in place, after the header checks.
std::shared_ptr<const std::vector<uint8_t>> verifiedCopy(const uint8_t *data, size_t size, bool verifyChecksum) {
  if (size < 8 || !flatbuffers::BufferHasIdentifier(data, fb::ModelIdentifier()))
    throw ArtefactError("not a cbc artefact (missing the CBC1 file identifier)");
  size_t length = checkedLength(data, size, verifyChecksum);
  auto bytes = std::make_shared<std::vector<uint8_t>>(data, data + length);
  checkVersion(formatVersion(bytes->data(), bytes->size()));
  flatbuffers::Verifier verifier(bytes->data(), bytes->size());
  if (!fb::VerifyModelBuffer(verifier))
    throw ArtefactError("corrupt artefact: the FlatBuffers verifier rejected it");
  return bytes;
}

} // namespace

Artefact Artefact::fromBytes(const uint8_t *data, size_t size, bool verifyChecksum) {
  Artefact a;
  a.bytes = verifiedCopy(data, size, verifyChecksum);
  const fb::Model *m = fb::GetModel(a.bytes->data());
  a.format_version = m->format_version();
  a.compiler = str(m->compiler());
  a.config_json = str(m->config_json());
  if (m->config_keys())
    for (const flatbuffers::String *k : *m->config_keys())
      a.config_keys.push_back(str(k));
  a.ir = str(m->ir());
  a.ranks = m->ranks();
  if (a.ranks < 1 || a.ranks > limits::kMaxRanks)
    throw ArtefactError("artefact names " + std::to_string(a.ranks) + " tensor-parallel ranks (1 to " +
                        std::to_string(limits::kMaxRanks) + ")");
  a.meta = readMeta(*m->meta());
  a.program = readProgram(*m->program());
  a.cache_plan = readCachePlan(*m->cache_plan());
  for (const fb::WeightEntry *w : *m->weights())
    a.weights.push_back(readWeight(*w));
  for (const Value &v : a.program.values)
    if (v.kind == Value::Weight) {
      if (v.weight < 0 || v.weight >= (int)a.weights.size())
        throw ArtefactError("program value refers to an unknown weight");
      if (v.shape != a.weights[v.weight].shape)
        throw ArtefactError("program value and weight '" + a.weights[v.weight].name + "' disagree on its shape");
    }
  checkProgramAgainstPlan(a);
  a.meta.input_vocab = inputVocab(a);
  if (const fb::KernelBundle *k = m->kernels()) {
    a.kernels = readKernels(*k, a.program);
    checkKernels(a);
  }
  return a;
}

Artefact Artefact::load(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw ArtefactError("cannot open artefact '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string bytes = ss.str();
  try {
    return fromBytes(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
  } catch (const ArtefactError &e) {
    throw ArtefactError(path + ": " + e.what());
  }
}

std::vector<int64_t> WeightEntry::wholeShape() const {
  std::vector<int64_t> whole = shape;
  if (shard_dim >= 0) {
    whole[shard_dim] = 0;
    for (int64_t s : shard_segments)
      whole[shard_dim] += s;
  }
  return whole;
}

const Value *Program::readArg(StepArg a) const {
  for (const Instr &in : instrs)
    for (int v : in.inputs)
      if (v >= 0 && v < (int)values.size() && values[v].kind == Value::Argument && values[v].arg == a)
        return &values[v];
  return nullptr;
}

} // namespace cbc::rt
