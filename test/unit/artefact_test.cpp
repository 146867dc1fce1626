// The artefact loader never crashes on corrupt input, and no changed byte goes unnoticed: every
// byte flip of a real compiled artefact (the committed ones under test/artefacts) is refused by
// the integrity trailer's hash. Past the hash (verifyChecksum false, as a fuzzer calls it),
// truncations, random flips and field mutations are either rejected with an ArtefactError or
// make engine creation or the first steps throw. A crash (signal) is a failure; a handler names
// the case that caused it.
#include "runtime/schema/integrity.h"
#include "runtime/schema/model_generated.h"
#include "runtime/schema/opcodes.h"
#include "test/support/test_support.h"

#include <flatbuffers/minireflect.h>
#include <gtest/gtest.h>

#include <csignal>
#include <cstring>
#include <random>
#include <unistd.h>

namespace cbc::test {
namespace {

// The case being tried, written out if a signal arrives.
char gCase[256] = "";

extern "C" void onFatalSignal(int sig) {
  const char prefix[] = "\nartefact_test: fatal signal while trying: ";
  ssize_t ignored = ::write(2, prefix, sizeof prefix - 1);
  ignored = ::write(2, gCase, strnlen(gCase, sizeof gCase));
  ignored = ::write(2, "\n", 1);
  (void)ignored;
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

class CrashReporter {
public:
  CrashReporter() {
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT})
      old_[sig] = std::signal(sig, onFatalSignal);
  }
  ~CrashReporter() {
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT})
      std::signal(sig, old_[sig]);
  }

private:
  void (*old_[32])(int) = {};
};

struct Tally {
  int rejected = 0, engineError = 0, ran = 0;
};

// A CPU engine with random weights and tiny limits runs `prompts` for a few steps. Throws what
// the engine throws.
void runTinyEngine(rt::Artefact &&a, const std::vector<std::vector<int32_t>> &prompts) {
  rt::EngineOptions o;
  o.backend = "cpu";
  o.threads = 1;
  o.max_batch_tokens = 8;
  o.max_requests = 2;
  o.cache_memory_bytes = 1 << 20;
  auto e = rt::Engine::create(std::move(a), {"", 1}, o);
  rt::SamplingParams p;
  p.max_new_tokens = 2;
  p.ignore_eos = true;
  for (const auto &prompt : prompts)
    e->add_request(prompt, p);
  for (int i = 0; i < 16 && !e->idle(); ++i)
    e->step();
  e->take_finished();
}

// Loads `bytes`; on success builds a CPU engine with random weights and tiny limits and runs
// one small request. Anything but ArtefactError from the loader, or a non-std exception
// from the engine, is a failure.
void tryBytes(const std::vector<uint8_t> &bytes, const std::string &what, Tally &tally, bool verifyChecksum) {
  std::snprintf(gCase, sizeof gCase, "%s", what.c_str());
  rt::Artefact a;
  try {
    a = rt::Artefact::fromBytes(bytes.data(), bytes.size(), verifyChecksum);
  } catch (const rt::ArtefactError &) {
    tally.rejected++;
    return;
  } catch (const std::exception &e) {
    ADD_FAILURE() << what << ": the loader threw something else than ArtefactError: " << e.what();
    return;
  } catch (...) {
    ADD_FAILURE() << what << ": the loader threw a non-std exception";
    return;
  }
  try {
    runTinyEngine(std::move(a), {{1, 2, 3}});
    tally.ran++;
  } catch (const std::exception &) {
    tally.engineError++;
  } catch (...) {
    ADD_FAILURE() << what << ": the engine threw a non-std exception";
  }
}

class ArtefactFuzz : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override { bytes_ = committedArtefactBytes(GetParam()); }
  std::vector<uint8_t> bytes_;
  CrashReporter reporter_;
};

TEST_P(ArtefactFuzz, IntactArtefactLoadsAndRuns) {
  Tally t;
  tryBytes(bytes_, "intact", t, true);
  EXPECT_EQ(t.ran, 1) << "the fuzz baseline must work";
}

