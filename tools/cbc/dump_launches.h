// `cbc dump --launches`: the step as JSON for tools that model its cost (bench/roofline.py):
// the values with their device dtypes, the instructions with their parameters, the launch
// table (generated kernels and cuBLASLt GEMMs, in order) and the cache plan.
#ifndef CBC_TOOLS_CBC_DUMP_LAUNCHES_H
#define CBC_TOOLS_CBC_DUMP_LAUNCHES_H

#include "runtime/artefact.h"

#include <string>

namespace cbc::cli {

// The JSON document, one object; throws nothing for a loaded (verified) artefact.
std::string launchesJson(const rt::Artefact &a);

} // namespace cbc::cli

#endif
