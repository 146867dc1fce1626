#include "runtime/artefact.h"
#include "runtime/memory_estimate.h"
#include "runtime/occupancy.h"
#include "runtime/ptx_stats.h"
#include "runtime/weights.h"
#include "runtime/schema/opcodes.h"
#include "tools/cbc/cli.h"
#include "tools/cbc/commands.h"
#include "tools/cbc/dump_launches.h"

#include <cstdio>
#include <iostream>
#include <optional>

#include <flatbuffers/minireflect.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <sstream>

namespace cbc::cli {

namespace {

using rt::Artefact;

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + (shape[i] < 0 ? std::string("?") : std::to_string(shape[i]));
  return s + "]";
}

// Float arrays with more elements than this print their first and last few and a summary
// unless --full is given.
constexpr size_t kShortFloatArray = 16;
constexpr size_t kFloatArrayEnds = 4;

std::string floatText(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", x); // enough digits to tell any two floats apart
  return text;
}

// A float array (RoPE frequencies, decay rates): every value when short or with --full, else
// the ends with the count, the range and how many are not finite, so that a changed value can
// be seen.
std::string floatArrayText(const std::vector<double> &v, bool full) {
  std::string out = "[";
  auto item = [&](size_t i) { out += std::string(i ? ", " : " ") + floatText(v[i]); };
  if (full || v.size() <= kShortFloatArray) {
    for (size_t i = 0; i < v.size(); ++i)
      item(i);
    return out + (v.empty() ? "]" : " ]");
  }
  for (size_t i = 0; i < kFloatArrayEnds; ++i)
    item(i);
  out += ", ...";
  for (size_t i = v.size() - kFloatArrayEnds; i < v.size(); ++i)
    item(i);
  double lo = INFINITY, hi = -INFINITY;
  size_t nonFinite = 0;
  for (double x : v)
    if (std::isfinite(x)) {
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    } else {
      ++nonFinite;
    }
  out += " ] (" + std::to_string(v.size()) + " values, min " + floatText(lo) + ", max " + floatText(hi);
  if (nonFinite)
    out += ", " + std::to_string(nonFinite) + " not finite";
  return out + "; --full prints all)";
}

// The reflection tables' text form, except that doubles too small for its 12 fixed decimals
// (a renormalisation epsilon of 1e-20 would read 0.0) print in exponent form, and float arrays
// print through floatArrayText.
struct ParamsVisitor : flatbuffers::ToStringVisitor {
  explicit ParamsVisitor(bool full) : ToStringVisitor(" ", false, "", false), full_(full) {}
  void Double(double x) override {
    if (inFloats_)
      return floats_.push_back(x);
    if (x == 0 || std::fabs(x) >= 1e-6)
      return ToStringVisitor::Double(x);
    char text[32];
    std::snprintf(text, sizeof text, "%g", x);
    s += text;
  }
  void Float(float x) override {
    if (inFloats_)
      return floats_.push_back(x);
    ToStringVisitor::Float(x);
  }
  void StartVector() override {
    vectorAt_ = s.size();
    floats_.clear();
    ToStringVisitor::StartVector();
  }
  void Element(size_t i, flatbuffers::ElementaryType type, const flatbuffers::TypeTable *table,
               const uint8_t *val) override {
    inFloats_ = type == flatbuffers::ET_FLOAT || type == flatbuffers::ET_DOUBLE;
    ToStringVisitor::Element(i, type, table, val);
  }
  void EndVector() override {
    if (!inFloats_)
      return ToStringVisitor::EndVector();
    s.resize(vectorAt_);
    s += floatArrayText(floats_, full_);
    inFloats_ = false;
  }

private:
  bool full_;
  bool inFloats_ = false;
  size_t vectorAt_ = 0;
  std::vector<double> floats_;
};

// An instruction's parameter table as `field: value` pairs, read through the schema's
// reflection tables, so that a new op's parameters print without code here.
std::string paramsText(const rt::Instr &in, bool full) {
  fb::OpParams type = opcodeInfo(in.opcode).params;
  if (!in.params || type == fb::OpParams::NONE)
    return "";
  const flatbuffers::TypeTable *table = fb::OpParamsTypeTable()->type_refs[(int)type - 1]();
  ParamsVisitor visitor(full);
  flatbuffers::IterateObject(static_cast<const uint8_t *>(in.params), table, &visitor);
  return visitor.s;
}

std::string valueText(const Artefact &a, int id) {
  const rt::Value &v = a.program.values[id];
  std::string name = "%" + std::to_string(id);
  if (v.kind == rt::Value::Argument)
    return name + "(" + std::string(stepArgName(v.arg)) + ")";
  if (v.kind == rt::Value::Weight)
    return name + "(" + a.weights[v.weight].name + ")";
  return name;
}

std::string rangeText(const std::vector<int> &layers) {
  std::string s;
  for (size_t i = 0; i < layers.size();) {
    size_t j = i;
    while (j + 1 < layers.size() && layers[j + 1] == layers[j] + 1)
      ++j;
    s += (s.empty() ? "" : ",") + std::to_string(layers[i]);
    if (j > i)
      s += "-" + std::to_string(layers[j]);
    i = j + 1;
  }
  return s;
}

void printSummary(const Artefact &a) {
  const auto &m = a.meta;
  std::printf("cbc artefact (format %u, %s)\n", a.format_version, a.compiler.c_str());
  std::printf("model_type     %s\n", m.model_type.c_str());
  std::printf("vocab_size     %lld\n", (long long)m.vocab_size);
  std::printf("hidden_size    %lld\n", (long long)m.hidden_size);
  std::printf("layers         %lld\n", (long long)m.num_layers);
  std::printf("max_positions  %lld\n", (long long)m.max_positions);
  std::printf("eos_token_ids  ");
  for (size_t i = 0; i < m.eos_token_ids.size(); ++i)
    std::printf("%s%lld", i ? "," : "", (long long)m.eos_token_ids[i]);
  std::printf("\ninstructions   %zu\nweights        %zu\n", a.program.instrs.size(), a.weights.size());
  std::printf("kernels        %s\n", a.kernels ? std::to_string(a.kernels->names.size()).c_str() : "none");
}

void printProgram(const Artefact &a, bool full) {
  const auto &p = a.program;
  std::printf("arena: %lld elements per token row, %lld per request row\n",
              (long long)p.token_row_elems, (long long)p.request_row_elems);
  for (size_t i = 0; i < p.instrs.size(); ++i) {
    const rt::Instr &in = p.instrs[i];
    std::string outs;
    for (int o : in.outputs) {
      const rt::Value &v = p.values[o];
      outs += (outs.empty() ? "" : ", ") + valueText(a, o) + shapeText(v.shape) + "@" +
              (v.arena == 0 ? "T" : "R") + "+" + std::to_string(v.offset);
    }
    std::printf("%4zu  %s%s%s", i, outs.c_str(), outs.empty() ? "" : " = ", in.op.c_str());
    for (size_t k = 0; k < in.inputs.size(); ++k)
      std::printf("%s%s", k ? ", " : " ", valueText(a, in.inputs[k]).c_str());
    std::string params = paramsText(in, full);
    if (!params.empty())
      std::printf("  %s", params.c_str());
    std::printf("\n");
  }
  std::printf("output: %s\n", valueText(a, p.output).c_str());
}

// Per-request states live in one f32 slot per running request, whatever the prompt length.
void printStates(const std::vector<rt::StateDecl> &states) {
  if (states.empty())
    return;
  int64_t bytes = 0;
  for (const auto &s : states)
    bytes += s.elems() * 4;
  std::printf("per-request states: %zu, %lld bytes per request slot (f32)\n", states.size(),
              (long long)bytes);
  for (size_t i = 0; i < states.size();) {
    int layer = states[i].layer;
    std::string line;
    int64_t layerBytes = 0;
    for (; i < states.size() && states[i].layer == layer; ++i) {
      std::string dims;
      for (int64_t d : states[i].shape)
        dims += (dims.empty() ? "" : ", ") + std::to_string(d);
      line += " " + states[i].name + " [" + dims + "]";
      layerBytes += states[i].elems() * 4;
    }
    std::printf("  layer %d:%s, %lld bytes\n", layer, line.c_str(), (long long)layerBytes);
  }
}

// Bytes below a MiB as bytes, below a GiB in MiB, else in GB.
std::string sizeText(int64_t bytes) {
  if (bytes < (1 << 20))
    return std::to_string(bytes) + " bytes";
  if (bytes < (1ll << 30)) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f MiB", (double)bytes / (1 << 20));
    return text;
  }
  return rt::gigabytes(bytes);
}