TEST_P(ArtefactFuzz, TruncationsAreRejected) {
  std::vector<size_t> cuts;
  for (size_t c = 0; c <= 16; ++c)
    cuts.push_back(c);
  for (size_t c = 17; c < bytes_.size(); c += 97)
    cuts.push_back(c);
  for (size_t c = 1; c <= 16; ++c)
    cuts.push_back(bytes_.size() - c);
  Tally t;
  for (size_t c : cuts) {
    std::vector<uint8_t> cut(bytes_.begin(), bytes_.begin() + c);
    tryBytes(cut, GetParam() + " cut at " + std::to_string(c), t, false);
  }
  // FlatBuffers offsets point forward to the end of the buffer: no proper prefix is valid.
  EXPECT_EQ(t.rejected, (int)cuts.size());
  RecordProperty("cuts", std::to_string(cuts.size()));
}

// A user's 300 random flips of an artefact once changed the generated tokens silently in 6 to 10
// cases (a RoPE frequency became -59.7). Now every byte, flipped in one bit (bit i % 8 of byte
// i, so every bit position is tried), is refused by the loader, naming what it found.
TEST_P(ArtefactFuzz, EveryByteFlipIsRejected) {
  std::vector<uint8_t> buf = bytes_;
  int checksum = 0, other = 0;
  for (size_t i = 0; i < buf.size(); ++i) {
    uint8_t mask = (uint8_t)(1u << (i % 8));
    buf[i] ^= mask;
    try {
      rt::Artefact::fromBytes(buf.data(), buf.size());
      ADD_FAILURE() << GetParam() << ": flipping byte " << i << " with " << (int)mask << " was not noticed";
    } catch (const rt::ArtefactError &e) {
      std::string err = e.what();
      if (err.find("checksum mismatch (the file was changed after cbc compile wrote it)") != std::string::npos)
        ++checksum;
      else if (err.find("identifier") != std::string::npos || err.find("checksum trailer is missing") != std::string::npos)
        ++other; // the file identifier (bytes 4-7) or the trailer's magic
      else
        ADD_FAILURE() << GetParam() << ": byte " << i << ": unexpected error '" << err << "'";
    }
    buf[i] ^= mask;
  }
  EXPECT_EQ(other, 4 + 8) << "the identifier's and the magic's bytes";
  EXPECT_EQ(checksum + other, (int)buf.size());
  EXPECT_NO_THROW(rt::Artefact::fromBytes(buf.data(), buf.size())) << "the bytes are restored";
}

TEST_P(ArtefactFuzz, RandomByteFlipsNeverCrash) {
  std::mt19937_64 rng(0xA57EFAC7 ^ std::hash<std::string>{}(GetParam()));
  Tally t;
  const int trials = 300;
  for (int trial = 0; trial < trials; ++trial) {
    std::vector<uint8_t> buf = bytes_;
    int flips = 1 + (int)(rng() % 8);
    std::string what = GetParam() + " trial " + std::to_string(trial) + ":";
    for (int f = 0; f < flips; ++f) {
      size_t pos = rng() % buf.size();
      uint8_t mask = (uint8_t)(1 + rng() % 255);
      buf[pos] ^= mask;
      what += " " + std::to_string(pos) + "^" + std::to_string(mask);
    }
    tryBytes(buf, what, t, false); // past the hash, which refuses them all (EveryByteFlipIsRejected)
  }
  EXPECT_EQ(t.rejected + t.engineError + t.ran, trials);
  // Both paths are exercised: some flips are caught by the loader, some reach the engine.
  EXPECT_GT(t.rejected, 0);
  EXPECT_GT(t.ran + t.engineError, 0);
  RecordProperty("rejected", std::to_string(t.rejected));
  RecordProperty("engine_errors", std::to_string(t.engineError));
  RecordProperty("ran", std::to_string(t.ran));
}

