// The embeddings a request line gives (runtime/request_json.h's pending segments), read and
// placed once the model's embedding width is known: each segment's values come from a .npy or
// .safetensors file or from the line itself (base64), are split into rows of the model's width,
// and go to the prompt rows its "start" or its run of the request's placeholder id names.
// Nothing here throws: a bad segment is a reason naming it ("embeds[i]") and its field, which
// the caller answers as a rejected request.
#ifndef CBC_RUNTIME_EMBEDDING_SOURCE_H
#define CBC_RUNTIME_EMBEDDING_SOURCE_H

#include "runtime/request.h"
#include "runtime/request_json.h"

#include <cstdint>
#include <string>
#include <vector>

namespace cbc::rt {

// The values of an embeddings file as float32: a .npy (little-endian float32, float16 or float64,
// C order) or a tensor of a .safetensors file (F32, BF16 or F16; `tensor` empty: the file's only
// one). `columns` gets the last dimension of an array of two or more dimensions, 0 for a 1-D
// one. Empty on success, else why (without the path, which the caller names).
std::string readEmbeddingFile(const std::string &path, const std::string &tensor, std::vector<float> &values,
                              int64_t &columns);

// The runs [start, length] of `id` in the prompt, in order.
std::vector<std::pair<int64_t, int64_t>> placeholderRuns(const std::vector<int32_t> &prompt, int64_t id);

// The engine's segments for a request to a model that takes embeddings `width` wide (0: none):
// reads the files, checks that each segment holds whole rows, and places the segments at their
// "start" or, with `placeholder` >= 0, on the prompt's runs of that id (one segment a run, rows
// equal to its length). Empty on success, else why. The engine still checks what it checks
// (order, bounds, grids, finite values).
std::string resolveEmbeddings(const std::vector<PendingSegment> &pending, int64_t placeholder,
                              const std::vector<int32_t> &prompt, int64_t width, std::vector<EmbeddingSegment> &out);

} // namespace cbc::rt

#endif
