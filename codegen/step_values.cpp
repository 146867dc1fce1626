#include "codegen/step_values.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"

namespace cbc::codegen {

using namespace mlir;

StepValueIds::StepValueIds(Block &step) {
  for (BlockArgument arg : step.getArguments())
    ids_[arg] = (int)ids_.size();
  for (Operation &op : step)
    for (Value r : op.getResults())
      ids_[r] = (int)ids_.size();
}

std::optional<BufferSlot> bufferSlot(Value result) {
  auto r = llvm::dyn_cast<OpResult>(result);
  if (!r)
    return std::nullopt;
  auto buffers = r.getOwner()->getAttrOfType<ArrayAttr>("cbc.buffers");
  if (!buffers || buffers.size() != r.getOwner()->getNumResults())
    return std::nullopt;
  auto slot = llvm::dyn_cast<DenseI64ArrayAttr>(buffers[r.getResultNumber()]);
  if (!slot || slot.size() != 2 || slot[0] < 0)
    return std::nullopt;
  return BufferSlot{(RowClass)slot[0], slot[1]};
}

} // namespace cbc::codegen