// Every scalar of an instruction's parameter table (nested tables and structs included) and
// every vector length, found through the schema's reflection tables, so that a new op's
// parameters are fuzzed without code here.
struct ParamSlots : flatbuffers::IterationVisitor {
  struct Slot {
    uint8_t *at;
    flatbuffers::ElementaryType type;
    std::string name;
    bool length; // a vector's length, which may only shrink
  };
  std::vector<Slot> slots;
  void Field(size_t, size_t, flatbuffers::ElementaryType type, bool repeating, const flatbuffers::TypeTable *,
             const char *name, const uint8_t *val) override {
    if (!val)
      return;
    uint8_t *at = const_cast<uint8_t *>(val);
    if (repeating)
      slots.push_back({at + flatbuffers::ReadScalar<flatbuffers::uoffset_t>(at), flatbuffers::ET_UINT, name, true});
    else if (type >= flatbuffers::ET_BOOL && type <= flatbuffers::ET_DOUBLE)
      slots.push_back({at, type, name ? name : "", false});
  }
};

// Overwrites one random parameter scalar of a random instruction in a copy of the bytes, which
// the verifier still accepts (it checks no scalar). Returns what it changed, or "".
std::string mutateParam(std::vector<uint8_t> &buf, std::mt19937_64 &rng, int64_t value) {
  auto *instrs = fb::GetMutableModel(buf.data())->mutable_program()->mutable_instrs();
  fb::Instr *instr = instrs->GetMutableObject(rng() % instrs->size());
  fb::OpParams type = instr->params_type();
  if (type == fb::OpParams::NONE || !instr->mutable_params())
    return "";
  ParamSlots found;
  flatbuffers::IterateObject(static_cast<const uint8_t *>(instr->mutable_params()),
                             fb::OpParamsTypeTable()->type_refs[(int)type - 1](), &found);
  if (found.slots.empty())
    return "";
  ParamSlots::Slot s = found.slots[rng() % found.slots.size()];
  using namespace flatbuffers;
  if (s.length) {
    uint32_t len = ReadScalar<uint32_t>(s.at);
    WriteScalar<uint32_t>(s.at, (uint32_t)std::min<int64_t>(len, std::max<int64_t>(0, value)));
  } else if (s.type == ET_FLOAT || s.type == ET_DOUBLE) {
    const double odd[] = {0.0, -1.0, 0.5, 1e30, -1e30, NAN, INFINITY};
    double v = odd[rng() % 7];
    s.type == ET_FLOAT ? WriteScalar<float>(s.at, (float)v) : WriteScalar<double>(s.at, v);
  } else {
    size_t bytes = s.type <= ET_UCHAR ? 1 : s.type <= ET_USHORT ? 2 : s.type <= ET_UINT ? 4 : 8;
    std::memcpy(s.at, &value, bytes); // little-endian: the low bytes
  }
  return std::string(opcodeInfo(instr->opcode()).op_name) + "." + s.name;
}

