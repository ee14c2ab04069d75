// Runs an external program (Graphviz's dot, for pictures of schedules) with
// bounds: its input is given and its output captured through pipes (no
// temporary files), and it is stopped past a time limit, an address-space
// limit or an output size limit, so that a hostile or merely huge picture
// cannot hang ios or exhaust the machine.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ios {

struct ProgramLimits {
  double time_limit_s = 0.0;        // wall clock; 0: none
  uint64_t memory_limit_bytes = 0;  // the program's address space (RLIMIT_AS); 0: none
  uint64_t max_output_bytes = 0;    // of its standard output; 0: none
};

struct ProgramResult {
  bool started = false;     // false: not found on PATH or not executable
  int exit_code = -1;       // the program's exit status; -1 when it was killed by a signal
  int signal = 0;           // the signal that ended it, 0 if it exited
  bool timed_out = false;   // killed at limits.time_limit_s
  bool output_too_large = false;  // killed at limits.max_output_bytes
  std::string output;       // its standard output
  std::string errors;       // the first line of its stderr
};

// Runs argv[0] (searched on PATH) with the arguments, `input` on its standard
// input, and waits for it within `limits`. Never throws for the program's own
// failure.
ProgramResult run_program(const std::vector<std::string>& argv, std::string_view input = {},
                          const ProgramLimits& limits = {});

}  // namespace ios
