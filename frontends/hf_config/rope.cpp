#include "frontends/hf_config/rope.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace cbc::hf {

namespace {

// theta^(2i/dim), rounded to float32 as transformers computes it.
float powFreq(double theta, int64_t i, int64_t dim) {
  float exponent = (float)(2 * i) / (float)dim;
  return (float)std::pow(theta, (double)exponent);
}

// theta^(-2i/dim) for i < dim/2.
std::vector<float> baseInvFreq(double theta, int64_t dim) {
  std::vector<float> out(dim / 2);
  for (int64_t i = 0; i < dim / 2; ++i) {
    out[i] = 1.0f / powFreq(theta, i, dim);
  }
  return out;
}

double yarnMscale(double scale, double mscale) {
  return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

void computeYarn(const ConfigReader &p, const RopeContext &ctx, int64_t dim, int64_t orig,
                 RopeSpec &rope) {
  double factor = p.has("factor") ? p.requireNumber("factor")
                                  : (double)ctx.max_positions / (double)orig;
  if (factor <= 0)
    throw ConfigError(p.path("factor"), "must be positive");
  if (p.has("attention_factor")) {
    rope.attention_factor = p.requireNumber("attention_factor");
  } else if (p.getNumber("mscale", 0) != 0 && p.getNumber("mscale_all_dim", 0) != 0) {
    rope.attention_factor = yarnMscale(factor, p.requireNumber("mscale")) /
                            yarnMscale(factor, p.requireNumber("mscale_all_dim"));
  } else {
    rope.attention_factor = yarnMscale(factor, 1.0);
  }
  double betaFast = p.getNumber("beta_fast", 0);
  double betaSlow = p.getNumber("beta_slow", 0);
  if (betaFast == 0) betaFast = 32;
  if (betaSlow == 0) betaSlow = 1;
  bool truncate = p.getBool("truncate", true);
  auto correctionDim = [&](double rotations) {
    return (dim * std::log((double)orig / (rotations * 2 * M_PI))) / (2 * std::log(rope.theta));
  };
  double low = correctionDim(betaFast), high = correctionDim(betaSlow);
  if (truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, (double)(dim - 1));
  if (low == high)
    high += 0.001; // transformers avoids the singular ramp the same way
  rope.inv_freq.resize(dim / 2);
  for (int64_t i = 0; i < dim / 2; ++i) {
    float posFreq = powFreq(rope.theta, i, dim);
    float extrap = 1.0f / posFreq;
    float interp = 1.0f / ((float)factor * posFreq);
    float ramp = std::clamp((float)(((double)i - low) / (high - low)), 0.0f, 1.0f);
    float extrapWeight = 1.0f - ramp;
    rope.inv_freq[i] = interp * (1 - extrapWeight) + extrap * extrapWeight;
  }
}

void computeLlama3(const ConfigReader &p, int64_t orig, RopeSpec &rope) {
  double factor = p.requireNumber("factor");
  double lowFactor = p.requireNumber("low_freq_factor");
  double highFactor = p.requireNumber("high_freq_factor");
  double lowWavelen = orig / lowFactor, highWavelen = orig / highFactor;
  for (float &f : rope.inv_freq) {
    double wavelen = 2 * M_PI / f;
    double scaled = wavelen > lowWavelen ? f / factor : f;
    if (!(wavelen < highWavelen) && !(wavelen > lowWavelen)) {
      // Equal factors leave no band to smooth (Llama-4-Scout publishes 1.0 and 1.0); only a
      // wavelength exactly on the edge would divide by zero, where transformers computes NaN.
      if (highFactor == lowFactor)
        throw ConfigError(p.path("high_freq_factor"), "equals low_freq_factor and a frequency falls on the band edge");
      double smooth = (orig / wavelen - lowFactor) / (highFactor - lowFactor);
      scaled = (1 - smooth) * scaled / factor + smooth * scaled;
    }
    f = (float)scaled;
  }
}

void computeLongrope(const ConfigReader &p, const RopeContext &ctx, int64_t dim, int64_t orig,
                     RopeSpec &rope) {
  auto shortFactor = p.getNumberList("short_factor");
  auto longFactor = p.getNumberList("long_factor");
  if ((int64_t)shortFactor.size() != dim / 2)
    throw ConfigError(p.path("short_factor"), "must have " + std::to_string(dim / 2) +
                                                  " entries (rotary_dim / 2)");
  if ((int64_t)longFactor.size() != dim / 2)
    throw ConfigError(p.path("long_factor"), "must have " + std::to_string(dim / 2) +
                                                 " entries (rotary_dim / 2)");
  double factor = p.has("factor") ? p.requireNumber("factor")
                                  : (double)ctx.max_positions / (double)orig;
  if (p.has("attention_factor"))
    rope.attention_factor = p.requireNumber("attention_factor");
  else
    rope.attention_factor =
        factor <= 1.0 ? 1.0 : std::sqrt(1 + std::log(factor) / std::log((double)orig));
  rope.inv_freq.resize(dim / 2);
  rope.inv_freq_long.resize(dim / 2);
  for (int64_t i = 0; i < dim / 2; ++i) {
    float posFreq = powFreq(rope.theta, i, dim);
    rope.inv_freq[i] = 1.0f / ((float)shortFactor[i] * posFreq);
    rope.inv_freq_long[i] = 1.0f / ((float)longFactor[i] * posFreq);
  }
  rope.long_after = orig;
}

// Proportional RoPE: every pair (i, i + head_dim / 2) of the head, the first
// int(partial * head_dim / 2) turning at base^(-2i / head_dim) (over the whole head, not the
// rotated part), the others not at all, every frequency divided by `factor` (default 1).
RopeSpec proportionalRope(const ConfigReader &p, const RopeContext &ctx, RopeSpec rope, double partial) {
  int64_t dim = ctx.head_dim, angles = (int64_t)std::floor(partial * (double)dim / 2.0);
  double factor = p.getNumber("factor", 1.0);
  if (factor <= 0)
    throw ConfigError(p.path("factor"), "must be positive");
  if (angles < 1)
    throw ConfigError(p.path("partial_rotary_factor"), "leaves no pair of features to rotate");
  rope.rotary_dim = dim;
  rope.inv_freq = baseInvFreq(rope.theta, dim);
  for (int64_t i = 0; i < dim / 2; ++i)
    rope.inv_freq[i] = i < angles ? (float)(rope.inv_freq[i] / factor) : 0.0f;
  return rope;
}

// The rope type named by `key` (transformers' ROPE_INIT_FUNCTIONS keys cbc computes).
RopeType ropeType(const ConfigReader &p, const char *key) {
  static const std::map<std::string, RopeType> types = {
      {"default", RopeType::Default}, {"linear", RopeType::Linear}, {"dynamic", RopeType::Dynamic},
      {"yarn", RopeType::Yarn},       {"llama3", RopeType::Llama3}, {"longrope", RopeType::LongRope},
      {"proportional", RopeType::Proportional}};
  std::string name = p.getString(key, "default");
  auto it = types.find(name);
  if (it == types.end())
    throw ConfigError(p.path(key), "unsupported RoPE type '" + name +
                                       "' (supported: default, linear, dynamic, yarn, llama3, longrope)");
  return it->second;
}

} // namespace

// The interleaved layout of multimodal RoPE (transformers' apply_interleaved_mrope, the only one
// the families with mrope_section use in 5.23): frequency i reads the height position when
// i % 3 == 1 and i < 3 * section[1], the width position when i % 3 == 2 and i < 3 *
// section[2], else the temporal one. Sections must cover the frequencies.
std::vector<int64_t> mropeSections(const ConfigReader &p, int64_t freqs) {
  std::vector<int64_t> section = p.getIntList("mrope_section");
  int64_t sum = 0;
  for (int64_t s : section)
    sum += s;
  if (section.size() != 3 || sum != freqs || std::any_of(section.begin(), section.end(), [](int64_t s) { return s < 0; }))
    throw ConfigError(p.path("mrope_section"), "must be three non-negative counts summing to the " +
                                                   std::to_string(freqs) + " rotary frequencies");
  std::vector<int64_t> out(freqs, 0);
  for (int64_t i = 0; i < freqs; ++i)
    if (i % 3 == 1 && i < 3 * section[1])
      out[i] = 1;
    else if (i % 3 == 2 && i < 3 * section[2])
      out[i] = 2;
  return out;
}

RopeSpec computeRope(const ConfigReader &p, const RopeContext &ctx) {
  RopeSpec rope;
  const char *typeKey = p.has("rope_type") ? "rope_type" : "type";
  rope.type = ropeType(p, typeKey);
  rope.theta = p.requireNumber("rope_theta");
  if (rope.theta <= 0)
    throw ConfigError(p.path("rope_theta"), "must be positive");
  double partial = p.getNumber("partial_rotary_factor", ctx.partial_rotary_factor);
  if (partial <= 0 || partial > 1)
    throw ConfigError(p.path("partial_rotary_factor"), "must be in (0, 1]");
  if (rope.type == RopeType::Proportional)
    return proportionalRope(p, ctx, rope, partial);
  if (!ctx.partial_rotary && partial != 1.0) {
    if (rope.type != RopeType::Default)
      throw ConfigError(p.path("partial_rotary_factor"),
                        "a partial rotary factor with RoPE type '" + p.getString(typeKey, "default") +
                            "' is not supported for this family");
    partial = 1.0; // transformers' default schedule ignores it here
  }
  int64_t dim = (int64_t)(ctx.head_dim * partial);
  if (dim < 2 || dim % 2 != 0)
    throw ConfigError(p.path("partial_rotary_factor"),
                      "gives an odd or empty rotary dimension " + std::to_string(dim));
  rope.rotary_dim = dim;
  rope.inv_freq = baseInvFreq(rope.theta, dim);
  if (ctx.multimodal && p.has("mrope_section"))
    rope.sections = mropeSections(p, dim / 2);

  auto originalMax = [&]() -> int64_t {
    if (ctx.original_max_override)
      return *ctx.original_max_override;
    return p.getSize("original_max_position_embeddings", ctx.max_positions);
  };

  switch (rope.type) {
  case RopeType::Default:
  case RopeType::Proportional: // computed above
    break;
  case RopeType::Linear: {
    double factor = p.requireNumber("factor");
    if (factor <= 0)
      throw ConfigError(p.path("factor"), "must be positive");
    for (float &f : rope.inv_freq)
      f = (float)(f / factor);
    break;
  }
  case RopeType::Dynamic:
    rope.dynamic_factor = p.requireNumber("factor");
    rope.dynamic_max_positions = ctx.max_positions;
    break;
  case RopeType::Yarn:
    computeYarn(p, ctx, dim, originalMax(), rope);
    break;
  case RopeType::Llama3:
    computeLlama3(p, originalMax(), rope);
    break;
  case RopeType::LongRope:
    computeLongrope(p, ctx, dim, originalMax(), rope);
    break;
  }
  return rope;
}

} // namespace cbc::hf
