#include "runtime/backend.h"

#include <stdexcept>

namespace cbc::rt {

void StepBatch::clear() {
  tokens.clear();
  positions.clear();
  seq_ids.clear();
  cu_seqlens.clear();
  kv_lens.clear();
  logit_rows.clear();
  prompt_lens.clear();
  slots.clear();
  has_initial_state.clear();
  state_in.clear();
  state_out.clear();
  inject_rows.clear();
  inject_embeds.clear();
  rope_positions.clear();
  key_ends.clear();
}

bool Backend::isStateCopy(const CachePlan &plan, const UnitCopy &c, int32_t blocksPerGroup, int32_t stateUnits,
                          const std::string &backend) {
  if (c.group < 0 || c.group >= (int)plan.groups.size())
    throw std::logic_error(backend + " backend: a unit copy names no cache group");
  bool state = plan.groups[c.group].kind == CacheGroup::State;
  int32_t units = state ? stateUnits : blocksPerGroup;
  if (c.src < 0 || c.src >= units || c.dst < 0 || c.dst >= units)
    throw std::logic_error(backend + " backend: a unit copy names no unit of its group");
  return state;
}

namespace {
class NullBackend : public Backend {
public:
  explicit NullBackend(int64_t vocab) : vocab_(vocab) {}
  std::string name() const override { return "null"; }
  int64_t cacheBytesPerToken(int) const override { return 1; }
  void allocateCache(int32_t, int32_t) override {}
  void copyUnits(const std::vector<UnitCopy> &) override {}
  void run(const StepBatch &batch, std::vector<float> &logits) override {
    // Row r always favours token r % vocab, so the buffer only needs filling once per size.
    size_t n = (size_t)(batch.num_logit_rows * vocab_);
    if (logits.size() < n) {
      logits.assign(n, 0.0f);
      for (int64_t r = 0; r < batch.num_logit_rows; ++r)
        logits[r * vocab_ + (r % vocab_)] = 1.0f;
    }
  }

  bool runGreedy(const StepBatch &batch, std::vector<int32_t> &tokens) override {
    tokens.resize(batch.num_logit_rows);
    for (int64_t r = 0; r < batch.num_logit_rows; ++r)
      tokens[r] = (int32_t)(r % vocab_);
    return true;
  }

private:
  int64_t vocab_;
};
} // namespace

std::unique_ptr<Backend> makeNullBackend(const Artefact &a) {
  return std::make_unique<NullBackend>(a.meta.vocab_size);
}

} // namespace cbc::rt
