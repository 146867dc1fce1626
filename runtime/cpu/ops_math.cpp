// The CPU compile functions of the dense math ops (cbc.math.*).
#include "runtime/cpu/op_context.h"

#include <algorithm>
#include <cmath>

namespace cbc::rt::cpu {

// By token id, or by position (a learned position table); either way every index the step can
// hold must have its row: the vocabulary, or max_positions (which bounds max_model_len).
Exec compileEmbed(const OpContext &c) {
  c.need(2, 1);
  StepArg by = c.isArg(c.I[0], StepArg::Positions) ? StepArg::Positions : StepArg::Tokens;
  c.needArg(0, by);
  c.acts({c.O[0]});
  int table = c.I[1], out = c.O[0];
  const fb::EmbedParams &p = c.params<fb::EmbedParams>();
  float scale = (float)p.scale();
  int64_t offset = p.offset(), H = c.cols(out);
  int64_t indices = by == StepArg::Tokens ? c.artefact.meta.vocab_size : c.artefact.meta.max_positions;
  const auto &shape = c.weightShape(table);
  // With an oov_row, ids past a shorter table read that row.
  int64_t oov = p.has_oov_row() ? p.oov_row() : -1, shares = p.vocab_ranks();
  c.check(shares == 1 || (shares == c.artefact.ranks && oov < 0 && offset == 0),
          "divides its table among other ranks than the artefact's");
  c.check(offset >= 0 && shape.size() == 2 && shape[1] == H &&
              (shape[0] * shares >= indices + offset || (oov >= 0 && oov < shape[0])),
          by == StepArg::Tokens ? "has an embedding table that does not match the vocabulary and width"
                                : "has a position table that does not cover max_positions rows after its offset");
  int64_t rows = shape[0];
  return [=](StepEnv &e) {
    int64_t first = shares > 1 ? e.comm->rank() * rows : 0;
    embed(e.arg(by), e.batch->num_tokens, e.matrix(table), H, scale, e.f32(out), offset, oov >= 0 ? rows : 0, oov,
          first, shares > 1 ? rows : 0);
  };
}

Exec compileLinear(const OpContext &c) {
  c.need(2, 1);
  c.acts({c.I[0], c.O[0]});
  int x = c.I[0], w = c.I[1], out = c.O[0], bias = c.I.size() > 2 ? c.I[2] : -1;
  int64_t K = c.cols(x), N = c.cols(out);
  c.check(c.weightNumel(w) == N * K && c.weightShape(w).size() == 2 && c.weightShape(w)[1] == K,
          "has a weight whose shape is not [out, in]");
  c.check(bias < 0 || c.weightNumel(bias) == N, "has a bias of the wrong size");
  return [=](StepEnv &e) {
    linear(e.f32(x), e.rows(x), K, e.matrix(w), N, bias >= 0 ? e.weight(bias) : nullptr, e.f32(out), e.pfor);
  };
}

Exec compileHeadLinear(const OpContext &c) {
  c.need(2, 1);
  c.acts({c.I[0], c.O[0]});
  const fb::HeadLinearParams &p = c.params<fb::HeadLinearParams>();
  int x = c.I[0], w = c.I[1], out = c.O[0];
  int64_t heads = p.heads(), offset = p.offset(), rows = p.rows();
  bool transpose = p.transpose();
  const auto &ws = c.weightShape(w);
  bool matrix = ws.size() == 2;
  c.checkShape(shape::check(shape::HeadLinear{heads, offset, rows, (int64_t)ws.size(), matrix ? ws[0] : 0,
                                              matrix ? ws[1] : 0, transpose, c.cols(x), c.cols(out)}));
  int64_t R = ws[0] / heads, C = ws[1];
  return [=](StepEnv &e) {
    headLinear(e.f32(x), e.rows(x), e.weight(w), heads, R, C, offset, rows, transpose, e.f32(out), e.pfor);
  };
}

Exec compilePositionScale(const OpContext &c) {
  c.need(2, 1);
  c.needArg(1, StepArg::Positions);
  c.acts({c.I[0], c.O[0]});
  const fb::PositionScaleParams &p = c.params<fb::PositionScaleParams>();
  int x = c.I[0], out = c.O[0];
  int64_t width = c.cols(x), period = p.period(), offset = p.offset();
  float beta = (float)p.beta();
  c.check(period > 0 && offset >= 0 && c.cols(out) == width, "has a bad period, offset or width");
  c.check(p.form() >= fb::PositionScaleForm::MIN && p.form() <= fb::PositionScaleForm::MAX, "has an unknown form");
  fb::PositionScaleForm form = p.form();
  return [=](StepEnv &e) {
    positionScale(e.f32(x), e.rows(x), width, e.arg(StepArg::Positions), beta, period, offset, e.f32(out), form);
  };
}

Exec compileL2Clip(const OpContext &c) {
  c.need(1, 1);
  const fb::L2ClipParams &p = c.params<fb::L2ClipParams>();
  int x = c.I[0], scale = c.I.size() > 1 ? c.I[1] : -1, out = c.O[0];
  c.check(c.I.size() <= 2 && (scale < 0 || !c.isAct(scale)), "has the wrong operands");
  c.acts({x, out});
  int64_t width = c.cols(x), group = p.group();
  bool vec = scale >= 0 && c.weightShape(scale).size() == 1;
  c.checkShape(shape::check(shape::L2Clip{width, group, vec ? c.weightNumel(scale) : -1, c.cols(out), p.threshold(),
                                          p.eps(), scale >= 0}));
  float threshold = (float)p.threshold(), eps = (float)p.eps();
  return [=](StepEnv &e) {
    l2Clip(e.f32(x), e.rows(x), width, group, scale >= 0 ? e.weight(scale) : nullptr, threshold, eps, e.f32(out));
  };
}

Exec compileHeadPositionScale(const OpContext &c) {
  c.need(4, 1);
  c.needArg(1, StepArg::Positions);
  c.acts({c.I[0], c.O[0]});
  int x = c.I[0], scale = c.I[2], bias = c.I[3], out = c.O[0];
  auto vec = [&](int w) { return c.weightShape(w).size() == 1 ? c.weightNumel(w) : -1; };
  c.checkShape(shape::check(shape::HeadPositionScale{c.cols(x), vec(scale), vec(bias), c.cols(out)}));
  int64_t heads = vec(scale), width = c.cols(x);
  return [=](StepEnv &e) {
    headPositionScale(e.f32(x), e.rows(x), width, heads, e.arg(StepArg::Positions), e.weight(scale), e.weight(bias),
                      e.f32(out));
  };
}

Exec compileSinusoidalPosition(const OpContext &c) {
  c.need(1, 1);
  c.needArg(0, StepArg::Positions);
  c.acts({c.O[0]});
  const fb::SinusoidalPositionParams &p = c.params<fb::SinusoidalPositionParams>();
  int out = c.O[0];
  int64_t D = c.cols(out), offset = p.offset(), pad = p.has_padding_row() ? p.padding_row() : -1;
  c.checkShape(shape::check(shape::SinusoidalPosition{D}));
  c.check(p.base() > 1 && std::isfinite(p.base()), "has a base that is not finite and above 1");
  bool power = p.form() == fb::SinusoidForm::Power;
  c.check(p.form() >= fb::SinusoidForm::MIN && p.form() <= fb::SinusoidForm::MAX && (!power || D % 2 == 0),
          "has an unknown form or an odd width for the power form");
  // The frequencies as transformers rounds them: exp(i * step), the step ln(base) / (h - 1) in
  // double then fp32 (XGLM); or 1 / base ^ (2i / D) with each operation in fp32 (CTRL).
  std::vector<float> freq(D / 2);
  float step = (float)(-std::log(p.base()) / (double)(D / 2 - 1));
  for (int64_t i = 0; i < D / 2; ++i)
    freq[i] = power ? 1.0f / std::pow((float)p.base(), (float)(2 * i) / (float)D) : std::exp((float)i * step);
  return [=](StepEnv &e) {
    sinusoidalPosition(e.arg(StepArg::Positions), e.rows(out), D, offset, freq.data(), pad, e.f32(out));
  };
}

Exec compileRmsNorm(const OpContext &c) {
  c.need(1, 1);
  c.acts({c.I[0], c.O[0]});
  const fb::NormParams &p = c.params<fb::NormParams>();
  int x = c.I[0], out = c.O[0], w = c.I.size() > 1 ? c.I[1] : -1;
  int64_t width = c.cols(x), group = p.group() ? p.group() : width;
  float eps = (float)p.eps(), offset = (float)p.offset();
  c.check(group > 0 && width % group == 0 && c.cols(out) == width, "has an inconsistent width or group");
  // One entry per feature of a group, or per feature of the row.
  c.check(w < 0 || c.weightNumel(w) == group || c.weightNumel(w) == width, "has a weight of the wrong size");
  bool perRow = w >= 0 && c.weightNumel(w) != group;
  return [=](StepEnv &e) {
    rmsNorm(e.f32(x), e.rows(x), width, group, w >= 0 ? e.weight(w) : nullptr, eps, offset, e.f32(out), perRow);
  };
}

// Inputs x, then an optional weight, then an optional bias (only with a weight).
Exec compileLayerNorm(const OpContext &c) {
  c.need(1, 1);
  c.acts({c.I[0], c.O[0]});
  const fb::NormParams &p = c.params<fb::NormParams>();
  int x = c.I[0], out = c.O[0];
  int w = c.I.size() > 1 ? c.I[1] : -1, bias = c.I.size() > 2 ? c.I[2] : -1;
  int64_t width = c.cols(x), group = p.group() ? p.group() : width;
  float eps = (float)p.eps(), offset = (float)p.offset();
  c.check(group > 0 && width % group == 0 && c.cols(out) == width, "has an inconsistent width or group");
  // One entry per feature of a group, or per feature of the row; the bias as the weight.
  int64_t n = w >= 0 ? c.weightNumel(w) : group;
  c.check((n == group || n == width) && (bias < 0 || c.weightNumel(bias) == n),
          "has a weight or bias of the wrong size");
  bool perFeature = n != group;
  return [=](StepEnv &e) {
    layerNorm(e.f32(x), e.rows(x), width, group, w >= 0 ? e.weight(w) : nullptr, bias >= 0 ? e.weight(bias) : nullptr,
              perFeature, eps, offset, e.f32(out));
  };
}

namespace {
// x + w or x * w for a weight w on every row, each of its n entries on width / n consecutive
// columns (cbc.math.add and cbc.math.mul with a weight operand).
Exec rowWeight(const OpContext &c, bool multiply) {
  int a = c.I[0], b = c.I[1], out = c.O[0];
  c.acts({a, out});
  int64_t width = c.cols(a), n = c.weightNumel(b);
  c.check(c.cols(out) == width && n > 0 && width % n == 0, "has a weight whose length does not divide its width");
  int64_t group = width / n;
  return [=](StepEnv &e) {
    const float *x = e.f32(a), *w = e.weight(b);
    float *y = e.f32(out);
    for (int64_t r = 0, rows = e.rows(a); r < rows; ++r)
      for (int64_t j = 0; j < width; ++j)
        y[r * width + j] = multiply ? x[r * width + j] * w[j / group] : x[r * width + j] + w[j / group];
  };
}
} // namespace

Exec compileAdd(const OpContext &c) {
  c.need(2, 1);
  int a = c.I[0], b = c.I[1], out = c.O[0];
  if (c.value(b).kind == Value::Weight)
    return rowWeight(c, false);
  c.acts({a, b, out});
  int64_t width = c.cols(a);
  c.check(c.cols(b) == width && c.cols(out) == width, "adds operands of different widths");
  return [=](StepEnv &e) { add(e.f32(a), e.f32(b), e.rows(a) * width, e.f32(out)); };
}

namespace {
// x * f(g), one g per group of equal columns: cbc.math.mul and cbc.math.gate.
Exec rowFactor(const OpContext &c, bool sigmoid) {
  c.need(2, 1);
  c.acts({c.I[0], c.I[1], c.O[0]});
  int x = c.I[0], g = c.I[1], out = c.O[0];
  int64_t width = c.cols(x), gw = c.cols(g);
  c.check(c.cols(out) == width && gw >= 1 && width % gw == 0, "has a gate of the wrong width");
  return [=](StepEnv &e) { sigmoidGate(e.f32(x), e.f32(g), e.rows(x), width, gw, e.f32(out), sigmoid); };
}

} // namespace

Exec compileMul(const OpContext &c) {
  if (c.I.size() == 2 && c.value(c.I[1]).kind == Value::Weight) {
    c.need(2, 1);
    return rowWeight(c, true);
  }
  return rowFactor(c, false);
}
Exec compileGate(const OpContext &c) { return rowFactor(c, true); }

Exec compileGlu(const OpContext &c) {
  c.need(1, 1);
  c.acts({c.I[0], c.O[0]});
  const fb::GluParams &p = c.params<fb::GluParams>();
  Act act = p.act();
  bool inter = p.layout() == fb::GluLayout::Interleaved;
  std::optional<SwigluClamp> clamp = swigluForm(p);
  int x = c.I[0], out = c.O[0];
  int64_t width = c.cols(out);
  c.check(c.cols(x) == 2 * width, "needs an input twice as wide as its output");
  return [=](StepEnv &e) { glu(e.f32(x), e.rows(x), width, act, inter, clamp ? &*clamp : nullptr, e.f32(out)); };
}

Exec compileSplit(const OpContext &c) {
  c.need(1, c.O.size());
  int x = c.I[0];
  std::vector<int> outs = c.O;
  int64_t width = c.cols(x), total = 0;
  c.acts({x});
  for (int o : outs) {
    c.acts({x, o});
    total += c.cols(o);
  }
  c.check(total <= width, "splits more columns than its input has");
  std::vector<int64_t> widths;
  for (int o : outs)
    widths.push_back(c.cols(o));
  return [=](StepEnv &e) {
    int64_t col = 0;
    for (size_t i = 0; i < outs.size(); ++i) {
      copyColumns(e.f32(x), e.rows(x), width, col, widths[i], e.f32(outs[i]));
      col += widths[i];
    }
  };
}

Exec compileConcat(const OpContext &c) {
  c.check(!c.I.empty() && c.O.size() == 1, "has the wrong number of operands");
  std::vector<int> ins = c.I;
  int out = c.O[0];
  int64_t total = 0;
  std::vector<int64_t> widths;
  for (int i : ins) {
    c.acts({i, out});
    widths.push_back(c.cols(i));
    total += c.cols(i);
  }
  c.check(total == c.cols(out), "has a result whose width is not the sum of its inputs'");
  return [=](StepEnv &e) {
    std::vector<std::pair<const float *, int64_t>> parts;
    for (size_t i = 0; i < ins.size(); ++i)
      parts.emplace_back(e.f32(ins[i]), widths[i]);
    concatColumns(parts, e.rows(out), e.f32(out));
  };
}

RopeParams ropeParams(const fb::RopeParams &r) {
  RopeParams p;
  p.head_dim = r.head_dim();
  p.rotary_dim = r.rotary_dim();
  p.interleaved = r.pairing() == fb::RopePairing::Interleaved;
  if (r.inv_freq())
    p.inv_freq.assign(r.inv_freq()->begin(), r.inv_freq()->end());
  p.attention_factor = (float)r.attention_factor();
  if (r.inv_freq_long() && r.inv_freq_long()->size()) {
    p.inv_freq_long.assign(r.inv_freq_long()->begin(), r.inv_freq_long()->end());
    p.long_after = r.long_after();
  }
  if (r.dynamic_base() != 0) {
    p.dynamic_base = r.dynamic_base();
    p.dynamic_factor = r.dynamic_factor();
    p.dynamic_max_positions = r.dynamic_max_positions();
  }
  if (r.sections())
    p.sections.assign(r.sections()->begin(), r.sections()->end());
  p.rotary_offset = r.rotary_offset();
  return p;
}

void checkRope(const OpContext &c, const RopeParams &p) {
  c.check((int64_t)p.inv_freq.size() == p.rotary_dim / 2 && p.head_dim > 0 && p.rotary_dim > 0 &&
              p.rotary_offset >= 0 && p.rotary_offset + p.rotary_dim <= p.head_dim &&
              (p.inv_freq_long.empty() || (int64_t)p.inv_freq_long.size() == p.rotary_dim / 2),
          "has an inconsistent RoPE schedule");
  c.check(p.sections.empty() ||
              ((int64_t)p.sections.size() == p.rotary_dim / 2 && p.inv_freq_long.empty() && p.dynamic_factor == 0 &&
               std::all_of(p.sections.begin(), p.sections.end(), [](int8_t s) { return s >= 0 && s <= 2; })),
          "has inconsistent RoPE sections");
}

Exec compileRope(const OpContext &c) {
  c.need(4, 1);
  RopeParams p = ropeParams(c.params<fb::RopeParams>());
  checkRope(c, p);
  int x = c.I[0], out = c.O[0];
  c.acts({x, out});
  c.check(c.cols(x) % p.head_dim == 0 && c.cols(out) == c.cols(x), "has a width that is not whole heads");
  c.needArg(1, StepArg::Positions);
  c.needArg(2, StepArg::SeqIds);
  c.needArg(3, StepArg::PromptLens);
  // The optional inputs in order: the section positions (with sections), the frequency log-scales.
  size_t first = p.sections.empty() ? 4 : 5;
  c.check(c.I.size() >= first, "takes section positions exactly when its schedule has sections");
  if (!p.sections.empty())
    c.needArg(4, StepArg::RopePositions);
  int scale = -1;
  if (c.I.size() > first) {
    scale = c.I[first];
    c.check(c.I.size() == first + 1 && c.weightNumel(scale) == p.rotary_dim / 2,
            "has frequency log-scales that are not rotary_dim / 2 values");
  }
  int64_t width = c.cols(x);
  return [=](StepEnv &e) {
    const StepBatch &b = *e.batch;
    if (!p.sections.empty() && (int64_t)b.rope_positions.size() != 3 * b.num_tokens)
      throw std::logic_error("a multimodal RoPE step without three positions per token");
    rope(e.f32(x), b.num_tokens, width, p, b.positions.data(), e.seqLengths(), e.f32(out), e.pfor,
         b.rope_positions.data(), scale >= 0 ? e.weight(scale) : nullptr);
  };
}

Exec compileAct(const OpContext &c) {
  c.need(1, 1);
  const fb::ActParams &p = c.params<fb::ActParams>();
  Act act = p.act();
  float scale = (float)p.scale();
  int x = c.I[0], out = c.O[0];
  c.acts({x, out});
  c.check(c.cols(out) == c.cols(x), "changes the width");
  int64_t width = c.cols(x);
  return [=](StepEnv &e) {
    const float *in = e.f32(x);
    float *y = e.f32(out);
    for (int64_t i = 0, n = e.rows(x) * width; i < n; ++i)
      y[i] = scale * activate(act, in[i]);
  };
}

Exec compileSoftcap(const OpContext &c) {
  c.need(1, 1);
  float cap = (float)c.params<fb::SoftcapParams>().cap();
  int x = c.I[0], out = c.O[0];
  c.acts({x, out});
  c.check(c.cols(out) == c.cols(x), "changes the width");
  int64_t width = c.cols(x);
  return [=](StepEnv &e) { softcap(e.f32(x), e.rows(x) * width, cap, e.f32(out)); };
}

Exec compileClamp(const OpContext &c) {
  c.need(1, 1);
  float limit = (float)c.params<fb::ClampParams>().limit();
  c.check(limit > 0 && std::isfinite(limit), "has a limit that is not positive and finite");
  int x = c.I[0], out = c.O[0];
  c.acts({x, out});
  c.check(c.cols(out) == c.cols(x), "changes the width");
  int64_t width = c.cols(x);
  return [=](StepEnv &e) {
    const float *in = e.f32(x);
    float *y = e.f32(out);
    for (int64_t i = 0, n = e.rows(x) * width; i < n; ++i)
      y[i] = std::min(std::max(in[i], -limit), limit);
  };
}

Exec compileMatchRms(const OpContext &c) {
  c.need(2, 1);
  int x = c.I[0], ref = c.I[1], out = c.O[0];
  c.acts({x, ref, out});
  c.check(c.cols(out) == c.cols(x), "changes the width");
  float floor = (float)c.params<fb::MatchRmsParams>().floor();
  c.check(floor > 0 && std::isfinite(floor), "has a floor that is not positive and finite");
  int64_t width = c.cols(x), refWidth = c.cols(ref);
  return [=](StepEnv &e) { matchRms(e.f32(x), e.f32(ref), e.rows(x), width, refWidth, floor, e.f32(out)); };
}

// Each of `heads` heads of x, then `width` features: extra's value for the head (or `value`),
// then zeros.
Exec compileHeadPad(const OpContext &c) {
  const fb::HeadPadParams &p = c.params<fb::HeadPadParams>();
  int x = c.I[0], extra = c.I.size() > 1 ? c.I[1] : -1, out = c.O[0];
  c.acts({x, out});
  if (extra >= 0)
    c.acts({extra});
  int64_t heads = p.heads(), width = p.width(), in = c.cols(x);
  c.check(heads > 0 && width > 0 && in % heads == 0 && c.cols(out) == in + heads * width &&
              (extra < 0 || c.cols(extra) == heads),
          "has inconsistent widths");
  int64_t d = in / heads;
  float value = (float)p.value();
  return [=](StepEnv &e) {
    const float *src = e.f32(x), *ex = extra >= 0 ? e.f32(extra) : nullptr;
    float *dst = e.f32(out);
    for (int64_t t = 0, rows = e.rows(x); t < rows; ++t)
      for (int64_t h = 0; h < heads; ++h) {
        float *o = dst + t * (in + heads * width) + h * (d + width);
        std::copy(src + t * in + h * d, src + t * in + (h + 1) * d, o);
        o[d] = ex ? ex[t * heads + h] : value;
        std::fill(o + d + 1, o + d + width, 0.0f);
      }
  };
}

Exec compileGaussianTopk(const OpContext &c) {
  c.need(1, 1);
  int x = c.I[0], out = c.O[0];
  c.acts({x, out});
  c.check(c.cols(out) == c.cols(x), "changes the width");
  float multiplier = (float)c.params<fb::GaussianTopkParams>().multiplier();
  c.check(std::isfinite(multiplier), "has a multiplier that is not finite");
  int64_t width = c.cols(x);
  return [=](StepEnv &e) { gaussianTopk(e.f32(x), e.rows(x), width, multiplier, e.f32(out)); };
}

Exec compileXielu(const OpContext &c) {
  c.need(5, 1);
  int x = c.I[0], out = c.O[0];
  c.acts({x, out});
  c.check(c.cols(out) == c.cols(x), "changes the width");
  for (int i = 1; i < 5; ++i)
    c.check(c.weightNumel(c.I[i]) == 1, "has a parameter that is not one scalar");
  int64_t width = c.cols(x);
  int ap = c.I[1], an = c.I[2], b = c.I[3], ep = c.I[4];
  return [=](StepEnv &e) {
    float beta = *e.weight(b), eps = *e.weight(ep);
    float alphaP = activate(Act::Softplus, *e.weight(ap)), alphaN = beta + activate(Act::Softplus, *e.weight(an));
    const float *in = e.f32(x);
    float *y = e.f32(out);
    for (int64_t i = 0, n = e.rows(x) * width; i < n; ++i) {
      float v = in[i];
      y[i] = v > 0 ? alphaP * v * v + beta * v : (std::expm1(std::min(v, eps)) - v) * alphaN + beta * v;
    }
  };
}

// Per row: s = 127 / max(absmax, 1e-5), x -> clamp(round(x s), -128, 127) / s, rounding half to
// even as torch does (nearbyint in the default rounding mode).
Exec compileActQuant(const OpContext &c) {
  c.need(1, 1);
  int x = c.I[0], out = c.O[0];
  c.acts({x, out});
  c.check(c.cols(out) == c.cols(x), "changes the width");
  int64_t width = c.cols(x);
  return [=](StepEnv &e) {
    for (int64_t r = 0, rows = e.rows(x); r < rows; ++r) {
      const float *in = e.f32(x) + r * width;
      float *y = e.f32(out) + r * width;
      float absmax = 0.0f;
      for (int64_t j = 0; j < width; ++j)
        absmax = std::max(absmax, std::fabs(in[j]));
      float scale = 127.0f / std::max(absmax, 1e-5f);
      for (int64_t j = 0; j < width; ++j)
        y[j] = std::min(std::max(std::nearbyint(in[j] * scale), -128.0f), 127.0f) / scale;
    }
  };
}

// lambda = exp(q1 . k1) - exp(q2 . k2) + lambda_init (sums in fp32), then x[:W] - lambda x[W:].
Exec compileDiffHeads(const OpContext &c) {
  c.need(5, 1);
  int x = c.I[0], out = c.O[0];
  c.acts({x, out});
  int64_t width = c.cols(out), d = c.weightNumel(c.I[1]);
  c.check(c.cols(x) == 2 * width, "has an input that is not twice the result width");
  for (int i = 2; i < 5; ++i)
    c.check(c.weightNumel(c.I[i]) == d, "has lambda vectors of different lengths");
  float lambdaInit = (float)c.params<fb::DiffHeadsParams>().lambda_init();
  int q1 = c.I[1], k1 = c.I[2], q2 = c.I[3], k2 = c.I[4];
  return [=](StepEnv &e) {
    auto dot = [&](int a, int b) {
      float s = 0.0f;
      for (int64_t j = 0; j < d; ++j)
        s += e.weight(a)[j] * e.weight(b)[j];
      return s;
    };
    float lambda = std::exp(dot(q1, k1)) - std::exp(dot(q2, k2)) + lambdaInit;
    const float *in = e.f32(x);
    float *y = e.f32(out);
    for (int64_t r = 0, rows = e.rows(x); r < rows; ++r)
      for (int64_t j = 0; j < width; ++j)
        y[r * width + j] = in[r * 2 * width + j] - lambda * in[r * 2 * width + width + j];
  };
}

// The fused ops run the reference kernels of the ops they replace.
Exec compileAddRmsNorm(const OpContext &c) {
  c.check(c.I.size() >= 2 && c.O.size() == 2, "has the wrong number of operands");
  int a = c.I[0], b = c.I[1], sum = c.O[0], normed = c.O[1], w = c.I.size() > 2 ? c.I[2] : -1;
  int64_t width = c.cols(a);
  c.check(c.isAct(a) && c.isAct(b) && c.isAct(sum) && c.isAct(normed) && c.value(a).arena == c.value(normed).arena &&
              c.cols(b) == width && c.cols(sum) == width && c.cols(normed) == width && width > 0,
          "has operands of different widths");
  c.check(w < 0 || c.weightNumel(w) == width, "has a weight of the wrong size");
  const fb::NormParams &p = c.params<fb::NormParams>();
  float eps = (float)p.eps(), offset = (float)p.offset();
  return [=](StepEnv &e) {
    int64_t rowsN = e.rows(a);
    add(e.f32(a), e.f32(b), rowsN * width, e.f32(sum));
    rmsNorm(e.f32(sum), rowsN, width, width, w >= 0 ? e.weight(w) : nullptr, eps, offset, e.f32(normed));
  };
}

Exec compileRmsNormGated(const OpContext &c) {
  c.check(c.I.size() >= 2 && c.O.size() == 1, "has the wrong number of operands");
  const fb::GatedNormParams &p = c.params<fb::GatedNormParams>();
  c.check(p.norm() != nullptr, "has no norm parameters");
  int x = c.I[0], z = c.I[1], out = c.O[0], w = c.I.size() > 2 ? c.I[2] : -1;
  int64_t width = c.cols(x), group = p.norm()->group() ? p.norm()->group() : width;
  c.check(c.isAct(x) && c.isAct(z) && c.isAct(out) && c.cols(z) == width && c.cols(out) == width && group > 0 &&
              width % group == 0,
          "has operands of different widths");
  c.check(w < 0 || c.weightNumel(w) == group || c.weightNumel(w) == width, "has a weight of the wrong size");
  bool perRow = w >= 0 && c.weightNumel(w) == width && width != group;
  float eps = (float)p.norm()->eps(), offset = (float)p.norm()->offset();
  Act act = p.act();
  bool normFirst = p.order() == fb::NormGateOrder::NormGate;
  return [=](StepEnv &e) {
    rmsNormGated(e.f32(x), e.f32(z), e.rows(x), width, group, w >= 0 ? e.weight(w) : nullptr, perRow, eps, offset,
                 act, normFirst, e.f32(out));
  };
}

Exec compileGroupDot(const OpContext &c) {
  c.need(2, 1);
  const fb::GroupDotParams &p = c.params<fb::GroupDotParams>();
  int a = c.I[0], b = c.I[1], out = c.O[0];
  c.acts({a, b, out});
  c.checkShape(shape::check(shape::GroupDot{p.groups(), c.cols(a), c.cols(b), c.cols(out)}));
  int64_t width = c.cols(a), groups = p.groups();
  float scale = (float)p.scale();
  Act act = p.act();
  return [=](StepEnv &e) { groupDot(e.f32(a), e.f32(b), e.rows(a), width, groups, scale, act, e.f32(out)); };
}

} // namespace cbc::rt::cpu