// What one request holds at the model's longest context, group by group: a window or chunk
// group keeps at most its tokens, a compressed group one row per window, the state group one unit.
void printRequestBytes(const Artefact &a) {
  int64_t n = a.meta.max_positions;
  if (n <= 0)
    return;
  std::printf("one request at %lld tokens (max positions):", (long long)n);
  int64_t sum = 0;
  for (const auto &g : a.cache_plan.groups) {
    int64_t bytes = g.bytes_per_token * n;
    if (g.kind == rt::CacheGroup::State)
      bytes = g.bytes_per_unit;
    else if (g.kind == rt::CacheGroup::Paged && g.retention == rt::CacheGroup::Compressed)
      bytes = g.bytes_per_token * (n / g.tokens);
    else if (g.kind == rt::CacheGroup::Paged && g.retention != rt::CacheGroup::All)
      bytes = g.bytes_per_token * std::min(n, g.tokens);
    std::printf(" group %d %s;", g.id, sizeText(bytes).c_str());
    sum += bytes;
  }
  std::printf(" total %s\n", sizeText(sum).c_str());
}

void printCachePlan(const Artefact &a) {
  const auto &c = a.cache_plan;
  std::printf("block size: %d tokens; kv dtype: %s\n", c.block_size, rt::dtypeName(c.kv_dtype));
  if (c.length_dependent_above > 0)
    std::printf("rows depend on the sequence's length above %lld tokens (RoPE schedule): prefixes are shared "
                "below it\n",
                (long long)c.length_dependent_above);
  int64_t total = 0;
  for (const auto &g : c.groups) {
    if (g.kind == rt::CacheGroup::State) {
      std::printf("group %d: the states of %zu layers [%s], %lld bytes a unit (one snapshot of them all)\n", g.id,
                  g.layers.size(), rangeText(g.layers).c_str(), (long long)g.bytes_per_unit);
      continue;
    }
    if (g.kind == rt::CacheGroup::Static) {
      std::printf("group %d: static rows of %zu layers [%s], written once per request, %lld bytes/token\n", g.id,
                  g.layers.size(), rangeText(g.layers).c_str(), (long long)g.bytes_per_token);
      continue;
    }
    if (g.retention == rt::CacheGroup::Compressed) {
      // Its rows are per window: bytes_per_token is the bytes of one row.
      std::printf("group %d: %zu layers [%s], retention one row per %lld tokens (compressed windows), %lld "
                  "bytes/row (%.1f bytes/token)\n",
                  g.id, g.layers.size(), rangeText(g.layers).c_str(), (long long)g.tokens,
                  (long long)g.bytes_per_token, (double)g.bytes_per_token / (double)g.tokens);
      total += g.bytes_per_token / g.tokens;
      continue;
    }
    std::string retention = g.retention == rt::CacheGroup::All ? "all tokens"
                            : g.retention == rt::CacheGroup::Window
                                ? "last " + std::to_string(g.tokens) + " tokens (window)"
                                : "current chunk of " + std::to_string(g.tokens) + " tokens";
    std::printf("group %d: %zu layers [%s], retention %s, %lld bytes/token\n", g.id,
                g.layers.size(), rangeText(g.layers).c_str(), retention.c_str(),
                (long long)g.bytes_per_token);
    total += g.bytes_per_token;
  }
  if (c.layers.empty()) {
    std::printf("kv cache: none (no attention layers)\n");
    printStates(c.states);
    printRequestBytes(a);
    return;
  }
  std::printf("kv bytes per token: %lld\n", (long long)total);
  std::printf("per layer:\n");
  for (const auto &l : c.layers) {
    std::printf("  layer %d (group %d):", l.layer, l.group);
    for (auto &[name, elems] : l.rows)
      std::printf(" %s %lld", name.c_str(), (long long)elems);
    std::printf(" elements/token\n");
  }
  printStates(c.states);
  printRequestBytes(a);
}

