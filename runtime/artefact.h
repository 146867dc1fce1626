// The artefact (model.fb) as plain C++ values, but for the instructions' parameter tables, which
// are read in place. Loading checks the integrity trailer (runtime/schema/integrity.h), then
// verifies the FlatBuffer, its file identifier and format version and that every instruction
// carries its opcode's table.
#ifndef CBC_RUNTIME_ARTEFACT_H
#define CBC_RUNTIME_ARTEFACT_H

#include "runtime/schema/model_generated.h"
#include "runtime/schema/step_abi.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace cbc::rt {

class ArtefactError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

enum class DType { F32, BF16, F16, I32 };
const char *dtypeName(DType d);
size_t dtypeBytes(DType d);

// One instruction: its opcode and operands, and its parameter table, which stays in the
// artefact's (verified, shared) buffer.
struct Instr {
  fb::Opcode opcode = fb::Opcode::Linear;
  std::string op; // the cbc op's name, for messages
  std::vector<int> inputs, outputs;
  const void *params = nullptr; // the opcode's table (runtime/schema/opcodes.h), or null

  // The parameter table, whose type the loader checked against the opcode.
  template <typename T> const T &get() const { return *static_cast<const T *>(params); }
};

// Where an instruction keeps data across steps (its op's site in the op table), read from its
// parameter table: a cache op's cache site, a state op's state site; null for other ops.
const fb::CacheSite *cacheSiteOf(const Instr &in);
const fb::StateSite *stateSiteOf(const Instr &in);
// The decoder layer of an instruction with a cache or state site.
std::optional<int> layerOf(const Instr &in);

struct Value {
  enum Kind { Argument, Weight, Activation } kind = Activation;
  DType dtype = DType::F32;
  std::vector<int64_t> shape; // -1: the dynamic row dimension
  StepArg arg = StepArg::Tokens; // Argument: which one
  int weight = -1;
  int arena = -1; // 0: per-token rows, 1: per-request rows
  int64_t offset = 0;
  int64_t cols() const { return shape.size() == 2 ? shape[1] : 1; }
};

struct Program {
  std::vector<Value> values;
  std::vector<Instr> instrs;
  int output = -1;
  int64_t token_row_elems = 0, request_row_elems = 0;
  // The step argument's value where an instruction reads it; null where none does (the
  // runtime then need not fill it: injected embeddings, multimodal positions).
  const Value *readArg(StepArg a) const;
};

struct WeightEntry {
  std::string name;
  DType dtype = DType::BF16;
  std::vector<int64_t> shape;
  std::vector<std::vector<std::string>> parts;
  bool stack = false;
  bool transpose = false;
  bool mxfp4 = false;              // each part names [blocks, scales] of MXFP4 data
  bool norm_scale = false;         // a norm's per-feature scale: random weights centre on 1
  std::vector<int64_t> regroup;
  int64_t block_diag = 0;          // 0: none
  std::vector<double> row_scales;  // [rows, factor, ...]
  bool flatten = false;            // sources read as [rows, last dim], the part read in `shape`
  // Tensor parallelism (#cbc.shard): along shard_dim (-1: none), segments of the assembled
  // weight, each cut in its pieces; rank r keeps piece r * pieces[i] / shard_ranks of each.
  int shard_dim = -1;
  int64_t shard_ranks = 1;
  std::vector<int64_t> shard_segments, shard_pieces;
  // The assembled weight's shape before a rank takes its slice.
  std::vector<int64_t> wholeShape() const;
};

struct CacheLayer {
  int layer = 0, group = 0;
  std::vector<std::pair<std::string, int64_t>> rows; // name, elements per token
  int64_t elemsPerToken() const {
    int64_t n = 0;
    for (auto &r : rows) n += r.second;
    return n;
  }
};
// A group of the cache's one memory model: paged rows per token (block tables, a retention), the
// per-request states (one unit is a snapshot of all of them), or static rows written once.
struct CacheGroup {
  int id = 0;
  enum Kind { Paged, State, Static } kind = Paged; // the schema's CacheKind values
  // Compressed: one row per window of `tokens` positions, written as the window closes.
  enum Retention { All, Window, Chunk, Compressed } retention = All;
  int64_t tokens = 0;
  std::vector<int> layers;
  int64_t bytes_per_token = 0;
  int64_t bytes_per_unit = 0; // the state group's bytes of one snapshot
};
struct StateDecl {
  int layer = 0;
  std::string name;
  std::vector<int64_t> shape;
  int64_t elems() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};
