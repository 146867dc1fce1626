#include "tools/gpu_check/launch_profile.h"

#include <random>
#include <set>
#include <stdexcept>

namespace cbc::gpu_check {

namespace {

std::vector<int32_t> randomPrompt(std::mt19937 &rng, int64_t vocab, int length) {
  std::vector<int32_t> p(length);
  for (auto &t : p)
    t = (int32_t)(rng() % (uint64_t)vocab);
  return p;
}

// One step with the launch times attached; the number of tokens it sampled.
size_t timedStep(rt::Engine &e, rt::Backend &b, rt::LaunchTimes &times) {
  if (!b.setLaunchTimes(&times))
    throw std::runtime_error("the backend cannot time its launches");
  size_t sampled = e.step().size();
  b.setLaunchTimes(nullptr);
  return sampled;
}

// R requests prefilled until each has its first token, then `steps` decode steps of all R;
// the requests are cancelled after. Those that start first decode while the others prefill
// (their contexts grow by up to that many steps), so each may generate one token a step until
// all have started, plus the profiled steps.
void profileDecode(rt::Engine &e, rt::Backend &b, const rt::Artefact &a, const rt::EngineOptions &o,
                   const ProfileWorkload &w, rt::LaunchTimes &times) {
  std::mt19937 rng(7);
  int prompt = std::max(1, w.context);
  int64_t startSteps = w.requests + (int64_t)w.requests * prompt / std::max<int64_t>(1, o.max_batch_tokens - w.requests);
  rt::SamplingParams s;
  s.max_new_tokens = w.steps + 2 + startSteps;
  s.ignore_eos = true;
  std::vector<rt::RequestId> ids;
  for (int r = 0; r < w.requests; ++r) {
    rt::AddResult added = e.add_request(randomPrompt(rng, a.meta.vocab_size, prompt), s);
    if (!added.accepted)
      throw std::runtime_error("the engine rejected a profiling request: " + added.error);
    ids.push_back(added.id);
  }
  std::set<rt::RequestId> started;
  while ((int)started.size() < w.requests && !e.idle())
    for (const rt::TokenEvent &ev : e.step())
      started.insert(ev.id);
  for (int i = 0; i < w.steps; ++i)
    if (timedStep(e, b, times) != (size_t)w.requests)
      throw std::runtime_error("a profiled decode step did not hold all " + std::to_string(w.requests) +
                               " requests (raise the engine's budgets)");
  for (rt::RequestId id : ids)
    e.cancel(id);
  while (!e.idle())
    e.step();
  e.take_finished();
}

// `steps` times: one request whose whole prompt is prefilled in the profiled step.
void profilePrefill(rt::Engine &e, rt::Backend &b, const rt::Artefact &a, const ProfileWorkload &w,
                    rt::LaunchTimes &times) {
  std::mt19937 rng(11);
  rt::SamplingParams s;
  s.max_new_tokens = 1;
  s.ignore_eos = true;
  for (int i = 0; i < w.steps; ++i) {
    rt::AddResult added = e.add_request(randomPrompt(rng, a.meta.vocab_size, w.tokens), s);
    if (!added.accepted)
      throw std::runtime_error("the engine rejected a profiling request: " + added.error);
    if (timedStep(e, b, times) != 1)
      throw std::runtime_error("a profiled prefill step did not hold the whole " + std::to_string(w.tokens) +
                               "-token prompt (raise the engine's token budget)");
    while (!e.idle())
      e.step();
    e.take_finished();
  }
}

} // namespace

std::string ProfileWorkload::name() const {
  return decode ? "decode-" + std::to_string(requests) + "x" + std::to_string(context)
                : "prefill-" + std::to_string(tokens);
}

std::vector<LaunchProfile> profileLaunches(const rt::Artefact &a, std::unique_ptr<rt::Backend> backend,
                                           const rt::EngineOptions &options,
                                           const std::vector<ProfileWorkload> &workloads) {
  for (const ProfileWorkload &w : workloads)
    if (w.steps < 1 || w.requests < 1 || w.tokens < 1 || w.context < 0)
      throw std::runtime_error("bad profiling workload " + w.name());
  rt::Backend &b = *backend; // owned by the engine, which outlives its use here
  auto engine = rt::Engine::withBackend(a, std::move(backend), options);
  std::vector<LaunchProfile> out;
  for (const ProfileWorkload &w : workloads) {
    out.push_back({w, {}});
    if (w.decode)
      profileDecode(*engine, b, a, options, w, out.back().times);
    else
      profilePrefill(*engine, b, a, w, out.back().times);
  }
  return out;
}

void writeLaunchCsv(std::ostream &out, const rt::Artefact &a, const std::vector<LaunchProfile> &profiles) {
  const rt::KernelBundle &k = a.kernels.value();
  out << "workload,requests,tokens,context,launch,instr,kernel,calls,mean_us\n";
  for (const LaunchProfile &p : profiles) {
    const ProfileWorkload &w = p.workload;
    for (size_t li = 0; li < p.times.calls.size() && li < k.launches.size(); ++li) {
      if (p.times.calls[li] == 0)
        continue;
      const rt::Launch &l = k.launches[li];
      out << w.name() << ',' << (w.decode ? w.requests : 1) << ',' << (w.decode ? w.requests : w.tokens) << ','
          << (w.decode ? w.context : 0) << ',' << li << ',' << l.instr << ','
          << (l.gemm ? std::string("gemm") : l.gather ? std::string("gather") : k.names.at(l.kernel)) << ',' << p.times.calls[li] << ','
          << 1e3 * p.times.ms[li] / (double)p.times.calls[li] << '\n';
    }
  }
}

} // namespace cbc::gpu_check
