// Ring 2, batching invariance: whatever the interleaving, chunk sizes, preemptions and
// cancellations, each request gets exactly the tokens it gets when run alone, and no request
// is lost. Real fixture models (CPU backend, fp32), a small token budget and a cache too small
// for the load, so that chunked prefill, sliding-window release and preemption all happen.
#include "runtime/cache/coordinator.h"
#include "runtime/cpu/cpu_backend.h"
#include "runtime/weights.h"
#include "test/support/compile_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <set>

namespace cbc::test {
namespace {

constexpr int kRequests = 64;
constexpr int64_t kMaxPrompt = 40, kMaxNew = 12, kMaxArrival = 30;
constexpr int64_t kStateSlots = 6, kSnapshots = 4;
// The shared-prefix workload's stems: within the first block, across blocks, past the 64-token
// snapshot grid.
constexpr int64_t kStems[] = {7, 33, 70};
constexpr int64_t kLongestStem = 70;

// What the backend saw, step by step: evidence that the batched run really exercised
// chunked prefill, mixed decode/prefill steps and window release.
struct Observed {
  int64_t steps = 0, partialChunks = 0, continuedChunks = 0, mixedSteps = 0, releasedRows = 0;
  int64_t maxRequestsInStep = 0;
  // State handover: a chunk must carry its slot's state exactly when it continues a sequence,
  // and slots must be handed on to new (or restarted) requests.
  int64_t stateFlagErrors = 0, reusedSlots = 0;
  int64_t movedStates = 0, sharedStateUnits = 0, unitCopies = 0;
  std::set<int32_t> usedSlots;
};

class RecordingBackend : public rt::Backend {
public:
  RecordingBackend(std::unique_ptr<rt::Backend> inner, const rt::CachePlan &plan, Observed &seen)
      : inner_(std::move(inner)), plan_(plan), seen_(seen) {}
  std::string name() const override { return inner_->name(); }
  int64_t cacheBytesPerToken(int g) const override { return inner_->cacheBytesPerToken(g); }
  int64_t stateBytesPerUnit() const override { return inner_->stateBytesPerUnit(); }
  void allocateCache(int32_t blocks, int32_t stateUnits) override { inner_->allocateCache(blocks, stateUnits); }
  void copyUnits(const std::vector<rt::UnitCopy> &copies) override {
    seen_.unitCopies += (int64_t)copies.size();
    inner_->copyUnits(copies);
  }
  bool transferUnits(int group, const std::vector<int32_t> &units, uint8_t *host, bool toHost) override {
    return inner_->transferUnits(group, units, host, toHost);
  }
  void run(const rt::StepBatch &b, std::vector<float> &logits) override {
    seen_.steps++;
    seen_.maxRequestsInStep = std::max(seen_.maxRequestsInStep, b.num_requests);
    bool decode = false, prefill = false;
    for (int64_t r = 0; r < b.num_requests; ++r) {
      int64_t begin = b.cu_seqlens[r], end = b.cu_seqlens[r + 1], count = end - begin;
      bool sampled = std::find(b.logit_rows.begin(), b.logit_rows.end(), (int32_t)(end - 1)) !=
                     b.logit_rows.end();
      if (!sampled)
        seen_.partialChunks++; // a prefill chunk that stops short of the known tokens
      if (count > 1 && b.positions[begin] > 0)
        seen_.continuedChunks++; // a prefill chunk that continues a cached prefix
      (count == 1 && b.positions[begin] > 0 ? decode : prefill) = true;
      if (count > 0 && (b.has_initial_state[r] != 0) != (b.positions[begin] > 0))
        seen_.stateFlagErrors++;
      if (count > 0 && b.positions[begin] == 0 && !seen_.usedSlots.insert(b.slots[r]).second)
        seen_.reusedSlots++;
      // Without forks, every request's states are read and written in place, each in a unit of
      // its own.
      if (b.state_in[r] != b.state_out[r])
        seen_.movedStates++;
      for (int64_t q = 0; q < r; ++q)
        if (b.state_out[r] >= 0 && b.state_out[q] == b.state_out[r])
          seen_.sharedStateUnits++;
      // A window group whose table has a released (-1) block below the live range.
      for (int64_t g = 0; g < b.num_groups; ++g) {
        if (plan_.groups[g].retention == rt::CacheGroup::All)
          continue;
        const int32_t *row = b.block_tables + (g * b.table_slots + b.slots[r]) * b.table_width;
        int64_t last = (b.kv_lens[r] - 1) / plan_.block_size;
        for (int64_t i = 0; i < last; ++i)
          if (row[i] < 0) {
            seen_.releasedRows++;
            break;
          }
      }
    }
    if (decode && prefill)
      seen_.mixedSteps++;
    inner_->run(b, logits);
  }

private:
  std::unique_ptr<rt::Backend> inner_;
  const rt::CachePlan &plan_;
  Observed &seen_;
};

struct Outcome {
  std::vector<rt::RequestOutput> outputs; // by run index
  std::vector<int> returned;              // how often each run came back
  std::vector<bool> cancelAccepted;
  rt::EngineStats stats;
  Observed seen;
};

class Invariance : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    family_ = GetParam();
    artefact_ = compileArtefact(readFile(fixtureDir(family_) + "/config.json"));
    weights_ = rt::WeightStore::load(artefact_, {fixtureDir(family_), 0});
  }

