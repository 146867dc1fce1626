// The loader's structural checks (runtime/artefact_check.cpp), with the integrity hash out of
// the way: each test patches one field of a committed artefact in place, reseals it (so only
// the structure can refuse it) and expects an ArtefactError from Artefact::fromBytes that names
// what is wrong, rather than a backend's failure, a crash or a silently different model.
#include "runtime/artefact_check.h"
#include "runtime/schema/integrity.h"
#include "runtime/schema/kernel_abi.h"
#include "runtime/schema/limits.h"
#include "runtime/schema/model_generated.h"
#include "runtime/schema/opcodes.h"
#include "test/support/test_support.h"

#include <flatbuffers/minireflect.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <set>

namespace cbc::test {
namespace {

const char *const kFamilies[] = {"llama",     "llama_fp8",   "olmo_hybrid",  "gpt_oss",
                                 "gpt_oss_mxfp4", "qwen3_moe", "deepseek_v3", "longcat_flash"};

// The loader's message for resealed bytes, or "" when it accepts them.
std::string errorOf(std::vector<uint8_t> b) {
  resealArtefact(b);
  try {
    rt::Artefact::fromBytes(b.data(), b.size());
  } catch (const rt::ArtefactError &e) {
    // verifyChecksum false (a fuzzer's view) must refuse it for the same reason.
    std::string unchecked;
    try {
      rt::Artefact::fromBytes(b.data(), b.size(), /*verifyChecksum=*/false);
    } catch (const rt::ArtefactError &e2) {
      unchecked = e2.what();
    }
    EXPECT_EQ(unchecked, e.what());
    return e.what();
  }
  return "";
}

fb::Instr *instrAt(std::vector<uint8_t> &b, size_t i) {
  return fb::GetMutableModel(b.data())->mutable_program()->mutable_instrs()->GetMutableObject((flatbuffers::uoffset_t)i);
}

// Every enum field present in a parameter table (nested tables and structs included).
struct EnumSlots : flatbuffers::IterationVisitor {
  struct Slot {
    uint8_t *at;
    std::string name;
  };
  std::vector<Slot> slots;
  void Field(size_t, size_t, flatbuffers::ElementaryType type, bool repeating, const flatbuffers::TypeTable *ref,
             const char *name, const uint8_t *val) override {
    if (val && !repeating && ref && ref->st == flatbuffers::ST_ENUM && type == flatbuffers::ET_CHAR)
      slots.push_back({const_cast<uint8_t *>(val), name});
  }
};

TEST(ArtefactChecks, CommittedArtefactsPass) {
  for (const char *family : kFamilies)
    EXPECT_EQ(errorOf(committedArtefactBytes(family)), "") << family;
}

// An activation, GLU layout, RoPE pairing, route score, retention... outside its enum: the CPU
// backend once ran an unknown activation as the identity.
TEST(ArtefactChecks, UnknownEnumsInParameterTablesAreRefused) {
  int tried = 0;
  std::set<std::string> fields;
  for (const char *family : kFamilies) {
    const std::vector<uint8_t> &bytes = committedArtefactBytes(family);
    const auto *instrs = fb::GetModel(bytes.data())->program()->instrs();
    for (size_t i = 0; i < instrs->size(); ++i) {
      const fb::Instr *in = instrs->Get((flatbuffers::uoffset_t)i);
      if (in->params_type() == fb::OpParams::NONE)
        continue;
      EnumSlots found;
      flatbuffers::IterateObject(static_cast<const uint8_t *>(in->params()),
                                 fb::OpParamsTypeTable()->type_refs[(int)in->params_type() - 1](), &found);
      for (const EnumSlots::Slot &s : found.slots) {
        std::vector<uint8_t> b = bytes;
        b[s.at - bytes.data()] = 77;
        std::string err = errorOf(b);
        std::string op(opcodeInfo(in->opcode()).op_name);
        EXPECT_NE(err.find("instruction " + op + ": parameter field '" + s.name + "' has the unknown value 77"),
                  std::string::npos)
            << family << " instruction " << i << " " << s.name << ": '" << err << "'";
        ++tried;
        fields.insert(s.name);
      }
    }
  }
  EXPECT_GT(tried, 20);
  for (const char *name : {"act", "layout", "pairing", "retention", "score"})
    EXPECT_TRUE(fields.count(name)) << "no '" << name << "' enum was tried";
}

// In a copy `c` of `from`, the vtable entry of a field of `table` (in `from`) zeroed: the field
// reads as absent.
void dropField(std::vector<uint8_t> &c, const std::vector<uint8_t> &from, const void *table,
               flatbuffers::voffset_t field) {
  const uint8_t *t = static_cast<const uint8_t *>(table);
  const uint8_t *vtable = t - flatbuffers::ReadScalar<flatbuffers::soffset_t>(t);
  flatbuffers::WriteScalar<flatbuffers::voffset_t>(c.data() + (vtable - from.data()) + field, 0);
}

// `cbc dump --graph` and the CPU backend read a cache op's site and a RoPE's frequencies without
// checking for null: the schema declares them `required`, so the FlatBuffers verifier refuses a
// table without them.
TEST(ArtefactChecks, MissingParameterFieldsAreRefused) {
  std::vector<uint8_t> b = committedArtefactBytes("llama");
  const auto *instrs = fb::GetModel(b.data())->program()->instrs();
  int dropped = 0;
  for (size_t i = 0; i < instrs->size(); ++i) {
    const fb::Instr *in = instrs->Get((flatbuffers::uoffset_t)i);
    std::vector<uint8_t> c = b;
    if (in->opcode() == fb::Opcode::KvAttention)
      dropField(c, b, in->params(), fb::KvAttentionParams::VT_SITE);
    else if (in->opcode() == fb::Opcode::KvRopeAppend)
      dropField(c, b, in->params_as_KvRopeAppendParams()->rope(), fb::RopeParams::VT_INV_FREQ);
    else
      continue;
    std::string err = errorOf(c);
    EXPECT_NE(err.find("corrupt artefact: the FlatBuffers verifier rejected it"), std::string::npos) << err;
    ++dropped;
  }
  EXPECT_GE(dropped, 2);
}

TEST(ArtefactChecks, OperandCountsAreChecked) {
  std::vector<uint8_t> b = committedArtefactBytes("llama");
  fb::Instr *embed = instrAt(b, 0);
  ASSERT_EQ(embed->opcode(), fb::Opcode::Embed);
  ASSERT_EQ(embed->inputs()->size(), 2u);
  // The vector's length, one word before its data.
  uint8_t *length = reinterpret_cast<uint8_t *>(embed->mutable_inputs());
  flatbuffers::WriteScalar<flatbuffers::uoffset_t>(length, 1);
  std::string err = errorOf(b);
  EXPECT_NE(err.find("instruction cbc.math.embed has 1 inputs and 1 outputs, which the op does not take"),
            std::string::npos)
      << err;
}

TEST(ArtefactChecks, SizesBeyondTheLimitsAreRefused) {
  std::vector<uint8_t> b = committedArtefactBytes("llama");
  const auto *instrs = fb::GetModel(b.data())->program()->instrs();
  bool patched = false;
  for (size_t i = 0; i < instrs->size() && !patched; ++i)
    if (instrs->Get((flatbuffers::uoffset_t)i)->opcode() == fb::Opcode::KvAttention) {
      std::vector<uint8_t> c = b;
      auto *p = static_cast<fb::KvAttentionParams *>(instrAt(c, i)->mutable_params());
      ASSERT_TRUE(p->mutate_num_heads(limits::kMaxHeads + 1));
      std::string err = errorOf(c);
      EXPECT_NE(err.find("parameter field 'num_heads' has 16385 heads, outside [1, 16384]"), std::string::npos) << err;
      c = b;
      p = static_cast<fb::KvAttentionParams *>(instrAt(c, i)->mutable_params());
      ASSERT_TRUE(p->mutate_head_dim(-16));
      err = errorOf(c);
      EXPECT_NE(err.find("parameter field 'head_dim' is -16"), std::string::npos) << err;
      patched = true;
    }
  EXPECT_TRUE(patched);
  std::vector<uint8_t> c = b;
  ASSERT_TRUE(fb::GetMutableModel(c.data())->mutable_meta()->mutate_vocab_size(limits::kMaxVocab + 1));
  EXPECT_NE(errorOf(c).find("beyond cbc's limits"), std::string::npos) << errorOf(c);
  c = b;
  ASSERT_TRUE(fb::GetMutableModel(c.data())->mutable_cache_plan()->mutate_block_size(limits::kMaxBlockSize * 2));
  EXPECT_NE(errorOf(c).find("block size of 2048"), std::string::npos) << errorOf(c);
}

TEST(ArtefactChecks, NaNAndBadFrequenciesAreRefused) {
  std::vector<uint8_t> b = committedArtefactBytes("llama");
  const auto *instrs = fb::GetModel(b.data())->program()->instrs();
  for (size_t i = 0; i < instrs->size(); ++i)
    if (instrs->Get((flatbuffers::uoffset_t)i)->opcode() == fb::Opcode::KvRopeAppend) {
      auto *rope = static_cast<fb::KvRopeAppendParams *>(instrAt(b, i)->mutable_params())->mutable_rope();
      float original = rope->inv_freq()->Get(1);
      rope->mutable_inv_freq()->Mutate(1, NAN);
      std::string err = errorOf(b);
      EXPECT_NE(err.find("parameter field 'inv_freq' is NaN"), std::string::npos) << err;
      rope->mutable_inv_freq()->Mutate(1, INFINITY);
      err = errorOf(b);
      EXPECT_NE(err.find("parameter field 'inv_freq' has an infinite element"), std::string::npos) << err;
      // A zero frequency leaves its pair unrotated (proportional RoPE) and a negative one turns
      // the other way (NanoChat): both load.
      rope->mutable_inv_freq()->Mutate(1, 0.0f);
      EXPECT_EQ(errorOf(b), "");
      rope->mutable_inv_freq()->Mutate(1, -original);
      EXPECT_EQ(errorOf(b), "");
      rope->mutable_inv_freq()->Mutate(1, original);
      EXPECT_EQ(errorOf(b), "");
      return;
    }
  ADD_FAILURE() << "no cbc.kv.rope_append";
}

// A cache op's layer or group that the cache plan lacks; a state op's state.
TEST(ArtefactChecks, CacheSitesAndStatesMustBeThePlans) {
  std::vector<uint8_t> b = committedArtefactBytes("olmo_hybrid");
  const auto *instrs = fb::GetModel(b.data())->program()->instrs();
  int sites = 0;
  for (size_t i = 0; i < instrs->size(); ++i)
    if (instrs->Get((flatbuffers::uoffset_t)i)->opcode() == fb::Opcode::KvAppend) {
      for (auto [layer, group] : {std::pair{40, 0}, std::pair{0, 3}}) {
        std::vector<uint8_t> c = b;
        auto *site = static_cast<fb::KvAppendParams *>(instrAt(c, i)->mutable_params())->mutable_site();
        site->mutate_layer(layer);
        site->mutate_group(group);
        std::string err = errorOf(c);
        EXPECT_NE(err.find("instruction cbc.kv.append uses the cache of layer " + std::to_string(layer) +
                           " in group " + std::to_string(group) + ", which the cache plan lacks"),
                  std::string::npos)
            << err;
      }
      ++sites;
    }
  EXPECT_GT(sites, 0);

  const std::vector<uint8_t> &h = b;
  const auto *hinstrs = fb::GetModel(h.data())->program()->instrs();
  int states = 0;
  for (size_t i = 0; i < hinstrs->size(); ++i) {
    const fb::Instr *in = hinstrs->Get((flatbuffers::uoffset_t)i);
    if (in->opcode() != fb::Opcode::GatedDelta && in->opcode() != fb::Opcode::StateConv1d)
      continue;
    const flatbuffers::String *name = in->opcode() == fb::Opcode::GatedDelta
                                          ? in->params_as_GatedDeltaParams()->state()->name()
                                          : in->params_as_Conv1dParams()->state()->name();
    ASSERT_GT(name->size(), 0u);
    std::vector<uint8_t> c = h;
    c[reinterpret_cast<const uint8_t *>(name->c_str()) - h.data()] = '#';
    std::string err = errorOf(c);
    EXPECT_NE(err.find("uses the state '#"), std::string::npos) << err;
    EXPECT_NE(err.find("which the cache plan lacks"), std::string::npos) << err;
    ++states;
  }
  EXPECT_GT(states, 0);
}

TEST(ArtefactChecks, ValueShapesAreChecked) {
  std::vector<uint8_t> b = committedArtefactBytes("llama");
  auto *values = fb::GetMutableModel(b.data())->mutable_program()->mutable_values();
  for (flatbuffers::uoffset_t i = 0; i < values->size(); ++i) {
    fb::Value *v = values->GetMutableObject(i);
    if (v->kind() != fb::ValueKind::Activation || v->shape()->size() != 2)
      continue;
    // A width of 0 is allowed (a latent layer without RoPE has an empty roped part); the ops
    // reading such a value check its width against their own shape rules.
    for (int64_t bad : {int64_t(-1), int64_t(-5), limits::kMaxTensorElems + 1}) {
      std::vector<uint8_t> c = b;
      fb::GetMutableModel(c.data())->mutable_program()->mutable_values()->GetMutableObject(i)->mutable_shape()->Mutate(
          1, bad);
      std::string err = errorOf(c);
      EXPECT_NE(err.find("program value %" + std::to_string(i) + " has a bad shape"), std::string::npos)
          << bad << ": " << err;
    }
    return;
  }
  ADD_FAILURE() << "no activation";
}

TEST(ArtefactChecks, CachePlanLayersAndStatesAreUnique) {
  std::vector<uint8_t> l = committedArtefactBytes("llama");
  const fb::CachePlan *lplan = fb::GetModel(l.data())->cache_plan();
  ASSERT_GE(lplan->layers()->size(), 2u);
  ASSERT_TRUE(fb::GetMutableModel(l.data())->mutable_cache_plan()->mutable_layers()->GetMutableObject(1)->mutate_layer(
      lplan->layers()->Get(0)->layer()));
  EXPECT_NE(errorOf(l).find("cache plan lists layer 0 twice"), std::string::npos) << errorOf(l);

  std::vector<uint8_t> b = committedArtefactBytes("olmo_hybrid");
  const fb::CachePlan *plan = fb::GetModel(b.data())->cache_plan();
  ASSERT_GE(plan->states()->size(), 2u);
  std::vector<uint8_t> c = b;
  fb::CachePlan *cp = fb::GetMutableModel(c.data())->mutable_cache_plan();
  const fb::StateDecl *first = plan->states()->Get(0);
  for (flatbuffers::uoffset_t i = 1; i < plan->states()->size(); ++i)
    if (plan->states()->Get(i)->name()->str() == first->name()->str()) {
      ASSERT_TRUE(cp->mutable_states()->GetMutableObject(i)->mutate_layer(first->layer()));
      EXPECT_NE(errorOf(c).find("lists the state '" + first->name()->str() + "' of layer " +
                                std::to_string(first->layer()) + " twice"),
                std::string::npos)
          << errorOf(c);
      return;
    }
  ADD_FAILURE() << "no two states share a name";
}

// The coordinator numbers block tables by group from 0 and keeps one state group whose unit is a
// snapshot of every state: a plan that breaks either is refused.
TEST(ArtefactChecks, CacheGroupsHaveTheirKindsOrderAndUnitSize) {
  std::vector<uint8_t> b = committedArtefactBytes("olmo_hybrid");
  const fb::CachePlan *plan = fb::GetModel(b.data())->cache_plan();
  ASSERT_EQ(plan->groups()->size(), 2u);
  ASSERT_EQ(plan->groups()->Get(0)->kind(), fb::CacheKind::Paged);
  ASSERT_EQ(plan->groups()->Get(1)->kind(), fb::CacheKind::State);
  EXPECT_EQ(errorOf(b), "");
  auto groupOf = [](std::vector<uint8_t> &c, int i) {
    return fb::GetMutableModel(c.data())->mutable_cache_plan()->mutable_groups()->GetMutableObject(i);
  };

  std::vector<uint8_t> c = b;
  ASSERT_TRUE(groupOf(c, 0)->mutate_kind(fb::CacheKind::State));
  EXPECT_NE(errorOf(c).find("cache groups are not ordered paged, static, then one state group"), std::string::npos)
      << errorOf(c);
  c = b;
  ASSERT_TRUE(groupOf(c, 1)->mutate_kind(fb::CacheKind::Paged));
  EXPECT_NE(errorOf(c).find("is in no state group"), std::string::npos) << errorOf(c);
  c = b;
  ASSERT_TRUE(groupOf(c, 1)->mutate_kind((fb::CacheKind)9));
  EXPECT_FALSE(errorOf(c).empty());
  c = b;
  ASSERT_TRUE(groupOf(c, 1)->mutate_bytes_per_unit(plan->groups()->Get(1)->bytes_per_unit() - 4));
  EXPECT_NE(errorOf(c).find("the state group's unit is not the size of its states"), std::string::npos)
      << errorOf(c);
  c = b;
  groupOf(c, 1)->mutable_layers()->Mutate(0, 77);
  EXPECT_NE(errorOf(c).find("is in no state group"), std::string::npos) << errorOf(c);
  // An attention layer's rows in the state group.
  c = b;
  ASSERT_TRUE(fb::GetMutableModel(c.data())->mutable_cache_plan()->mutable_layers()->GetMutableObject(0)->mutate_group(1));
  EXPECT_NE(errorOf(c).find("cache layer refers to an unknown group"), std::string::npos) << errorOf(c);
}

TEST(ArtefactChecks, ArenaSlotsAreChecked) {
  std::vector<uint8_t> b = committedArtefactBytes("llama");
  fb::Program *p = fb::GetMutableModel(b.data())->mutable_program();
  int64_t width = p->token_row_elems();
  ASSERT_TRUE(p->mutate_token_row_elems(width - 1)); // the widest slot no longer fits
  EXPECT_NE(errorOf(b).find("does not fit its arena slot"), std::string::npos) << errorOf(b);
  ASSERT_TRUE(p->mutate_token_row_elems(-1));
  EXPECT_NE(errorOf(b).find("the program's arena rows are out of range"), std::string::npos) << errorOf(b);
}

// The CUDA backend once found these only at construction or in the middle of a step. The
// committed artefacts carry no kernels: a bundle is attached to a loaded one, and the loader's
// check of it is called as Artefact::fromBytes calls it.
TEST(ArtefactChecks, KernelBundlesAreChecked) {
  rt::Artefact a = committedArtefact("olmo_hybrid");
  ASSERT_FALSE(a.cache_plan.states.empty());
  rt::KernelBundle k;
  k.names = {"kernel"};
  k.value_dtypes.assign(a.program.values.size(), rt::DType::F32);
  k.workspaces.push_back({"scratch", 16, 0});
  rt::Launch l;
  l.instr = 0;
  l.kernel = 0;
  rt::KernelArg value, cache, state, workspace;
  value.kind = rt::KernelArg::Value;
  cache.kind = rt::KernelArg::Cache;
  cache.index = a.cache_plan.layers[0].layer;
  state.kind = rt::KernelArg::Cache;
  state.index = a.cache_plan.states[0].layer;
  state.name = a.cache_plan.states[0].name;
  workspace.kind = rt::KernelArg::Workspace;
  l.args = {value, cache, state, workspace};
  k.launches.push_back(l);
  auto errorWith = [&](const std::function<void(rt::KernelBundle &)> &change) -> std::string {
    rt::Artefact c = a;
    c.kernels = k;
    change(*c.kernels);
    try {
      rt::checkKernels(c);
    } catch (const rt::ArtefactError &e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(errorWith([](rt::KernelBundle &) {}), "");
  EXPECT_NE(errorWith([](rt::KernelBundle &b) { b.value_dtypes.pop_back(); }).find("does not describe every program value"),
            std::string::npos);
  EXPECT_NE(errorWith([](rt::KernelBundle &b) { b.launches[0].args[3].index = 1; }).find("unknown workspace"),
            std::string::npos);
  EXPECT_NE(errorWith([](rt::KernelBundle &b) { b.launches[0].args[1].index = 99; })
                .find("a launch uses the cache or a state of layer 99, which the cache plan lacks"),
            std::string::npos);
  EXPECT_NE(errorWith([](rt::KernelBundle &b) { b.launches[0].args[2].name += "x"; }).find("which the cache plan lacks"),
            std::string::npos);
  EXPECT_NE(errorWith([](rt::KernelBundle &b) {
              b.launches[0].args.assign(kMaxPtrArgs + 1, b.launches[0].args[0]);
            }).find("too many arguments"),
            std::string::npos);
  EXPECT_NE(errorWith([](rt::KernelBundle &b) { b.workspaces[0].bytes_per_token = int64_t(1) << 50; })
                .find("larger than cbc's limits"),
            std::string::npos);
}

} // namespace
} // namespace cbc::test