// The load-time transforms beyond stack/transpose, so that a dump shows every step from the
// HF tensors to the program weight.
std::string transformText(const rt::WeightEntry &w) {
  std::string out;
  if (!w.regroup.empty()) {
    out += "regroup(";
    for (size_t i = 0; i < w.regroup.size(); ++i)
      out += (i ? "," : "") + std::to_string(w.regroup[i]);
    out += ") ";
  }
  if (w.block_diag > 0)
    out += "block_diag(" + std::to_string(w.block_diag) + ") ";
  if (!w.row_scales.empty()) {
    out += "row_scales(";
    for (size_t i = 0; i + 1 < w.row_scales.size(); i += 2) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%s%lldx%g", i ? "," : "", (long long)w.row_scales[i], w.row_scales[i + 1]);
      out += buf;
    }
    out += ") ";
  }
  // A rank's slice (cbc compile --tp): of which whole weight, along which dimension.
  if (w.shard_dim >= 0)
    out += "slice(dim " + std::to_string(w.shard_dim) + " of " + shapeText(w.wholeShape()) + ", " +
           std::to_string(w.shard_ranks) + " ranks) ";
  return out;
}

// With a checkpoint: how each HF name is found there (stored FP8 and dequantised, under an
// alias, or missing).
std::string sourceText(const std::string &name, const Artefact &a, const rt::Checkpoint *ckpt,
                       const std::map<std::string, rt::TensorRole> &roles) {
  if (!ckpt)
    return name;
  std::string found = rt::checkpointName(*ckpt, name, a.meta);
  if (found.empty())
    return name + " (missing)";
  std::string out = found == name ? name : name + " (as " + found + ")";
  rt::TensorRole role = roles.at(found);
  return role == rt::TensorRole::Fp8       ? out + " (fp8 dequantised)"
         : role == rt::TensorRole::Ternary ? out + " (ternary unpacked)"
                                           : out;
}