  // The CPU backend stores fp32 rows: a group's bytes per token are its layers' k and v
  // elements times four.
  int64_t bytesPerBlockRow() const {
    int64_t bytes = 0;
    for (const rt::CacheLayer &l : artefact_.cache_plan.layers)
      bytes += l.elemsPerToken() * 4;
    return bytes * artefact_.cache_plan.block_size;
  }

  std::unique_ptr<rt::Engine> engine(int64_t budget, int64_t maxRequests, int32_t blocksPerGroup,
                                     Observed &seen, bool swap = false) {
    rt::EngineOptions o;
    o.backend = "cpu";
    o.max_batch_tokens = budget;
    o.max_requests = maxRequests;
    o.threads = 1;
    auto cpu =
        rt::makeCpuBackend(artefact_, weights_, {o.max_batch_tokens, o.max_requests}, o.threads);
    // State families also run short of slots: few requests may hold state at once.
    int64_t stateBytes = cpu->stateBytesPerUnit();
    if (stateBytes > 0) {
      o.max_live_requests = kStateSlots;
      o.max_state_fraction = 1.0;
    }
    o.snapshot_memory_bytes = kSnapshots * stateBytes;
    // Room to swap out every preempted request: they resume where they stopped.
    if (swap)
      o.swap_space_bytes = 64ll << 20;
    o.cache_memory_bytes =
        blocksPerGroup * bytesPerBlockRow() + (stateBytes > 0 ? (kStateSlots + kSnapshots) * stateBytes : 0);
    auto e = rt::Engine::withBackend(
        artefact_, std::make_unique<RecordingBackend>(std::move(cpu), artefact_.cache_plan, seen),
        o);
    // An attention-free model (RWKV) keeps no paged rows: only its state slots bound the load.
    EXPECT_EQ(e->cache().blocksPerGroup(), bytesPerBlockRow() > 0 ? blocksPerGroup : 0);
    if (stateBytes > 0)
      EXPECT_EQ(e->cache().maxSlots(), kStateSlots);
    return e;
  }

  Outcome serveAll(const std::vector<test::Run> &runs, int64_t budget, int64_t maxRequests,
                   int32_t blocksPerGroup, bool swap = false) {
    Outcome res;
    auto e = engine(budget, maxRequests, blocksPerGroup, res.seen, swap);
    res.outputs.resize(runs.size());
    res.returned.assign(runs.size(), 0);
    res.cancelAccepted.assign(runs.size(), false);
    std::map<rt::RequestId, size_t> index;
    std::vector<rt::RequestId> ids(runs.size(), -1);
    size_t collected = 0;
    for (int64_t step = 0; collected < runs.size(); ++step) {
      for (size_t i = 0; i < runs.size(); ++i)
        if (runs[i].arrive_at_step == step) {
          auto added = e->add_request(runs[i].prompt, runs[i].params);
          EXPECT_TRUE(added.accepted) << added.error;
          index[added.id] = i;
          ids[i] = added.id;
        }
      for (size_t i = 0; i < runs.size(); ++i)
        if (runs[i].cancel && runs[i].cancel_at_step == step) {
          EXPECT_GE(ids[i], 0) << "a request is cancelled after it arrives";
          res.cancelAccepted[i] = e->cancel(ids[i]);
        }
      e->step();
      for (auto &out : e->take_finished()) {
        size_t i = index.at(out.id);
        res.returned[i]++;
        res.outputs[i] = std::move(out);
        ++collected;
      }
      if (step > 20000) {
        ADD_FAILURE() << "no progress";
        break;
      }
    }
    EXPECT_TRUE(e->idle());
    EXPECT_EQ(e->cache().usedBlocks(), 0) << "every block comes back";
    res.stats = e->stats();
    return res;
  }

