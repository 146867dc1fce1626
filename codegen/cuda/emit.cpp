#include "codegen/cuda/emit.h"

#include "codegen/cuda/prelude.h"
#include "dialects/cbc/CbcOps.h"
#include "runtime/schema/kernel_abi.h"
#include "runtime/schema/model_generated.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdio>
#include <map>
#include <set>
#include <sstream>

namespace cbc::codegen {

using namespace mlir;

namespace {

std::string fmtFloat(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%af", (float)v);
  return buf;
}

// Replaces @KEY@ placeholders.
std::string fill(std::string text, const std::map<std::string, std::string> &vars) {
  for (const auto &[k, v] : vars) {
    std::string key = "@" + k + "@";
    for (size_t pos = text.find(key); pos != std::string::npos; pos = text.find(key, pos + v.size()))
      text.replace(pos, key.size(), v);
  }
  return text;
}

std::string str(int64_t v) { return std::to_string(v); }

int64_t cols(Value v) { return llvm::cast<RankedTensorType>(v.getType()).getDimSize(1); }

// The prelude's device function for an activation.
std::string actFn(Activation a) { return "act_" + stringifyActivation(a).str(); }

// An expert's unit over its gate g and up u: act(u) ungated, or a GLU.
std::string expertGlu(Attribute act, bool ungated) {
  if (auto clamp = llvm::dyn_cast<ClampedSwigluAttr>(act)) {
    std::string lim = fmtFloat(clamp.getLimit().convertToDouble());
    std::string alpha = fmtFloat(clamp.getAlpha().convertToDouble());
    return "(fminf(fmaxf(u, -" + lim + "), " + lim + ") + 1.0f) * (fminf(g, " + lim + ") / (1.0f + expf(-" + alpha +
           " * fminf(g, " + lim + "))))";
  }
  std::string fn = actFn(llvm::cast<ActivationAttr>(act).getValue());
  return ungated ? fn + "(u)" : fn + "(g) * u";
}

class Emitter {
public:
  explicit Emitter(ModuleOp module) : module_(module) {}
  FailureOr<CudaProgram> run();

private:
  // ---- values ----
  int id(Value v) const { return ids_.at(v.getAsOpaquePointer()); }
  std::string ty(Value v) const { // the device element type
    int d = prog_.value_dtypes[id(v)];
    return d == (int)fb::DType::BF16 ? "bf16" : d == (int)fb::DType::I32 ? "int" : "float";
  }
  RuntimeVar rowsVar(Value v) const {
    return perRequest_.count(v.getAsOpaquePointer()) ? RuntimeVar::NumLogitRows : RuntimeVar::NumTokens;
  }

  // ---- kernels and launches ----
  int kernel(const std::string &hint, const std::string &body);
  LaunchOut &launch(int kernelIndex, int block, int smem = 0);
  static KernelArgOut val(int v) { return {KernelArgOut::Value, v, "", 0, 0}; }
  static KernelArgOut null() { return {KernelArgOut::Value, -1, "", 0, 0}; } // a null pointer
  static KernelArgOut rt(RuntimeVar v) { return {KernelArgOut::Runtime, (int)v, "", 0, 0}; }
  static KernelArgOut cst(int64_t i) { return {KernelArgOut::Int, 0, "", i, 0}; }
  static KernelArgOut cache(int layer) { return {KernelArgOut::Cache, layer, "", 0, 0}; }
  int workspace(const std::string &name, int64_t perToken, int64_t fixed);
  static KernelArgOut ws(int index) { return {KernelArgOut::Workspace, index, "", 0, 0}; }

  LogicalResult emitOp(Operation &op);
  void elementwise(Operation &op, const std::string &hint, const std::string &expr, Value out,
                   const std::vector<Value> &ins);
  void emitRmsNorm(RmsNormOp op);
  void emitEmbed(EmbedOp op);
  void emitSplit(SplitOp op);
  void emitGlu(GluOp op);
  void emitConcat(ConcatOp op);
  void emitRope(RopeOp op);
  void emitAppend(KvAppendOp op);
  void emitAttention(KvAttentionOp op);
  void emitGather(RowsGatherOp op);
  void emitRoute(MoeRouteOp op);
  void emitExperts(MoeExpertsOp op);
  void emitArgmax(Value logits);
  void emitAddRmsNorm(AddRmsNormOp op);
  void emitRmsNormGated(RmsNormGatedOp op);
  void emitConv1d(StateConv1dOp op);
  void emitGatedDelta(GatedDeltaOp op);
  void emitSsd(SsdOp op);
  void emitSelective(SelectiveScanOp op);
  KernelArgOut state(int layer, const std::string &name);
  void emitRopeAppend(KvRopeAppendOp op);

  ModuleOp module_;
  std::string kvType_ = "bf16"; // the kv pool's element type
  int64_t blockSize_ = 16;
  CudaProgram prog_;
  std::map<const void *, int> ids_;
  std::set<const void *> perRequest_;
  std::map<std::string, int> kernelBySource_;
  std::map<std::string, int> workspaceByName_;
  int instr_ = -1;
  std::ostringstream source_;
};

int Emitter::kernel(const std::string &hint, const std::string &text) {
  std::string body = fill(text, {{"TKV", kvType_}});
  std::string key = hint + "\n" + body;
  auto it = kernelBySource_.find(key);
  if (it != kernelBySource_.end())
    return it->second;
  int index = (int)prog_.names.size();
  std::string name = "cbc_" + hint + "_" + std::to_string(index);
  prog_.names.push_back(name);
  source_ << "\nextern \"C\" __global__ void " << name << "(CbcArgs a) {\n"
          << body << "}\n";
  kernelBySource_[key] = index;
  return index;
}

LaunchOut &Emitter::launch(int kernelIndex, int block, int smem) {
  LaunchOut l;
  l.instr = instr_;
  l.kernel = kernelIndex;
  l.block = block;
  l.smem = smem;
  l.grid[1].add = 1;
  l.grid[2].add = 1;
  prog_.launches.push_back(l);
  return prog_.launches.back();
}

int Emitter::workspace(const std::string &name, int64_t perToken, int64_t fixed) {
  auto it = workspaceByName_.find(name);
  if (it != workspaceByName_.end()) {
    WorkspaceOut &w = prog_.workspaces[it->second];
    w.bytes_per_token = std::max(w.bytes_per_token, perToken);
    w.bytes_fixed = std::max(w.bytes_fixed, fixed);
    return it->second;
  }
  prog_.workspaces.push_back({name, perToken, fixed});
  return workspaceByName_[name] = (int)prog_.workspaces.size() - 1;
}

// y[i] = expr over n = rows * width elements; inputs are named x0, x1, ... and their widths.
void Emitter::elementwise(Operation &op, const std::string &hint, const std::string &expr,
                          Value out, const std::vector<Value> &ins) {
  std::ostringstream body;
  body << "  long long n = a.i[0] * " << cols(out) << "LL;\n"
       << "  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
       << "  if (i >= n) return;\n"
       << "  long long r = i / " << cols(out) << ", c = i % " << cols(out) << ";\n"
       << "  (void)r; (void)c;\n";
  for (size_t k = 0; k < ins.size(); ++k)
    body << "  const " << ty(ins[k]) << " *x" << k << " = (const " << ty(ins[k]) << " *)a.p[" << k << "];\n";
  body << "  " << ty(out) << " *y = (" << ty(out) << " *)a.p[" << ins.size() << "];\n"
       << "  st(y, i, " << expr << ");\n";
  int k = kernel(hint, body.str());
  LaunchOut &l = launch(k, 256);
  l.grid[0] = {rowsVar(out), cols(out), 256, 0};
  for (Value v : ins)
    l.args.push_back(val(id(v)));
  l.args.push_back(val(id(out)));
  l.args.push_back(rt(rowsVar(out)));
}

void Emitter::emitEmbed(EmbedOp op) {
  int64_t H = cols(op.getResult());
  std::string body = fill(R"(  const int *tok = (const int *)a.p[0];
  const @TW@ *table = (const @TW@ *)a.p[1];
  @TO@ *out = (@TO@ *)a.p[2];
  long long t = blockIdx.x, row = tok[t];
  for (int j = threadIdx.x; j < @H@; j += blockDim.x)
    st(out, t * @H@ + j, ld(table, row * @H@ + j) * @SCALE@);
)", {{"TW", ty(op.getTable())}, {"TO", ty(op.getResult())}, {"H", str(H)},
     {"SCALE", fmtFloat(op.getScale().convertToDouble())}});
  LaunchOut &l = launch(kernel("embed", body), 128);
  l.grid[0] = {RuntimeVar::NumTokens, 1, 1, 0};
  l.args = {val(id(op.getTokens())), val(id(op.getTable())), val(id(op.getResult()))};
}

void Emitter::emitRmsNorm(RmsNormOp op) {
  int64_t W = cols(op.getX());
  int64_t G = op.getGroupAttr() ? op.getGroupAttr().getInt() : W;
  bool hasW = (bool)op.getWeight();
  int block = G >= 256 ? 256 : G >= 128 ? 128 : G >= 64 ? 64 : 32;
  std::string body = fill(R"(  __shared__ float scratch[32];
  const @TI@ *x = (const @TI@ *)a.p[0];
  @TO@ *y = (@TO@ *)a.p[1];
  const @TW@ *w = (const @TW@ *)a.p[2];
  long long base = (long long)blockIdx.x * @G@; // rows * groups blocks, one group each
  float ss = 0.0f;
  for (int j = threadIdx.x; j < @G@; j += blockDim.x) {
    float v = ld(x, base + j);
    ss += v * v;
  }
  ss = block_sum(ss, scratch);
  float inv = rsqrtf(ss / @G@.0f + @EPS@);
  for (int j = threadIdx.x; j < @G@; j += blockDim.x)
    st(y, base + j, ld(x, base + j) * inv * (@HASW@ ? ld(w, j) + @OFF@ : 1.0f));
)", {{"TI", ty(op.getX())}, {"TO", ty(op.getResult())}, {"TW", hasW ? ty(op.getWeight()) : "bf16"},
     {"G", str(G)}, {"EPS", fmtFloat(op.getEps().convertToDouble())},
     {"OFF", fmtFloat(op.getOffset().convertToDouble())}, {"HASW", hasW ? "true" : "false"}});
  LaunchOut &l = launch(kernel("rms_norm", body), block);
  l.grid[0] = {rowsVar(op.getX()), W / G, 1, 0};
  l.args = {val(id(op.getX())), val(id(op.getResult())), hasW ? val(id(op.getWeight())) : null()};
}

