// The calling convention of the generated kernels, shared by the code generator (which writes
// the struct into the CUDA source) and the backends (which fill it). Every kernel takes one
// CbcArgs by value: launch arguments are packed in order, pointers into p, integers into i and
// floats into f.
#ifndef CBC_RUNTIME_SCHEMA_KERNEL_ABI_H
#define CBC_RUNTIME_SCHEMA_KERNEL_ABI_H

namespace cbc {

constexpr int kMaxPtrArgs = 24, kMaxIntArgs = 16, kMaxFloatArgs = 16;

struct CbcArgs {
  void *p[kMaxPtrArgs];
  long long i[kMaxIntArgs];
  float f[kMaxFloatArgs];
};

// The same declaration, as the generated source spells it.
inline constexpr const char *kCbcArgsDecl =
    "struct CbcArgs { void *p[24]; long long i[16]; float f[16]; };\n";

} // namespace cbc

#endif