  // `shared`: half the prompts start with one of kStems' stems.
  std::vector<test::Run> makeRuns(uint64_t seed, bool shared) const {
    std::mt19937_64 rng(seed);
    auto uniform = [&](int64_t lo, int64_t hi) {
      return lo + (int64_t)(rng() % (uint64_t)(hi - lo + 1));
    };
    int64_t vocab = artefact_.meta.vocab_size;
    std::vector<std::vector<int32_t>> stems;
    for (int64_t n : kStems) {
      if (n + kMaxPrompt + kMaxNew > artefact_.meta.max_positions)
        continue; // a model of few positions
      stems.emplace_back();
      for (int64_t j = 0; j < n; ++j)
        stems.back().push_back((int32_t)uniform(0, vocab - 1));
    }
    std::vector<test::Run> runs(kRequests);
    for (int i = 0; i < kRequests; ++i) {
      test::Run &r = runs[i];
      if (shared && !stems.empty() && uniform(0, 1) == 0)
        r.prompt = stems[uniform(0, (int64_t)stems.size() - 1)];
      int64_t len = uniform(1, kMaxPrompt);
      for (int64_t j = 0; j < len; ++j)
        r.prompt.push_back((int32_t)uniform(0, vocab - 1));
      r.params.max_new_tokens = uniform(1, kMaxNew);
      r.params.logprobs = true;
      r.params.ignore_eos = uniform(0, 1) == 1;
      if (i % 4 == 3) { // sampled, with its own seed
        r.params.temperature = uniform(0, 1) ? 0.8 : 1.3;
        r.params.top_p = uniform(0, 1) ? 0.9 : 1.0;
        r.params.top_k = uniform(0, 2) == 0 ? 20 : 0;
        r.params.seed = rng();
      }
      r.arrive_at_step = uniform(0, kMaxArrival);
    }
    // A few cancellations, before, during and after their requests run.
    std::vector<int> order(kRequests);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    for (int k = 0; k < 6; ++k) {
      test::Run &r = runs[order[k]];
      r.cancel = true;
      r.cancel_at_step = r.arrive_at_step + uniform(0, 25);
    }
    return runs;
  }

  void check(uint64_t seed, int64_t budget, int64_t maxRequests, int32_t extraBlocks, bool shared = false);

  std::string family_;
  rt::Artefact artefact_;
  rt::WeightStore weights_;
};

