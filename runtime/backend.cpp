#include "runtime/backend.h"

namespace cbc::rt {

void StepBatch::clear() {
  tokens.clear();
  positions.clear();
  seq_ids.clear();
  cu_seqlens.clear();
  kv_lens.clear();
  block_tables.clear();
  logit_rows.clear();
  prompt_lens.clear();
  state_slots.clear();
  has_initial_state.clear();
}

namespace {
class NullBackend : public Backend {
public:
  explicit NullBackend(int64_t vocab) : vocab_(vocab) {}
  std::string name() const override { return "null"; }
  int64_t cacheBytesPerToken(int) const override { return 1; }
  void allocateCache(int32_t, int32_t) override {}
  void run(const StepBatch &batch, std::vector<float> &logits) override {
    logits.assign(batch.num_logit_rows * vocab_, 0.0f);
    for (int64_t r = 0; r < batch.num_logit_rows; ++r)
      logits[r * vocab_ + (r % vocab_)] = 1.0f;
  }

private:
  int64_t vocab_;
};
} // namespace

std::unique_ptr<Backend> makeNullBackend(const Artefact &a) {
  return std::make_unique<NullBackend>(a.meta.vocab_size);
}

} // namespace cbc::rt
