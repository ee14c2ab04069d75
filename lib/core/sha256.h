// SHA-256 (FIPS 180-4), self-contained. Schedule files name their model by
// content hash so that a schedule is never applied to a different model.
#pragma once

#include <string>
#include <string_view>

namespace ios {

// Lower-case hex digest of `bytes`.
std::string sha256_hex(std::string_view bytes);

// Lower-case hex digest of the file's contents. Throws UserError naming the
// file when it cannot be read.
std::string sha256_file(const std::string& path);

// Both use the CPU's SHA extensions where it has them (x86 SHA-NI). For the
// tests, which compare the two implementations:
namespace detail {
bool sha256_uses_cpu_extensions();
std::string sha256_hex_portable(std::string_view bytes);
}  // namespace detail

}  // namespace ios
