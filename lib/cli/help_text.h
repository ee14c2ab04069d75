// Parts of --help that come from the code, so the text cannot fall behind it.
#pragma once

#include <string>

namespace ios::cli {

// The registered schedulers' names, "sequential, greedy, ios, ..., nimble".
std::string scheduler_names();

}  // namespace ios::cli
