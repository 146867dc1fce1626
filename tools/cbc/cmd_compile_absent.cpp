// `cbc compile` in a runtime-only build (CBC_BUILD_COMPILER=OFF): a clear refusal.
#include "tools/cbc/commands.h"

#include <cstdio>

namespace cbc::cli {

int compileMain(int, char **) {
  std::fputs("cbc compile: error: this cbc was built without the compiler "
             "(CBC_BUILD_COMPILER=OFF); it can dump and run artefacts only\n",
             stderr);
  return 2;
}

} // namespace cbc::cli
