// The --version text of both programs: version, source commit, and the CUDA
// and cuDNN versions ios was built against and finds at run time.
#pragma once

#include <string>
#include <string_view>

namespace ios::cli {

// First line "PROGRAM VERSION (commit C)" (what help2man reads), then one
// line per library.
std::string version_text(std::string_view program);

}  // namespace ios::cli
