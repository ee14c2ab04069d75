// cuBLASLt, loaded on first use (dlopen of libcublasLt.so.13, found like a
// linked library: RUNPATH, LD_LIBRARY_PATH, the system's paths). Linking it
// would load its 540 MB into every program built with the CUDA backend at
// start, ios-optimize's simulated runs included, for about 200 MB of
// resident memory before main(); only an engine with a matrix product on
// the GPU needs it.
#pragma once

#include <cublasLt.h>

#include <string>

namespace ios::cuda {

// The cuBLASLt entry points the backend calls (the header's declarations).
struct CublasLt {
#define IOS_CUBLASLT_FUNCTIONS(X)                                                                             \
  X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtGetStatusString) X(cublasLtMatmulDescCreate)                \
  X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute) X(cublasLtMatrixLayoutCreate)               \
  X(cublasLtMatrixLayoutDestroy) X(cublasLtMatrixLayoutSetAttribute) X(cublasLtMatmulPreferenceCreate)       \
  X(cublasLtMatmulPreferenceDestroy) X(cublasLtMatmulPreferenceSetAttribute) X(cublasLtMatmulAlgoGetHeuristic) \
  X(cublasLtMatmul) X(cublasLtGetVersion)
#define IOS_CUBLASLT_MEMBER(name) decltype(&::name) name = nullptr;
  IOS_CUBLASLT_FUNCTIONS(IOS_CUBLASLT_MEMBER)
#undef IOS_CUBLASLT_MEMBER
};

// The library name loaded: the soname of the cuBLAS major version ios was
// built with ("libcublasLt.so.13").
std::string cublaslt_library_name();

// The loaded library's entry points, or null when it cannot be loaded (the
// reason in `why`, if given). Loads once per process; thread-safe.
const CublasLt* load_cublaslt(std::string* why = nullptr);

// Like load_cublaslt(), but throws NoDeviceError naming the library and the fix.
const CublasLt& cublaslt();

}  // namespace ios::cuda
