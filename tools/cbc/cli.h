// A small command-line parser for the cbc subcommands: flags with values, boolean switches,
// positional arguments, --help, and a usage error (exit status 2) for anything unknown.
#ifndef CBC_TOOLS_CBC_CLI_H
#define CBC_TOOLS_CBC_CLI_H

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace cbc::cli {

class UsageError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct FlagSpec {
  std::string name;     // "--dtype"
  std::string value;    // "" for a switch, else the value's placeholder ("bf16|f16|f32")
  std::string help;
};

class Args {
public:
  Args(std::string command, std::string summary, std::vector<FlagSpec> flags,
       std::string positionals);
  // Returns false when --help was given (the help text is already printed).
  bool parse(int argc, char **argv);

  bool has(const std::string &flag) const { return values_.count(flag) != 0; }
  std::string get(const std::string &flag, const std::string &fallback = "") const;
  int64_t getInt(const std::string &flag, int64_t fallback) const;
  double getDouble(const std::string &flag, double fallback) const;
  const std::vector<std::string> &positionals() const { return positional_; }
  std::string help() const;

private:
  std::string command_, summary_, positionalHelp_;
  std::vector<FlagSpec> flags_;
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

} // namespace cbc::cli

#endif
