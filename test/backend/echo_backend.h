// A backend that lives outside lib/: it proves that a new backend is one
// folder plus one registry line (test/backend/backend_test.cpp registers it).
// Its sessions "compute" every output as zeros of the output's shape, time
// each iteration as 1 ms per launch of the plan, and trace one event per
// launch; they count what they were asked to do.
#pragma once

#include "exec/backend.h"

namespace ios::test {

struct EchoCounters {
  int sessions = 0;
  int runs = 0;
  int timed_iterations = 0;
  int traces = 0;
};

// The counters of every echo session so far.
EchoCounters& echo_counters();

exec::BackendEntry echo_backend_entry();

}  // namespace ios::test