void Emitter::emitSplit(SplitOp op) {
  int64_t W = cols(op.getX());
  std::ostringstream body;
  body << "  long long n = a.i[0] * " << W << "LL;\n"
       << "  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
       << "  if (i >= n) return;\n"
       << "  long long r = i / " << W << ", c = i % " << W << ";\n"
       << "  const " << ty(op.getX()) << " *x = (const " << ty(op.getX()) << " *)a.p[0];\n"
       << "  float v = ld(x, i);\n";
  int64_t col = 0;
  for (auto [k, r] : llvm::enumerate(op.getResults())) {
    int64_t w = cols(r);
    body << "  if (c >= " << col << " && c < " << col + w << ") st((" << ty(r) << " *)a.p["
         << k + 1 << "], r * " << w << " + (c - " << col << "), v);\n";
    col += w;
  }
  LaunchOut &l = launch(kernel("split", body.str()), 256);
  l.grid[0] = {rowsVar(op.getX()), W, 256, 0};
  l.args.push_back(val(id(op.getX())));
  for (Value r : op.getResults())
    l.args.push_back(val(id(r)));
  l.args.push_back(rt(rowsVar(op.getX())));
}

// The inverse of split: each output element copies from the input its column falls in.
void Emitter::emitConcat(ConcatOp op) {
  int64_t W = cols(op.getResult());
  std::ostringstream body;
  body << "  long long n = a.i[0] * " << W << "LL;\n"
       << "  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
       << "  if (i >= n) return;\n"
       << "  long long r = i / " << W << ", c = i % " << W << ";\n"
       << "  " << ty(op.getResult()) << " *y = (" << ty(op.getResult()) << " *)a.p["
       << op.getInputs().size() << "];\n"
       << "  float v = 0.0f;\n";
  int64_t col = 0;
  for (auto [k, x] : llvm::enumerate(op.getInputs())) {
    int64_t w = cols(x);
    body << "  if (c >= " << col << " && c < " << col + w << ") v = ld((const " << ty(x) << " *)a.p[" << k
         << "], r * " << w << " + (c - " << col << "));\n";
    col += w;
  }
  body << "  st(y, i, v);\n";
  LaunchOut &l = launch(kernel("concat", body.str()), 256);
  l.grid[0] = {rowsVar(op.getResult()), W, 256, 0};
  for (Value x : op.getInputs())
    l.args.push_back(val(id(x)));
  l.args.push_back(val(id(op.getResult())));
  l.args.push_back(rt(rowsVar(op.getResult())));
}

void Emitter::emitGlu(GluOp op) {
  int64_t I = cols(op.getResult());
  bool inter = op.getLayout() == GluLayout::interleaved;
  std::string g = inter ? "ld(x0, r * " + str(2 * I) + " + 2 * c)" : "ld(x0, r * " + str(2 * I) + " + c)";
  std::string u = inter ? "ld(x0, r * " + str(2 * I) + " + 2 * c + 1)" : "ld(x0, r * " + str(2 * I) + " + " + str(I) + " + c)";
  std::string expr;
  if (auto clamp = llvm::dyn_cast<ClampedSwigluAttr>(op.getAct())) {
    std::string lim = fmtFloat(clamp.getLimit().convertToDouble());
    std::string alpha = fmtFloat(clamp.getAlpha().convertToDouble());
    expr = "(fminf(fmaxf(" + u + ", -" + lim + "), " + lim + ") + 1.0f) * (fminf(" + g + ", " + lim +
           ") / (1.0f + expf(-" + alpha + " * fminf(" + g + ", " + lim + "))))";
  } else {
    expr = actFn(llvm::cast<ActivationAttr>(op.getAct()).getValue()) + "(" + g + ") * " + u;
  }
  elementwise(*op, "glu", expr, op.getResult(), {op.getX()});
}

void Emitter::emitRope(RopeOp op) {
  RopeAttr rope = op.getRope();
  int64_t W = cols(op.getX()), D = rope.getHeadDim(), RD = rope.getRotaryDim();
  int64_t half = RD / 2, heads = W / D;
  auto table = [&](ArrayRef<float> f) {
    std::string s;
    for (float v : f)
      s += fmtFloat(v) + ", ";
    return s;
  };
  std::string longSel = "false", dyn = "false";
  std::string longTable = "0.0f";
  if (rope.getInvFreqLong()) {
    longSel = "seq_len > " + str(rope.getLongAfter());
    longTable = table(rope.getInvFreqLong().asArrayRef());
  }
  std::string dynBase = "0.0f", dynFactor = "0.0f", dynMax = "1";
  if (rope.getDynamicBase().convertToDouble() != 0) {
    dyn = "seq_len > " + str(rope.getDynamicMaxPositions());
    dynBase = fmtFloat(rope.getDynamicBase().convertToDouble());
    dynFactor = fmtFloat(rope.getDynamicFactor().convertToDouble());
    dynMax = str(rope.getDynamicMaxPositions());
  }
  bool inter = rope.getPairing() == RopePairing::interleaved;
  std::string body = fill(R"(  const @TI@ *x = (const @TI@ *)a.p[0];
  const int *positions = (const int *)a.p[1];
  const int *seq_ids = (const int *)a.p[2];
  const int *prompt_lens = (const int *)a.p[3];
  @TO@ *y = (@TO@ *)a.p[4];
  const float freq[] = {@FREQ@};
  const float freq_long[] = {@LONG@};
  long long t = blockIdx.x;
  int pos = positions[t];
  // The length the schedule sees: the whole prompt, or the token's own position past it.
  long long seq_len = prompt_lens[seq_ids[t]] > pos + 1 ? prompt_lens[seq_ids[t]] : pos + 1;
  for (int idx = threadIdx.x; idx < @HEADS@ * @D@; idx += blockDim.x) {
    int h = idx / @D@, d = idx % @D@;
    long long base = t * @W@ + h * @D@;
    if (d >= @RD@) { st(y, base + d, ld(x, base + d)); continue; }
    int i = @INTER@ ? d / 2 : (d < @HALF@ ? d : d - @HALF@);
    float f = (@LONGSEL@) ? freq_long[i] : freq[i];
    if (@DYN@) {
      double dim = @RD@.0;
      double base_ = (double)@DYNBASE@ * pow((double)@DYNFACTOR@ * (double)seq_len / @DYNMAX@.0 - ((double)@DYNFACTOR@ - 1.0), dim / (dim - 2.0));
      f = 1.0f / (float)pow(base_, (double)((float)(2 * i) / (float)@RD@));
    }
    float angle = (float)pos * f;
    float c = cosf(angle) * @AF@, s = sinf(angle) * @AF@;
    int first = @INTER@ ? 2 * i : i, second = @INTER@ ? 2 * i + 1 : i + @HALF@;
    float x1 = ld(x, base + first), x2 = ld(x, base + second);
    st(y, base + d, d == first ? x1 * c - x2 * s : x2 * c + x1 * s);
  }
)", {{"TI", ty(op.getX())}, {"TO", ty(op.getResult())}, {"FREQ", table(rope.getInvFreq().asArrayRef())},
     {"LONG", longTable}, {"HEADS", str(heads)}, {"D", str(D)}, {"W", str(W)}, {"RD", str(RD)},
     {"HALF", str(half)}, {"INTER", inter ? "true" : "false"}, {"LONGSEL", longSel},
     {"DYN", dyn}, {"DYNBASE", dynBase}, {"DYNFACTOR", dynFactor}, {"DYNMAX", dynMax},
     {"AF", fmtFloat(rope.getAttentionFactor().convertToDouble())}});
  LaunchOut &l = launch(kernel("rope", body), 128);
  l.grid[0] = {RuntimeVar::NumTokens, 1, 1, 0};
  l.args = {val(id(op.getX())), val(id(op.getPositions())), val(id(op.getSeqIds())),
            val(id(op.getPromptLens())), val(id(op.getResult()))};
}

void Emitter::emitAppend(KvAppendOp op) {
  int64_t kw = cols(op.getK()), vw = cols(op.getV());
  int64_t B = blockSize_;
  std::string body = fill(R"(  const @TK@ *k = (const @TK@ *)a.p[0];
  const @TV@ *v = (const @TV@ *)a.p[1];
  const int *positions = (const int *)a.p[2];
  const int *seq_ids = (const int *)a.p[3];
  const int *slots = (const int *)a.p[4];
  const int *tables = (const int *)a.p[5] + a.i[0] * a.i[1] * a.i[2]; // this group's tables
  @TKV@ *pool = (@TKV@ *)a.p[6];
  long long t = blockIdx.x;
  int pos = positions[t];
  long long block = tables[(long long)slots[seq_ids[t]] * a.i[2] + pos / @B@];
  @TKV@ *row = pool + (block * @B@ + pos % @B@) * @ROW@;
  for (int j = threadIdx.x; j < @KW@; j += blockDim.x)
    st(row, j, ld(k, t * @KW@ + j));
  for (int j = threadIdx.x; j < @VW@; j += blockDim.x)
    st(row, @KW@ + j, ld(v, t * @VW@ + j));
)", {{"TK", ty(op.getK())}, {"TV", ty(op.getV())}, {"B", str(B)}, {"ROW", str(kw + vw)},
     {"KW", str(kw)}, {"VW", str(vw)}});
  LaunchOut &l = launch(kernel("kv_append", body), 128);
  l.grid[0] = {RuntimeVar::NumTokens, 1, 1, 0};
  l.args = {val(id(op.getK())), val(id(op.getV())), val(id(op.getPositions())),
            val(id(op.getSeqIds())), val(id(op.getSlots())), val(id(op.getBlockTables())),
            cache((int)op.getLayer()), cst(op.getGroupAttr().getInt()),
            rt(RuntimeVar::TableSlots), rt(RuntimeVar::TableWidth)};
}

