// The exceptions every ios call throws, and the exit codes the programs map
// them to. Part of the public API (ios/engine.h includes it); the library's
// own code throws the same types (lib/core/error.h), so an application sees
// exactly the one-line messages ios-optimize and ios-run print after
// "error: ".
//
//  - UserError: the input is wrong (a bad file, an unsupported operator, a
//    schedule that does not fit the model, a tensor of the wrong shape). The
//    message names the file, node or field and says what to do. Exit code 2.
//  - InternalError: an ios invariant broke (a bug in ios). Exit code 1.
//  - NoDeviceError: the work needs a GPU that is absent. Exit code 3.
#pragma once

#include <stdexcept>
#include <string>

namespace ios {

// Documented in docs/cli.md; scripts rely on these values.
enum class ExitCode : int {
  kOk = 0,
  kInternal = 1,
  kInput = 2,    // usage error or bad input file
  kNoDevice = 3, // no usable CUDA device (or build without CUDA)
  kMismatch = 4, // --check found outputs that differ beyond tolerance
};

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  virtual ExitCode exit_code() const = 0;
};

class UserError : public Error {
 public:
  using Error::Error;
  ExitCode exit_code() const override { return ExitCode::kInput; }
};

class InternalError : public Error {
 public:
  using Error::Error;
  ExitCode exit_code() const override { return ExitCode::kInternal; }
};

class NoDeviceError : public Error {
 public:
  using Error::Error;
  ExitCode exit_code() const override { return ExitCode::kNoDevice; }
};

}  // namespace ios
