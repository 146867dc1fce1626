#include "runtime/comm/ranks.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <thread>

namespace cbc::rt {

namespace {

enum class Call : uint8_t { Allocate = 1, Copy = 2, Run = 3, Stop = 4, Transfer = 5 };

// The messages are flat byte strings of fixed-width fields, written and read in the same order.
class Writer {
public:
  explicit Writer(Call c) { put((uint8_t)c); }
  template <typename T> void put(T v) {
    size_t at = bytes.size();
    bytes.resize(at + sizeof(T));
    std::memcpy(bytes.data() + at, &v, sizeof(T));
  }
  template <typename T> void put(const std::vector<T> &v) {
    put((int64_t)v.size());
    putRaw(v.data(), v.size());
  }
  template <typename T> void putRaw(const T *p, size_t n) {
    size_t at = bytes.size();
    bytes.resize(at + n * sizeof(T));
    if (n)
      std::memcpy(bytes.data() + at, p, n * sizeof(T));
  }
  std::vector<uint8_t> bytes;
};

class Reader {
public:
  explicit Reader(const std::vector<uint8_t> &b) : bytes_(b) {}
  template <typename T> T get() {
    T v;
    take(&v, sizeof(T));
    return v;
  }
  template <typename T> void get(std::vector<T> &v) {
    int64_t n = get<int64_t>();
    if (n < 0 || (size_t)n > (bytes_.size() - at_) / sizeof(T))
      throw std::runtime_error("a step plan from rank 0 is truncated");
    v.resize((size_t)n);
    take(v.data(), (size_t)n * sizeof(T));
  }
  void getRaw(int32_t *p, size_t n) { take(p, n * sizeof(int32_t)); }

private:
  void take(void *p, size_t n) {
    if (n > bytes_.size() - at_)
      throw std::runtime_error("a step plan from rank 0 is truncated");
    if (n)
      std::memcpy(p, bytes_.data() + at_, n);
    at_ += n;
  }
  const std::vector<uint8_t> &bytes_;
  size_t at_ = 0;
};

// The batch's vectors, in one order for both sides.
template <typename F> void eachVector(StepBatch &b, F f) {
  for (std::vector<int32_t> *v : {&b.tokens, &b.positions, &b.seq_ids, &b.cu_seqlens, &b.kv_lens, &b.logit_rows,
                                  &b.prompt_lens, &b.slots, &b.has_initial_state, &b.state_in, &b.state_out,
                                  &b.inject_rows, &b.rope_positions, &b.key_ends})
    f(*v);
  f(b.inject_embeds);
}

std::vector<uint8_t> writeStep(const StepBatch &batch) {
  Writer w(Call::Run);
  for (int64_t n : {batch.num_tokens, batch.num_requests, batch.num_logit_rows, batch.num_groups,
                    batch.table_slots, batch.table_width})
    w.put(n);
  eachVector(const_cast<StepBatch &>(batch), [&](auto &v) { w.put(v); });
  // Only the rows of the step's requests: the others' tables do not change what this step reads.
  for (int64_t g = 0; g < batch.num_groups; ++g)
    for (int32_t slot : batch.slots)
      w.putRaw(batch.block_tables + (g * batch.table_slots + slot) * batch.table_width, batch.table_width);
  return std::move(w.bytes);
}

// Reads a step into `batch`, its table rows into `tables` (kept across steps, like rank 0's).
void readStep(Reader &r, StepBatch &batch, std::vector<int32_t> &tables) {
  int64_t dims[6];
  for (int64_t &d : dims)
    d = r.get<int64_t>();
  batch.num_tokens = dims[0];
  batch.num_requests = dims[1];
  batch.num_logit_rows = dims[2];
  batch.num_groups = dims[3];
  batch.table_slots = dims[4];
  batch.table_width = dims[5];
  eachVector(batch, [&](auto &v) { r.get(v); });
  for (int64_t d : dims)
    if (d < 0 || d > (int64_t(1) << 31))
      throw std::runtime_error("a step plan from rank 0 has a bad size");
  tables.resize((size_t)(batch.num_groups * batch.table_slots * batch.table_width), -1);
  for (int64_t g = 0; g < batch.num_groups; ++g)
    for (int32_t slot : batch.slots) {
      if (slot < 0 || slot >= batch.table_slots)
        throw std::runtime_error("a step plan from rank 0 names a slot beyond its tables");
      r.getRaw(tables.data() + (g * batch.table_slots + slot) * batch.table_width, batch.table_width);
    }
  batch.block_tables = tables.data();
}

class Leader : public Backend {
public:
  Leader(std::unique_ptr<Backend> local, std::shared_ptr<Communicator> comm)
      : local_(std::move(local)), comm_(std::move(comm)) {}
  ~Leader() override {
    Writer w(Call::Stop);
    comm_->broadcast(w.bytes, false);
  }