// Flash-decoding over the paged cache: block (token, kv head, split) runs an online softmax
// for the query heads of its GQA group over its share of the visible keys; a second kernel
// merges the splits and the sinks.
void Emitter::emitAttention(KvAttentionOp op) {
  int64_t H = op.getNumHeads(), Hkv = op.getNumKvHeads();
  int64_t D = op.getHeadDim(), Dv = cols(op.getResult()) / H, G = H / Hkv;
  int64_t B = blockSize_;
  int64_t kElems = Hkv * D, row = Hkv * (D + Dv);
  RetentionAttr retention = op.getRetention();
  int64_t window = retention.getKind() == RetentionKind::window ? retention.getTokens() : 0;
  int64_t chunk = retention.getKind() == RetentionKind::chunk ? retention.getTokens() : 0;
  double softcap = op.getSoftcapAttr() ? op.getSoftcapAttr().getValueAsDouble() : 0.0;
  int64_t DL = (D + 31) / 32, DVL = (Dv + 31) / 32; // elements per lane
  int wsPart = workspace("attention_partials", H * (Dv + 2) * 4, 0);
  std::string body = fill(R"(  __shared__ float sm_m[4][@G@], sm_l[4][@G@];
  __shared__ float sm_acc[4][@G@][@DV@];
  const @TQ@ *q = (const @TQ@ *)a.p[0];
  const int *positions = (const int *)a.p[1];
  const int *seq_ids = (const int *)a.p[2];
  const int *slots = (const int *)a.p[3];
  const int *tables = (const int *)a.p[4] + a.i[0] * a.i[1] * a.i[2];
  const @TKV@ *pool = (const @TKV@ *)a.p[5];
  float *part = (float *)a.p[6];
  long long splits = a.i[3];
  long long t = blockIdx.x;
  int kvh = blockIdx.y, split = blockIdx.z;
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int pos = positions[t];
  int lo = 0;
  if (@WINDOW@ > 0) lo = pos - @WINDOW@ + 1 > 0 ? pos - @WINDOW@ + 1 : 0;
  if (@CHUNK@ > 0) lo = pos / @CHUNK@ * @CHUNK@;
  int n = pos - lo + 1, per = (int)((n + splits - 1) / splits);
  int begin = lo + split * per, end = begin + per < pos + 1 ? begin + per : pos + 1;
  const int *table = tables + (long long)slots[seq_ids[t]] * a.i[2];
  float qr[@G@][@DL@], acc[@G@][@DVL@], m[@G@], l[@G@];
  for (int g = 0; g < @G@; ++g) {
    m[g] = -INFINITY;
    l[g] = 0.0f;
    for (int e = 0; e < @DL@; ++e) {
      int d = lane + 32 * e;
      qr[g][e] = d < @D@ ? ld(q, (t * @H@ + kvh * @G@ + g) * @D@ + d) : 0.0f;
    }
    for (int e = 0; e < @DVL@; ++e)
      acc[g][e] = 0.0f;
  }
  for (int j = begin + warp; j < end; j += 4) {
    long long slot = (long long)table[j / @B@] * @B@ + j % @B@;
    const @TKV@ *kr = pool + slot * @ROW@ + kvh * @D@;
    const @TKV@ *vr = pool + slot * @ROW@ + @KELEMS@ + kvh * @DV@;
    float kv[@DL@], vv[@DVL@];
    for (int e = 0; e < @DL@; ++e) { int d = lane + 32 * e; kv[e] = d < @D@ ? ld(kr, d) : 0.0f; }
    for (int e = 0; e < @DVL@; ++e) { int d = lane + 32 * e; vv[e] = d < @DV@ ? ld(vr, d) : 0.0f; }
    for (int g = 0; g < @G@; ++g) {
      float dot = 0.0f;
      for (int e = 0; e < @DL@; ++e)
        dot += qr[g][e] * kv[e];
      float s = warp_sum(dot) * @SCALE@;
      if (@SOFTCAP@ > 0.0f) s = @SOFTCAP@ * tanhf(s / @SOFTCAP@);
      float mn = fmaxf(m[g], s);
      float corr = expf(m[g] - mn), p = expf(s - mn);
      l[g] = l[g] * corr + p;
      for (int e = 0; e < @DVL@; ++e)
        acc[g][e] = acc[g][e] * corr + p * vv[e];
      m[g] = mn;
    }
  }
  // Merge the four warps, then write this split's partial result.
  for (int g = 0; g < @G@; ++g) {
    if (lane == 0) { sm_m[warp][g] = m[g]; sm_l[warp][g] = l[g]; }
    for (int e = 0; e < @DVL@; ++e) { int d = lane + 32 * e; if (d < @DV@) sm_acc[warp][g][d] = acc[g][e]; }
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < @G@ * (@DV@ + 2); idx += blockDim.x) {
    int g = idx / (@DV@ + 2), d = idx % (@DV@ + 2);
    float mm = -INFINITY;
    for (int w = 0; w < 4; ++w) mm = fmaxf(mm, sm_m[w][g]);
    float value = 0.0f;
    if (d == 0) {
      value = mm;
    } else {
      for (int w = 0; w < 4; ++w) {
        float scale = sm_m[w][g] == -INFINITY ? 0.0f : expf(sm_m[w][g] - mm);
        value += scale * (d == 1 ? sm_l[w][g] : sm_acc[w][g][d - 2]);
      }
    }
    int h = kvh * @G@ + g;
    part[((t * @H@ + h) * splits + split) * (@DV@ + 2) + d] = value;
  }
)", {{"G", str(G)}, {"DV", str(Dv)}, {"D", str(D)}, {"DL", str(DL)}, {"DVL", str(DVL)},
     {"TQ", ty(op.getQ())}, {"H", str(H)}, {"B", str(B)}, {"ROW", str(row)}, {"KELEMS", str(kElems)},
     {"WINDOW", str(window)}, {"CHUNK", str(chunk)},
     {"SCALE", fmtFloat(op.getScale().convertToDouble())}, {"SOFTCAP", fmtFloat(softcap)}});
  LaunchOut &l = launch(kernel("attention", body), 128);
  l.grid[0] = {RuntimeVar::NumTokens, 1, 1, 0};
  l.grid[1] = {std::nullopt, 1, 1, Hkv};
  l.grid[2] = {RuntimeVar::AttnSplits, 1, 1, 0};
  l.args = {val(id(op.getQ())), val(id(op.getPositions())), val(id(op.getSeqIds())),
            val(id(op.getSlots())), val(id(op.getBlockTables())),
            cache((int)op.getLayer()), ws(wsPart), cst(op.getGroupAttr().getInt()),
            rt(RuntimeVar::TableSlots), rt(RuntimeVar::TableWidth), rt(RuntimeVar::AttnSplits)};

  bool sinks = (bool)op.getSinks();
  std::string combine = fill(R"(  const float *part = (const float *)a.p[0];
  @TO@ *out = (@TO@ *)a.p[1];
  const @TS@ *sinks = (const @TS@ *)a.p[2];
  long long splits = a.i[0];
  long long t = blockIdx.x;
  int h = blockIdx.y;
  const float *p = part + (t * @H@ + h) * splits * (@DV@ + 2);
  float mm = @SINKS@ ? ld(sinks, h) : -INFINITY;
  for (int s = 0; s < splits; ++s) mm = fmaxf(mm, p[s * (@DV@ + 2)]);
  float denom = @SINKS@ ? expf(ld(sinks, h) - mm) : 0.0f;
  for (int s = 0; s < splits; ++s)
    if (p[s * (@DV@ + 2)] != -INFINITY) denom += expf(p[s * (@DV@ + 2)] - mm) * p[s * (@DV@ + 2) + 1];
  for (int d = threadIdx.x; d < @DV@; d += blockDim.x) {
    float v = 0.0f;
    for (int s = 0; s < splits; ++s)
      if (p[s * (@DV@ + 2)] != -INFINITY) v += expf(p[s * (@DV@ + 2)] - mm) * p[s * (@DV@ + 2) + 2 + d];
    st(out, (t * @H@ + h) * @DV@ + d, v / denom);
  }
)", {{"TO", ty(op.getResult())}, {"TS", sinks ? ty(op.getSinks()) : "bf16"}, {"H", str(H)},
     {"DV", str(Dv)}, {"SINKS", sinks ? "true" : "false"}});
  LaunchOut &c = launch(kernel("attention_combine", combine), Dv >= 128 ? 128 : 64);
  c.grid[0] = {RuntimeVar::NumTokens, 1, 1, 0};
  c.grid[1] = {std::nullopt, 1, 1, H};
  c.args = {ws(wsPart), val(id(op.getResult())),
            sinks ? val(id(op.getSinks())) : null(),
            rt(RuntimeVar::AttnSplits)};
}

void Emitter::emitGather(RowsGatherOp op) {
  int64_t W = cols(op.getX());
  std::string body = fill(R"(  const @TI@ *x = (const @TI@ *)a.p[0];
  const int *rows = (const int *)a.p[1];
  @TO@ *y = (@TO@ *)a.p[2];
  long long r = blockIdx.x, src = rows[r];
  for (int j = threadIdx.x; j < @W@; j += blockDim.x)
    st(y, r * @W@ + j, ld(x, src * @W@ + j));
)", {{"TI", ty(op.getX())}, {"TO", ty(op.getResult())}, {"W", str(W)}});
  LaunchOut &l = launch(kernel("gather_rows", body), 128);
  l.grid[0] = {RuntimeVar::NumLogitRows, 1, 1, 0};
  l.args = {val(id(op.getX())), val(id(op.getRows())), val(id(op.getResult()))};
}

