// ios_gpu_tests' own main. Without a GPU (no NVIDIA device and no NVIDIA
// kernel driver, or a build without CUDA) the tests that need one cannot run:
// the program then runs only the [host] tests (memory planning, lowering, the
// no-device paths) and, if they pass, exits with 77 so ctest reports the GPU
// tests as skipped rather than passed. A device that is present but unusable
// (driver too old for the CUDA runtime, cuDNN not loadable) is a failure with
// the reason, never a skip; so is a missing device with IOS_REQUIRE_GPU=1 (set
// it on a GPU machine so a broken setup cannot pass as "skipped").
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdlib>
#include <iostream>
#include <string>

#include "cuda/engine.h"

int main(int argc, char** argv) {
  Catch::Session session;
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  const Catch::ConfigData& config = session.configData();
  if (config.listTests || config.listTestNamesOnly || config.listTags || config.listReporters) {
    return session.run();  // listing runs nothing: list every test case
  }
  const ios::cuda::DeviceStatus device = ios::cuda::device_status();
  if (device.state == ios::cuda::DeviceState::kUsable) return session.run();
  const char* require = std::getenv("IOS_REQUIRE_GPU");
  const bool required = require != nullptr && std::string(require) == "1";
  if (device.state == ios::cuda::DeviceState::kUnusable || required) {
    std::cerr << "ios_gpu_tests: FAILED: " << (device.state == ios::cuda::DeviceState::kUnusable
                                                   ? "a GPU is present but unusable: "
                                                   : "IOS_REQUIRE_GPU=1 but no GPU: ")
              << device.reason << "\n";
    return 1;
  }
  std::cerr << "ios_gpu_tests: no GPU (" << device.reason
            << "); running the [host] tests only and reporting the GPU tests as skipped (exit code 77)\n";
  session.configData().testsOrTags = {"[host]"};
  const int failed = session.run();
  return failed != 0 ? 1 : 77;
}
