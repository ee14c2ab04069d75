// The texts of device_profiles/*.json, compiled into ios_cost by
// embed_profiles.cmake (the definition is a configured .cpp in the build tree).
#pragma once

#include <string_view>
#include <utility>
#include <vector>

namespace ios::cost::detail {

// {file stem, JSON text}, sorted by stem.
const std::vector<std::pair<std::string_view, std::string_view>>& shipped_profile_texts();

}  // namespace ios::cost::detail
