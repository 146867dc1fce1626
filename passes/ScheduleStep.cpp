// cbc-schedule-step: numbers the step's instructions and packs activations into arenas by liveness.
#include "dialects/cbc/CbcOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <map>
#include <set>

namespace cbc {
#define GEN_PASS_DEF_CBCSCHEDULESTEP
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

enum RowClass : int64_t { None = -1, Tokens = 0, Requests = 1 };
constexpr int64_t kAlign = 16; // elements: 64-byte alignment for every buffer

int64_t alignUp(int64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

// First-fit allocator over one arena whose rows are `row_elems` 4-byte elements wide.
class ArenaPlanner {
public:
  int64_t allocate(int64_t width) {
    width = alignUp(width);
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      auto [start, size] = *it;
      if (size < width)
        continue;
      free_.erase(it);
      if (size > width)
        free_[start + width] = size - width;
      return start;
    }
    // Grow the arena, reusing a free tail if there is one.
    int64_t start = rowElems_;
    if (!free_.empty()) {
      auto last = std::prev(free_.end());
      if (last->first + last->second == rowElems_) {
        start = last->first;
        free_.erase(last);
      }
    }
    rowElems_ = start + width;
    return start;
  }
  void release(int64_t start, int64_t width) {
    width = alignUp(width);
    auto it = free_.emplace(start, width).first;
    auto next = std::next(it);
    if (next != free_.end() && it->first + it->second == next->first) {
      it->second += next->second;
      free_.erase(next);
    }
    if (it != free_.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        free_.erase(it);
      }
    }
  }
  int64_t rowElems() const { return rowElems_; }

private:
  std::map<int64_t, int64_t> free_; // start -> size
  int64_t rowElems_ = 0;
};

bool isRows(Value v) {
  auto t = llvm::dyn_cast<RankedTensorType>(v.getType());
  return t && t.getRank() == 2 && t.isDynamicDim(0);
}

class ScheduleStep : public impl::CbcScheduleStepBase<ScheduleStep> {
public:
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>("step");
    if (!func) {
      module.emitError("cbc-schedule-step: the module has no func.func @step");
      return signalPassFailure();
    }
    if (!func.getBody().hasOneBlock()) {
      func.emitError("cbc-schedule-step: the step must be a single block");
      return signalPassFailure();
    }
    Block &block = func.getBody().front();
    Builder b(module.getContext());

    // Step arguments are metadata, not rows: a result's class comes from its first rows operand.
    std::map<Value, RowClass, ValueLess> rowClass;
    for (BlockArgument arg : block.getArguments())
      rowClass[arg] = None;

    // Number the instructions and check cache reads follow the layer's write.
    std::map<Operation *, int64_t> index;
    std::set<int64_t> writtenLayers;
    int64_t n = 0;
    for (Operation &op : block) {
      index[&op] = n;
      op.setAttr("cbc.index", b.getI64IntegerAttr(n++));
      if (auto a = dyn_cast<KvAppendOp>(op))
        writtenLayers.insert(a.getLayer());
      if (auto a = dyn_cast<KvRopeAppendOp>(op))
        writtenLayers.insert(a.getLayerAttr().getInt());
      if (auto a = dyn_cast<KvAttentionOp>(op); a && !writtenLayers.count(a.getLayer())) {
        a.emitOpError("reads layer ") << a.getLayer() << " before any cbc.kv.append writes it";
        return signalPassFailure();
      }
    }

    // Last use of every value, in instruction numbers.
    std::map<Value, int64_t, ValueLess> lastUse;
    for (Operation &op : block)
      for (Value operand : op.getOperands())
        lastUse[operand] = std::max(lastUse[operand], index[&op]);

    ArenaPlanner arenas[2];
    std::multimap<int64_t, std::tuple<RowClass, int64_t, int64_t>> expiring; // lastUse -> buffer
    for (Operation &op : block) {
      int64_t i = index[&op];
      // Buffers whose last reader came before this instruction are free again.
      while (!expiring.empty() && expiring.begin()->first < i) {
        auto [cls, start, width] = expiring.begin()->second;
        arenas[cls].release(start, width);
        expiring.erase(expiring.begin());
      }
      RowClass inherited = Tokens;
      for (Value operand : op.getOperands())
        if (isRows(operand) || rowClass.count(operand)) {
          auto it = rowClass.find(operand);
          if (it != rowClass.end() && it->second != None) {
            inherited = it->second;
            break;
          }
        }
      if (isa<RowsGatherOp>(op))
        inherited = Requests;
      SmallVector<Attribute> buffers;
      for (Value result : op.getResults()) {
        if (!isRows(result)) {
          rowClass[result] = None;
          buffers.push_back(b.getDenseI64ArrayAttr({None, 0}));
          continue;
        }
        rowClass[result] = inherited;
        int64_t width = llvm::cast<RankedTensorType>(result.getType()).getDimSize(1);
        int64_t start = arenas[inherited].allocate(width);
        // A result nobody reads is still written; it dies right after its instruction.
        int64_t dies = lastUse.count(result) ? lastUse[result] : i;
        expiring.emplace(dies, std::make_tuple(inherited, start, width));
        buffers.push_back(b.getDenseI64ArrayAttr({inherited, start}));
      }
      if (op.getNumResults())
        op.setAttr("cbc.buffers", b.getArrayAttr(buffers));
    }
    module->setAttr("cbc.arena",
                    ArenaAttr::get(module.getContext(), arenas[0].rowElems(), arenas[1].rowElems()));
  }

private:
  struct ValueLess {
    bool operator()(Value a, Value b) const { return a.getAsOpaquePointer() < b.getAsOpaquePointer(); }
  };
};

} // namespace
} // namespace cbc
