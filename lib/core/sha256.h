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

}  // namespace ios