// One warp per token: scores (softmax, sigmoid, or the raw logits for top-k softmax), then k
// rounds of argmax over the (optionally biased) keys, lower ids first.
void Emitter::emitRoute(MoeRouteOp op) {
  int64_t E = cols(op.getLogits()), K = op.getKAttr().getInt();
  int64_t EL = (E + 31) / 32;
  bool bias = (bool)op.getSelectionBias();
  std::string body = fill(R"(  const @TL@ *logits = (const @TL@ *)a.p[0];
  float *weights = (float *)a.p[1];
  int *ids = (int *)a.p[2];
  const @TB@ *bias = (const @TB@ *)a.p[3];
  long long t = blockIdx.x;
  int lane = threadIdx.x;
  float v[@EL@], key[@EL@];
  for (int e = 0; e < @EL@; ++e) {
    int x = lane + 32 * e;
    v[e] = x < @E@ ? ld(logits, t * @E@ + x) : -INFINITY;
  }
  if (@SOFTMAX@) {
    float mx = -INFINITY;
    for (int e = 0; e < @EL@; ++e) mx = fmaxf(mx, v[e]);
    mx = warp_max(mx);
    float sum = 0.0f;
    for (int e = 0; e < @EL@; ++e) { v[e] = (lane + 32 * e) < @E@ ? expf(v[e] - mx) : 0.0f; sum += v[e]; }
    sum = warp_sum(sum);
    for (int e = 0; e < @EL@; ++e) v[e] = (lane + 32 * e) < @E@ ? v[e] / sum : -INFINITY;
  }
  if (@SIGMOID@)
    for (int e = 0; e < @EL@; ++e) v[e] = (lane + 32 * e) < @E@ ? 1.0f / (1.0f + expf(-v[e])) : -INFINITY;
  for (int e = 0; e < @EL@; ++e) {
    int x = lane + 32 * e;
    key[e] = @BIAS@ && x < @E@ ? v[e] + ld(bias, x) : v[e];
  }
  float chosen[@K@];
  int chosenId[@K@];
  for (int j = 0; j < @K@; ++j) {
    float best = -INFINITY, bestV = 0.0f;
    int bestId = 0x7fffffff;
    for (int e = 0; e < @EL@; ++e) {
      int x = lane + 32 * e;
      if (x < @E@ && (key[e] > best || (key[e] == best && x < bestId))) { best = key[e]; bestV = v[e]; bestId = x; }
    }
    for (int o = 16; o > 0; o >>= 1) {
      float ob = __shfl_xor_sync(0xffffffffu, best, o);
      float ov = __shfl_xor_sync(0xffffffffu, bestV, o);
      int oi = __shfl_xor_sync(0xffffffffu, bestId, o);
      if (ob > best || (ob == best && oi < bestId)) { best = ob; bestV = ov; bestId = oi; }
    }
    chosen[j] = bestV;
    chosenId[j] = bestId;
    for (int e = 0; e < @EL@; ++e)
      if (lane + 32 * e == bestId) key[e] = -INFINITY;
  }
  if (lane == 0) {
    if (@TOPKSOFTMAX@) {
      float mx = chosen[0], sum = 0.0f;
      for (int j = 0; j < @K@; ++j) { chosen[j] = expf(chosen[j] - mx); sum += chosen[j]; }
      for (int j = 0; j < @K@; ++j) chosen[j] /= sum;
    } else if (@RENORM@) {
      float sum = 0.0f;
      for (int j = 0; j < @K@; ++j) sum += chosen[j];
      for (int j = 0; j < @K@; ++j) chosen[j] /= sum + @EPS@;
    }
    for (int j = 0; j < @K@; ++j) {
      weights[t * @K@ + j] = chosen[j] * @SCALING@;
      ids[t * @K@ + j] = chosenId[j];
    }
  }
)", {{"TL", ty(op.getLogits())}, {"TB", bias ? ty(op.getSelectionBias()) : "float"}, {"E", str(E)},
     {"EL", str(EL)}, {"K", str(K)}, {"BIAS", bias ? "true" : "false"},
     {"SOFTMAX", op.getScore() == RouteScore::softmax ? "true" : "false"},
     {"SIGMOID", op.getScore() == RouteScore::sigmoid ? "true" : "false"},
     {"TOPKSOFTMAX", op.getScore() == RouteScore::topk_softmax ? "true" : "false"},
     {"RENORM", op.getRenorm() ? "true" : "false"},
     {"EPS", fmtFloat(op.getRenormEps().convertToDouble())},
     {"SCALING", fmtFloat(op.getScaling().convertToDouble())}});
  LaunchOut &l = launch(kernel("moe_route", body), 32);
  l.grid[0] = {rowsVar(op.getLogits()), 1, 1, 0};
  l.args = {val(id(op.getLogits())), val(id(op.getWeights())), val(id(op.getIds())),
            bias ? val(id(op.getSelectionBias())) : null()};
}

// Experts as grouped GEMMs: a plan kernel groups (token, choice) pairs by expert in token
// order, two tiled GEMM kernels run every expert's rows (the first with the GLU fused in), and
// a combine kernel mixes each token's k results in choice order.
void Emitter::emitExperts(MoeExpertsOp op) {
  auto gu = llvm::cast<RankedTensorType>(op.getGateUp().getType());
  bool ungated = op.getUngated(); // gate_up holds only up: [E, I, H]
  int64_t E = gu.getDimSize(0), I = ungated ? gu.getDimSize(1) : gu.getDimSize(1) / 2, H = gu.getDimSize(2);
  int64_t GU = ungated ? I : 2 * I; // gate_up rows per expert
  int64_t K = cols(op.getIds());
  bool biases = (bool)op.getGateUpBias();
  bool inter = op.getLayout() == GluLayout::interleaved;
  int wsPlan = workspace("moe_plan", K * 8, (E + 1) * 4);
  int wsAct = workspace("moe_act", K * I * 4, 0);
  int wsOut = workspace("moe_out", K * H * 4, 0);
  const int TM = 16, TN = 32, TK = 32;

  std::string plan = fill(R"(  const int *ids = (const int *)a.p[0];
  int *offsets = (int *)a.p[1];          // [E + 1]
  int *perm = offsets + @E@ + 1;         // [T * K]: position -> token * K + choice
  int *where = perm + a.i[0] * @K@;      // [T * K]: token * K + choice -> position
  long long n = a.i[0] * @K@;
  // One thread per expert counts and then places its pairs in token order.
  for (int e = threadIdx.x; e < @E@; e += blockDim.x) {
    int c = 0;
    for (long long i = 0; i < n; ++i) c += ids[i] == e;
    offsets[e + 1] = c;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    offsets[0] = 0;
    for (int e = 0; e < @E@; ++e) offsets[e + 1] += offsets[e];
  }
  __syncthreads();
  for (int e = threadIdx.x; e < @E@; e += blockDim.x) {
    int p = offsets[e];
    for (long long i = 0; i < n; ++i)
      if (ids[i] == e) { perm[p] = (int)i; where[i] = p; ++p; }
  }
)", {{"E", str(E)}, {"K", str(K)}});
  LaunchOut &lp = launch(kernel("moe_plan", plan), 256);
  lp.grid[0] = {std::nullopt, 1, 1, 1};
  lp.args = {val(id(op.getIds())), ws(wsPlan), rt(rowsVar(op.getX()))};

  // Tile t of the grid maps to (expert, first row) by walking the experts' tile counts.
  std::string tileMap = fill(R"(  const int *offsets = (const int *)a.p[0];
  int tile = blockIdx.x, expert = -1, row0 = 0;
  for (int e = 0, seen = 0; e < @E@; ++e) {
    int rows = offsets[e + 1] - offsets[e], tiles = (rows + @TM@ - 1) / @TM@;
    if (tile < seen + tiles) { expert = e; row0 = offsets[e] + (tile - seen) * @TM@; break; }
    seen += tiles;
  }
  if (expert < 0) return;
  int rowEnd = offsets[expert + 1];
)", {{"E", str(E)}, {"TM", str(TM)}});

  std::string gemm1 = tileMap + fill(R"(  const int *perm = offsets + @E@ + 1;
  const @TX@ *x = (const @TX@ *)a.p[1];
  const @TW@ *w = (const @TW@ *)a.p[2] + (long long)expert * @GU@ * @H@;
  const @TB@ *bias = (const @TB@ *)a.p[3];
  float *act = (float *)a.p[4];
  __shared__ float xs[@TM@][@TK@ + 1], gs[@TN@][@TK@ + 1], us[@TN@][@TK@ + 1];
  int col0 = blockIdx.y * @TN@;
  int r = threadIdx.x / @TN@, c = threadIdx.x % @TN@;  // 8 rows x 32 cols of threads, 2 rows each
  float accg[2] = {0.0f, 0.0f}, accu[2] = {0.0f, 0.0f};
  for (int k0 = 0; k0 < @H@; k0 += @TK@) {
    for (int idx = threadIdx.x; idx < @TM@ * @TK@; idx += blockDim.x) {
      int rr = idx / @TK@, kk = idx % @TK@, row = row0 + rr;
      xs[rr][kk] = row < rowEnd && k0 + kk < @H@ ? ld(x, (long long)(perm[row] / @K@) * @H@ + k0 + kk) : 0.0f;
    }
    for (int idx = threadIdx.x; idx < @TN@ * @TK@; idx += blockDim.x) {
      int cc = idx / @TK@, kk = idx % @TK@, col = col0 + cc;
      bool ok = col < @I@ && k0 + kk < @H@;
      int gr = @INTER@ ? 2 * col : col, ur = @UNGATED@ ? col : @INTER@ ? 2 * col + 1 : @I@ + col;
      if (!@UNGATED@) // ungated experts have no gate rows
        gs[cc][kk] = ok ? ld(w, (long long)gr * @H@ + k0 + kk) : 0.0f;
      us[cc][kk] = ok ? ld(w, (long long)ur * @H@ + k0 + kk) : 0.0f;
    }
    __syncthreads();
    for (int kk = 0; kk < @TK@; ++kk)
      for (int q = 0; q < 2; ++q) {
        if (!@UNGATED@) accg[q] += xs[r * 2 + q][kk] * gs[c][kk];
        accu[q] += xs[r * 2 + q][kk] * us[c][kk];
      }
    __syncthreads();
  }
  int col = col0 + c;
  if (col >= @I@) return;
  for (int q = 0; q < 2; ++q) {
    int row = row0 + r * 2 + q;
    if (row >= rowEnd) continue;
    float g = accg[q], u = accu[q];
    if (@BIAS@) {
      if (!@UNGATED@)
        g += ld(bias, (long long)expert * @GU@ + (@INTER@ ? 2 * col : col));
      u += ld(bias, (long long)expert * @GU@ + (@UNGATED@ ? col : @INTER@ ? 2 * col + 1 : @I@ + col));
    }
    (void)g;
    // GLU, then rounded to the activation dtype the down projection would read.
    float y = @GLU@;
    act[(long long)row * @I@ + col] = @ROUND@;
  }
)", {{"E", str(E)}, {"TX", ty(op.getX())}, {"TW", ty(op.getGateUp())},
     {"TB", biases ? ty(op.getGateUpBias()) : "bf16"}, {"I", str(I)}, {"H", str(H)}, {"K", str(K)},
     {"TM", str(TM)}, {"TN", str(TN)}, {"TK", str(TK)}, {"INTER", inter ? "true" : "false"},
     {"UNGATED", ungated ? "true" : "false"}, {"GU", str(GU)},
     {"BIAS", biases ? "true" : "false"},
     {"ROUND", prog_.value_dtypes[id(op.getResult())] == (int)fb::DType::F32 ? "y"
                                                                             : "__bfloat162float(__float2bfloat16(y))"},
     {"GLU", expertGlu(op.getAct(), ungated)}});
  LaunchOut &l1 = launch(kernel("moe_gate_up", gemm1), 256);
  l1.grid[0] = {rowsVar(op.getX()), K, TM, E};
  l1.grid[1] = {std::nullopt, 1, 1, (I + TN - 1) / TN};
  l1.args = {ws(wsPlan), val(id(op.getX())), val(id(op.getGateUp())),
             biases ? val(id(op.getGateUpBias())) : null(),
             ws(wsAct)};

  std::string gemm2 = tileMap + fill(R"(  const float *act = (const float *)a.p[1];
  const @TW@ *w = (const @TW@ *)a.p[2] + (long long)expert * @H@ * @I@;
  const @TB@ *bias = (const @TB@ *)a.p[3];
  float *out = (float *)a.p[4];
  __shared__ float xs[@TM@][@TK@ + 1], ws_[@TN@][@TK@ + 1];
  int col0 = blockIdx.y * @TN@;
  int r = threadIdx.x / @TN@, c = threadIdx.x % @TN@;
  float acc[2] = {0.0f, 0.0f};
  for (int k0 = 0; k0 < @I@; k0 += @TK@) {
    for (int idx = threadIdx.x; idx < @TM@ * @TK@; idx += blockDim.x) {
      int rr = idx / @TK@, kk = idx % @TK@, row = row0 + rr;
      xs[rr][kk] = row < rowEnd && k0 + kk < @I@ ? act[(long long)row * @I@ + k0 + kk] : 0.0f;
    }
    for (int idx = threadIdx.x; idx < @TN@ * @TK@; idx += blockDim.x) {
      int cc = idx / @TK@, kk = idx % @TK@, col = col0 + cc;
      ws_[cc][kk] = col < @H@ && k0 + kk < @I@ ? ld(w, (long long)col * @I@ + k0 + kk) : 0.0f;
    }
    __syncthreads();
    for (int kk = 0; kk < @TK@; ++kk)
      for (int q = 0; q < 2; ++q)
        acc[q] += xs[r * 2 + q][kk] * ws_[c][kk];
    __syncthreads();
  }
  int col = col0 + c;
  if (col >= @H@) return;
  for (int q = 0; q < 2; ++q) {
    int row = row0 + r * 2 + q;
    if (row >= rowEnd) continue;
    float y = acc[q] + (@BIAS@ ? ld(bias, (long long)expert * @H@ + col) : 0.0f);
    out[(long long)row * @H@ + col] = y;
  }
)", {{"TW", ty(op.getDown())}, {"TB", biases ? ty(op.getDownBias()) : "bf16"}, {"I", str(I)},
     {"H", str(H)}, {"TM", str(TM)}, {"TN", str(TN)}, {"TK", str(TK)},
     {"BIAS", biases ? "true" : "false"}});
  LaunchOut &l2 = launch(kernel("moe_down", gemm2), 256);
  l2.grid[0] = {rowsVar(op.getX()), K, TM, E};
  l2.grid[1] = {std::nullopt, 1, 1, (H + TN - 1) / TN};
  l2.args = {ws(wsPlan), ws(wsAct), val(id(op.getDown())),
             biases ? val(id(op.getDownBias())) : null(),
             ws(wsOut)};

  std::string combine = fill(R"(  const int *offsets = (const int *)a.p[0];
  const int *where = offsets + @E@ + 1 + a.i[0] * @K@;
  const float *out = (const float *)a.p[1];
  const float *weights = (const float *)a.p[2];
  @TO@ *y = (@TO@ *)a.p[3];
  long long t = blockIdx.x;
  for (int h = threadIdx.x; h < @H@; h += blockDim.x) {
    float v = 0.0f;
    for (int j = 0; j < @K@; ++j)
      v += weights[t * @K@ + j] * out[(long long)where[t * @K@ + j] * @H@ + h];
    st(y, t * @H@ + h, v);
  }
)", {{"E", str(E)}, {"K", str(K)}, {"H", str(H)}, {"TO", ty(op.getResult())}});
  LaunchOut &l3 = launch(kernel("moe_combine", combine), 128);
  l3.grid[0] = {rowsVar(op.getX()), 1, 1, 0};
  l3.args = {ws(wsPlan), ws(wsOut), val(id(op.getWeights())), val(id(op.getResult())),
             rt(rowsVar(op.getX()))};
}

