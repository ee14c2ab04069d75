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
//  - DeviceError: the GPU failed: a CUDA, cuDNN or cuBLAS call returned an
//    error (the message names the call and the status). Exit code 5. A
//    sticky one (sticky(): an illegal address, a kernel that failed) leaves
//    the process's CUDA context unusable: every later CUDA call fails, and
//    an engine that met one says so on every later call; only a new process
//    recovers.
//  - OutOfMemoryError, a DeviceError: an allocation failed; bytes() is what
//    it asked for (0 where the failed call does not say, e.g. cuDNN's own
//    allocations). Exit code 6.
#pragma once

#include <cstddef>
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
  kDevice = 5,   // a CUDA, cuDNN or cuBLAS call failed (DeviceError)
  kOutOfMemory = 6,  // a device (or pinned host) allocation failed (OutOfMemoryError)
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

class DeviceError : public Error {
 public:
  explicit DeviceError(const std::string& what, bool sticky = false) : Error(what), sticky_(sticky) {}
  ExitCode exit_code() const override { return ExitCode::kDevice; }
  // The CUDA context is lost: every later CUDA call of this process fails.
  bool sticky() const { return sticky_; }

 private:
  bool sticky_ = false;
};

class OutOfMemoryError : public DeviceError {
 public:
  OutOfMemoryError(const std::string& what, size_t bytes) : DeviceError(what), bytes_(bytes) {}
  ExitCode exit_code() const override { return ExitCode::kOutOfMemory; }
  // What the failed allocation asked for; 0 where the call does not say.
  size_t bytes() const { return bytes_; }

 private:
  size_t bytes_ = 0;
};

}  // namespace ios
