// The verifiers of the cbc parameter bundles. Each bundle checks its own fields, so that an op
// holding one only checks how the bundle fits its operands.
#include "dialects/cbc/CbcDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace cbc;

#include "dialects/cbc/CbcEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/cbc/CbcAttrs.cpp.inc"

// Here rather than in CbcDialect.cpp: registering needs the storage classes defined above.
void CbcDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/cbc/CbcAttrs.cpp.inc"
      >();
}

LogicalResult RopeAttr::verify(function_ref<InFlightDiagnostic()> emitError, int64_t headDim,
                               int64_t rotaryDim, RopePairing, DenseF32ArrayAttr invFreq,
                               APFloat attentionFactor, DenseF32ArrayAttr invFreqLong,
                               int64_t longAfter, APFloat dynamicBaseF, APFloat dynamicFactorF,
                               int64_t dynamicMaxPositions, ArrayRef<int64_t> sections, int64_t rotaryOffset) {
  double dynamicBase = dynamicBaseF.convertToDouble(), dynamicFactor = dynamicFactorF.convertToDouble();
  if (headDim <= 0)
    return emitError() << "rope head_dim must be positive";
  if (rotaryDim <= 0 || rotaryDim > headDim || rotaryDim % 2 != 0)
    return emitError() << "rope rotary_dim must be even and in (0, head_dim]";
  if (!invFreq || (int64_t)invFreq.size() != rotaryDim / 2)
    return emitError() << "rope inv_freq must have rotary_dim / 2 entries";
  if (invFreqLong && (int64_t)invFreqLong.size() != rotaryDim / 2)
    return emitError() << "rope inv_freq_long must have rotary_dim / 2 entries";
  if (invFreqLong && longAfter <= 0)
    return emitError() << "rope inv_freq_long needs a positive long_after";
  if (!std::isfinite(attentionFactor.convertToDouble()))
    return emitError() << "rope attention_factor must be finite";
  if (dynamicBase != 0 && (!(dynamicBase > 0) || !(dynamicFactor > 0) || dynamicMaxPositions <= 0))
    return emitError() << "rope dynamic_base needs a positive dynamic_factor and dynamic_max_positions";
  if (!sections.empty() && ((int64_t)sections.size() != rotaryDim / 2 ||
                            llvm::any_of(sections, [](int64_t c) { return c < 0 || c > 2; })))
    return emitError() << "rope sections must give each of the rotary_dim / 2 frequencies a component in [0, 2]";
  if (!sections.empty() && (invFreqLong || dynamicBase != 0))
    return emitError() << "rope sections have no length-dependent schedule";
  if (rotaryOffset < 0 || rotaryOffset + rotaryDim > headDim)
    return emitError() << "rope rotary_offset must keep the rotated features inside the head";
  return success();
}

LogicalResult ClampedSwigluAttr::verify(function_ref<InFlightDiagnostic()> emitError, APFloat limitF,
                                        APFloat alphaF, APFloat offsetF) {
  double limit = limitF.convertToDouble(), alpha = alphaF.convertToDouble();
  if (!(limit > 0) || !std::isfinite(limit) || !std::isfinite(alpha) || !std::isfinite(offsetF.convertToDouble()))
    return emitError() << "clamped_swiglu needs a positive finite limit and a finite alpha and up_offset";
  return success();
}

LogicalResult SoftcappedSwigluAttr::verify(function_ref<InFlightDiagnostic()> emitError, APFloat gateF,
                                           APFloat upF) {
  double gate = gateF.convertToDouble(), up = upF.convertToDouble();
  if (!(gate > 0) || !std::isfinite(gate) || !(up > 0) || !std::isfinite(up))
    return emitError() << "softcapped_swiglu needs positive finite caps";
  return success();
}

LogicalResult RetentionAttr::verify(function_ref<InFlightDiagnostic()> emitError, RetentionKind kind,
                                    int64_t tokens) {
  if (kind == RetentionKind::all && tokens != 0)
    return emitError() << "retention 'all' takes no token count";
  if (kind != RetentionKind::all && tokens <= 0)
    return emitError() << "window, chunk and compressed retention need a positive token count";
  return success();
}

LogicalResult RouteGroupsAttr::verify(function_ref<InFlightDiagnostic()> emitError, int64_t count, int64_t keep,
                                      GroupScore, GroupFill) {
  if (count <= 0)
    return emitError() << "route groups need a positive count";
  if (keep <= 0 || keep > count)
    return emitError() << "route groups must keep between 1 and count groups";
  return success();
}

