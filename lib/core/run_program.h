// Runs an external program (Graphviz's dot, for pictures of schedules).
#pragma once

#include <string>
#include <vector>

namespace ios {

struct ProgramResult {
  bool started = false;  // false: not found on PATH or not executable
  int exit_code = -1;    // the program's exit status; -1 when it was killed by a signal
  std::string errors;    // the first lines of its stderr
};

// Runs argv[0] (searched on PATH) with the arguments, stdin from /dev/null,
// and waits for it. Never throws for the program's own failure.
ProgramResult run_program(const std::vector<std::string>& argv);

}  // namespace ios