// Mutations aimed at the program, its parameters and the cache plan, past the FlatBuffers
// verifier: the backend's operand checks must turn each into an exception, or it must run.
TEST_P(ArtefactFuzz, StructuredMutationsNeverCrash) {
  rt::Artefact base = rt::Artefact::fromBytes(bytes_.data(), bytes_.size());
  std::mt19937_64 rng(0x5EED ^ std::hash<std::string>{}(GetParam()));
  const int64_t interesting[] = {-1, 0,  1,  2,  3,   4,   7,   8,   16,  31,   32,
                                 63, 64, 65, 96, 128, 192, 255, 256, 257, 1000, 1 << 20};
  auto pick = [&] { return interesting[rng() % (sizeof interesting / sizeof *interesting)]; };
  Tally t;
  const int trials = 300;
  int paramMutations = 0;
  for (int trial = 0; trial < trials; ++trial) {
    std::string what = GetParam() + " mutation " + std::to_string(trial) + ":";
    // Parameter tables live in the bytes: mutate them there, then parse.
    std::vector<uint8_t> buf = bytes_;
    for (int m = 0, n = (int)(rng() % 3); m < n; ++m) {
      std::string changed = mutateParam(buf, rng, pick());
      paramMutations += !changed.empty();
      what += changed.empty() ? "" : " " + changed;
    }
    std::snprintf(gCase, sizeof gCase, "%s", what.c_str());
    rt::Artefact a;
    try {
      a = rt::Artefact::fromBytes(buf.data(), buf.size(), /*verifyChecksum=*/false);
    } catch (const rt::ArtefactError &) {
      t.engineError++;
      continue;
    }
    for (int m = 0, n = (int)(rng() % 3); m < n; ++m) {
      rt::Program &prog = a.program;
      switch (rng() % 5) {
      case 0: { // an activation's width or slot
        rt::Value &v = prog.values[rng() % prog.values.size()];
        if (v.kind == rt::Value::Activation) {
          if (rng() % 2)
            v.shape[1] = std::max<int64_t>(1, pick());
          else
            v.offset = std::max<int64_t>(0, pick());
          what += " value";
        }
        break;
      }
      case 1: { // an operand that names another value
        rt::Instr &in = prog.instrs[rng() % prog.instrs.size()];
        auto &ids = rng() % 2 ? in.inputs : in.outputs;
        if (!ids.empty()) {
          ids[rng() % ids.size()] = (int)(rng() % prog.values.size());
          what += " operand of " + in.op;
        }
        break;
      }
      case 2: { // cache rows
        if (a.cache_plan.layers.empty())
          break;
        rt::CacheLayer &l = a.cache_plan.layers[rng() % a.cache_plan.layers.size()];
        if (l.rows.empty())
          break;
        l.rows[rng() % l.rows.size()].second = std::max<int64_t>(1, pick());
        what += " cache rows";
        break;
      }
      case 3:
        a.meta.vocab_size = std::max<int64_t>(4, pick());
        what += " vocab";
        break;
      case 4: { // a dropped operand
        rt::Instr &in = prog.instrs[rng() % prog.instrs.size()];
        if (in.inputs.size() > 1) {
          in.inputs.pop_back();
          what += " fewer operands for " + in.op;
        }
        break;
      }
      }
    }
    std::snprintf(gCase, sizeof gCase, "%s", what.c_str());
    try {
      runTinyEngine(std::move(a), {{1, 2, 3}, {3, 2, 1, 0, 1, 2, 3, 3, 3, 3}});
      t.ran++;
    } catch (const std::exception &) {
      t.engineError++;
    }
  }
  EXPECT_GT(t.engineError, trials / 4) << "most of these mutations must be caught";
  // About 0.6 mutations a trial land in a table (llama: 12 of 20 instructions carry one).
  EXPECT_GT(paramMutations, trials / 3) << "parameter tables must be reached";
  RecordProperty("engine_errors", std::to_string(t.engineError));
  RecordProperty("param_mutations", std::to_string(paramMutations));
  RecordProperty("ran", std::to_string(t.ran));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ArtefactFuzz, ::testing::Values("llama", "gpt_oss", "qwen3_moe"),
                         [](const auto &info) { return info.param; });

class ArtefactHeader : public ::testing::Test {
protected:
  void SetUp() override { bytes_ = committedArtefactBytes("llama"); }
  // Bytes patched in place are resealed: the structural checks, not the hash, must refuse them.
  std::string errorOf(std::vector<uint8_t> b, bool reseal = true) {
    if (reseal)
      resealArtefact(b);
    try {
      rt::Artefact::fromBytes(b.data(), b.size());
    } catch (const rt::ArtefactError &e) {
      return e.what();
    }
    return "";
  }
  std::vector<uint8_t> bytes_;
};

TEST_F(ArtefactHeader, IntactArtefactReadsBack) {
  rt::Artefact a = rt::Artefact::fromBytes(bytes_.data(), bytes_.size());
  EXPECT_EQ(a.format_version, kFormatVersion);
  EXPECT_EQ(a.meta.model_type, "llama");
  EXPECT_EQ(a.meta.vocab_size, 256);
  EXPECT_FALSE(a.program.instrs.empty());
  EXPECT_FALSE(a.weights.empty());
  EXPECT_FALSE(a.cache_plan.groups.empty());
}

