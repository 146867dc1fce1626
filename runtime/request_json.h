// One JSONL request line of `cbc run` (and of anything else that reads requests as JSON): a list
// of token ids, or an object with "prompt" and sampling fields. A malformed line is not an
// exception: it comes back with `error` set, so the caller can answer it as a rejected request.
#ifndef CBC_RUNTIME_REQUEST_JSON_H
#define CBC_RUNTIME_REQUEST_JSON_H

#include "runtime/request.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace cbc::rt {

struct ParsedRequest {
  std::vector<int32_t> ids;
  SamplingParams params;
  nlohmann::json user_id; // the line's "id", echoed back when given (null otherwise)
  std::string error;      // empty when the line is a well-formed request
};

// Parses one line; fields the line does not give keep their value in `defaults`. Never throws.
ParsedRequest parseRequestLine(const std::string &line, const SamplingParams &defaults);

} // namespace cbc::rt

#endif
