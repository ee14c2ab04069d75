// The version of ios and the source commit it was built from (--version).
// Defined in a source generated at build time (cmake/SourceVersion.cmake).
#pragma once

#include <string_view>

namespace ios {

std::string_view version();        // the project version, "0.1.0"
std::string_view source_commit();  // "ad6d25f1a2b3", "...-dirty", or "unknown" outside git

}  // namespace ios
