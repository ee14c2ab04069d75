// libFuzzer target for profile databases as --calibrate reads them: the
// bytes are written to a file, opened read-only (ProfileDb::Access::kReadOnly)
// and the rows of two precision/batch keys streamed, as calibration does, then
// listed whole. Any file must be read or refused with a UserError.
// Built with -DIOS_FUZZ=ON; scripts/fuzz.sh runs it.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "core/log.h"
#include "cost/profile_db.h"

namespace {

std::filesystem::path* file = nullptr;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ios::set_verbosity(ios::Verbosity::kQuiet);
  // One file per fuzzing process, in a folder of its own: SQLite looks for
  // -wal and -journal files beside it.
  char folder[] = "/tmp/ios-profile-db-fuzz-XXXXXX";
  if (mkdtemp(folder) == nullptr) {
    std::perror("profile_db_fuzzer: mkdtemp");
    std::exit(2);
  }
  file = new std::filesystem::path(std::filesystem::path(folder) / "profile.sqlite");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  {
    std::ofstream out(*file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    const ios::cost::ProfileDb db(*file, ios::cost::ProfileDb::Access::kReadOnly);
    size_t rows = 0;
    for (const char* precision : {"fp32", "tf32"}) {
      db.for_each_entry(precision, 1, [&](const ios::cost::ProfileKey&,
                                          const ios::cost::ProfileEntry&) { ++rows; });
    }
    (void)db.entries();
  } catch (const ios::UserError&) {
    // Refused with a message: the expected outcome for most inputs.
  }
  return 0;
}
