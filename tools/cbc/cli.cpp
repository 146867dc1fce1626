#include "tools/cbc/cli.h"

#include <cstdio>
#include <sstream>

namespace cbc::cli {

Args::Args(std::string command, std::string summary, std::vector<FlagSpec> flags,
           std::string positionals)
    : command_(std::move(command)), summary_(std::move(summary)),
      positionalHelp_(std::move(positionals)), flags_(std::move(flags)) {}

bool Args::parse(int argc, char **argv) {
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(help().c_str(), stdout);
      return false;
    }
    if (a.rfind("-", 0) == 0 && a.size() > 1) {
      std::string name = a, value;
      bool inlineValue = false;
      if (auto eq = a.find('='); eq != std::string::npos) {
        name = a.substr(0, eq);
        value = a.substr(eq + 1);
        inlineValue = true;
      }
      const FlagSpec *spec = nullptr;
      for (const FlagSpec &f : flags_)
        if (f.name == name)
          spec = &f;
      if (!spec)
        throw UsageError("unknown option '" + name + "' (see 'cbc " + command_ + " --help')");
      if (spec->value.empty()) {
        if (inlineValue)
          throw UsageError("option '" + name + "' takes no value");
        values_[name] = "1";
        continue;
      }
      if (!inlineValue) {
        if (i + 1 >= argc)
          throw UsageError("option '" + name + "' needs a value (" + spec->value + ")");
        value = argv[++i];
      }
      values_[name] = value;
      continue;
    }
    positional_.push_back(a);
  }
  return true;
}

std::string Args::get(const std::string &flag, const std::string &fallback) const {
  auto it = values_.find(flag);
  return it == values_.end() ? fallback : it->second;
}

int64_t Args::getInt(const std::string &flag, int64_t fallback) const {
  if (!has(flag))
    return fallback;
  const std::string &v = values_.at(flag);
  try {
    size_t used = 0;
    int64_t out = std::stoll(v, &used);
    if (used == v.size())
      return out;
  } catch (...) {
  }
  throw UsageError("option '" + flag + "' expects an integer, got '" + v + "'");
}

double Args::getDouble(const std::string &flag, double fallback) const {
  if (!has(flag))
    return fallback;
  const std::string &v = values_.at(flag);
  try {
    size_t used = 0;
    double out = std::stod(v, &used);
    if (used == v.size())
      return out;
  } catch (...) {
  }
  throw UsageError("option '" + flag + "' expects a number, got '" + v + "'");
}

std::string Args::help() const {
  std::ostringstream os;
  os << "usage: cbc " << command_ << " " << positionalHelp_ << " [options]\n\n" << summary_ << "\n\noptions:\n";
  for (const FlagSpec &f : flags_) {
    std::string left = "  " + f.name + (f.value.empty() ? "" : " " + f.value);
    os << left;
    for (size_t i = left.size(); i < 34; ++i)
      os << ' ';
    if (left.size() >= 34)
      os << "\n" << std::string(34, ' ');
    os << f.help << "\n";
  }
  os << "  --help                          show this help\n";
  return os.str();
}

} // namespace cbc::cli
