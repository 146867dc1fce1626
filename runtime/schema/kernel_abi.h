// The calling convention of the generated kernels, shared by the code generator and the
// backends (which fill it). Every kernel takes one CbcArgs by value: launch arguments are packed
// in order, pointers into p, integers into i and floats into f. The kernels' own declaration is
// codegen/cuda/kernels/slots.h, which the emitter checks against this one.
#ifndef CBC_RUNTIME_SCHEMA_KERNEL_ABI_H
#define CBC_RUNTIME_SCHEMA_KERNEL_ABI_H

namespace cbc {

constexpr int kMaxPtrArgs = 24, kMaxIntArgs = 16, kMaxFloatArgs = 16;

struct CbcArgs {
  void *p[kMaxPtrArgs];
  long long i[kMaxIntArgs];
  float f[kMaxFloatArgs];
};

} // namespace cbc

#endif
