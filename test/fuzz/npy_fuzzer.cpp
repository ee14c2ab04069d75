// libFuzzer target for the .npy parser (lib/exec/npy.cpp): any byte string
// must either parse into a consistent tensor or be rejected with UserError.
// Built with -DIOS_FUZZ=ON; scripts/fuzz.sh runs it on test/fuzz/npy_corpus
// with npy.dict. test/exec/npy_test.cpp runs a seeded mutation loop over the
// same parser in the regular test suite.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "core/error.h"
#include "exec/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const ios::exec::HostTensor t =
        ios::exec::parse_npy(std::span<const uint8_t>(data, size), "fuzz.npy");
    if (static_cast<int64_t>(t.data.size()) != ios::ir::num_elements(t.shape)) std::abort();
  } catch (const ios::UserError&) {
    // Rejected with a message: the expected outcome for most inputs.
  }
  return 0;
}
