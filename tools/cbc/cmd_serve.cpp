// cbc serve: the OpenAI-compatible server lives in the Python package (python/cbc/serve.py: text
// needs the tokenizers and jinja2 packages, HTTP needs fastapi and uvicorn), so this command
// replaces itself with that interpreter. It finds the package beside the executable in a build
// tree (build/bin/cbc -> build/python), else wherever the interpreter's own path has it (pip
// install), and says what to install when it, or what it needs, is missing.
#include "tools/cbc/commands.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace {

const char *kFallbackHelp =
    "usage: cbc serve MODEL_DIR [options]\n\n"
    "Serves a model over an OpenAI-compatible HTTP API (/v1/completions, /v1/chat/completions,\n"
    "/v1/models, /health, /metrics). MODEL_DIR holds config.json, the safetensors weights and\n"
    "tokenizer.json / tokenizer_config.json. The server is the Python package's (python -m\n"
    "cbc.serve); its options are listed by 'cbc serve --help' once the package is installed.\n";

// Run by the interpreter: imports what the server needs first, so that a missing package is one
// line naming it and exit status 2, not a traceback; then hands over to cbc.serve.main.
// argv[1] is the fallback help, printed for --help when the package is missing.
const char *kBootstrap =
    "import sys\n"
    "fallback, args = sys.argv[1], sys.argv[2:]\n"
    "need = ['cbc', 'tokenizers', 'jinja2', 'fastapi', 'uvicorn']\n"
    "for name in need:\n"
    "    try:\n"
    "        __import__(name)\n"
    "    except ImportError as e:\n"
    "        what = 'the cbc Python package' if name == 'cbc' else \"the Python package '\" + name + \"'\"\n"
    "        sys.stderr.write('cbc serve: error: ' + what + ' cannot be imported by ' + sys.executable\n"
    "            + ' (' + str(e) + '); install the server\\'s packages: pip install \\'.[serve]\\' '\n"
    "            + 'from the cbc source (or build with -DCBC_PYTHON=ON and pip install -r '\n"
    "            + 'python/requirements-test.txt), or name another interpreter in $CBC_PYTHON\\n')\n"
    "        if '--help' in args or '-h' in args:\n"
    "            sys.stdout.write(fallback)\n"
    "            sys.exit(0)\n"
    "        sys.exit(2)\n"
    "import cbc.serve\n"
    "sys.exit(cbc.serve.main(args))\n";

bool isFile(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// The directory of this executable (Linux /proc/self/exe), "" when it cannot be read.
std::string exeDir() {
  std::vector<char> buf(4096);
  ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0)
    return "";
  std::string path(buf.data(), static_cast<size_t>(n));
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

// The build tree's virtual environment (tools/setup_python.sh makes <build>/pyenv, where the
// server's dependencies are installed), when this cbc runs from a build tree that has one.
std::string buildTreeInterpreter() {
  std::string dir = exeDir();
  std::string python = dir.empty() ? "" : dir + "/../pyenv/bin/python";
  return !python.empty() && ::access(python.c_str(), X_OK) == 0 ? python : "";
}

// Puts the build tree's package first on PYTHONPATH, when this cbc runs from a build tree.
void addBuildTreePackage() {
  std::string dir = exeDir();
  if (dir.empty())
    return;
  std::string pkg = dir + "/../python";
  if (!isFile(pkg + "/cbc/__init__.py"))
    return;
  const char *old = std::getenv("PYTHONPATH");
  std::string value = pkg + (old && *old ? std::string(":") + old : std::string());
  ::setenv("PYTHONPATH", value.c_str(), 1);
}

} // namespace

namespace cbc::cli {

int serveMain(int argc, char **argv) {
  // $CBC_PYTHON, else the build tree's venv, else python3 on PATH.
  const char *python = std::getenv("CBC_PYTHON");
  std::string venv = buildTreeInterpreter();
  if (!python || !*python)
    python = venv.empty() ? "python3" : venv.c_str();
  addBuildTreePackage();
  std::vector<char *> args;
  std::string prog = python, dashC = "-c", bootstrap = kBootstrap, fallback = kFallbackHelp;
  args.push_back(prog.data());
  args.push_back(dashC.data());
  args.push_back(bootstrap.data());
  args.push_back(fallback.data());
  for (int i = 0; i < argc; ++i)
    args.push_back(argv[i]);
  args.push_back(nullptr);
  ::execvp(python, args.data());
  // Only reached when the interpreter could not be started.
  int err = errno;
  bool help = argc > 0 && (!std::strcmp(argv[0], "--help") || !std::strcmp(argv[0], "-h"));
  if (help)
    std::fputs(kFallbackHelp, stdout);
  std::fprintf(stderr,
               "cbc serve: error: cannot run the Python interpreter '%s' (%s); the server needs "
               "Python 3.10+ with the cbc package: install python3, or name the interpreter in "
               "$CBC_PYTHON\n",
               python, std::strerror(err));
  return help ? 0 : 2;
}

} // namespace cbc::cli