LogicalResult CachePlanAttr::verify(function_ref<InFlightDiagnostic()> emitError, int64_t blockSize,
                                    StorageType, ArrayRef<CacheGroupAttr> groups,
                                    ArrayRef<CacheLayerAttr> layers, ArrayRef<StateDeclAttr> states) {
  if (blockSize <= 0)
    return emitError() << "cache plan block_size must be positive";
  // Paged groups, then static ones (both have block tables, numbered from 0), then one state group.
  CacheGroupAttr stateGroup;
  for (auto [i, g] : llvm::enumerate(groups)) {
    if (g.getId() != (int64_t)i)
      return emitError() << "cache plan groups must be numbered in order";
    if (stateGroup || (i > 0 && g.getKind() == CacheKind::paged && groups[i - 1].getKind() != CacheKind::paged))
      return emitError() << "cache plan groups must come paged first, then static, then one state group";
    if (g.getKind() == CacheKind::state)
      stateGroup = g;
  }
  for (CacheLayerAttr l : layers)
    if (l.getGroup() < 0 || l.getGroup() >= (int64_t)groups.size() ||
        groups[l.getGroup()].getKind() == CacheKind::state)
      return emitError() << "cache plan layer " << l.getLayer() << " is in no paged or static group";
  int64_t bytes = 0;
  for (StateDeclAttr s : states) {
    bytes += s.getBytes();
    if (!stateGroup || !llvm::is_contained(stateGroup.getLayers(), s.getLayer()))
      return emitError() << "cache plan state '" << s.getName() << "' of layer " << s.getLayer()
                         << " is in no state group";
  }
  if (stateGroup && stateGroup.getBytesPerUnit() != bytes)
    return emitError() << "cache plan state group's bytes_per_unit must be the sum of the states' bytes";
  return success();
}

// The loader sizes each FP8 tensor's scale grid from the block, so it must be whole.
LogicalResult ModelAttr::verify(function_ref<InFlightDiagnostic()> emitError, StringRef, StringRef, int64_t,
                                int64_t, int64_t, int64_t, ArrayRef<int64_t>, int64_t, StringRef,
                                StringRef quantization, ArrayRef<int64_t> fp8Block, ArrayRef<WeightAliasAttr>,
                                int64_t injectedToken) {
  if (injectedToken < -1)
    return emitError() << "injected_token must be a token id, or -1 for none";
  bool fp8 = quantization == "fp8";
  if (fp8 && (fp8Block.size() != 2 || fp8Block[0] <= 0 || fp8Block[1] <= 0))
    return emitError() << "quantization \"fp8\" needs fp8_block = [rows, cols] with both positive";
  if (!fp8 && !fp8Block.empty())
    return emitError() << "fp8_block belongs to quantization \"fp8\" only";
  return success();
}

// A scheme fixes its block and scale type where the format itself does (MXFP4); block-scaled FP8
// takes the checkpoint's block and the float scales its loader reads.
LogicalResult QuantAttr::verify(function_ref<InFlightDiagnostic()> emitError, QuantScheme scheme,
                                ArrayRef<int64_t> block, Type scale) {
  if (block.size() != 2 || block[0] <= 0 || block[1] <= 0)
    return emitError() << "quant block must be [rows, cols], both positive";
  switch (scheme) {
  case QuantScheme::mxfp4:
    if (block[0] != 1 || block[1] != 32 || !llvm::isa<Float8E8M0FNUType>(scale))
      return emitError() << "mxfp4 stores blocks of [1, 32] with f8E8M0FNU scales";
    break;
  case QuantScheme::fp8_e4m3:
    if (!scale.isF32() && !scale.isBF16() && !scale.isF16())
      return emitError() << "fp8_e4m3 scales must be f32, bf16 or f16";
    break;
  }
  return success();
}

// The tensor a quantised weight encodes: its element type is what dequantising yields, and its
// last two dimensions are the ones the blocks tile.
LogicalResult QuantAttr::verifyEncoding(ArrayRef<int64_t> shape, Type elementType,
                                        function_ref<InFlightDiagnostic()> emitError) const {
  if (!elementType.isBF16() && !elementType.isF16() && !elementType.isF32())
    return emitError() << "a quantised weight's element type is its dequantised type: bf16, f16 or f32";
  if (shape.size() < 2)
    return emitError() << "a quantised weight needs at least 2 dimensions for its blocks to tile";
  // MXFP4 codes come in whole blocks of 32 per row.
  if (getScheme() == QuantScheme::mxfp4 && shape.back() % getBlock()[1] != 0)
    return emitError() << "an mxfp4 weight's last dimension must be a multiple of 32";
  return success();
}

LogicalResult ShardAttr::verify(function_ref<InFlightDiagnostic()> emitError, int64_t ranks, int64_t dim,
                                ArrayRef<int64_t> segments, ArrayRef<int64_t> pieces) {
  if (ranks < 2 || dim < 0)
    return emitError() << "a shard needs at least 2 ranks and a dimension";
  if (segments.empty() || segments.size() != pieces.size())
    return emitError() << "a shard needs one piece count per segment";
  for (auto [s, p] : llvm::zip(segments, pieces))
    if (p < 1 || ranks % p != 0 || s < 1 || s % p != 0)
      return emitError() << "a segment of " << s << " cannot be cut in " << p << " pieces for " << ranks
                         << " ranks (each piece count must divide its segment and the ranks)";
  return success();
}

int64_t ShardAttr::rankExtent() const {
  int64_t n = 0;
  for (auto [s, p] : llvm::zip(getSegments(), getPieces()))
    n += s / p;
  return n;
}
