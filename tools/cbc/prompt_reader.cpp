#include "tools/cbc/prompt_reader.h"

#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace cbc::cli {

PromptReader::PromptReader(int fd, const rt::SamplingParams &defaults, uint64_t seed, size_t capacity)
    : shared_(std::make_shared<Shared>()) {
  thread_ = std::thread(run, shared_, fd, defaults, seed, capacity);
}

PromptReader::~PromptReader() {
  if (!thread_.joinable())
    return;
  if (ended())
    thread_.join();
  else
    thread_.detach(); // blocked in read(): it holds its own reference to the shared state
}

// Longer lines are refused unparsed (and not held): 64 MiB is some nine million token ids.
constexpr size_t kMaxLineBytes = size_t(64) << 20;

// read(2) rather than iostreams: a line is handed over as soon as its newline arrives, and a
// thread blocked here can be left behind safely when the process exits on an error.
void PromptReader::run(std::shared_ptr<Shared> s, int fd, rt::SamplingParams defaults, uint64_t seed,
                       size_t capacity) {
  std::string pending, error;
  bool tooLong = false;
  size_t lineNo = 0, index = 0;
  std::vector<char> buf(1 << 16);
  auto handOver = [&] {
    ++lineNo;
    bool blank = !tooLong && pending.find_first_not_of(" \t\r") == std::string::npos;
    if (!blank) { // blank lines are no request, but they count in the line numbers
      rt::SamplingParams d = defaults;
      d.seed = seed + index;
      PromptLine p{index++, lineNo, {}};
      if (tooLong)
        p.request.error = "longer than " + std::to_string(kMaxLineBytes >> 20) + " MiB";
      else
        p.request = rt::parseRequestLine(pending, d);
      std::unique_lock<std::mutex> lock(s->m);
      s->room.wait(lock, [&] { return s->queue.size() < capacity; });
      s->queue.push_back(std::move(p));
      s->count++;
      s->ready.notify_all();
    }
    pending.clear();
    tooLong = false;
  };
  auto append = [&](const char *data, size_t n) {
    if (tooLong || pending.size() + n > kMaxLineBytes) {
      tooLong = true;
      std::string().swap(pending);
    } else {
      pending.append(data, n);
    }
  };
  try {
    for (;;) {
      ssize_t n = ::read(fd, buf.data(), buf.size());
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0) {
        error = std::strerror(errno);
        break;
      }
      if (n == 0)
        break;
      size_t start = 0;
      for (size_t i = 0; i < (size_t)n; ++i)
        if (buf[i] == '\n') {
          append(buf.data() + start, i - start);
          handOver();
          start = i + 1;
        }
      append(buf.data() + start, (size_t)n - start);
    }
    if (error.empty() && (!pending.empty() || tooLong))
      handOver(); // a last line without its newline
  } catch (const std::exception &e) {
    error = e.what(); // out of memory holding the queue: reported, not a crash of this thread
  }
  if (fd != 0)
    ::close(fd);
  std::lock_guard<std::mutex> lock(s->m);
  s->ended = true;
  s->error = error;
  s->ready.notify_all();
}

bool PromptReader::take(std::vector<PromptLine> &out, size_t max, bool wait) {
  std::unique_lock<std::mutex> lock(shared_->m);
  if (wait)
    shared_->ready.wait(lock, [&] { return !shared_->queue.empty() || shared_->ended; });
  while (!shared_->queue.empty() && max-- > 0) {
    out.push_back(std::move(shared_->queue.front()));
    shared_->queue.pop_front();
  }
  shared_->room.notify_all();
  return !(shared_->ended && shared_->queue.empty() && out.empty());
}

size_t PromptReader::count() const {
  std::lock_guard<std::mutex> lock(shared_->m);
  return shared_->count;
}

bool PromptReader::ended() const {
  std::lock_guard<std::mutex> lock(shared_->m);
  return shared_->ended;
}

std::string PromptReader::error() const {
  std::lock_guard<std::mutex> lock(shared_->m);
  return shared_->error;
}

} // namespace cbc::cli