void Emitter::emitArgmax(Value logits) {
  int64_t V = cols(logits);
  std::string body = fill(R"(  __shared__ float best_v[32];
  __shared__ int best_i[32];
  const @TL@ *logits = (const @TL@ *)a.p[0];
  int *tokens = (int *)a.p[1];
  long long r = blockIdx.x;
  float bv = -INFINITY;
  int bi = 0x7fffffff;
  for (int j = threadIdx.x; j < @V@; j += blockDim.x) {
    float v = ld(logits, r * @V@ + j);
    if (v > bv) { bv = v; bi = j; }
  }
  for (int o = 16; o > 0; o >>= 1) {
    float ov = __shfl_xor_sync(0xffffffffu, bv, o);
    int oi = __shfl_xor_sync(0xffffffffu, bi, o);
    if (ov > bv || (ov == bv && oi < bi)) { bv = ov; bi = oi; }
  }
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) { best_v[warp] = bv; best_i[warp] = bi; }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < (int)(blockDim.x >> 5); ++w)
      if (best_v[w] > bv || (best_v[w] == bv && best_i[w] < bi)) { bv = best_v[w]; bi = best_i[w]; }
    tokens[r] = bi;
  }
)", {{"TL", ty(logits)}, {"V", str(V)}});
  prog_.argmax_kernel = kernel("argmax", body);
}

// Residual add and RMS norm: one pass writes the sum and the normalised row.
void Emitter::emitAddRmsNorm(AddRmsNormOp op) {
  int64_t W = cols(op.getLhs());
  bool hasW = (bool)op.getWeight();
  std::string body = fill(R"(  __shared__ float scratch[32];
  const @TA@ *x0 = (const @TA@ *)a.p[0];
  const @TB@ *x1 = (const @TB@ *)a.p[1];
  @TS@ *sum = (@TS@ *)a.p[2];
  @TN@ *y = (@TN@ *)a.p[3];
  const @TW@ *w = (const @TW@ *)a.p[4];
  long long base = (long long)blockIdx.x * @W@;
  float ss = 0.0f;
  for (int j = threadIdx.x; j < @W@; j += blockDim.x) {
    float v = ld(x0, base + j) + ld(x1, base + j);
    st(sum, base + j, v);
    ss += v * v;
  }
  ss = block_sum(ss, scratch);
  float inv = rsqrtf(ss / @W@.0f + @EPS@);
  for (int j = threadIdx.x; j < @W@; j += blockDim.x) {
    float v = ld(x0, base + j) + ld(x1, base + j);
    st(y, base + j, v * inv * (@HASW@ ? ld(w, j) + @OFF@ : 1.0f));
  }
)", {{"TA", ty(op.getLhs())}, {"TB", ty(op.getRhs())}, {"TS", ty(op.getSum())},
     {"TN", ty(op.getNormed())}, {"TW", hasW ? ty(op.getWeight()) : "bf16"}, {"W", str(W)},
     {"EPS", fmtFloat(op.getEps().convertToDouble())},
     {"OFF", fmtFloat(op.getOffset().convertToDouble())}, {"HASW", hasW ? "true" : "false"}});
  LaunchOut &l = launch(kernel("add_rms_norm", body), 256);
  l.grid[0] = {rowsVar(op.getLhs()), 1, 1, 0};
  l.args = {val(id(op.getLhs())), val(id(op.getRhs())), val(id(op.getSum())), val(id(op.getNormed())),
            hasW ? val(id(op.getWeight())) : null()};
}

