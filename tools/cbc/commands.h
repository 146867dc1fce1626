#ifndef CBC_TOOLS_CBC_COMMANDS_H
#define CBC_TOOLS_CBC_COMMANDS_H

namespace cbc::cli {
// Each returns the process exit status: 0 success, 1 failure while running, 2 bad input.
int compileMain(int argc, char **argv);
int dumpMain(int argc, char **argv);
int runMain(int argc, char **argv);
// Replaces the process with the Python server (python -m cbc.serve); returns only on failure.
int serveMain(int argc, char **argv);
} // namespace cbc::cli

#endif
