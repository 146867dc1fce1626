#include "tools/cbc/commands.h"

#include <cstdio>

namespace cbc::cli {
int runMain(int, char **) {
  std::fprintf(stderr, "cbc run: not built yet\n");
  return 1;
}
} // namespace cbc::cli
