// ios_cudnn_tests' own main. These tests ask cuDNN's graph API questions
// that need no GPU: operation graphs, heuristics and execution plans for a
// GPU described by a device property descriptor (cuda/cudnn_graph.h). Where
// this cuDNN cannot answer them without a device (an older cuDNN than 9.8,
// or one whose heuristics refuse a described device), every test case exits
// 77, which ctest reports as skipped, not passed; the reason goes to stderr.
// The [fusion] cases need cuDNN's runtime fusion engines, which load the
// driver library (libcuda.so.1) to check their support: on a machine without
// the driver the CUDA toolkit's stub of it stands in (nothing here runs on a
// device); where neither loads, those cases exit 77 alone.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <iostream>

#include "cudnn_probe.h"

int main(int argc, char** argv) {
  Catch::Session session;
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  const Catch::ConfigData& config = session.configData();
  if (config.listTests || config.listTestNamesOnly || config.listTags || config.listReporters) {
    return session.run();  // listing runs nothing: list every test case
  }
  ios::cudnntest::load_driver_library_or_stub();
  if (const std::string reason = ios::cudnntest::why_heuristics_cannot_answer(); !reason.empty()) {
    std::cerr << "ios_cudnn_tests: skipped: " << reason << "\n";
    return 77;
  }
  const std::string fusion = ios::cudnntest::why_runtime_fusion_cannot_answer();
  if (!fusion.empty()) {
    // ctest runs one case per process, named on the command line.
    for (int i = 1; i < argc; ++i) {
      if (std::string(argv[i]).find("(runtime fusion)") != std::string::npos) {
        std::cerr << "ios_cudnn_tests: skipped: " << fusion << "\n";
        return 77;
      }
    }
    session.configData().testsOrTags.push_back("~[fusion]");
  }
  return session.run();
}
