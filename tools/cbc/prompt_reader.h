// The prompts of `cbc run`, read on their own thread as they arrive (a file, a pipe or a
// terminal) and parsed into a bounded queue, so that serving starts with the first line and a
// late line is served while earlier ones run. Only the main thread touches the engine: the
// reader never does.
#ifndef CBC_TOOLS_CBC_PROMPT_READER_H
#define CBC_TOOLS_CBC_PROMPT_READER_H

#include "runtime/request_json.h"

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace cbc::cli {

struct PromptLine {
  size_t index = 0;  // the request's ordinal among the non-blank lines, from 0
  size_t line = 0;   // its line in the input, from 1, blank lines included
  rt::ParsedRequest request;
};

class PromptReader {
public:
  // Reads fd (closed when reading ends) on a new thread. Request i's default seed is `seed` + i.
  PromptReader(int fd, const rt::SamplingParams &defaults, uint64_t seed, size_t capacity = 4096);
  // Joins the thread when the input has ended; otherwise leaves it blocked in read() (the
  // process is exiting on an error) with the state it shares kept alive.
  ~PromptReader();

  // Moves the lines read so far into `out`, at most `max`. With `wait`, blocks until there is
  // one or the input has ended. False once the input has ended and every line was taken.
  bool take(std::vector<PromptLine> &out, size_t max, bool wait);
  // Lines read so far; final once take() returned false.
  size_t count() const;
  bool ended() const;
  // Set when reading failed (an I/O error, not the end of the input).
  std::string error() const;

private:
  struct Shared {
    mutable std::mutex m;
    std::condition_variable ready, room;
    std::deque<PromptLine> queue;
    size_t count = 0;
    bool ended = false;
    std::string error;
  };
  static void run(std::shared_ptr<Shared> s, int fd, rt::SamplingParams defaults, uint64_t seed,
                  size_t capacity);
  std::shared_ptr<Shared> shared_;
  std::thread thread_;
};

} // namespace cbc::cli

#endif
