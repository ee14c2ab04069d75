#include "cuda/cublaslt.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <mutex>

#include "core/error.h"
#include "core/log.h"

namespace ios::cuda {
namespace {

struct Loaded {
  CublasLt functions;
  bool ok = false;
  std::string why;
};

Loaded load() {
  Loaded l;
  const std::string name = cublaslt_library_name();
  // Never closed: handles and descriptors may live until exit.
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    l.why = fmt::format("{} could not be loaded ({}); install cuBLAS {} (the nvidia-cublas wheel) or put it on "
                        "the library path",
                        name, error != nullptr ? error : "not found", CUBLAS_VER_MAJOR);
    logger("cuda")->warn("matrix products run on the own kernel: {}", l.why);
    return l;
  }
#define IOS_CUBLASLT_LOAD(fn)                                                                         \
  l.functions.fn = reinterpret_cast<decltype(l.functions.fn)>(dlsym(handle, #fn));                    \
  if (l.functions.fn == nullptr) {                                                                    \
    l.why = fmt::format("{} has no {}: it is not cuBLAS {}", name, #fn, CUBLAS_VER_MAJOR);            \
    return l;                                                                                         \
  }
  IOS_CUBLASLT_FUNCTIONS(IOS_CUBLASLT_LOAD)
#undef IOS_CUBLASLT_LOAD
  l.ok = true;
  return l;
}

}  // namespace

std::string cublaslt_library_name() { return fmt::format("libcublasLt.so.{}", CUBLAS_VER_MAJOR); }

const CublasLt* load_cublaslt(std::string* why) {
  static const Loaded loaded = load();  // thread-safe initialisation
  if (!loaded.ok && why != nullptr) *why = loaded.why;
  return loaded.ok ? &loaded.functions : nullptr;
}

const CublasLt& cublaslt() {
  std::string why;
  const CublasLt* lt = load_cublaslt(&why);
  if (lt == nullptr) throw NoDeviceError("no usable cuBLAS: " + why);
  return *lt;
}

}  // namespace ios::cuda