// The attention prologue for one token per block: q and k heads staged in shared memory,
// normalised per head by the warps, rotated, and written out (q) or appended (k, v).
void Emitter::emitRopeAppend(KvRopeAppendOp op) {
  RopeAttr rope = op.getRope();
  int64_t H = op.getNumHeads(), Hkv = op.getNumKvHeads();
  int64_t D = op.getHeadDim(), RD = rope.getRotaryDim(), half = RD / 2;
  int64_t qw = H * D, kw = Hkv * D, W = qw + 2 * kw;
  int64_t B = blockSize_;
  bool norms = (bool)op.getQNorm();
  auto table = [&](ArrayRef<float> f) {
    std::string s;
    for (float v : f)
      s += fmtFloat(v) + ", ";
    return s;
  };
  std::string longSel = "false", longTable = "0.0f", dyn = "false", dynBase = "0.0f",
              dynFactor = "0.0f", dynMax = "1";
  if (rope.getInvFreqLong()) {
    longSel = "seq_len > " + str(rope.getLongAfter());
    longTable = table(rope.getInvFreqLong().asArrayRef());
  }
  if (rope.getDynamicBase().convertToDouble() != 0) {
    dyn = "seq_len > " + str(rope.getDynamicMaxPositions());
    dynBase = fmtFloat(rope.getDynamicBase().convertToDouble());
    dynFactor = fmtFloat(rope.getDynamicFactor().convertToDouble());
    dynMax = str(rope.getDynamicMaxPositions());
  }
  std::string body = fill(R"(  __shared__ float buf[(@H@ + @HKV@) * @D@];
  const @TX@ *qkv = (const @TX@ *)a.p[0];
  const int *positions = (const int *)a.p[1];
  const int *seq_ids = (const int *)a.p[2];
  const int *prompt_lens = (const int *)a.p[3];
  const int *slots = (const int *)a.p[4];
  const int *tables = (const int *)a.p[5] + a.i[0] * a.i[1] * a.i[2];
  const @TN@ *qn = (const @TN@ *)a.p[6];
  const @TN@ *kn = (const @TN@ *)a.p[7];
  @TQ@ *qout = (@TQ@ *)a.p[8];
  @TKV@ *pool = (@TKV@ *)a.p[9];
  const float freq[] = {@FREQ@};
  const float freq_long[] = {@LONG@};
  long long t = blockIdx.x;
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (int j = threadIdx.x; j < (@H@ + @HKV@) * @D@; j += blockDim.x)
    buf[j] = ld(qkv, t * @W@ + j);
  __syncthreads();
  if (@NORMS@) {
    for (int h = warp; h < @H@ + @HKV@; h += warps) {
      float ss = 0.0f;
      for (int d = lane; d < @D@; d += 32) ss += buf[h * @D@ + d] * buf[h * @D@ + d];
      float inv = rsqrtf(warp_sum(ss) / @D@.0f + @EPS@);
      const @TN@ *w = h < @H@ ? qn : kn;
      for (int d = lane; d < @D@; d += 32) buf[h * @D@ + d] *= inv * (ld(w, d) + @OFF@);
    }
    __syncthreads();
  }
  int pos = positions[t];
  long long seq_len = prompt_lens[seq_ids[t]] > pos + 1 ? prompt_lens[seq_ids[t]] : pos + 1;
  long long block = tables[(long long)slots[seq_ids[t]] * a.i[2] + pos / @B@];
  @TKV@ *row = pool + (block * @B@ + pos % @B@) * (2 * @KW@);
  for (int idx = threadIdx.x; idx < (@H@ + @HKV@) * @D@; idx += blockDim.x) {
    int h = idx / @D@, d = idx % @D@;
    float value;
    if (d >= @RD@) {
      value = buf[idx];
    } else {
      int i = @INTER@ ? d / 2 : (d < @HALF@ ? d : d - @HALF@);
      float f = (@LONGSEL@) ? freq_long[i] : freq[i];
      if (@DYN@) {
        double dim = @RD@.0;
        double base_ = (double)@DYNBASE@ * pow((double)@DYNFACTOR@ * (double)seq_len / @DYNMAX@.0 - ((double)@DYNFACTOR@ - 1.0), dim / (dim - 2.0));
        f = 1.0f / (float)pow(base_, (double)((float)(2 * i) / (float)@RD@));
      }
      float angle = (float)pos * f;
      float c = cosf(angle) * @AF@, s = sinf(angle) * @AF@;
      int first = @INTER@ ? 2 * i : i, second = @INTER@ ? 2 * i + 1 : i + @HALF@;
      float x1 = buf[h * @D@ + first], x2 = buf[h * @D@ + second];
      value = d == first ? x1 * c - x2 * s : x2 * c + x1 * s;
    }
    if (h < @H@)
      st(qout, t * @QW@ + idx, value);
    else
      st(row, idx - @QW@, value);
  }
  for (int j = threadIdx.x; j < @KW@; j += blockDim.x)
    st(row, @KW@ + j, ld(qkv, t * @W@ + @QW@ + @KW@ + j));
)", {{"H", str(H)}, {"HKV", str(Hkv)}, {"D", str(D)}, {"W", str(W)}, {"QW", str(qw)},
     {"KW", str(kw)}, {"B", str(B)}, {"RD", str(RD)}, {"HALF", str(half)},
     {"TX", ty(op.getQkv())}, {"TQ", ty(op.getQ())}, {"TN", norms ? ty(op.getQNorm()) : "bf16"},
     {"NORMS", norms ? "true" : "false"},
     {"EPS", fmtFloat(op.getEpsAttr() ? op.getEpsAttr().getValueAsDouble() : 1e-6)},
     {"OFF", fmtFloat(op.getNormOffset().convertToDouble())}, {"FREQ", table(rope.getInvFreq().asArrayRef())},
     {"LONG", longTable}, {"LONGSEL", longSel}, {"DYN", dyn}, {"DYNBASE", dynBase},
     {"DYNFACTOR", dynFactor}, {"DYNMAX", dynMax},
     {"INTER", rope.getPairing() == RopePairing::interleaved ? "true" : "false"},
     {"AF", fmtFloat(rope.getAttentionFactor().convertToDouble())}});
  LaunchOut &l = launch(kernel("rope_append", body), 128);
  l.grid[0] = {RuntimeVar::NumTokens, 1, 1, 0};
  l.args = {val(id(op.getQkv())), val(id(op.getPositions())), val(id(op.getSeqIds())),
            val(id(op.getPromptLens())), val(id(op.getSlots())), val(id(op.getBlockTables())),
            norms ? val(id(op.getQNorm())) : null(), norms ? val(id(op.getKNorm())) : null(),
            val(id(op.getQ())), cache((int)op.getLayer()),
            cst(op.getGroupAttr().getInt()), rt(RuntimeVar::TableSlots), rt(RuntimeVar::TableWidth)};
}

// A per-request state pool of a layer: workspace-like device memory owned by the backend,
// found by (layer, name).
KernelArgOut Emitter::state(int layer, const std::string &name) {
  return {KernelArgOut::Cache, layer, name, 0, 0};
}

void Emitter::emitRmsNormGated(RmsNormGatedOp op) {
  int64_t W = cols(op.getX());
  int64_t G = op.getGroupAttr() ? op.getGroupAttr().getInt() : W;
  bool hasW = (bool)op.getWeight();
  bool perRow = hasW && llvm::cast<RankedTensorType>(op.getWeight().getType()).getDimSize(0) == W && W != G;
  int block = G >= 256 ? 256 : G >= 128 ? 128 : G >= 64 ? 64 : 32;
  std::string act = actFn(op.getAct()) + "(gz)";
  std::string body = fill(R"(  __shared__ float scratch[32];
  const @TI@ *x = (const @TI@ *)a.p[0];
  const @TZ@ *z = (const @TZ@ *)a.p[1];
  @TO@ *y = (@TO@ *)a.p[2];
  const @TW@ *w = (const @TW@ *)a.p[3];
  long long base = (long long)blockIdx.x * @G@;
  float ss = 0.0f;
  for (int j = threadIdx.x; j < @G@; j += blockDim.x) {
    float gz = ld(z, base + j);
    float v = @NORMFIRST@ ? ld(x, base + j) : ld(x, base + j) * @ACT@;
    ss += v * v;
  }
  ss = block_sum(ss, scratch);
  float inv = rsqrtf(ss / @G@.0f + @EPS@);
  for (int j = threadIdx.x; j < @G@; j += blockDim.x) {
    float gz = ld(z, base + j);
    float v = @NORMFIRST@ ? ld(x, base + j) : ld(x, base + j) * @ACT@;
    float n = v * inv * (@HASW@ ? ld(w, @WBASE@ + j) + @OFF@ : 1.0f);
    st(y, base + j, @NORMFIRST@ ? n * @ACT@ : n);
  }
)", {{"TI", ty(op.getX())}, {"TZ", ty(op.getZ())}, {"TO", ty(op.getResult())},
     {"TW", hasW ? ty(op.getWeight()) : "bf16"}, {"G", str(G)}, {"ACT", act},
     {"NORMFIRST", op.getOrder() == NormGateOrder::norm_gate ? "true" : "false"},
     {"EPS", fmtFloat(op.getEps().convertToDouble())},
     {"OFF", fmtFloat(op.getOffset().convertToDouble())}, {"HASW", hasW ? "true" : "false"},
     {"WBASE", perRow ? "base % " + str(W) : "0"}});
  LaunchOut &l = launch(kernel("rms_norm_gated", body), block);
  l.grid[0] = {rowsVar(op.getX()), W / G, 1, 0};
  l.args = {val(id(op.getX())), val(id(op.getZ())), val(id(op.getResult())),
            hasW ? val(id(op.getWeight())) : null()};
}

// One thread per (request, channel) walks the request's rows in order, the K-1 carried inputs
// in registers.
void Emitter::emitConv1d(StateConv1dOp op) {
  int64_t C = cols(op.getX());
  auto wt = llvm::cast<RankedTensorType>(op.getWeight().getType());
  int64_t K = wt.getDimSize(2);
  bool bias = (bool)op.getBias();
  std::string body = fill(R"(  const @TX@ *x = (const @TX@ *)a.p[0];
  const @TW@ *w = (const @TW@ *)a.p[1];
  const @TB@ *bias = (const @TB@ *)a.p[2];
  const int *cu = (const int *)a.p[3];
  const int *slots = (const int *)a.p[4];
  const int *has_initial = (const int *)a.p[5];
  float *pool = (float *)a.p[6];
  @TY@ *y = (@TY@ *)a.p[7];
  int r = blockIdx.x;
  int c = blockIdx.y * blockDim.x + threadIdx.x;
  if (c >= @C@) return;
  float hist[@H1@];
  float *state = @H@ > 0 ? pool + ((long long)slots[r] * @C@ + c) * @H@ : 0;
  for (int j = 0; j < @H@; ++j) hist[j] = has_initial[r] ? state[j] : 0.0f;
  float wr[@K@];
  for (int j = 0; j < @K@; ++j) wr[j] = ld(w, (long long)c * @K@ + j);
  float b = @BIAS@ ? ld(bias, c) : 0.0f;
  for (int t = cu[r]; t < cu[r + 1]; ++t) {
    float xv = ld(x, (long long)t * @C@ + c);
    float acc = b + wr[@K@ - 1] * xv;
    for (int j = 0; j < @H@; ++j) acc += wr[j] * hist[j];
    st(y, (long long)t * @C@ + c, @ACT@(acc));
    for (int j = 0; j + 1 < @H@; ++j) hist[j] = hist[j + 1];
    if (@H@ > 0) hist[@H@ - 1] = xv;
  }
  for (int j = 0; j < @H@; ++j) state[j] = hist[j];
)", {{"TX", ty(op.getX())}, {"TW", ty(op.getWeight())}, {"TB", bias ? ty(op.getBias()) : "bf16"},
     {"TY", ty(op.getResult())}, {"C", str(C)}, {"K", str(K)}, {"H", str(K - 1)},
     {"H1", str(std::max<int64_t>(K - 1, 1))}, {"BIAS", bias ? "true" : "false"},
     {"ACT", actFn(op.getAct())}});
  LaunchOut &l = launch(kernel("conv1d", body), 128);
  l.grid[0] = {RuntimeVar::NumRequests, 1, 1, 0};
  l.grid[1] = {std::nullopt, 1, 1, (C + 127) / 128};
  l.args = {val(id(op.getX())), val(id(op.getWeight())), bias ? val(id(op.getBias())) : null(),
            val(id(op.getCuSeqlens())), val(id(op.getSlots())), val(id(op.getHasInitialState())),
            state((int)op.getLayer(), op.getState().str()), val(id(op.getResult()))};
}

