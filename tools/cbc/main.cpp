// cbc: compile a Hugging Face config into a continuous-batching artefact, inspect it, run it.
#include "tools/cbc/cli.h"
#include "tools/cbc/commands.h"

#include <cstdio>
#include <cstring>
#include <string>

namespace {
const char *kUsage =
    "usage: cbc <command> [options]\n\n"
    "cbc compiles a Hugging Face config.json into one continuous-batching step (model.fb)\n"
    "and serves it on the CPU or CUDA backend.\n\n"
    "commands:\n"
    "  compile CONFIG -o OUT   lower config.json to the cbc dialect, plan, schedule, generate\n"
    "                          kernels and write the artefact\n"
    "  dump MODEL              inspect an artefact: IR, program, kernels, cache plan, weights,\n"
    "                          graph\n"
    "  run MODEL               serve prompts (JSONL of token ids) with continuous batching\n"
    "  serve MODEL_DIR         OpenAI-compatible HTTP server with text in and out (needs the\n"
    "                          cbc Python package)\n\n"
    "Run 'cbc <command> --help' for the options of each command.\n";
}

int main(int argc, char **argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string cmd = argv[1];
  if (cmd == "compile")
    return cbc::cli::compileMain(argc - 2, argv + 2);
  if (cmd == "dump")
    return cbc::cli::dumpMain(argc - 2, argv + 2);
  if (cmd == "run")
    return cbc::cli::runMain(argc - 2, argv + 2);
  if (cmd == "serve")
    return cbc::cli::serveMain(argc - 2, argv + 2);
  std::fprintf(stderr, "cbc: error: unknown command '%s'\n\n%s", cmd.c_str(), kUsage);
  return 2;
}
