// The config.json a checkpoint ships beside its weights, checked against the config the
// artefact was compiled from: another model whose tensors happen to have the same shapes would
// otherwise load and produce wrong tokens without a word.
#ifndef CBC_RUNTIME_CHECKPOINT_CONFIG_H
#define CBC_RUNTIME_CHECKPOINT_CONFIG_H

#include "runtime/artefact.h"

#include <nlohmann/json.hpp>

#include <string>

namespace cbc::rt {

// Where the config.json of the checkpoint at `weightsPath` is: in the directory, beside the
// file (a .safetensors shard, the index) or the path itself when it names a .json config.
std::string checkpointConfigPath(const std::string &weightsPath);

// Throws WeightError naming the first of the artefact's config_keys on which the checkpoint's
// config.json differs from the artefact's config_json (an absent key reads as null; numbers
// compare by value, so 1e-5 == 1e-05 and 2 == 2.0). No config.json beside the weights, or an
// artefact that lists no keys, checks nothing.
void checkCheckpointConfig(const Artefact &artefact, const std::string &weightsPath);

// The same value: numbers by value, non-finite floats in any of their spellings alike.
bool sameConfigValue(const nlohmann::json &a, const nlohmann::json &b);

} // namespace cbc::rt

#endif