// The checkpoint tensors the manifest does not read: skipped MTP layers, grouped by layer
// prefix (a large model's MTP layer has thousands), and unused ones, each by name.
void printCheckpointSummary(const Artefact &a, const std::string &path,
                            const std::map<std::string, rt::TensorRole> &roles) {
  std::map<rt::TensorRole, int> count;
  std::map<std::string, int> mtpGroups;
  std::vector<std::string> unused;
  for (const auto &[name, role] : roles) {
    ++count[role];
    if (role == rt::TensorRole::MtpLayer) {
      size_t at = name.find("layers.");
      size_t end = at == std::string::npos ? std::string::npos : name.find('.', at + 7);
      ++mtpGroups[end == std::string::npos ? name.substr(0, name.find('.') + 1) : name.substr(0, end + 1)];
    } else if (role == rt::TensorRole::Unused) {
      unused.push_back(name);
    }
  }
  std::printf("checkpoint %s: %zu tensors; %d read as stored, %d F8_E4M3 dequantised with %d block scales",
              path.c_str(), roles.size(), count[rt::TensorRole::Read], count[rt::TensorRole::Fp8],
              count[rt::TensorRole::Fp8Scales]);
  if (count[rt::TensorRole::Fp8])
    std::printf(" (blocks of %lldx%lld)", (long long)a.meta.fp8_block_rows, (long long)a.meta.fp8_block_cols);
  if (count[rt::TensorRole::Ternary])
    std::printf(", %d packed ternary unpacked with %d scales", count[rt::TensorRole::Ternary],
                count[rt::TensorRole::TernaryScales]);
  std::printf("; %d skipped, %zu unused\n", count[rt::TensorRole::MtpLayer], unused.size());
  for (const auto &[prefix, n] : mtpGroups)
    std::printf("skipped %s* (%d tensors): MTP layer, not run (the model runs %lld decoder layers)\n",
                prefix.c_str(), n, (long long)a.meta.num_layers);
  for (const std::string &name : unused)
    std::printf("unused %s\n", name.c_str());
}