// One batched run of a random workload, then every request alone. `extraBlocks`: cache blocks
// per group beyond what the longest request needs alone.
void Invariance::check(uint64_t seed, int64_t budget, int64_t maxRequests, int32_t extraBlocks, bool shared) {
  std::vector<test::Run> runs = makeRuns(seed, shared);

  rt::CacheCoordinator probe(artefact_.cache_plan, 1 << 20, 1, 1, 1);
  int64_t need = 0;
  for (int g = 0; g < probe.numPagedGroups(); ++g)
    need = std::max(need, probe.maxBlocksFor(g, kMaxPrompt + kMaxNew + (shared ? kLongestStem : 0), budget));
  int32_t blocks = (int32_t)need + extraBlocks;

  Outcome batched = serveAll(runs, budget, maxRequests, blocks, shared);
  ASSERT_FALSE(HasFailure());

  const rt::ModelMeta &meta = artefact_.meta;
  int cancelled = 0;
  std::map<std::string, int> reasons;
  for (size_t i = 0; i < runs.size(); ++i) {
    const rt::RequestOutput &out = batched.outputs[i];
    EXPECT_EQ(batched.returned[i], 1) << "request " << i << " must come back exactly once";
    EXPECT_EQ(out.prompt, runs[i].prompt) << i;
    reasons[rt::finishReasonName(out.finish)]++;
    if (batched.cancelAccepted[i]) {
      EXPECT_EQ(out.finish, rt::FinishReason::Cancelled) << i;
      ++cancelled;
    } else {
      EXPECT_TRUE(out.finish == rt::FinishReason::Length || out.finish == rt::FinishReason::Eos)
          << i << ": " << rt::finishReasonName(out.finish);
    }
    EXPECT_LE((int64_t)out.tokens.size(), runs[i].params.max_new_tokens) << i;
    EXPECT_EQ(out.logprobs.size(), out.tokens.size()) << i;
    if (out.finish == rt::FinishReason::Length)
      EXPECT_EQ((int64_t)out.tokens.size(), runs[i].params.max_new_tokens) << i;
    if (out.finish == rt::FinishReason::Eos) {
      EXPECT_FALSE(runs[i].params.ignore_eos) << i;
      ASSERT_FALSE(out.tokens.empty());
      EXPECT_NE(std::find(meta.eos_token_ids.begin(), meta.eos_token_ids.end(), out.tokens.back()),
                meta.eos_token_ids.end())
          << i;
    }
    for (int32_t t : out.tokens) {
      EXPECT_GE(t, 0);
      EXPECT_LT(t, meta.vocab_size);
    }
  }
  EXPECT_GE(cancelled, 4) << "the cancellations must land on live requests";
  EXPECT_EQ(batched.stats.cancelled, cancelled);
  EXPECT_EQ(batched.stats.finished + batched.stats.cancelled, kRequests);
  EXPECT_EQ(batched.stats.rejected, 0);

  // The batched run really exercised the machinery. An attention-free model keeps no paged
  // rows to run short of: its state slots gate admission and nothing is ever preempted.
  bool paged = bytesPerBlockRow() > 0;
  if (paged)
    EXPECT_GT(batched.stats.preemptions, 0) << "the cache budget is meant to force preemption";
  else
    EXPECT_EQ(batched.stats.preemptions, 0) << "a model without paged rows preempted a request";
  EXPECT_GT(batched.seen.partialChunks, 0) << "no chunked prefill happened";
  EXPECT_GT(batched.seen.continuedChunks, 0) << "no chunk continued a cached prefix";
  EXPECT_GT(batched.seen.mixedSteps, 0) << "no step mixed decodes and prefill chunks";
  EXPECT_GT(batched.seen.maxRequestsInStep, 2) << "hardly any batching happened";
  bool windowed = false;
  for (const rt::CacheGroup &g : artefact_.cache_plan.groups)
    windowed |= g.retention != rt::CacheGroup::All;
  if (windowed)
    EXPECT_GT(batched.seen.releasedRows, 0) << "no sliding-window block was ever released";
  EXPECT_LE(batched.seen.maxRequestsInStep, maxRequests);
  EXPECT_EQ(batched.seen.stateFlagErrors, 0) << "has_initial_state disagrees with the positions";
  EXPECT_GT(batched.seen.reusedSlots, 0) << "no request slot was ever handed on";
  EXPECT_EQ(batched.seen.movedStates, 0) << "a state moved between units although nothing forked";
  EXPECT_EQ(batched.seen.sharedStateUnits, 0) << "two requests of a step wrote one state unit";
  // Random prompts share nothing (a preempted request finds its own blocks, though) and end
  // before the snapshot grid: no snapshot is copied in or out.
  if (!shared)
    EXPECT_EQ(batched.seen.unitCopies, 0) << "units copied although nothing forked or was cached";
  else if (probe.cachesPrefixes() && artefact_.cache_plan.length_dependent_above == 0 &&
           kStems[1] + kMaxPrompt + kMaxNew <= artefact_.meta.max_positions && // a stem of whole blocks fits
           (!probe.hasStates() || kStems[2] >= probe.snapshotGrid())) {          // and reaches the hit grid
    EXPECT_GT(batched.stats.prefix_hits, 0) << "no prompt found its stem cached";
  }
  if (shared && paged) {
    EXPECT_GT(batched.stats.swaps_in, 0) << "preempted requests are meant to come back from host memory";
    EXPECT_EQ(batched.stats.swap_fallbacks, 0);
  }
  RecordProperty("prefix_hits", std::to_string(batched.stats.prefix_hits));
  RecordProperty("snapshots", std::to_string(batched.stats.snapshots));
  RecordProperty("preemptions", std::to_string(batched.stats.preemptions));
  RecordProperty("steps", std::to_string(batched.stats.steps));

  // Each request alone, on a fresh engine with a roomy cache and budget: the same tokens.
  // Cancelled requests got a prefix of them.
  double maxLogprobDiff = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    test::Run alone = runs[i];
    alone.arrive_at_step = 0;
    alone.cancel = false;
    Outcome solo = serveAll({alone}, 256, 64, 64);
    ASSERT_EQ(solo.returned[0], 1);
    const rt::RequestOutput &want = solo.outputs[0];
    const rt::RequestOutput &got = batched.outputs[i];
    EXPECT_EQ(solo.stats.preemptions, 0);
    if (got.finish == rt::FinishReason::Cancelled) {
      ASSERT_LE(got.tokens.size(), want.tokens.size()) << i;
      EXPECT_TRUE(std::equal(got.tokens.begin(), got.tokens.end(), want.tokens.begin()))
          << family_ << " request " << i
          << " (cancelled): its tokens are not a prefix of its solo run";
    } else {
      EXPECT_EQ(got.tokens, want.tokens)
          << family_ << " request " << i << " (prompt " << runs[i].prompt.size() << " tokens, "
          << (runs[i].params.temperature > 0 ? "sampled" : "greedy") << ", " << got.preemptions
          << " preemptions) differs from its solo run";
      EXPECT_EQ(got.finish, want.finish) << i;
    }
    for (size_t t = 0; t < std::min(got.logprobs.size(), want.logprobs.size()); ++t) {
      if (got.tokens[t] != want.tokens[t])
        break;
      maxLogprobDiff =
          std::max(maxLogprobDiff, (double)std::fabs(got.logprobs[t] - want.logprobs[t]));
    }
  }
  // Token identity is the contract; logprobs agreeing to fp32 noise shows that the batched
  // numerics are not just close enough to keep the argmax. Int8-quantised activations
  // (cbc.math.act_quant) round: fp32 noise from a GEMM of another batch shape can move an element
  // across a rounding boundary, one quantum of its row, so there the logprobs agree to 5e-2.
  bool roundsActivations = std::any_of(artefact_.program.instrs.begin(), artefact_.program.instrs.end(),
                                       [](const rt::Instr &in) { return in.opcode == fb::Opcode::ActQuant; });
  EXPECT_LE(maxLogprobDiff, roundsActivations ? 5e-2 : 1e-3) << family_;
  RecordProperty("max_logprob_diff", std::to_string(maxLogprobDiff));
}