// The gated delta rule, token by token: block (request, value head, 32 value columns) keeps
// its [dk, 32] slice of the state in registers, four warps splitting the rows.
// Mamba2's scan, token by token: block (request, head, 16 rows of head_dim); each thread keeps
// its state columns (state_size over the block's threads) of those rows in registers, and
// y = S C + D x is a block reduction per row.
void Emitter::emitSsd(SsdOp op) {
  auto in = op->getOperands();
  int64_t H = op.getNumHeads(), P = op.getHeadDim();
  int64_t G = op.getNGroups(), N = op.getStateSize();
  const int64_t PB = 16, threads = 128, NJ = (N + threads - 1) / threads;
  std::string body = fill(R"(  __shared__ float xs[@PB@], red[4][@PB@];
  const @TX@ *x = (const @TX@ *)a.p[0];
  const @TDTV@ *dtv = (const @TDTV@ *)a.p[1];
  const @TB@ *Bm = (const @TB@ *)a.p[2];
  const @TC@ *Cm = (const @TC@ *)a.p[3];
  const @TAL@ *A_log = (const @TAL@ *)a.p[4];
  const @TDB@ *dt_bias = (const @TDB@ *)a.p[5];
  const @TD@ *Dv = (const @TD@ *)a.p[6];
  const int *cu = (const int *)a.p[7];
  const int *slots = (const int *)a.p[8];
  const int *has_initial = (const int *)a.p[9];
  float *pool = (float *)a.p[10];
  @TO@ *out = (@TO@ *)a.p[11];
  int r = blockIdx.x, h = blockIdx.y, p0 = blockIdx.z * @PB@, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int g = h / (@H@ / @G@);
  float *S = pool + ((long long)slots[r] * @H@ + h) * @P@ * @N@;
  float s[@PB@][@NJ@];
  for (int i = 0; i < @PB@; ++i)
    for (int j = 0; j < @NJ@; ++j) {
      int p = p0 + i, n = threadIdx.x + j * 128;
      s[i][j] = (p < @P@ && n < @N@ && has_initial[r]) ? S[(long long)p * @N@ + n] : 0.0f;
    }
  float A = -expf(ld(A_log, h)), dtb = ld(dt_bias, h), D = ld(Dv, h);
  for (int t = cu[r]; t < cu[r + 1]; ++t) {
    if (threadIdx.x < @PB@)
      xs[threadIdx.x] = p0 + threadIdx.x < @P@ ? ld(x, (long long)t * @H@ * @P@ + h * @P@ + p0 + threadIdx.x) : 0.0f;
    float dn = ld(dtv, (long long)t * @H@ + h) + dtb;
    float dt = fminf(fmaxf(dn > 20.0f ? dn : log1pf(expf(dn)), @DTMIN@), @DTMAX@);
    float decay = expf(dt * A);
    float bn[@NJ@], cn[@NJ@];
    for (int j = 0; j < @NJ@; ++j) {
      int n = threadIdx.x + j * 128;
      bn[j] = n < @N@ ? ld(Bm, (long long)t * @G@ * @N@ + g * @N@ + n) : 0.0f;
      cn[j] = n < @N@ ? ld(Cm, (long long)t * @G@ * @N@ + g * @N@ + n) : 0.0f;
    }
    __syncthreads();
    for (int i = 0; i < @PB@; ++i) {
      float y = 0.0f;
      for (int j = 0; j < @NJ@; ++j) {
        s[i][j] = s[i][j] * decay + dt * xs[i] * bn[j];
        y += s[i][j] * cn[j];
      }
      y = warp_sum(y);
      if (lane == 0) red[warp][i] = y;
    }
    __syncthreads();
    if (threadIdx.x < @PB@ && p0 + threadIdx.x < @P@) {
      float y = red[0][threadIdx.x] + red[1][threadIdx.x] + red[2][threadIdx.x] + red[3][threadIdx.x];
      st(out, (long long)t * @H@ * @P@ + h * @P@ + p0 + threadIdx.x, y + D * xs[threadIdx.x]);
    }
    __syncthreads();
  }
  for (int i = 0; i < @PB@; ++i)
    for (int j = 0; j < @NJ@; ++j) {
      int p = p0 + i, n = threadIdx.x + j * 128;
      if (p < @P@ && n < @N@) S[(long long)p * @N@ + n] = s[i][j];
    }
)", {{"H", str(H)}, {"P", str(P)}, {"G", str(G)}, {"N", str(N)}, {"PB", str(PB)}, {"NJ", str(NJ)},
     {"TX", ty(in[0])}, {"TDTV", ty(in[1])}, {"TB", ty(in[2])}, {"TC", ty(in[3])}, {"TAL", ty(in[4])},
     {"TDB", ty(in[5])}, {"TD", ty(in[6])}, {"TO", ty(op.getResult())},
     {"DTMIN", fmtFloat(op.getDtMin().convertToDouble())},
     {"DTMAX", std::isinf(op.getDtMax().convertToDouble()) ? "INFINITY" : fmtFloat(op.getDtMax().convertToDouble())}});
  LaunchOut &l = launch(kernel("ssd", body), (int)threads);
  l.grid[0] = {RuntimeVar::NumRequests, 1, 1, 0};
  l.grid[1] = {std::nullopt, 1, 1, H};
  l.grid[2] = {std::nullopt, 1, 1, (P + PB - 1) / PB};
  l.args.clear();
  for (int i = 0; i < 10; ++i)
    l.args.push_back(val(id(in[i])));
  l.args.push_back(state((int)op.getLayer(), op.getState().str()));
  l.args.push_back(val(id(op.getResult())));
}

// Mamba's selective scan: one thread per (request, channel) with the channel's state_size
// values in registers, token by token.
void Emitter::emitSelective(SelectiveScanOp op) {
  auto in = op->getOperands();
  bool gated = in.size() == 11;
  int64_t I = cols(in[0]), G = op.getNGroups(), N = op.getStateSize();
  std::string body = fill(R"(  const @TX@ *x = (const @TX@ *)a.p[0];
  const @TDTV@ *dtv = (const @TDTV@ *)a.p[1];
  const @TB@ *Bm = (const @TB@ *)a.p[2];
  const @TC@ *Cm = (const @TC@ *)a.p[3];
  const @TAL@ *A_log = (const @TAL@ *)a.p[4];
  const @TDB@ *dt_bias = (const @TDB@ *)a.p[5];
  const @TD@ *Dv = (const @TD@ *)a.p[6];
  const @TZ@ *z = (const @TZ@ *)a.p[7];
  const int *cu = (const int *)a.p[8];
  const int *slots = (const int *)a.p[9];
  const int *has_initial = (const int *)a.p[10];
  float *pool = (float *)a.p[11];
  @TO@ *out = (@TO@ *)a.p[12];
  int r = blockIdx.x, i = blockIdx.y * blockDim.x + threadIdx.x;
  if (i >= @I@) return;
  int g = i / (@I@ / @G@);
  float *S = pool + ((long long)slots[r] * @I@ + i) * @N@;
  float s[@N@], A[@N@];
  for (int n = 0; n < @N@; ++n) {
    s[n] = has_initial[r] ? S[n] : 0.0f;
    A[n] = -expf(ld(A_log, (long long)i * @N@ + n));
  }
  float dtb = ld(dt_bias, i), D = ld(Dv, i);
  for (int t = cu[r]; t < cu[r + 1]; ++t) {
    float dn = ld(dtv, (long long)t * @I@ + i) + dtb;
    float dt = dn > 20.0f ? dn : log1pf(expf(dn));
    float xv = ld(x, (long long)t * @I@ + i), y = 0.0f;
    for (int n = 0; n < @N@; ++n) {
      float b = ld(Bm, (long long)t * @G@ * @N@ + g * @N@ + n), c = ld(Cm, (long long)t * @G@ * @N@ + g * @N@ + n);
      s[n] = expf(dt * A[n]) * s[n] + dt * b * xv;
      y += s[n] * c;
    }
    y += D * xv;
    if (@GATED@) y *= act_silu(ld(z, (long long)t * @I@ + i));
    st(out, (long long)t * @I@ + i, y);
  }
  for (int n = 0; n < @N@; ++n) S[n] = s[n];
)", {{"I", str(I)}, {"G", str(G)}, {"N", str(N)}, {"GATED", gated ? "true" : "false"},
     {"TX", ty(in[0])}, {"TDTV", ty(in[1])}, {"TB", ty(in[2])}, {"TC", ty(in[3])}, {"TAL", ty(in[4])},
     {"TDB", ty(in[5])}, {"TD", ty(in[6])}, {"TZ", gated ? ty(in[7]) : "float"},
     {"TO", ty(op.getResult())}});
  LaunchOut &l = launch(kernel("selective_scan", body), 128);
  l.grid[0] = {RuntimeVar::NumRequests, 1, 1, 0};
  l.grid[1] = {std::nullopt, 1, 1, (I + 127) / 128};
  l.args.clear();
  for (int i = 0; i < 7; ++i)
    l.args.push_back(val(id(in[i])));
  l.args.push_back(gated ? val(id(in[7])) : null());
  size_t meta = gated ? 8 : 7;
  for (size_t i = meta; i < meta + 3; ++i)
    l.args.push_back(val(id(in[i])));
  l.args.push_back(state((int)op.getLayer(), op.getState().str()));
  l.args.push_back(val(id(op.getResult())));
}

