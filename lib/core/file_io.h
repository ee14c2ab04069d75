// Atomic file writes: every file ios produces (schedules, reports, .npy
// outputs, timing exports) goes through here, so an interrupted run leaves
// the old file or none, never a truncated one.
#pragma once

#include <filesystem>
#include <string_view>

namespace ios {

// Writes `bytes` to a temporary file next to `path` (same file system), syncs
// it, then renames it over `path`. The folder must exist. Throws UserError
// naming `path` on failure and leaves no temporary file behind.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

// Creates the folder `path` will be written into, if missing (for outputs
// such as `-o schedules/x.json` or `--output-dir out/`).
void create_parent_folder(const std::filesystem::path& path);

}  // namespace ios