  std::string name() const override { return local_->name() + " x" + std::to_string(comm_->size()); }
  int64_t cacheBytesPerToken(int group) const override { return local_->cacheBytesPerToken(group); }
  int64_t stateBytesPerUnit() const override { return local_->stateBytesPerUnit(); }
  void allocateCache(int32_t blocks, int32_t units) override {
    Writer w(Call::Allocate);
    w.put(blocks);
    w.put(units);
    comm_->broadcast(w.bytes, false);
    guarded([&] { local_->allocateCache(blocks, units); });
  }
  void copyUnits(const std::vector<UnitCopy> &copies) override {
    Writer w(Call::Copy);
    w.put((int64_t)copies.size());
    for (const UnitCopy &c : copies) {
      w.put((int32_t)c.group);
      w.put(c.src);
      w.put(c.dst);
    }
    comm_->broadcast(w.bytes, false);
    guarded([&] { local_->copyUnits(copies); });
  }
  // Swapping: every rank moves its own shard of the units, the others into host copies of their
  // own, named by rank 0's host address (which stays the swap's while it is out).
  bool transferUnits(int group, const std::vector<int32_t> &units, uint8_t *host, bool toHost) override {
    if (units.empty()) // whether the backend can: the same backend kind on every rank
      return local_->transferUnits(group, units, host, toHost);
    Writer w(Call::Transfer);
    w.put((int32_t)group);
    w.put((uint8_t)toHost);
    w.put((uint64_t)(uintptr_t)host);
    w.put(units);
    comm_->broadcast(w.bytes, false);
    bool done = false;
    guarded([&] { done = local_->transferUnits(group, units, host, toHost); });
    return done;
  }
  void run(const StepBatch &batch, std::vector<float> &logits) override {
    std::vector<uint8_t> plan = writeStep(batch);
    comm_->broadcast(plan, false);
    guarded([&] { local_->run(batch, logits); });
  }

private:
  template <typename F> void guarded(F f) {
    try {
      f();
    } catch (const std::exception &e) {
      comm_->abort(std::string("rank 0: ") + e.what());
    }
  }
  std::unique_ptr<Backend> local_;
  std::shared_ptr<Communicator> comm_;
};

// Fault injection for the tests of a rank that dies or hangs mid-step: CBC_TEST_RANK_FAULT =
// "kill:R:S" or "hang:R:S" makes rank R (not 0) die or stop answering at its S-th step (from 1),
// before running it, so the other ranks wait in that step's collectives.
void injectFault(int rank, int64_t step) {
  const char *spec = std::getenv("CBC_TEST_RANK_FAULT");
  char what[8] = {0};
  int r = -1;
  long long s = -1;
  if (!spec || std::sscanf(spec, "%4[a-z]:%d:%lld", what, &r, &s) != 3 || r != rank || s != step)
    return;
  std::fprintf(stderr, "cbc: rank %d: CBC_TEST_RANK_FAULT: %s at step %lld\n", rank, what, s);
  std::fflush(stderr);
  if (std::strcmp(what, "kill") == 0)
    std::raise(SIGKILL);
  for (;;)
    std::this_thread::sleep_for(std::chrono::seconds(1));
}

// A follower's side of a swap: its units out into a host copy named by rank 0's address, or
// back in from it.
void transferHeld(Backend &local, const CachePlan &plan, Reader &r, std::map<uint64_t, std::vector<uint8_t>> &held) {
  int32_t group = r.get<int32_t>();
  bool toHost = r.get<uint8_t>() != 0;
  uint64_t key = r.get<uint64_t>();
  std::vector<int32_t> units;
  r.get(units);
  if (group < 0 || group >= (int)plan.groups.size())
    throw std::runtime_error("rank 0 swaps units of a cache group the plan lacks");
  if (toHost) {
    std::vector<uint8_t> &copy = held[key];
    bool state = plan.groups[group].kind == CacheGroup::State;
    copy.resize(units.size() *
                (size_t)(state ? local.stateBytesPerUnit() : local.cacheBytesPerToken(group) * plan.block_size));
    if (!local.transferUnits(group, units, copy.data(), true))
      throw std::runtime_error("this rank's backend cannot swap, and rank 0's can");
    return;
  }
  auto it = held.find(key);
  if (it == held.end())
    throw std::runtime_error("rank 0 swaps in units this rank never swapped out");
  local.transferUnits(group, units, it->second.data(), false);
  held.erase(it);
}

} // namespace

std::unique_ptr<Backend> leadRanks(std::unique_ptr<Backend> local, std::shared_ptr<Communicator> comm) {
  return std::make_unique<Leader>(std::move(local), std::move(comm));
}

void followRank0(Backend &local, Communicator &comm, const CachePlan &plan) {
  std::map<uint64_t, std::vector<uint8_t>> held; // swapped-out units, by rank 0's host address
  StepBatch batch;
  std::vector<int32_t> tables;
  std::vector<float> logits;
  std::vector<uint8_t> message;
  int64_t steps = 0;
  try {
    for (;;) {
      comm.broadcast(message, true);
      Reader r(message);
      switch ((Call)r.get<uint8_t>()) {
      case Call::Stop:
        return;
      case Call::Allocate: {
        int32_t blocks = r.get<int32_t>(), units = r.get<int32_t>();
        local.allocateCache(blocks, units);
        break;
      }
      case Call::Copy: {
        std::vector<UnitCopy> copies((size_t)std::max<int64_t>(0, std::min<int64_t>(r.get<int64_t>(), 1 << 24)));
        for (UnitCopy &c : copies) {
          c.group = r.get<int32_t>();
          c.src = r.get<int32_t>();
          c.dst = r.get<int32_t>();
        }
        local.copyUnits(copies);
        break;
      }
      case Call::Transfer:
        transferHeld(local, plan, r, held);
        break;
      case Call::Run:
        readStep(r, batch, tables);
        injectFault(comm.rank(), ++steps);
        local.run(batch, logits);
        break;
      default:
        throw std::runtime_error("an unknown call from rank 0");
      }
    }
  } catch (const std::exception &e) {
    comm.abort("rank " + std::to_string(comm.rank()) + ": " + e.what());
  }
}

} // namespace cbc::rt
