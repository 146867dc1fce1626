// cbc-plan-cache: groups layers by retention and sizes the paged cache.
#include "dialects/cbc/CbcOps.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <map>
#include <set>
#include <string>

namespace cbc {
#define GEN_PASS_DEF_CBCPLANCACHE
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

struct LayerRows {
  int64_t layer = 0;
  int64_t kElems = 0, vElems = 0;
  std::string retention = "all";
  int64_t tokens = 0; // window or chunk length
};

int64_t dtypeBytes(StringRef dtype) { return dtype == "f32" ? 4 : 2; }

class PlanCache : public impl::CbcPlanCacheBase<PlanCache> {
public:
  using CbcPlanCacheBase::CbcPlanCacheBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (kvDtype != "bf16" && kvDtype != "f16" && kvDtype != "f32") {
      module.emitError("cbc-plan-cache: unknown kv-dtype '") << kvDtype << "'";
      return signalPassFailure();
    }
    if (blockSize <= 0) {
      module.emitError("cbc-plan-cache: block-size must be positive");
      return signalPassFailure();
    }
    std::map<int64_t, LayerRows> layers;
    WalkResult walk = module.walk([&](KvAppendOp op) {
      LayerRows rows;
      rows.layer = op.getLayer();
      rows.kElems = llvm::cast<RankedTensorType>(op.getK().getType()).getDimSize(1);
      rows.vElems = llvm::cast<RankedTensorType>(op.getV().getType()).getDimSize(1);
      if (op.getWindow()) {
        rows.retention = "window";
        rows.tokens = op.getWindowAttr().getInt();
      } else if (op.getChunk()) {
        rows.retention = "chunk";
        rows.tokens = op.getChunkAttr().getInt();
      }
      if (!layers.emplace(rows.layer, rows).second) {
        op.emitOpError("layer ") << rows.layer << " appends to the cache twice";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();

    // One group per retention; groups are numbered in order of their first layer.
    std::map<std::pair<std::string, int64_t>, int64_t> groupOf;
    std::vector<std::pair<std::string, int64_t>> groupKeys;
    std::map<int64_t, int64_t> layerGroup;
    for (auto &[layer, rows] : layers) {
      auto key = std::make_pair(rows.retention, rows.tokens);
      auto it = groupOf.find(key);
      if (it == groupOf.end()) {
        it = groupOf.emplace(key, (int64_t)groupKeys.size()).first;
        groupKeys.push_back(key);
      }
      layerGroup[layer] = it->second;
    }

    bool failedCheck = false;
    module.walk([&](Operation *op) {
      if (auto append = dyn_cast<KvAppendOp>(op)) {
        append.setGroupAttr(IntegerAttr::get(IntegerType::get(op->getContext(), 64),
                                             layerGroup[append.getLayer()]));
      } else if (auto attn = dyn_cast<KvAttentionOp>(op)) {
        auto it = layers.find(attn.getLayer());
        if (it == layers.end()) {
          attn.emitOpError("reads layer ") << attn.getLayer() << ", which no cbc.kv.append writes";
          failedCheck = true;
          return;
        }
        int64_t window = attn.getWindowAttr() ? attn.getWindowAttr().getInt() : 0;
        int64_t chunk = attn.getChunkAttr() ? attn.getChunkAttr().getInt() : 0;
        if (window != (it->second.retention == "window" ? it->second.tokens : 0) ||
            chunk != (it->second.retention == "chunk" ? it->second.tokens : 0)) {
          attn.emitOpError("retention differs from the cbc.kv.append of layer ") << attn.getLayer();
          failedCheck = true;
          return;
        }
        attn.setGroupAttr(IntegerAttr::get(IntegerType::get(op->getContext(), 64),
                                           layerGroup[attn.getLayer()]));
      }
    });
    if (failedCheck)
      return signalPassFailure();

    Builder b(module.getContext());
    // Per-request states, by name: fixed size, fp32, one slot per live request.
    SmallVector<Attribute> stateAttrs;
    int64_t stateBytes = 0;
    std::set<std::pair<int64_t, std::string>> declared;
    WalkResult stateWalk = module.walk([&](StatefulOpInterface op) {
      SmallVector<int64_t> shape = op.getStateShape();
      int64_t n = 1;
      for (int64_t d : shape)
        n *= d;
      if (n == 0)
        return WalkResult::advance();
      if (!declared.insert({op.getStateLayer(), op.getStateName().str()}).second) {
        op->emitOpError("declares state '") << op.getStateName() << "' of layer "
                                            << op.getStateLayer() << " twice";
        return WalkResult::interrupt();
      }
      stateBytes += n * 4;
      stateAttrs.push_back(b.getDictionaryAttr({
          b.getNamedAttr("layer", b.getI64IntegerAttr(op.getStateLayer())),
          b.getNamedAttr("name", b.getStringAttr(op.getStateName())),
          b.getNamedAttr("shape", b.getDenseI64ArrayAttr(shape)),
          b.getNamedAttr("dtype", b.getStringAttr("f32")),
          b.getNamedAttr("bytes", b.getI64IntegerAttr(n * 4)),
      }));
      return WalkResult::advance();
    });
    if (stateWalk.wasInterrupted())
      return signalPassFailure();
    int64_t elemBytes = dtypeBytes(kvDtype);
    SmallVector<Attribute> groupAttrs;
    for (auto [g, key] : llvm::enumerate(groupKeys)) {
      SmallVector<int64_t> members;
      int64_t bytes = 0;
      for (auto &[layer, rows] : layers)
        if (layerGroup[layer] == (int64_t)g) {
          members.push_back(layer);
          bytes += (rows.kElems + rows.vElems) * elemBytes;
        }
      groupAttrs.push_back(b.getDictionaryAttr({
          b.getNamedAttr("id", b.getI64IntegerAttr(g)),
          b.getNamedAttr("retention", b.getStringAttr(key.first)),
          b.getNamedAttr("tokens", b.getI64IntegerAttr(key.second)),
          b.getNamedAttr("layers", b.getDenseI64ArrayAttr(members)),
          b.getNamedAttr("bytes_per_token", b.getI64IntegerAttr(bytes)),
      }));
    }
    SmallVector<Attribute> layerAttrs;
    for (auto &[layer, rows] : layers) {
      auto row = [&](StringRef name, int64_t elems) {
        return b.getDictionaryAttr({b.getNamedAttr("name", b.getStringAttr(name)),
                                    b.getNamedAttr("elems", b.getI64IntegerAttr(elems))});
      };
      layerAttrs.push_back(b.getDictionaryAttr({
          b.getNamedAttr("layer", b.getI64IntegerAttr(layer)),
          b.getNamedAttr("group", b.getI64IntegerAttr(layerGroup[layer])),
          b.getNamedAttr("rows", b.getArrayAttr({row("k", rows.kElems), row("v", rows.vElems)})),
      }));
    }
    SmallVector<NamedAttribute> plan = {
        b.getNamedAttr("block_size", b.getI64IntegerAttr(blockSize)),
        b.getNamedAttr("kv_dtype", b.getStringAttr(kvDtype)),
        b.getNamedAttr("groups", b.getArrayAttr(groupAttrs)),
        b.getNamedAttr("layers", b.getArrayAttr(layerAttrs)),
    };
    // Attention-only models keep the plan they had before states existed.
    if (!stateAttrs.empty()) {
      plan.push_back(b.getNamedAttr("states", b.getArrayAttr(stateAttrs)));
      plan.push_back(b.getNamedAttr("state_bytes_per_slot", b.getI64IntegerAttr(stateBytes)));
    }
    module->setAttr("cbc.cache_plan", b.getDictionaryAttr(plan));
  }
};

} // namespace
} // namespace cbc
