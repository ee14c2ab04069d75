// Atomic file writes: every file ios produces (schedules, reports, .npy
// outputs, timing exports) goes through here, so an interrupted run leaves
// the old file or none, never a truncated one.
#pragma once

#include <filesystem>
#include <string_view>

namespace ios {

// Writes `bytes` to a temporary file next to `path` (same file system), syncs
// it, then renames it over `path`. Creates missing parent folders. Throws
// UserError naming `path` on failure and leaves no temporary file behind.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

}  // namespace ios
