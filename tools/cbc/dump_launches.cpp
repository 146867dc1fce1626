#include "tools/cbc/dump_launches.h"

#include "runtime/schema/opcodes.h"

#include <flatbuffers/minireflect.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>

namespace cbc::cli {

namespace {

using nlohmann::json;

// The reflection tables' text with quoted names is JSON once numbers are: every double with
// all its digits, and the non-finite ones (an SSD's dt_max of inf) as strings.
struct JsonParamsVisitor : flatbuffers::ToStringVisitor {
  JsonParamsVisitor() : ToStringVisitor("", true, "", false) {}
  void Double(double x) override {
    if (std::isfinite(x)) {
      char text[32];
      std::snprintf(text, sizeof text, "%.17g", x);
      s += text;
    } else {
      s += std::isnan(x) ? "\"nan\"" : x > 0 ? "\"inf\"" : "\"-inf\"";
    }
  }
  void Float(float x) override { Double(x); }
};

json paramsJson(const rt::Instr &in) {
  fb::OpParams type = opcodeInfo(in.opcode).params;
  if (!in.params || type == fb::OpParams::NONE)
    return json::object();
  const flatbuffers::TypeTable *table = fb::OpParamsTypeTable()->type_refs[(int)type - 1]();
  JsonParamsVisitor visitor;
  flatbuffers::IterateObject(static_cast<const uint8_t *>(in.params), table, &visitor);
  return json::parse(visitor.s);
}

const char *kindName(rt::Value::Kind k) {
  return k == rt::Value::Argument ? "argument" : k == rt::Value::Weight ? "weight" : "activation";
}

json valuesJson(const rt::Artefact &a) {
  json out = json::array();
  const auto *dtypes = a.kernels ? &a.kernels->value_dtypes : nullptr;
  for (size_t i = 0; i < a.program.values.size(); ++i) {
    const rt::Value &v = a.program.values[i];
    json j = {{"kind", kindName(v.kind)}, {"shape", v.shape}, {"dtype", rt::dtypeName(v.dtype)}};
    // What the CUDA backend stores it as (weights bf16 or f32, activations bf16 or f32).
    j["device_dtype"] = rt::dtypeName(dtypes && i < dtypes->size() ? (*dtypes)[i] : v.dtype);
    if (v.kind == rt::Value::Argument)
      j["arg"] = std::string(stepArgName(v.arg));
    if (v.kind == rt::Value::Weight)
      j["name"] = a.weights[v.weight].name;
    if (v.kind == rt::Value::Activation)
      j["rows"] = v.arena == 0 ? "tokens" : "logit_rows";
    out.push_back(std::move(j));
  }
  return out;
}

json launchesJson(const rt::KernelBundle &k) {
  json out = json::array();
  for (const rt::Launch &l : k.launches) {
    json grid = json::array();
    for (const rt::GridDim &g : l.grid)
      grid.push_back({{"var", g.var ? json(std::string(runtimeVarName(*g.var))) : json(nullptr)},
                      {"mul", g.mul}, {"div", g.div}, {"add", g.add}});
    json j = {{"instr", l.instr}, {"grid", grid}, {"block", l.block}, {"smem", l.smem}};
    j["kernel"] = l.kernel >= 0 && l.kernel < (int)k.names.size() ? json(k.names[l.kernel]) : json(nullptr);
    if (l.gemm)
      j["gemm"] = {{"x", l.gemm->x}, {"w", l.gemm->w}, {"bias", l.gemm->bias}, {"out", l.gemm->out}};
    if (l.gather)
      j["gather"] = {{"x", l.gather->x}, {"workspace", l.gather->workspace}};
    out.push_back(std::move(j));
  }
  return out;
}

json cacheJson(const rt::CachePlan &c) {
  static const char *retention[] = {"all", "window", "chunk"};
  static const char *kind[] = {"paged", "state", "static"};
  json groups = json::array(), layers = json::array(), states = json::array();
  for (const rt::CacheGroup &g : c.groups)
    groups.push_back({{"id", g.id}, {"kind", kind[(int)g.kind]}, {"retention", retention[(int)g.retention]},
                      {"tokens", g.tokens}, {"layers", g.layers}, {"bytes_per_token", g.bytes_per_token},
                      {"bytes_per_unit", g.bytes_per_unit}});
  for (const rt::CacheLayer &l : c.layers)
    layers.push_back({{"layer", l.layer}, {"group", l.group}, {"elems_per_token", l.elemsPerToken()}});
  for (const rt::StateDecl &s : c.states) // per-request states are fp32 on both backends
    states.push_back({{"layer", s.layer}, {"name", s.name}, {"shape", s.shape}, {"bytes", s.elems() * 4}});
  return {{"block_size", c.block_size}, {"kv_dtype", rt::dtypeName(c.kv_dtype)}, {"groups", groups},
          {"layers", layers}, {"states", states}};
}

} // namespace

std::string launchesJson(const rt::Artefact &a) {
  json instrs = json::array();
  for (const rt::Instr &in : a.program.instrs)
    instrs.push_back({{"op", in.op}, {"inputs", in.inputs}, {"outputs", in.outputs}, {"params", paramsJson(in)}});
  json doc = {{"model_type", a.meta.model_type},
              {"num_layers", a.meta.num_layers},
              {"hidden_size", a.meta.hidden_size},
              {"vocab_size", a.meta.vocab_size},
              {"values", valuesJson(a)},
              {"instrs", instrs},
              {"output", a.program.output},
              {"cache", cacheJson(a.cache_plan)}};
  doc["launches"] = a.kernels ? launchesJson(*a.kernels) : json::array();
  doc["kernels"] = a.kernels ? json(a.kernels->names) : json::array();
  return doc.dump() + "\n";
}

} // namespace cbc::cli
