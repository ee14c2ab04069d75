// The CUDA layer's checking helpers (cuda/check.h) map a failed call's status
// onto the error kinds of ios/error.h: no device, out of memory (with the
// bytes asked), a device failure (sticky where CUDA documents the context
// as lost). cudart's, cuDNN's and cuBLASLt's status texts need no GPU, so the
// mapping is tested here on any machine of a CUDA build.
#include <catch2/catch.hpp>

#include <string>

#include "core/error.h"
#include "cuda/check.h"

namespace ios::cuda {
namespace {

template <typename Exception, typename Call>
Exception caught(Call&& call) {
  try {
    call();
  } catch (const Exception& e) {
    return e;
  }
  FAIL("the expected exception was not thrown");
  throw;  // not reached
}

// Whether `call` throws an OutOfMemoryError (caught<DeviceError> copies the
// DeviceError part only).
template <typename Call>
bool throws_out_of_memory(Call&& call) {
  try {
    call();
  } catch (const OutOfMemoryError&) {
    return true;
  } catch (...) {
    return false;
  }
  return false;
}

TEST_CASE("a failed allocation is an OutOfMemoryError with the bytes asked", "[cuda]") {
  const OutOfMemoryError e = caught<OutOfMemoryError>([] {
    detail::throw_cuda_error(cudaErrorMemoryAllocation, "cudaMalloc(&ptr_, bytes)",
                             "/src/ios/lib/cuda/resources.cpp", 91, size_t{3} << 30);
  });
  CHECK(e.bytes() == size_t{3} << 30);
  CHECK(e.exit_code() == ExitCode::kOutOfMemory);
  CHECK_FALSE(e.sticky());
  CHECK(std::string(e.what()) ==
        "out of memory: CUDA error at lib/cuda/resources.cpp:91: cudaMalloc(&ptr_, bytes) failed: "
        "cudaErrorMemoryAllocation (out of memory) (asked for 3221225472 bytes, 3072.0 MiB); lower "
        "the batch size, create fewer execution contexts, or free the device memory other "
        "processes hold");
  // The macro passes the size on.
  const OutOfMemoryError from_macro =
      caught<OutOfMemoryError>([] { IOS_CUDA_ALLOC(cudaErrorMemoryAllocation, size_t{4096}); });
  CHECK(from_macro.bytes() == 4096);
  CHECK(std::string(from_macro.what()).find("(asked for 4096 bytes)") != std::string::npos);
}

TEST_CASE("a CUDA failure is a DeviceError naming the call, not an InternalError", "[cuda]") {
  auto call = [] {
    detail::throw_cuda_error(cudaErrorInvalidValue, "cudaMemcpyAsync(...)", "lib/cuda/x.cpp", 7);
  };
  const DeviceError e = caught<DeviceError>(call);
  CHECK(e.exit_code() == ExitCode::kDevice);
  CHECK_FALSE(e.sticky());
  CHECK_FALSE(throws_out_of_memory(call));
  CHECK(std::string(e.what()) ==
        "CUDA error at lib/cuda/x.cpp:7: cudaMemcpyAsync(...) failed: cudaErrorInvalidValue "
        "(invalid argument)");
  CHECK_THROWS_AS([] { IOS_CUDA_CALL(cudaErrorLaunchOutOfResources); }(), DeviceError);
}

TEST_CASE("a sticky CUDA error is a sticky DeviceError that says the context is lost", "[cuda]") {
  for (const cudaError_t error : {cudaErrorIllegalAddress, cudaErrorLaunchFailure, cudaErrorAssert,
                                  cudaErrorMisalignedAddress, cudaErrorECCUncorrectable}) {
    CAPTURE(cudaGetErrorName(error));
    CHECK(detail::is_sticky_error(error));
    const DeviceError e = caught<DeviceError>(
        [&] { detail::throw_cuda_error(error, "cudaStreamSynchronize(s)", "f.cpp", 1); });
    CHECK(e.sticky());
    CHECK(e.exit_code() == ExitCode::kDevice);
    CHECK(std::string(e.what()).find("the CUDA context is lost (a sticky error)") !=
          std::string::npos);
  }
  for (const cudaError_t error : {cudaErrorInvalidValue, cudaErrorMemoryAllocation,
                                  cudaErrorNotReady, cudaErrorLaunchOutOfResources}) {
    CAPTURE(cudaGetErrorName(error));
    CHECK_FALSE(detail::is_sticky_error(error));
  }
}

TEST_CASE("no device stays a NoDeviceError", "[cuda]") {
  for (const cudaError_t error :
       {cudaErrorNoDevice, cudaErrorInsufficientDriver, cudaErrorInvalidDevice}) {
    CAPTURE(cudaGetErrorName(error));
    const NoDeviceError e = caught<NoDeviceError>(
        [&] { detail::throw_cuda_error(error, "cudaSetDevice(0)", "f.cpp", 1); });
    CHECK(std::string(e.what()).rfind("no CUDA device: cudaSetDevice(0) failed: ", 0) == 0);
    CHECK(e.exit_code() == ExitCode::kNoDevice);
  }
}

TEST_CASE("cuDNN and cuBLAS statuses map onto the same kinds", "[cuda]") {
  const OutOfMemoryError cudnn_oom = caught<OutOfMemoryError>([] {
    detail::throw_cudnn_error(CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED,
                              "cudnnCreate(&h)", "f.cpp", 2);
  });
  CHECK(cudnn_oom.bytes() == 0);  // cuDNN does not say how much it asked for
  CHECK(std::string(cudnn_oom.what())
            .rfind("out of memory: cuDNN error at f.cpp:2: cudnnCreate(&h) failed: ", 0) == 0);
  auto cudnn_call = [] {
    detail::throw_cudnn_error(CUDNN_STATUS_EXECUTION_FAILED, "cudnnConvolutionForward(...)",
                              "f.cpp", 3);
  };
  const DeviceError cudnn = caught<DeviceError>(cudnn_call);
  CHECK_FALSE(throws_out_of_memory(cudnn_call));
  CHECK(cudnn.exit_code() == ExitCode::kDevice);
  CHECK(std::string(cudnn.what())
            .rfind("cuDNN error at f.cpp:3: cudnnConvolutionForward(...) failed: ", 0) == 0);
  CHECK_THROWS_AS([] { IOS_CUDNN_CALL(CUDNN_STATUS_BAD_PARAM); }(), DeviceError);

  CHECK_THROWS_AS(
      detail::throw_cublas_error(CUBLAS_STATUS_ALLOC_FAILED, "cublasLtCreate(&h)", "f.cpp", 4),
      OutOfMemoryError);
  auto cublas_call = [] {
    detail::throw_cublas_error(CUBLAS_STATUS_EXECUTION_FAILED, "cublasLtMatmul(...)", "f.cpp", 5);
  };
  const DeviceError cublas = caught<DeviceError>(cublas_call);
  CHECK_FALSE(throws_out_of_memory(cublas_call));
  CHECK(std::string(cublas.what())
            .rfind("cuBLAS error at f.cpp:5: cublasLtMatmul(...) failed: ", 0) == 0);
}

TEST_CASE("the device guard neither throws nor leaves an error behind without a device", "[cuda]") {
  int count = 0;
  const bool device = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  detail::clear_failed_attempt();
  // Without a driver the runtime's failed initialization stays pending
  // whatever is cleared: the guard must add nothing to it.
  const cudaError_t before = cudaPeekAtLastError();
  CHECK_NOTHROW([] { const detail::CurrentDevice keep; }());
  // Without a GPU cudaGetDevice fails inside the guard: that failure must not
  // be left for the next checked call to report as its own.
  if (!device) CHECK(cudaPeekAtLastError() == before);
}

}  // namespace
}  // namespace ios::cuda
