// config.json as Python's json module writes it, read by both sides of the artefact: the front
// end (the config it compiles) and the runtime (the config.json beside a checkpoint, compared
// with the compiled one). One reader, so both see the same values.
#ifndef CBC_RUNTIME_SCHEMA_PYTHON_JSON_H
#define CBC_RUNTIME_SCHEMA_PYTHON_JSON_H

#include <nlohmann/json.hpp>

#include <string>

namespace cbc {

// Besides standard JSON, the bare tokens Infinity, -Infinity and NaN (older transformers saved
// time_step_limit = [0.0, Infinity]) and numbers beyond double range (1e400, which Python reads
// as inf). They become marker strings that jsonNumber reads back as IEEE values, as is
// transformers 5's own {"__float__": "Infinity"} form. Throws nlohmann::json::parse_error.
nlohmann::json parsePythonJson(const std::string &text);
// A number, or one of the non-finite forms above.
bool jsonNumber(const nlohmann::json &v, double &out);

} // namespace cbc

#endif
