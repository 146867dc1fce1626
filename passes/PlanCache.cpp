// cbc-plan-cache: the cache's groups. Attention layers form paged groups by retention; every layer's
// per-request states form the state group, whose unit is one snapshot of all of them.
#include "dialects/cbc/CbcOps.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <map>
#include <set>
#include <type_traits>
#include <string>

namespace cbc {
#define GEN_PASS_DEF_CBCPLANCACHE
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

// The rows one attention layer keeps per token, as its cbc.kv.append declares them.
struct LayerRows {
  int64_t kElems = 0, vElems = 0;
  int64_t indexElems = 0; // the indexer key row of a sparse (indexed) attention layer; 0: none
  bool latent = false; // a latent-attention layer's rows: latent and k_rope
  RetentionAttr retention;
  int64_t group = 0;
};

int64_t storageBytes(StorageType t) { return t == StorageType::f32 ? 4 : 2; }

class PlanCache : public impl::CbcPlanCacheBase<PlanCache> {
public:
  using CbcPlanCacheBase::CbcPlanCacheBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (blockSize <= 0) {
      module.emitError("cbc-plan-cache: block-size must be positive");
      return signalPassFailure();
    }
    std::map<int64_t, LayerRows> layers;
    SmallVector<RetentionAttr> groups;
    if (failed(collectLayers(module, layers)) || failed(assignGroups(module, layers, groups)))
      return signalPassFailure();
    SmallVector<StateDeclAttr> states;
    if (failed(collectStates(module, states)))
      return signalPassFailure();
    module->setAttr("cbc.cache_plan", buildPlan(module.getContext(), layers, groups, states));
  }

private:
  LogicalResult collectLayers(ModuleOp module, std::map<int64_t, LayerRows> &layers) {
    WalkResult walk = module.walk([&](KvAppendOp op) {
      LayerRows rows;
      rows.kElems = llvm::cast<RankedTensorType>(op.getK().getType()).getDimSize(1);
      rows.vElems = llvm::cast<RankedTensorType>(op.getV().getType()).getDimSize(1);
      rows.retention = op.getRetention();
      rows.latent = op.getLatent();
      if (!layers.emplace(op.getLayer(), rows).second) {
        op.emitOpError("layer ") << op.getLayer() << " appends to the cache twice";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
    // The indexer key row goes after the layer's rows; only a layer that keeps every token (the
    // selection lists positions, or blocks, of the whole context) or every compressed window has
    // one. A layer that reads another layer's rows but runs its own indexer keeps the index_key
    // row alone.
    walk = module.walk([&](KvIndexAppendOp op) {
      auto it = layers.find(op.getLayer());
      if (it == layers.end())
        it = layers.emplace(op.getLayer(), LayerRows{.retention = op.getRetention()}).first;
      if (it->second.retention != op.getRetention()) {
        op.emitOpError("layer ") << op.getLayer() << " has no cbc.kv.append of the index keys' retention";
        return WalkResult::interrupt();
      }
      if (it->second.indexElems != 0) {
        op.emitOpError("layer ") << op.getLayer() << " appends index keys twice";
        return WalkResult::interrupt();
      }
      it->second.indexElems = op.getHeadDim();
      return WalkResult::advance();
    });
    return failure(walk.wasInterrupted());
  }

  // One group per retention, numbered in order of their first layer; every cache op gets its
  // layer's group, and a reader must keep what its layer's writer keeps.
  LogicalResult assignGroups(ModuleOp module, std::map<int64_t, LayerRows> &layers,
                             SmallVector<RetentionAttr> &groups) {
    for (auto &[layer, rows] : layers) {
      auto it = llvm::find(groups, rows.retention);
      rows.group = it - groups.begin();
      if (it == groups.end())
        groups.push_back(rows.retention);
    }
    Builder b(module.getContext());
    WalkResult walk = module.walk([&](Operation *op) {
      if (auto append = dyn_cast<KvAppendOp>(op)) {
        append.setGroupAttr(b.getI64IntegerAttr(layers[append.getLayer()].group));
      } else if (auto append = dyn_cast<KvIndexAppendOp>(op)) {
        append.setGroupAttr(b.getI64IntegerAttr(layers[append.getLayer()].group));
      } else if (auto select = dyn_cast<KvIndexSelectOp>(op)) {
        if (failed(assignIndexReader(select, layers)))
          return WalkResult::interrupt();
      } else if (auto select = dyn_cast<KvBlockSelectOp>(op)) {
        if (failed(assignIndexReader(select, layers)))
          return WalkResult::interrupt();
      } else if (auto select = dyn_cast<KvPoolSelectOp>(op)) {
        // Its rows hold a key and, with a learned pooling, the key's pooling logits.
        int64_t elems = (select.getApe() ? 2 : 1) * (int64_t)select.getHeadDim();
        if (failed(assignIndexReader(select, layers, elems)))
          return WalkResult::interrupt();
      } else if (auto attn = dyn_cast<KvAttentionOp>(op)) {
        if (failed(assignReader(attn, layers, /*latent=*/false)))
          return WalkResult::interrupt();
      } else if (auto attn = dyn_cast<KvLatentAttentionOp>(op)) {
        if (failed(assignReader(attn, layers, /*latent=*/true)) || failed(assignEntries(attn, layers)))
          return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    return failure(walk.wasInterrupted());
  }

  // An indexer reads the index_key rows of its layer, of its head_dim (or `elems`).
  template <class SelectOp>
  LogicalResult assignIndexReader(SelectOp select, std::map<int64_t, LayerRows> &layers, int64_t elems = 0) {
    if (elems == 0)
      elems = select.getHeadDim();
    auto it = layers.find(select.getLayer());
    if (it == layers.end() || it->second.indexElems != elems)
      return select.emitOpError("reads index keys of layer ")
             << select.getLayer() << ", which no cbc.kv.index_append of head_dim " << elems << " writes";
    if constexpr (std::is_same_v<SelectOp, KvIndexSelectOp>)
      if (select.getRetention() != it->second.retention)
        return select.emitOpError("retention differs from the cbc.kv.index_append of layer ") << select.getLayer();
    select.setGroupAttr(Builder(select.getContext()).getI64IntegerAttr(it->second.group));
    return success();
  }

  // A reader gets its writer's group; it must keep what the writer keeps, in its row form.
  template <class ReaderOp>
  LogicalResult assignReader(ReaderOp attn, std::map<int64_t, LayerRows> &layers, bool latent) {
    auto it = layers.find(attn.getLayer());
    if (it == layers.end())
      return attn.emitOpError("reads layer ") << attn.getLayer() << ", which no cbc.kv.append writes";
    if (attn.getRetention() != it->second.retention)
      return attn.emitOpError("retention differs from the cbc.kv.append of layer ") << attn.getLayer();
    if (it->second.latent != latent)
      return attn.emitOpError("reads layer ") << attn.getLayer() << (latent ? ", whose rows are not latent"
                                                                            : ", whose rows are latent");
    attn.setGroupAttr(Builder(attn.getContext()).getI64IntegerAttr(it->second.group));
    return success();
  }

  // A latent attention's compressed entries: a latent layer of compressed retention at its rate.
  LogicalResult assignEntries(KvLatentAttentionOp attn, std::map<int64_t, LayerRows> &layers) {
    if (attn.getEntriesRate() == 0)
      return success();
    auto it = layers.find(*attn.getEntriesLayer());
    RetentionAttr want = RetentionAttr::get(attn.getContext(), RetentionKind::compressed, attn.getEntriesRate());
    if (it == layers.end() || it->second.retention != want || !it->second.latent)
      return attn.emitOpError("reads entries of layer ")
             << *attn.getEntriesLayer() << ", which no latent cbc.kv.append of retention " << want << " writes";
    attn.setEntriesGroupAttr(Builder(attn.getContext()).getI64IntegerAttr(it->second.group));
    return success();
  }

  // Per-request states, by name: fixed size, fp32.
  LogicalResult collectStates(ModuleOp module, SmallVector<StateDeclAttr> &states) {
    std::set<std::pair<int64_t, std::string>> declared;
    WalkResult walk = module.walk([&](StatefulOpInterface op) {
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
      states.push_back(
          StateDeclAttr::get(module.getContext(), op.getStateLayer(), op.getStateName(), shape, n * 4));
      return WalkResult::advance();
    });
    return failure(walk.wasInterrupted());
  }

  CachePlanAttr buildPlan(MLIRContext *ctx, const std::map<int64_t, LayerRows> &layers,
                          ArrayRef<RetentionAttr> groups, ArrayRef<StateDeclAttr> states) {
    int64_t elemBytes = storageBytes(kvDtype);
    SmallVector<CacheGroupAttr> groupAttrs;
    for (auto [g, retention] : llvm::enumerate(groups)) {
      SmallVector<int64_t> members;
      int64_t bytes = 0;
      for (auto &[layer, rows] : layers)
        if (rows.group == (int64_t)g) {
          members.push_back(layer);
          bytes += (rows.kElems + rows.vElems + rows.indexElems) * elemBytes;
        }
      groupAttrs.push_back(CacheGroupAttr::get(ctx, g, CacheKind::paged, retention, members, bytes, 0));
    }
    if (!states.empty())
      groupAttrs.push_back(stateGroup(ctx, groupAttrs.size(), states));
    SmallVector<CacheLayerAttr> layerAttrs;
    for (auto &[layer, rows] : layers) {
      // Rows of no width are left out: a latent layer without RoPE has no k_rope row, an
      // index-only layer nothing but its index_key row.
      SmallVector<CacheRowAttr> rowAttrs;
      if (rows.kElems > 0)
        rowAttrs.push_back(CacheRowAttr::get(ctx, rows.latent ? "latent" : "k", rows.kElems));
      if (rows.vElems > 0)
        rowAttrs.push_back(CacheRowAttr::get(ctx, rows.latent ? "k_rope" : "v", rows.vElems));
      if (rows.indexElems > 0)
        rowAttrs.push_back(CacheRowAttr::get(ctx, "index_key", rows.indexElems));
      layerAttrs.push_back(CacheLayerAttr::get(ctx, layer, rows.group, rowAttrs));
    }
    return CachePlanAttr::get(ctx, blockSize, kvDtype, groupAttrs, layerAttrs, states);
  }

  // One unit of the state group is a snapshot of every state: forking or rolling back a request
  // copies or keeps all of its layers' states together.
  CacheGroupAttr stateGroup(MLIRContext *ctx, int64_t id, ArrayRef<StateDeclAttr> states) {
    SmallVector<int64_t> layers;
    int64_t bytes = 0;
    for (StateDeclAttr s : states) {
      if (!llvm::is_contained(layers, s.getLayer()))
        layers.push_back(s.getLayer());
      bytes += s.getBytes();
    }
    llvm::sort(layers);
    return CacheGroupAttr::get(ctx, id, CacheKind::state, RetentionAttr::all(ctx), layers, 0, bytes);
  }
};

} // namespace
} // namespace cbc
