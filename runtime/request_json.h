// One JSONL request line of `cbc run` (and of anything else that reads requests as JSON): a list
// of token ids, or an object with "prompt" and sampling fields. A malformed line is not an
// exception: it comes back with `error` set, so the caller can answer it as a rejected request.
//
// A request may give embeddings for runs of its prompt's rows (a multimodal prompt's image or
// audio features): "embeds", a list of segments, each {"file": PATH, "tensor": NAME} or
// {"base64": F32_LE_BYTES}, placed by "start" or, when the request gives "placeholder": ID, on
// the prompt's runs of that id in order; "grid": [t, h, w] for a model with multimodal RoPE.
// Parsing reads no file: the segments come back pending, and runtime/embedding_source.h reads
// and places them once the model's embedding width is known.
#ifndef CBC_RUNTIME_REQUEST_JSON_H
#define CBC_RUNTIME_REQUEST_JSON_H

#include "runtime/request.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cbc::rt {

// One "embeds" segment as the line gives it: where its values come from and where they go.
struct PendingSegment {
  std::string file;   // a .npy or .safetensors path as given (relative: to the current directory)
  std::string tensor; // of a .safetensors file; empty: its only tensor
  // Inline values ("base64", decoded: float32); null for a file.
  std::shared_ptr<const std::vector<float>> values;
  int64_t start = -1; // the first prompt row; -1: placed on the request's next placeholder run
  int64_t grid[3] = {0, 0, 0};
  Modality modality = Modality::Image;
};

struct ParsedRequest {
  std::vector<int32_t> ids;
  SamplingParams params;
  nlohmann::json user_id; // the line's "id", echoed back when given (null otherwise)
  std::vector<PendingSegment> embeds;
  int64_t placeholder = -1; // the token id whose runs the segments take (-1: none given)
  std::string error;      // empty when the line is a well-formed request
};

// Parses one line; fields the line does not give keep their value in `defaults`. Never throws.
ParsedRequest parseRequestLine(const std::string &line, const SamplingParams &defaults);

// Standard base64 (RFC 4648, "=" padding optional) into bytes. Empty on success, else why,
// naming the offending character's offset.
std::string decodeBase64(const std::string &text, std::vector<uint8_t> &out);

} // namespace cbc::rt

#endif