TEST_F(ArtefactHeader, WrongFileIdentifierIsRejected) {
  ASSERT_TRUE(flatbuffers::BufferHasIdentifier(bytes_.data(), fb::ModelIdentifier()));
  for (size_t i = 4; i < 8; ++i) {
    std::vector<uint8_t> b = bytes_;
    b[i] ^= 0x20;
    std::string err = errorOf(b, false);
    EXPECT_NE(err.find("identifier"), std::string::npos) << "byte " << i << ": '" << err << "'";
  }
  std::vector<uint8_t> foreign(bytes_.size(), 0);
  std::memcpy(foreign.data() + 4, "ABCD", 4);
  EXPECT_NE(errorOf(foreign, false).find("not a cbc artefact"), std::string::npos) << errorOf(foreign, false);
  EXPECT_NE(errorOf({}, false).find("identifier"), std::string::npos);
}

TEST_F(ArtefactHeader, WrongFormatVersionIsRejected) {
  const fb::Model *m = fb::GetModel(bytes_.data());
  ASSERT_EQ(m->format_version(), kFormatVersion);
  const uint8_t *field =
      reinterpret_cast<const flatbuffers::Table *>(m)->GetAddressOf(fb::Model::VT_FORMAT_VERSION);
  ASSERT_NE(field, nullptr);
  size_t at = (size_t)(field - bytes_.data());
  // Version 1 predates the block_diag and row_scales transforms, version 2 typed instructions:
  // their readers would misread these artefacts, and this reader theirs.
  for (uint32_t version : {0u, 1u, 2u, 3u, 4u, 5u, 6u, 7u, kFormatVersion + 1, 77u}) {
    std::vector<uint8_t> b = bytes_;
    std::memcpy(b.data() + at, &version, 4);
    std::string err = errorOf(b);
    EXPECT_NE(err.find("format version " + std::to_string(version)), std::string::npos) << err;
    EXPECT_NE(err.find("recompile"), std::string::npos) << err;
    // An artefact of a version before the trailer has none: the version error still comes first.
    b.resize(b.size() - kTrailerBytes);
    err = errorOf(b, false);
    EXPECT_NE(err.find("format version " + std::to_string(version)), std::string::npos) << err;
  }
}

// The trailer: a changed byte is named a checksum mismatch (cbc run and dump exit 2 with it);
// bytes without the trailer are refused; verifyChecksum false skips only the hash.
TEST_F(ArtefactHeader, ChecksumTrailerIsChecked) {
  ASSERT_TRUE(hasTrailer(bytes_.data(), bytes_.size()));
  // A RoPE frequency, as in the user's report: a float array no structural check can judge.
  rt::Artefact base = rt::Artefact::fromBytes(bytes_.data(), bytes_.size());
  const fb::RopeParams *rope = nullptr;
  for (const rt::Instr &in : base.program.instrs)
    if (in.opcode == fb::Opcode::KvRopeAppend)
      rope = in.get<fb::KvRopeAppendParams>().rope();
    else if (in.opcode == fb::Opcode::Rope)
      rope = &in.get<fb::RopeParams>();
  ASSERT_NE(rope, nullptr);
  ASSERT_NE(rope->inv_freq(), nullptr);
  size_t at = (size_t)(reinterpret_cast<const uint8_t *>(rope->inv_freq()->data()) - base.bytes->data()) + 4;
  std::vector<uint8_t> b = bytes_;
  b[at] ^= 0x01; // the last mantissa bit of the second frequency: still a plausible frequency
  std::string err = errorOf(b, false);
  EXPECT_NE(err.find("corrupt artefact: checksum mismatch (the file was changed after cbc compile wrote it)"),
            std::string::npos)
      << err;
  EXPECT_NO_THROW(rt::Artefact::fromBytes(b.data(), b.size(), /*verifyChecksum=*/false))
      << "only the hash can see this change";
  std::vector<uint8_t> stripped(bytes_.begin(), bytes_.end() - kTrailerBytes);
  err = errorOf(stripped, false);
  EXPECT_NE(err.find("checksum trailer is missing"), std::string::npos) << err;
  EXPECT_THROW(rt::Artefact::fromBytes(stripped.data(), stripped.size(), false), rt::ArtefactError)
      << "without a trailer nothing is read, even unchecked";
}