void printWeights(const Artefact &a, const rt::Checkpoint *ckpt, const std::string &ckptPath) {
  std::map<std::string, rt::TensorRole> roles;
  if (ckpt)
    roles = rt::checkpointRoles(a, *ckpt);
  int64_t totalElems = 0;
  for (const auto &w : a.weights) {
    int64_t n = 1;
    for (int64_t d : w.shape)
      n *= d;
    totalElems += n;
    std::printf("%-32s %-5s %-18s %s%s%s <-", w.name.c_str(), rt::dtypeName(w.dtype),
                shapeText(w.shape).c_str(), w.stack ? "stack " : "",
                w.transpose ? "transpose " : "", transformText(w).c_str());
    size_t shown = 0;
    for (const auto &part : w.parts) {
      if (shown++ == 2 && w.parts.size() > 3) {
        std::printf(" ... (%zu parts)", w.parts.size());
        break;
      }
      std::printf(" [");
      for (size_t i = 0; i < part.size(); ++i)
        std::printf("%s%s", i ? " | " : "", sourceText(part[i], a, ckpt, roles).c_str());
      std::printf("]");
    }
    std::printf("\n");
  }
  std::printf("%zu weights, %lld parameters\n", a.weights.size(), (long long)totalElems);
  if (ckpt)
    printCheckpointSummary(a, ckptPath, roles);
}

void printGraph(const Artefact &a) {
  const auto &p = a.program;
  std::printf("digraph step {\n  rankdir=TB;\n  node [fontname=\"monospace\", fontsize=10];\n");
  std::vector<int> producer(p.values.size(), -1);
  for (size_t i = 0; i < p.instrs.size(); ++i)
    for (int o : p.instrs[i].outputs)
      producer[o] = (int)i;
  std::set<int> argsUsed;
  for (size_t i = 0; i < p.instrs.size(); ++i) {
    const rt::Instr &in = p.instrs[i];
    std::string label = in.op;
    if (std::optional<int> layer = layerOf(in))
      label += "\\nlayer " + std::to_string(*layer);
    std::printf("  i%zu [shape=box, label=\"%s\"];\n", i, label.c_str());
    for (int v : in.inputs) {
      const rt::Value &val = p.values[v];
      if (val.kind == rt::Value::Activation && producer[v] >= 0)
        std::printf("  i%d -> i%zu [label=\"%s\"];\n", producer[v], i, shapeText(val.shape).c_str());
      else if (val.kind == rt::Value::Argument) {
        argsUsed.insert(v);
        std::printf("  a%d -> i%zu;\n", v, i);
      }
    }
  }
  for (int v : argsUsed)
    std::printf("  a%d [shape=ellipse, label=\"%s\"];\n", v, std::string(stepArgName(p.values[v].arg)).c_str());
  if (p.output >= 0 && producer[p.output] >= 0)
    std::printf("  logits [shape=ellipse];\n  i%d -> logits;\n", producer[p.output]);
  std::printf("}\n");
}