struct CachePlan {
  int block_size = 16;
  DType kv_dtype = DType::BF16;
  std::vector<CacheGroup> groups; // paged, then static, then at most one state group
  std::vector<CacheLayer> layers;
  std::vector<StateDecl> states;  // those of the state group's layers
  // The cached rows depend on the sequence's length above this many tokens (0: never).
  int64_t length_dependent_above = 0;
  // The groups with block tables (paged and static), numbered from 0.
  int tableGroups() const {
    int n = 0;
    for (const CacheGroup &g : groups)
      n += g.kind != CacheGroup::State;
    return n;
  }
};

struct ModelMeta {
  std::string model_type;
  int64_t vocab_size = 0, hidden_size = 0, num_layers = 0, max_positions = 0;
  // The token ids a prompt may hold: the rows of the embedding table, which a padded head's model
  // (logits sliced to vocab_size) keeps more of; derived from the program at load (0: vocab_size).
  int64_t input_vocab = 0;
  int64_t promptVocab() const { return std::max(vocab_size, input_vocab); }
  std::vector<int64_t> eos_token_ids;
  int64_t bos_token_id = -1;
  std::string checkpoint_dtype, quantization;
  // quantization "fp8": the [rows, cols] block one scale covers; 0 when the model has no fp8.
  int64_t fp8_block_rows = 0, fp8_block_cols = 0;
  std::vector<std::pair<std::string, std::string>> weight_aliases;
  int64_t injected_token = -1; // the token id read at rows whose embeddings are given; -1: theirs
};

struct KernelImage {
  std::string arch;
  std::vector<uint8_t> image;
  std::vector<int> registers, spills, shared_bytes;
};
struct KernelArg {
  enum Kind { Value, Cache, Workspace, Runtime, Int, Float } kind = Value;
  int index = 0; // Runtime: a RuntimeVar
  std::string name;
  int64_t i = 0;
  float f = 0;
};
struct GridDim {
  std::optional<RuntimeVar> var; // none: the dimension is `add`
  int64_t mul = 1, div = 1, add = 0;
};
struct GemmDesc {
  int x = -1, w = -1, bias = -1, out = -1;
};
// The ranks' rows of value x gathered into a workspace (model.fbs, table Gather).
struct GatherDesc {
  int x = -1, workspace = -1;
};
struct Launch {
  int instr = -1;
  int kernel = -1; // -1: a GEMM or a gather
  GridDim grid[3];
  int block = 1, smem = 0;
  std::vector<KernelArg> args;
  std::optional<GemmDesc> gemm;
  std::optional<GatherDesc> gather;
};
struct WorkspaceDesc {
  std::string name;
  int64_t bytes_per_token = 0, bytes_fixed = 0;
};
// The threads a block the runtime launches the device argmax with (argmax.cuh strides its row
// by blockDim, so any multiple of 32 works).
constexpr int kArgmaxThreads = 256;
struct KernelBundle {
  std::string source, ptx, ptx_arch, source_hash;
  std::vector<std::string> names;
  std::vector<KernelImage> cubins;
  std::vector<Launch> launches;
  std::vector<WorkspaceDesc> workspaces;
  std::vector<DType> value_dtypes;
  int argmax_kernel = -1; // launched by the runtime itself, with kArgmaxThreads threads a block
};

struct Artefact {
  // The verified bytes the instructions' parameter tables point into; shared by copies.
  std::shared_ptr<const std::vector<uint8_t>> bytes;
  uint32_t format_version = 0;
  std::string compiler, config_json, ir;
  std::vector<std::string> config_keys; // config_json's keys that decide the computation
  ModelMeta meta;
  Program program;
  CachePlan cache_plan;
  std::vector<WeightEntry> weights;
  std::optional<KernelBundle> kernels;
  int64_t ranks = 1; // the tensor-parallel ranks the program was compiled for (cbc compile --tp)

  // verifyChecksum false skips the integrity trailer's hash (the trailer must still be there):
  // for fuzzers and tests that patch fields, which reach the structural checks behind it.
  static Artefact fromBytes(const uint8_t *data, size_t size, bool verifyChecksum = true);
  static Artefact load(const std::string &path);
};

} // namespace cbc::rt

#endif