// The FP8 block size sizes every scale grid: it goes with quantization "fp8" and no other, and
// must be positive.
TEST_F(ArtefactHeader, Fp8BlockSizeIsChecked) {
  std::vector<uint8_t> fp8 = committedArtefactBytes("llama_fp8");
  EXPECT_EQ(rt::Artefact::fromBytes(fp8.data(), fp8.size()).meta.fp8_block_rows, 40);
  auto mutated = [](std::vector<uint8_t> b, int64_t rows, int64_t cols) {
    fb::ModelMeta *meta = fb::GetMutableModel(b.data())->mutable_meta();
    EXPECT_TRUE(meta->mutate_fp8_block_rows(rows) && meta->mutate_fp8_block_cols(cols));
    return b; // errorOf reseals
  };
  using Block = std::pair<int64_t, int64_t>;
  for (auto [rows, cols] : {Block{0, 48}, Block{40, -1}, Block{0, 0}, Block{1ll << 40, 48}}) {
    std::string err = errorOf(mutated(fp8, rows, cols));
    EXPECT_NE(err.find("bad fp8 block size"), std::string::npos) << rows << "x" << cols << ": '" << err << "'";
  }
  std::string err = errorOf(mutated(bytes_, 128, 128)); // llama: no quantization
  EXPECT_NE(err.find("bad fp8 block size"), std::string::npos) << err;
}

TEST_F(ArtefactHeader, LoadNamesTheFile) {
  try {
    rt::Artefact::load("/nonexistent/model.fb");
    ADD_FAILURE() << "no error";
  } catch (const rt::ArtefactError &e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/model.fb"), std::string::npos) << e.what();
  }
}

// Inconsistent programs that the verifier cannot see are refused when the backend is built.
TEST_F(ArtefactHeader, BackendRefusesInconsistentPrograms) {
  rt::Artefact base = rt::Artefact::fromBytes(bytes_.data(), bytes_.size());
  rt::EngineOptions o;
  o.backend = "cpu";
  o.threads = 1;
  auto expectRefused = [&](const rt::Artefact &a, const std::string &what) {
    EXPECT_THROW(rt::Engine::create(a, {"", 1}, o), rt::ArtefactError) << what;
  };
  // The instruction's parameter table, mutated in a copy of the bytes.
  auto withParams = [&](size_t i, const std::function<void(void *)> &mutate) {
    std::vector<uint8_t> b = bytes_;
    mutate(fb::GetMutableModel(b.data())->mutable_program()->mutable_instrs()->GetMutableObject(i)->mutable_params());
    return rt::Artefact::fromBytes(b.data(), b.size(), /*verifyChecksum=*/false);
  };
  int attention = 0, norms = 0;
  for (size_t i = 0; i < base.program.instrs.size(); ++i) {
    const rt::Instr &in = base.program.instrs[i];
    if (in.opcode == fb::Opcode::Linear) {
      rt::Artefact a = base;
      a.program.values[in.outputs[0]].shape[1] += 1; // no longer the weight's row count
      expectRefused(a, "linear with a wider output");
    }
    if (in.opcode == fb::Opcode::KvAttention) {
      ++attention;
      int64_t heads = in.get<fb::KvAttentionParams>().num_heads();
      expectRefused(withParams(i, [&](void *p) {
                      ASSERT_TRUE(static_cast<fb::KvAttentionParams *>(p)->mutate_num_heads(2 * heads));
                    }),
                    "attention with more heads than its operands");
      rt::Artefact b = base;
      std::swap(b.program.instrs[i].inputs[1], b.program.instrs[i].inputs[2]);
      expectRefused(b, "attention reading seq_ids as positions");
    }
    if (in.opcode == fb::Opcode::RmsNorm) {
      ++norms;
      // A negative group is no size at all: the loader refuses it (runtime/artefact_check.cpp).
      EXPECT_THROW(withParams(i, [](void *p) { ASSERT_TRUE(static_cast<fb::NormParams *>(p)->mutate_group(-1)); }),
                   rt::ArtefactError)
          << "rms_norm with a negative group";
    }
  }
  EXPECT_GT(attention, 0);
  EXPECT_GT(norms, 0);
  rt::Artefact v = base;
  v.meta.vocab_size += 1;
  expectRefused(v, "vocabulary larger than the logits");
}

} // namespace
} // namespace cbc::test
