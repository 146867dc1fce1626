// What the compiler decided about the step's values, read the same way by the artefact writer
// and the CUDA emitter: their ids in the artefact, and the activation buffer cbc-schedule-step
// gave each op result (its arena: rows per token or per request, and its offset).
#ifndef CBC_CODEGEN_STEP_VALUES_H
#define CBC_CODEGEN_STEP_VALUES_H

#include "mlir/IR/Block.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"

#include <cstdint>
#include <optional>

namespace cbc::codegen {

// The ids of the step's values in the artefact's Program.values: the step's arguments in order,
// then every op's results in program order (a weight reference's result included).
class StepValueIds {
public:
  explicit StepValueIds(mlir::Block &step);
  int at(mlir::Value v) const { return ids_.at(v); }
  bool contains(mlir::Value v) const { return ids_.count(v) != 0; }
  int size() const { return (int)ids_.size(); }

private:
  llvm::DenseMap<mlir::Value, int> ids_;
};

// The rows an activation buffer holds: one per token, or one per request (after
// cbc.rows.gather), the arenas cbc-schedule-step packs.
enum class RowClass : int64_t { Tokens = 0, Requests = 1 };
struct BufferSlot {
  RowClass rows;
  int64_t offset; // in 4-byte elements of the arena's row
};
// The buffer cbc-schedule-step planned for an op result (its `cbc.buffers`); none for a value
// that is not an activation, or before the pass ran.
std::optional<BufferSlot> bufferSlot(mlir::Value result);

} // namespace cbc::codegen

#endif
