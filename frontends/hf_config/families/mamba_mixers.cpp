#include "frontends/hf_config/families/mamba_mixers.h"

#include "frontends/hf_config/families/helpers.h"
#include "runtime/schema/limits.h"

namespace cbc::hf {

void parseMamba2(const ConfigReader &r, ModelSpec &s, const Mamba2Keys &k) {
  Mamba2Spec &m = s.mamba2;
  m.heads = r.getSize(k.heads, k.heads_default);
  // "auto": the intermediate width (expand * hidden_size) split over the heads.
  m.head_dim = isAuto(r, k.head_dim) || (!r.has(k.head_dim) && k.head_dim_default == 0)
                   ? r.getSize(k.expand, 2) * s.hidden_size / m.heads
                   : r.getSize(k.head_dim, k.head_dim_default);
  if (m.head_dim <= 0)
    throw ConfigError(r.path(k.head_dim), "gives an empty Mamba head");
  m.groups = r.getSize(k.groups, k.groups_default);
  m.state = r.getSize(k.state, k.state_default);
  m.conv_kernel = r.getSize(k.conv, 4);
  m.conv_bias = r.getBool(k.conv_bias, k.conv_bias_default);
  m.bias = r.getBool(k.bias, k.bias_default);
  m.out_bias = m.bias;
  m.norm_eps = r.getNumber(k.eps, s.norm_eps);
  m.norm_groups = m.groups;
  if (m.heads % m.groups != 0)
    throw ConfigError(r.path(k.heads), "must be a multiple of " + std::string(k.groups) + " (" +
                                           std::to_string(m.groups) + ")");
  if (r.getString("hidden_act", "silu") != "silu" && r.getString("mamba_hidden_act", "silu") != "silu")
    throw ConfigError(r.path("hidden_act"), "the Mamba conv supports only silu");
}

void parseDtLimit(const ConfigReader &r, const char *key, Mamba2Spec &m) {
  if (!r.has(key))
    return;
  const nlohmann::json &v = r.raw(key);
  if (!v.is_array() || (v.size() != 0 && v.size() != 2))
    throw ConfigError(r.path(key), "expected [min, max]");
  if (v.size() == 2) {
    if (!jsonNumber(v[0], m.dt_min) || !jsonNumber(v[1], m.dt_max))
      throw ConfigError(r.path(key), "expected two numbers");
    if (!(m.dt_min >= 0 && m.dt_min <= m.dt_max))
      throw ConfigError(r.path(key), "must satisfy 0 <= min <= max");
  }
}

double timeStepMin(const ConfigReader &r, const char *key) {
  double dtMin = r.getNumber(key, 0.001);
  if (dtMin < 0)
    throw ConfigError(r.path("time_step_min"), "must not be negative");
  return dtMin;
}

void parseMamba1(const ConfigReader &r, ModelSpec &s, const Mamba1Keys &k) {
  Mamba1Spec &m = s.mamba1;
  m.state = r.getSize(k.state, 16);
  int64_t derived = r.getSize(k.expand, 2) * s.hidden_size;
  m.intermediate = k.intermediate ? r.getSize(k.intermediate, derived) : derived;
  if (m.intermediate > limits::kMaxDim)
    throw ConfigError(r.path(k.expand), "gives a mixer width of " + std::to_string(m.intermediate) +
                                            ", above the largest cbc supports (" + std::to_string(limits::kMaxDim) + ")");
  m.conv_kernel = r.getSize(k.conv, 4);
  m.dt_rank = !r.has(k.dt_rank) || isAuto(r, k.dt_rank) ? (s.hidden_size + 15) / 16 : r.requireSize(k.dt_rank);
  m.conv_bias = r.getBool(k.conv_bias, true);
  m.bias = r.getBool(k.bias, false);
}

} // namespace cbc::hf