// A cache one block above the longest request: preemptions galore.
TEST_P(Invariance, TightCacheBudget16) { check(0xC0FFEE, 16, 64, 1); }

// A tiny token budget and few rows per step: long prompts take many chunks.
TEST_P(Invariance, TinyBudgetFewRows) { check(0xBEEF, 5, 4, 1); }

// Prompts sharing stems, on a tight cache: prefix-cache hits on held, freed and evicted blocks
// (and state snapshots), under preemption by swapping and cancellation, still give every request
// its solo tokens.
TEST_P(Invariance, SharedPrefixesTightCache) { check(0x5EED, 16, 64, 2, true); }

INSTANTIATE_TEST_SUITE_P(Fixtures, Invariance,
                         ::testing::Values("llama", "gemma2", "gpt_oss", "qwen3_moe", "qwen3_next", "lfm2",
                                           "jamba", "falcon_h1", "nemotron_h", "zamba", "zamba2", "deepseek_v3",
                                           "longcat_flash", "llama4_text", "minimax", "kimi_linear",
                                           "bailing_hybrid", "inkling_text", "inkling2_text", "deepseek_v32", "glm_moe_dsa", "axk2", "hy_v4", "mistral_large4", "glm5_next", "rwkv", "recurrent_gemma", "xlstm", "qwen4_exp_text", "deepseek_v4", "olmo2", "gemma", "smollm3", "helium", "granite", "ministral", "olmo3", "glm", "glm4", "ernie4_5", "seed_oss", "internlm3", "olmoe", "glm4_moe", "ernie4_5_moe", "hunyuan_v1_dense", "hunyuan_v1_moe", "flex_olmo", "dots1", "iquestcoder", "arcee", "cwm", "exaone4", "vaultgemma", "olmo", "cohere", "cohere2", "granitemoe", "granitemoeshared", "ministral3", "jais2", "hyperclovax", "nanochat", "solar_open", "mellum", "hy_v3", "exaone_moe", "cohere2_moe", "granite_swa", "granitemoe_swa", "phimoe", "dbrx", "kolibri1", "cohere_compass_text", "aria_text", "flint", "apertus", "afmoe", "laguna", "bitnet", "bitnet_ternary", "hrm_text", "mimo_v2_flash", "diffllama", "jetmoe", "beam", "minimax_m3_vl_text", "laguna_router_cap", "zaya", "minimax_m3_vl_text_sparse", "gemma3n_text", "doge", "dots3_note_text", "gemma4_text", "gemma4_unified_text", "opt_350m", "lfm3", "ctrl", "modernbert_decoder", "bloom", "mpt", "codegen", "gpt_neox_japanese", "openai_gpt", "persimmon", "stablelm_qk", "falcon_mqa", "gpt_neox", "phi", "stablelm", "gptj", "falcon", "starcoder2", "nemotron", "gpt2", "gpt_sw3", "gpt_bigcode", "gpt_neo", "opt", "biogpt", "xglm"),
                         [](const auto &info) { return info.param; });

} // namespace
} // namespace cbc::test