// How the kernels are launched: the largest block and dynamic shared memory of any launch of
// each (the runtime launches the device argmax itself, with kArgmaxThreads).
struct KernelShape {
  int threads = 0, dynamic_smem = 0;
};
std::vector<KernelShape> kernelShapes(const rt::KernelBundle &k) {
  std::vector<KernelShape> shapes(k.names.size());
  for (const auto &l : k.launches)
    if (l.kernel >= 0 && l.kernel < (int)shapes.size()) {
      shapes[l.kernel].threads = std::max(shapes[l.kernel].threads, l.block);
      shapes[l.kernel].dynamic_smem = std::max(shapes[l.kernel].dynamic_smem, l.smem);
    }
  if (k.argmax_kernel >= 0 && k.argmax_kernel < (int)shapes.size())
    shapes[k.argmax_kernel].threads = rt::kArgmaxThreads;
  return shapes;
}

// Appends "  threads T  blocks/SM B  occupancy P% (limit)" where the target's limits are known
// and ptxas reported the kernel's resources; the shared memory counted is static plus dynamic.
void printOccupancy(const std::optional<rt::SmLimits> &limits, const KernelShape &shape, int regs, int smem) {
  if (!limits || shape.threads <= 0 || regs < 0 || smem < 0)
    return;
  rt::Occupancy o = rt::occupancy(*limits, shape.threads, regs, smem + shape.dynamic_smem);
  std::printf("  threads %4d  blocks/SM %2d  occupancy %3d%% (%s)", shape.threads, o.blocks, o.percent, o.limit);
}

// What each kernel's PTX issues (runtime/ptx_stats.h), for the one target whose PTX the artefact
// carries (the first): tensor-core mma, ldmatrix, 128-bit global loads and cp.async copies.
// Rows start "  ptx " so that they never read as a target's kernel rows.
void printPtxCounts(const rt::KernelBundle &k) {
  if (k.ptx.empty())
    return;
  std::map<std::string, rt::PtxCounts> counts = rt::ptxInstructionCounts(k.ptx);
  std::printf("ptx %s: %zu bytes; instructions per kernel (static counts)\n", k.ptx_arch.c_str(), k.ptx.size());
  for (const std::string &name : k.names) {
    auto it = counts.find(name);
    if (it == counts.end()) {
      std::printf("  ptx %-40s not in the PTX\n", name.c_str());
      continue;
    }
    const rt::PtxCounts &c = it->second;
    std::printf("  ptx %-40s mma %3d  ldmatrix %3d  ld.global.128 %3d  cp.async %3d\n", name.c_str(), c.mma,
                c.ldmatrix, c.ld128, c.cp_async);
  }
}

