//===- CbcInterfaces.td - interfaces of the cbc dialect -------------*- tablegen -*-===//
//
// The planner and both backends learn a layer's per-request states through this interface,
// so that a new state op needs no change to them.
//
//===----------------------------------------------------------------------------------===//

#ifndef CBC_INTERFACES
#define CBC_INTERFACES

include "mlir/IR/OpBase.td"

def Cbc_StatefulOpInterface : OpInterface<"StatefulOpInterface"> {
  let description = [{
    An op that keeps a fixed-size fp32 state per running request, in the request's slot. The
    cache planner declares one state per op from these methods, so a new state op kind needs no
    change to the planner or the runtime's allocator.
  }];
  let cppNamespace = "::cbc";
  let methods = [
    InterfaceMethod<"The decoder layer the state belongs to.", "int64_t", "getStateLayer",
                    (ins), [{}], [{ return (int64_t)$_op.getLayer(); }]>,
    InterfaceMethod<"The state's name, unique within its layer.", "::llvm::StringRef",
                    "getStateName", (ins), [{}], [{ return $_op.getState(); }]>,
    InterfaceMethod<"The state's shape; no state is kept when it has no elements.",
                    "::llvm::SmallVector<int64_t>", "getStateShape">,
  ];
}

#endif
