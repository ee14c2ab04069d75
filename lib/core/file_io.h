// File reads and writes with the guarantees ios promises for every file it
// touches: reads are bounded (a hostile or endless input such as /dev/zero
// fails with a message instead of exhausting memory), and writes never leave a
// truncated file, never replace anything but a regular file, and never leave
// temporary files behind.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace ios {

// True for "-" and "/dev/stdout": outputs that go to standard output.
bool is_stdout_path(const std::filesystem::path& path);

// Writes an output file: schedules, reports, .npy outputs, timing exports.
//  - "-" and /dev/stdout are standard output (written, never replaced).
//  - A regular file (or a missing one) is written to a temporary file next to
//    it (same file system), synced, then renamed over it: an interrupted run
//    leaves the old file or none, never a truncated one. Temporary files are
//    named PATH.tmp-PID-N; ones left by a process that no longer exists (a
//    run killed with SIGKILL) are removed on the next write of PATH.
//  - A symbolic link is followed: its target is written by these rules, the
//    link itself stays.
//  - A character device or a FIFO with a reader (/dev/stdout, /dev/null,
//    /dev/full, a pipe) is written in place and never replaced; a write error
//    such as ENOSPC is a UserError. A FIFO without a reader, a directory, a
//    socket or a block device is refused.
// The folder must exist. Throws UserError naming `path` on failure.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

// Refuses at once (UserError) an output path that write_file_atomically
// would refuse whatever the data: an empty name, a folder, a symbolic link to
// a missing file, a socket or block device. Lets a program fail before its
// work rather than after it. FIFOs and devices are judged when written.
void check_output_path(const std::filesystem::path& path);

// Creates the folder `path` will be written into, if missing (for outputs
// such as `-o schedules/x.json` or `--output-dir out/`). Nothing for "-".
void create_parent_folder(const std::filesystem::path& path);

// Reads a whole input file of at most `max_bytes`. `what` names the kind of
// file in messages ("schedule file", "device profile"). A missing file, a
// directory, a read error or a file over the limit (also an endless one such
// as /dev/zero) is a UserError naming `path` and the limit.
std::string read_file_limited(const std::filesystem::path& path, uint64_t max_bytes,
                              std::string_view what);

// True when `a` and `b` name the same existing file (hard links and symbolic
// links included). False when either does not exist.
bool same_file(const std::filesystem::path& a, const std::filesystem::path& b);

// True when `path` is an existing regular file (symbolic links followed),
// that is, a file an output would replace. "-" and devices are not.
bool is_existing_regular_file(const std::filesystem::path& path);

}  // namespace ios
