// ios_gpu_tests' own main. Without a usable CUDA device (or in a build
// without CUDA) the tests that need one cannot run: the program then runs
// only the [host] tests (memory planning, lowering, the no-device paths) and,
// if they pass, exits with 77 so ctest reports the GPU tests as skipped
// rather than passed. A failing [host] test still fails the program.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <iostream>

#include "cuda/engine.h"

int main(int argc, char** argv) {
  Catch::Session session;
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  if (ios::cuda::probe_device().has_value()) return session.run();
  std::cerr << "ios_gpu_tests: no usable CUDA device; running the [host] tests only and reporting the GPU "
               "tests as skipped (exit code 77)\n";
  session.configData().testsOrTags = {"[host]"};
  const int failed = session.run();
  return failed != 0 ? 1 : 77;
}