void printKernels(const Artefact &a) {
  if (!a.kernels) {
    std::printf("no CUDA kernels (compiled with --no-cuda, or by a cbc built without CUDA)\n");
    return;
  }
  const auto &k = a.kernels.value();
  std::printf("%zu kernels, source hash %s, %zu bytes of CUDA source\n", k.names.size(),
              k.source_hash.c_str(), k.source.size());
  // Launches per step, and per decoder layer: those between consecutive layers' attention.
  size_t gemms = 0, gathers = 0;
  for (const auto &l : k.launches) {
    gemms += l.gemm.has_value();
    gathers += l.gather.has_value();
  }
  std::vector<int> attention;
  for (size_t i = 0; i < a.program.instrs.size(); ++i)
    if (a.program.instrs[i].opcode == fb::Opcode::KvAttention)
      attention.push_back((int)i);
  std::printf("launches per step: %zu (%zu generated kernels, %zu cuBLASLt GEMMs", k.launches.size(),
              k.launches.size() - gemms - gathers, gemms);
  if (gathers)
    std::printf(", %zu gathers over the ranks", gathers);
  std::printf(")\n");
  if (attention.size() >= 2) {
    size_t inLayers = 0, layerGemms = 0;
    for (const auto &l : k.launches)
      if (l.instr > attention.front() && l.instr <= attention.back()) {
        ++inLayers;
        layerGemms += l.gemm.has_value();
      }
    double per = (double)inLayers / (double)(attention.size() - 1);
    std::printf("launches per decoder layer: %.1f (%.1f kernels, %.1f GEMMs)\n", per,
                (double)(inLayers - layerGemms) / (attention.size() - 1),
                (double)layerGemms / (attention.size() - 1));
  }
  std::vector<KernelShape> shapes = kernelShapes(k);
  for (const auto &c : k.cubins) {
    std::optional<rt::SmLimits> limits = rt::smLimits(c.arch);
    std::printf("target %s: cubin %zu bytes\n", c.arch.c_str(), c.image.size());
    for (size_t i = 0; i < k.names.size(); ++i) {
      int regs = i < c.registers.size() ? c.registers[i] : -1, smem = i < c.shared_bytes.size() ? c.shared_bytes[i] : -1;
      std::printf("  %-40s regs %3d  spills %3d  smem %6d", k.names[i].c_str(), regs,
                  i < c.spills.size() ? c.spills[i] : -1, smem);
      printOccupancy(limits, shapes[i], regs, smem);
      std::printf("\n");
    }
  }
  printPtxCounts(k);
}

// What one rank holds on a device of `deviceGb` GB, and what its collectives move.
void printRankPlan(const Artefact &a, double deviceGb, int64_t stepTokens) {
  rt::RankPlan p = rt::planRank(a, (int64_t)(deviceGb * 1e9), stepTokens);
  const rt::MemoryEstimate &m = p.memory;
  std::printf("%lld rank%s%s, each on a %.0f GB device (a plan from the artefact's shapes; the CUDA backend does "
              "not run --tp artefacts yet)\n",
              (long long)p.ranks, p.ranks == 1 ? "" : "s", p.ranks == 1 ? " (compiled without --tp)" : "", deviceGb);
  std::printf("per rank: weights %s (%s), workspaces %s for %lld tokens a step\n", rt::gigabytes(m.weights).c_str(),
              m.weight_dtype.c_str(), rt::gigabytes(m.workspaces).c_str(), (long long)stepTokens);
  if (!p.fits()) {
    std::printf("does not fit: %s over the device\n",
                rt::gigabytes(m.weights + m.workspaces - p.device_bytes).c_str());
  } else {
    std::printf("cache: %s left, %lld bytes/token", rt::gigabytes(m.cache).c_str(),
                (long long)p.cache_bytes_per_token);
    if (p.cache_bytes_per_token > 0)
      std::printf(": %lld tokens (%lld requests of 32768 tokens)", (long long)p.cache_tokens,
                  (long long)(p.cache_tokens / 32768));
    if (p.state_bytes_per_request > 0)
      std::printf("; states %lld bytes a request", (long long)p.state_bytes_per_request);
    std::printf("\n");
  }
  if (p.ranks > 1)
    std::printf("per step: %lld all-reduces moving %lld bytes per token, %lld all-gathers moving %lld bytes per "
                "sampled row (payloads; a ring sends 2(N-1)/N of an all-reduce's each way)\n",
                (long long)p.all_reduces, (long long)p.reduce_bytes_per_token, (long long)p.all_gathers,
                (long long)p.gather_bytes_per_row);
}

} // namespace

