#include "runtime/speculative.h"

#include "runtime/sampler.h"

#include <algorithm>

namespace cbc::rt {

namespace {

class NgramProposer : public Proposer {
public:
  NgramProposer(int64_t minN, int64_t maxN) : minN_(std::max<int64_t>(minN, 1)), maxN_(std::max(maxN, minN)) {}
  std::string name() const override { return "ngram"; }

  void propose(const Request &r, int64_t k, std::vector<int32_t> &draft) override {
    draft.clear();
    int64_t L = r.total();
    if (k <= 0 || L < 2)
      return;
    // The longest suffix first: a longer match predicts better. For each length, the latest
    // earlier occurrence: recent context is the likeliest to repeat.
    for (int64_t n = std::min(maxN_, L - 1); n >= minN_; --n) {
      for (int64_t s = L - n - 1; s >= 0; --s) {
        int64_t i = 0;
        while (i < n && r.tokenAt(s + i) == r.tokenAt(L - n + i))
          ++i;
        if (i < n)
          continue;
        // Past the known end the continuation repeats itself: a loop shorter than k is guessed
        // whole (the occurrence overlaps the suffix it matched).
        for (int64_t j = s + n; (int64_t)draft.size() < k; ++j)
          draft.push_back(j < L ? r.tokenAt(j) : draft[j - L]);
        return;
      }
    }
  }

private:
  int64_t minN_, maxN_;
};

} // namespace

std::unique_ptr<Proposer> makeNgramProposer(int64_t minN, int64_t maxN) {
  return std::make_unique<NgramProposer>(minN, maxN);
}

std::string checkSpeculativeMethod(const std::string &method) {
  if (method == "ngram")
    return "";
  if (method == "mtp" || method.rfind("draft:", 0) == 0)
    return "--speculative " + method + " is not supported yet (only ngram is)";
  return "unknown speculative method '" + method + "' (expected ngram, draft:PATH or mtp)";
}

Verdict verifyDraft(const std::vector<double> &p, const std::vector<double> *q, int32_t draft, uint64_t seed,
                    int64_t step) {
  double px = draft >= 0 && draft < (int64_t)p.size() ? p[draft] : 0.0;
  double qx = q ? (draft >= 0 && draft < (int64_t)q->size() ? (*q)[draft] : 0.0) : 1.0;
  // u in (0, 1), never exactly 0: a draft the target gives no mass is never accepted.
  if (qx > 0 && px > 0 && acceptanceDraw(seed, step) * qx <= px)
    return {true, draft};
  std::vector<double> residual(p.size());
  for (size_t i = 0; i < p.size(); ++i)
    residual[i] = std::max(0.0, p[i] - (q ? (*q)[i] : (int32_t)i == draft ? 1.0 : 0.0));
  int32_t token = drawWeighted(residual, seed, step);
  // p == q leaves no residual, and then a rejection has probability zero; rounding aside.
  return {false, token >= 0 ? token : drawWeighted(p, seed, step)};
}

} // namespace cbc::rt
