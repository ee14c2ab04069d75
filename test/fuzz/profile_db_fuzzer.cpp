// libFuzzer target for profile databases as --calibrate reads them: the
// bytes are written to a file, opened read-only (ProfileDb::Access::kReadOnly)
// and the rows of two precision/batch keys streamed, as calibration does, then
// listed whole. Any file must be read or refused with a UserError, and no
// file may appear beside it.
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

// The files SQLite may leave beside the database. Removed before each input
// (an input is then read as --calibrate reads a file given alone, and a
// finding reproduces from its bytes) and at exit.
void remove_files() {
  std::error_code ec;
  for (const char* suffix : {"-wal", "-shm", "-journal"})
    std::filesystem::remove(file->string() + suffix, ec);
}

void remove_folder() {
  std::error_code ec;
  std::filesystem::remove_all(file->parent_path(), ec);
}

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
  std::atexit(remove_folder);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  remove_files();
  {
    std::ofstream out(*file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    const ios::cost::ProfileDb db(*file, ios::cost::ProfileDb::Access::kReadOnly);
    size_t rows = 0;
    for (const auto math : {ios::ir::MathMode::kFp32, ios::ir::MathMode::kTf32}) {
      db.for_each_entry(math, 1, [&](const ios::cost::ProfileKey&,
                                          const ios::cost::ProfileEntry&) { ++rows; });
    }
    (void)db.entries();
  } catch (const ios::UserError&) {
    // Refused with a message: the expected outcome for most inputs.
  }
  // Read or refused, nothing may appear beside the file (--calibrate leaves
  // its input as it was).
  for (const char* suffix : {"-wal", "-shm", "-journal"}) {
    if (std::filesystem::exists(file->string() + suffix)) {
      std::fprintf(stderr, "profile_db_fuzzer: reading created %s%s\n", file->c_str(), suffix);
      std::abort();
    }
  }
  return 0;
}