int dumpMain(int argc, char **argv) {
  Args args("dump", "Inspects a cbc artefact. With no section flag it prints a summary.",
            {{"--ir", "", "the MLIR the artefact was lowered from"},
             {"--program", "", "the step program: instructions, values and arena slots"},
             {"--full", "", "with --program: every value of long float arrays (RoPE frequencies, decays)"},
             {"--kernels", "", "the generated CUDA kernels: registers, spills, shared memory, block and occupancy per target; mma, ldmatrix, 128-bit load and cp.async counts in the PTX"},
             {"--kernel-source", "", "the generated CUDA C++ source"},
             {"--launches", "", "the step as JSON: values, instructions, launches and cache plan (for bench/roofline.py)"},
             {"--cache-plan", "", "cache groups, retention and bytes per token"},
             {"--weights", "", "the weight manifest: program weights from HF tensors"},
             {"--weights-path", "CHECKPOINT",
              "with --weights: how a checkpoint's tensors load (FP8-dequantised, skipped MTP layers, unused)"},
             {"--graph", "", "the step program as Graphviz dot"},
             {"--config", "", "the config.json the artefact was compiled from"},
             {"--plan-memory", "", "what one rank holds on a GPU (weights, workspaces, cache tokens) and what its "
                                   "collectives move per step"},
             {"--device-memory", "GB", "with --plan-memory: the device's memory (default 141, an H200)"},
             {"--step-tokens", "N", "with --plan-memory: tokens a step (default 8192)"}},
            "MODEL");
  try {
    if (!args.parse(argc, argv))
      return 0;
    if (args.positionals().size() != 1)
      throw UsageError("expected exactly one MODEL argument");
    if (args.has("--weights-path") && !args.has("--weights"))
      throw UsageError("--weights-path goes with --weights");
    if (args.has("--full") && !args.has("--program"))
      throw UsageError("--full goes with --program");
    if ((args.has("--device-memory") || args.has("--step-tokens")) && !args.has("--plan-memory"))
      throw UsageError("--device-memory and --step-tokens go with --plan-memory");
    if (args.getDouble("--device-memory", 141) <= 0 || !std::isfinite(args.getDouble("--device-memory", 141)))
      throw UsageError("--device-memory must be a positive number of GB, got " + args.get("--device-memory"));
    if (args.getInt("--step-tokens", 8192) < 1 || args.getInt("--step-tokens", 8192) > (1 << 20))
      throw UsageError("--step-tokens must be in [1, 2^20], got " + args.get("--step-tokens"));
  } catch (const UsageError &e) {
    std::fprintf(stderr, "cbc dump: error: %s\n", e.what());
    return 2;
  }
  Artefact a;
  try {
    a = Artefact::load(args.positionals()[0]);
  } catch (const rt::ArtefactError &e) {
    std::fprintf(stderr, "cbc dump: error: %s\n", e.what());
    return 2;
  }
  bool any = false;
  if (args.has("--ir")) { std::fputs(a.ir.c_str(), stdout); any = true; }
  if (args.has("--config")) { std::fputs(a.config_json.c_str(), stdout); any = true; }
  if (args.has("--program")) { printProgram(a, args.has("--full")); any = true; }
  if (args.has("--cache-plan")) { printCachePlan(a); any = true; }
  if (args.has("--weights")) {
    std::unique_ptr<rt::Checkpoint> ckpt;
    try {
      if (args.has("--weights-path"))
        ckpt = std::make_unique<rt::Checkpoint>(args.get("--weights-path"));
    } catch (const rt::WeightError &e) {
      std::fprintf(stderr, "cbc dump: error: %s\n", e.what());
      return 2;
    }
    printWeights(a, ckpt.get(), args.get("--weights-path"));
    any = true;
  }
  if (args.has("--graph")) { printGraph(a); any = true; }
  if (args.has("--plan-memory")) {
    printRankPlan(a, args.getDouble("--device-memory", 141), args.getInt("--step-tokens", 8192));
    any = true;
  }
  if (args.has("--kernels")) { printKernels(a); any = true; }
  if (args.has("--launches")) { std::fputs(launchesJson(a).c_str(), stdout); any = true; }
  if (args.has("--kernel-source")) {
    std::fputs(a.kernels ? a.kernels->source.c_str() : "no CUDA kernels\n", stdout);
    any = true;
  }
  if (!any)
    printSummary(a);
  return 0;
}

} // namespace cbc::cli
