// ModelSpec's closed sets (spec_enums.h) as the cbc dialect spells them: one mapping per set,
// the only place the lowering converts between the two.
#ifndef CBC_FRONTENDS_HF_CONFIG_LOWER_DIALECT_ENUMS_H
#define CBC_FRONTENDS_HF_CONFIG_LOWER_DIALECT_ENUMS_H

#include "dialects/cbc/CbcOps.h"
#include "frontends/hf_config/spec_enums.h"

#include "llvm/ADT/StringRef.h"

namespace cbc::hf::lower {

// An elementwise activation. ClampedSwiglu has none: it exists only as a gated unit's
// activation (StepBuilder::gluAct).
Activation toDialect(FfnActivation a);
RopePairing toDialect(RotaryPairing p);
GluLayout toDialect(GateUpLayout l);
RouteScore toDialect(ExpertScoring s);
GroupScore toDialect(GroupScoring s);
GroupFill toDialect(DroppedGroupFill f);
PositionScaleForm toDialect(QueryTemperature t);
// The model attribute's quantization string, as the artefact's ModelMeta keeps it ("" for none).
llvm::StringRef toDialect(Quantization q);

} // namespace cbc::hf::lower

#endif
