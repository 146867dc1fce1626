#include "runtime/ptx_stats.h"

#include <cctype>
#include <regex>
#include <set>
#include <vector>

namespace cbc::rt {

namespace {

struct Function {
  bool entry = false;
  PtxCounts own;
  std::set<std::string> calls;
};

void add(PtxCounts &to, const PtxCounts &c) {
  to.mma += c.mma;
  to.ldmatrix += c.ldmatrix;
  to.ld128 += c.ld128;
  to.cp_async += c.cp_async;
}

bool startsWith(const std::string &s, const char *prefix) { return s.rfind(prefix, 0) == 0; }

// The debug directives that end at the end of their line rather than at a semicolon (.loc
// with -lineinfo, .file): they would otherwise hide the instruction on the next line.
bool isLineDirective(const std::string &ptx, size_t lineStart) {
  size_t i = ptx.find_first_not_of(" \t", lineStart);
  return i != std::string::npos && (ptx.compare(i, 5, ".loc\t") == 0 || ptx.compare(i, 5, ".loc ") == 0 ||
                                     ptx.compare(i, 6, ".file\t") == 0 || ptx.compare(i, 6, ".file ") == 0);
}

// PTX without its comments and line directives, so that braces and semicolons in them do not
// count.
std::string stripComments(const std::string &ptx) {
  std::string out;
  out.reserve(ptx.size());
  for (size_t i = 0; i < ptx.size(); ++i) {
    if ((i == 0 || ptx[i - 1] == '\n') && isLineDirective(ptx, i)) {
      while (i < ptx.size() && ptx[i] != '\n')
        ++i;
    } else if (ptx.compare(i, 2, "//") == 0) {
      while (i < ptx.size() && ptx[i] != '\n')
        ++i;
    } else if (ptx.compare(i, 2, "/*") == 0) {
      size_t end = ptx.find("*/", i + 2);
      i = end == std::string::npos ? ptx.size() : end + 1;
      continue;
    }
    if (i < ptx.size())
      out += ptx[i];
  }
  return out;
}

bool isNameChar(char c) { return std::isalnum((unsigned char)c) || c == '_' || c == '$' || c == '.' || c == '%'; }

// A statement's opcode: its first word after any labels ("$L__BB0_1:") and guard ("@!%p1").
// "::" belongs to the opcode (ld.global.L1::no_allocate), a single ':' ends a label.
std::string opcodeOf(const std::string &stmt, size_t &end) {
  size_t i = 0;
  for (;;) {
    while (i < stmt.size() && std::isspace((unsigned char)stmt[i]))
      ++i;
    if (i < stmt.size() && stmt[i] == '@') {
      while (i < stmt.size() && !std::isspace((unsigned char)stmt[i]))
        ++i;
      continue;
    }
    size_t j = i;
    while (j < stmt.size() && isNameChar(stmt[j]))
      ++j;
    size_t k = j;
    while (k < stmt.size() && std::isspace((unsigned char)stmt[k]))
      ++k;
    if (j > i && k < stmt.size() && stmt[k] == ':' && (k + 1 >= stmt.size() || stmt[k + 1] != ':')) {
      i = k + 1; // a label
      continue;
    }
    size_t e = i;
    while (e < stmt.size() && !std::isspace((unsigned char)stmt[e]))
      ++e;
    end = e;
    return stmt.substr(i, e - i);
  }
}

// The callee of a call statement's operands: "(retval0), name, (params)" or "name, (params)".
std::string calleeOf(const std::string &operands) {
  static const std::regex callee(R"(^\s*(?:\([^)]*\)\s*,\s*)?([A-Za-z_$][A-Za-z0-9_$]*))");
  std::smatch m;
  return std::regex_search(operands, m, callee) ? m[1].str() : std::string();
}

void statement(const std::string &stmt, Function &f) {
  size_t end = 0;
  std::string op = opcodeOf(stmt, end);
  if (op.empty())
    return;
  if (startsWith(op, "call")) {
    std::string name = calleeOf(stmt.substr(end));
    if (!name.empty())
      f.calls.insert(name);
    return;
  }
  add(f.own, classifyPtxOpcode(op));
}

std::map<std::string, Function> parseFunctions(const std::string &ptx) {
  static const std::regex header(R"(\.(entry|func)\s+(?:\([^)]*\)\s*)?([A-Za-z_$][A-Za-z0-9_$]*))");
  std::map<std::string, Function> functions;
  std::string text = stripComments(ptx), pending;
  Function *current = nullptr;
  int depth = 0;
  for (char c : text) {
    bool boundary = c == ';' || c == '{' || c == '}';
    if (!boundary) {
      pending += c;
      continue;
    }
    std::smatch m;
    if (depth == 0 && c == '{' && std::regex_search(pending, m, header)) {
      current = &functions[m[2].str()];
      current->entry = m[1].str() == "entry";
    } else if (current) {
      statement(pending, *current);
    }
    pending.clear();
    if (c == '{')
      ++depth;
    else if (c == '}' && depth > 0 && --depth == 0)
      current = nullptr;
  }
  return functions;
}

} // namespace

PtxCounts classifyPtxOpcode(const std::string &op) {
  PtxCounts c;
  if (startsWith(op, "mma.") || startsWith(op, "wgmma.mma_async")) {
    c.mma = 1;
  } else if (startsWith(op, "ldmatrix.")) {
    c.ldmatrix = 1;
  } else if (startsWith(op, "cp.async.")) {
    c.cp_async = op.find("commit_group") == std::string::npos && op.find("wait_group") == std::string::npos &&
                 op.find("wait_all") == std::string::npos && op.find("mbarrier") == std::string::npos;
  } else if (startsWith(op, "ld.") || startsWith(op, "ldu.")) {
    // The vector width times the element type's bits, where the state space is global.
    static const std::regex vec(R"(\.v([0-9]+)\b)"), type(R"(\.[bsuf]([0-9]+)$)");
    std::smatch v, t;
    bool global = op.find(".global") != std::string::npos;
    if (global && std::regex_search(op, v, vec) && std::regex_search(op, t, type))
      c.ld128 = std::stoi(v[1]) * std::stoi(t[1]) == 128;
  }
  return c;
}

std::map<std::string, PtxCounts> ptxInstructionCounts(const std::string &ptx) {
  std::map<std::string, Function> functions = parseFunctions(ptx);
  std::map<std::string, PtxCounts> out;
  for (const auto &[name, f] : functions) {
    if (!f.entry)
      continue;
    PtxCounts total = f.own;
    std::set<std::string> seen{name};
    std::vector<std::string> work(f.calls.begin(), f.calls.end());
    while (!work.empty()) {
      std::string callee = work.back();
      work.pop_back();
      auto it = functions.find(callee);
      if (!seen.insert(callee).second || it == functions.end())
        continue;
      add(total, it->second.own);
      work.insert(work.end(), it->second.calls.begin(), it->second.calls.end());
    }
    out[name] = total;
  }
  return out;
}

} // namespace cbc::rt