void Emitter::emitGatedDelta(GatedDeltaOp op) {
  auto in = op->getOperands();
  int64_t Hk = op.getNumKHeads(), Hv = op.getNumVHeads();
  int64_t dk = op.getKDim(), dv = op.getVDim();
  int64_t rows = (dk + 3) / 4; // state rows per warp
  std::string body = fill(R"(  __shared__ float qs[@DK@], ks[@DK@], red[4][32], scal[4];
  const @TQ@ *q = (const @TQ@ *)a.p[0];
  const @TK@ *k = (const @TK@ *)a.p[1];
  const @TV@ *v = (const @TV@ *)a.p[2];
  const @TA@ *av = (const @TA@ *)a.p[3];
  const @TBB@ *bv = (const @TBB@ *)a.p[4];
  const @TAL@ *A_log = (const @TAL@ *)a.p[5];
  const @TDT@ *dt_bias = (const @TDT@ *)a.p[6];
  const int *cu = (const int *)a.p[7];
  const int *slots = (const int *)a.p[8];
  const int *has_initial = (const int *)a.p[9];
  float *pool = (float *)a.p[10];
  @TO@ *out = (@TO@ *)a.p[11];
  int r = blockIdx.x, h = blockIdx.y, col = blockIdx.z * 32 + (threadIdx.x & 31), warp = threadIdx.x >> 5;
  int kh = h / (@HV@ / @HK@);
  float *S = pool + ((long long)slots[r] * @HV@ + h) * @DK@ * @DV@;
  float s[@ROWS@];
  for (int m = 0; m < @ROWS@; ++m) {
    int i = warp + 4 * m;
    s[m] = (i < @DK@ && col < @DV@ && has_initial[r]) ? S[(long long)i * @DV@ + col] : 0.0f;
  }
  float A = -expf(ld(A_log, h)), dtb = ld(dt_bias, h);
  for (int t = cu[r]; t < cu[r + 1]; ++t) {
    // q and k of this key head, l2-normalised (q also scaled by dk^-1/2), staged in shared memory.
    float pq = 0.0f, pk = 0.0f;
    for (int i = threadIdx.x; i < @DK@; i += blockDim.x) {
      float qv = ld(q, (long long)t * @HK@ * @DK@ + kh * @DK@ + i), kv = ld(k, (long long)t * @HK@ * @DK@ + kh * @DK@ + i);
      qs[i] = qv; ks[i] = kv; pq += qv * qv; pk += kv * kv;
    }
    pq = warp_sum(pq); pk = warp_sum(pk);
    __syncthreads();
    if ((threadIdx.x & 31) == 0) { red[warp][0] = pq; red[warp][1] = pk; }
    __syncthreads();
    float sq = red[0][0] + red[1][0] + red[2][0] + red[3][0], sk = red[0][1] + red[1][1] + red[2][1] + red[3][1];
    float iq = @L2@ ? rsqrtf(sq + 1e-6f) : 1.0f, ik = @L2@ ? rsqrtf(sk + 1e-6f) : 1.0f;
    float an = ld(av, (long long)t * @HV@ + h) + dtb;
    float sp = an > 20.0f ? an : log1pf(expf(an));
    float decay = expf(A * sp);
    float beta = @BETASCALE@ / (1.0f + expf(-ld(bv, (long long)t * @HV@ + h)));
    float u = 0.0f;
    for (int m = 0; m < @ROWS@; ++m) {
      int i = warp + 4 * m;
      float kk = i < @DK@ ? ks[i] * ik : 0.0f;
      s[m] *= decay;
      u += s[m] * kk;
    }
    __syncthreads();
    red[warp][threadIdx.x & 31] = u;
    __syncthreads();
    u = red[0][threadIdx.x & 31] + red[1][threadIdx.x & 31] + red[2][threadIdx.x & 31] + red[3][threadIdx.x & 31];
    float vv = col < @DV@ ? ld(v, (long long)t * @HV@ * @DV@ + h * @DV@ + col) : 0.0f;
    float delta = beta * (vv - u);
    float o = 0.0f;
    for (int m = 0; m < @ROWS@; ++m) {
      int i = warp + 4 * m;
      if (i < @DK@) {
        s[m] += ks[i] * ik * delta;
        o += s[m] * qs[i] * iq * @QSCALE@;
      }
    }
    __syncthreads();
    red[warp][threadIdx.x & 31] = o;
    __syncthreads();
    if (warp == 0 && col < @DV@)
      st(out, (long long)t * @HV@ * @DV@ + h * @DV@ + col,
         red[0][threadIdx.x] + red[1][threadIdx.x] + red[2][threadIdx.x] + red[3][threadIdx.x]);
    __syncthreads();
  }
  for (int m = 0; m < @ROWS@; ++m) {
    int i = warp + 4 * m;
    if (i < @DK@ && col < @DV@) S[(long long)i * @DV@ + col] = s[m];
  }
)", {{"DK", str(dk)}, {"DV", str(dv)}, {"HK", str(Hk)}, {"HV", str(Hv)}, {"ROWS", str(rows)},
     {"TQ", ty(in[0])}, {"TK", ty(in[1])}, {"TV", ty(in[2])}, {"TA", ty(in[3])}, {"TBB", ty(in[4])},
     {"TAL", ty(in[5])}, {"TDT", ty(in[6])}, {"TO", ty(op.getResult())},
     {"L2", op.getQkL2norm() ? "true" : "false"},
     {"BETASCALE", fmtFloat(op.getBetaScale().convertToDouble())},
     {"QSCALE", fmtFloat(1.0 / std::sqrt((double)dk))}});
  LaunchOut &l = launch(kernel("gated_delta", body), 128);
  l.grid[0] = {RuntimeVar::NumRequests, 1, 1, 0};
  l.grid[1] = {std::nullopt, 1, 1, Hv};
  l.grid[2] = {std::nullopt, 1, 1, (dv + 31) / 32};
  l.args.clear();
  for (int i = 0; i < 10; ++i)
    l.args.push_back(val(id(in[i])));
  l.args.push_back(state((int)op.getLayer(), op.getState().str()));
  l.args.push_back(val(id(op.getResult())));
}

LogicalResult Emitter::emitOp(Operation &op) {
  if (auto o = dyn_cast<RmsNormGatedOp>(op)) return emitRmsNormGated(o), success();
  if (auto o = dyn_cast<StateConv1dOp>(op)) return emitConv1d(o), success();
  if (auto o = dyn_cast<GatedDeltaOp>(op)) return emitGatedDelta(o), success();
  if (auto o = dyn_cast<SsdOp>(op)) return emitSsd(o), success();
  if (auto o = dyn_cast<SelectiveScanOp>(op)) return emitSelective(o), success();
  if (auto o = dyn_cast<AddRmsNormOp>(op)) return emitAddRmsNorm(o), success();
  if (auto o = dyn_cast<KvRopeAppendOp>(op)) return emitRopeAppend(o), success();
  if (auto o = dyn_cast<EmbedOp>(op)) return emitEmbed(o), success();
  if (auto o = dyn_cast<RmsNormOp>(op)) return emitRmsNorm(o), success();
  if (auto o = dyn_cast<SplitOp>(op)) return emitSplit(o), success();
  if (auto o = dyn_cast<GluOp>(op)) return emitGlu(o), success();
  if (auto o = dyn_cast<ConcatOp>(op)) return emitConcat(o), success();
  if (auto o = dyn_cast<RopeOp>(op)) return emitRope(o), success();
  if (auto o = dyn_cast<KvAppendOp>(op)) return emitAppend(o), success();
  if (auto o = dyn_cast<KvAttentionOp>(op)) return emitAttention(o), success();
  if (auto o = dyn_cast<RowsGatherOp>(op)) return emitGather(o), success();
  if (auto o = dyn_cast<MoeRouteOp>(op)) return emitRoute(o), success();
  if (auto o = dyn_cast<MoeExpertsOp>(op)) return emitExperts(o), success();
  if (auto o = dyn_cast<AddOp>(op))
    return elementwise(op, "add", "ld(x0, i) + ld(x1, i)", o.getResult(), {o.getLhs(), o.getRhs()}), success();
  if (auto o = dyn_cast<ActOp>(op)) {
    std::string expr = fmtFloat(o.getScale().convertToDouble()) + " * " + actFn(o.getAct()) + "(ld(x0, i))";
    return elementwise(op, "act", expr, o.getResult(), {o.getX()}), success();
  }
  if (auto o = dyn_cast<SoftcapOp>(op)) {
    std::string cap = fmtFloat(o.getCap().convertToDouble());
    return elementwise(op, "softcap", cap + " * tanhf(ld(x0, i) / " + cap + ")", o.getResult(), {o.getX()}), success();
  }
  if (auto o = dyn_cast<GateOp>(op)) {
    std::string g = cols(o.getG()) == 1 ? "ld(x1, r)" : "ld(x1, i)";
    return elementwise(op, "gate", "ld(x0, i) / (1.0f + expf(-" + g + "))", o.getResult(), {o.getX(), o.getG()}),
           success();
  }
  if (auto o = dyn_cast<MulOp>(op)) {
    std::string g = cols(o.getG()) == 1 ? "ld(x1, r)" : "ld(x1, i)";
    return elementwise(op, "mul", "ld(x0, i) * " + g, o.getResult(), {o.getX(), o.getG()}), success();
  }
  if (auto o = dyn_cast<LinearOp>(op)) {
    LaunchOut l;
    l.instr = instr_;
    l.gemm = true;
    l.gemm_x = id(o.getX());
    l.gemm_w = id(o.getWeight());
    l.gemm_bias = o.getBias() ? id(o.getBias()) : -1;
    l.gemm_out = id(o.getResult());
    l.grid[0] = {rowsVar(o.getX()), 1, 1, 0};
    prog_.launches.push_back(l);
    return success();
  }
  return op.emitError("no CUDA code generation for ") << op.getName();
}

FailureOr<CudaProgram> Emitter::run() {
  auto func = module_.lookupSymbol<func::FuncOp>("step");
  if (!func)
    return module_.emitError("no func.func @step");
  Block &block = func.getBody().front();
  auto plan = module_->getAttrOfType<CachePlanAttr>("cbc.cache_plan");
  if (!plan || plan.getKvDtype() == StorageType::f16)
    return module_.emitError("CUDA code generation needs a bf16 or f32 kv cache plan");
  kvType_ = plan.getKvDtype() == StorageType::f32 ? "float" : "bf16";
  blockSize_ = plan.getBlockSize();
  // Value ids, numbered as the artefact writer numbers them, and the device types
  // cbc-assign-device-types chose.
  auto add = [&](Value v, fb::DType d) {
    ids_[v.getAsOpaquePointer()] = (int)prog_.value_dtypes.size();
    prog_.value_dtypes.push_back((int)d);
  };
  for (BlockArgument arg : block.getArguments())
    add(arg, fb::DType::I32);
  Value output;
  for (Operation &op : block) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      output = ret.getOperand(0);
      continue;
    }
    auto types = op.getAttrOfType<ArrayAttr>("cbc.device_types");
    if (op.getNumResults() && (!types || types.size() != op.getNumResults()))
      return op.emitError("op has no device types; run cbc-assign-device-types first");
    for (auto [i, r] : llvm::enumerate(op.getResults())) {
      Type t = llvm::cast<TypeAttr>(types[i]).getValue();
      if (t.isF16())
        return op.emitError("CUDA code generation takes bf16 or f32 values, not f16 (use --dtype bf16 or f32, "
                            "or --no-cuda)");
      add(r, t.isF32() ? fb::DType::F32 : t.isInteger(32) ? fb::DType::I32 : fb::DType::BF16);
      if (isa<RowsGatherOp>(op))
        perRequest_.insert(r.getAsOpaquePointer());
      else
        for (Value in : op.getOperands())
          if (perRequest_.count(in.getAsOpaquePointer()))
            perRequest_.insert(r.getAsOpaquePointer());
    }
  }

  source_ << kCudaPrelude << kCbcArgsDecl;
  int index = 0;
  for (Operation &op : block) {
    if (isa<func::ReturnOp, WeightRefOp>(op))
      continue;
    instr_ = index++;
    if (failed(emitOp(op)))
      return failure();
  }
  emitArgmax(output);
  prog_.source = source_.str();
  return prog_;
}

} // namespace

FailureOr<CudaProgram> emitCuda(ModuleOp module) {
  return Emitter(module).run();
}

} // namespace cbc::codegen
