#include "core/file_io.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "core/error.h"

namespace ios {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kTempMarker = ".tmp-";

// Closes a descriptor on every path out of a function (errors included).
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  // Closes now and reports close()'s own error (a deferred write error on
  // some file systems); 0 on success.
  int close_now() {
    const int result = ::close(fd_);
    fd_ = -1;
    return result == 0 ? 0 : errno;
  }

 private:
  int fd_;
};

// Writes every byte; returns 0 or the errno of the failed write.
int write_all(int fd, std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    done += static_cast<size_t>(n);
  }
  return 0;
}

// "PID-N" of a temporary name, as written by write_atomically; 0 otherwise.
pid_t temp_owner(std::string_view suffix) {
  const size_t dash = suffix.find('-');
  if (dash == 0 || dash == std::string_view::npos || dash + 1 == suffix.size()) return 0;
  for (size_t k = 0; k < suffix.size(); ++k) {
    if (k != dash && (suffix[k] < '0' || suffix[k] > '9')) return 0;
  }
  if (dash > 9) return 0;
  return static_cast<pid_t>(std::stol(std::string(suffix.substr(0, dash))));
}

// Removes PATH.tmp-PID-N files whose process is gone: what a run killed
// between creating its temporary file and renaming it leaves behind. Files of
// live processes (a concurrent run) and every other name are left alone.
void remove_stale_temporaries(const fs::path& path) {
  const fs::path folder = path.has_parent_path() ? path.parent_path() : fs::path(".");
  const std::string prefix = path.filename().string() + std::string(kTempMarker);
  std::error_code ec;
  fs::directory_iterator it(folder, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const pid_t owner = temp_owner(std::string_view(name).substr(prefix.size()));
    if (owner <= 0 || owner == ::getpid()) continue;
    if (::kill(owner, 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to judge
    std::error_code type_ec;
    if (!fs::is_regular_file(fs::symlink_status(it->path(), type_ec))) continue;
    std::error_code ignored;
    fs::remove(it->path(), ignored);
  }
}

void write_replacing(const fs::path& shown, const fs::path& path, std::string_view bytes) {
  std::error_code ec;
  if (path.has_parent_path() && !fs::is_directory(path.parent_path(), ec)) {
    user_error("cannot write {}: the folder '{}' does not exist", shown.string(),
               path.parent_path().string());
  }
  remove_stale_temporaries(path);
  static std::atomic<int> counter{0};
  fs::path temp = path;
  temp += fmt::format("{}{}-{}", kTempMarker, static_cast<long>(::getpid()), counter++);
  Fd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.get() < 0) {
    // The temporary file is an implementation detail: the message names
    // the file the user asked for.
    user_error("cannot write {}: {}", shown.string(), std::strerror(errno));
  }
  auto discard = [&](int error) {
    std::error_code ignored;
    fs::remove(temp, ignored);
    user_error("cannot write {}: {}", shown.string(), std::strerror(error));
  };
  if (const int error = write_all(fd.get(), bytes)) discard(error);
  // The data is on disk before the rename makes the new name visible.
  if (::fsync(fd.get()) != 0) discard(errno);
  if (const int error = fd.close_now()) discard(error);
  fs::rename(temp, path, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(temp, ignored);
    user_error("cannot write {}: {}", shown.string(), ec.message());
  }
}

void write_in_place(const fs::path& path, bool fifo, std::string_view bytes) {
  // O_NONBLOCK: opening a FIFO nobody reads fails (ENXIO) instead of waiting
  // forever; the writes themselves block as usual.
  Fd fd(::open(path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC | (fifo ? O_NONBLOCK : 0)));
  if (fd.get() < 0) {
    if (fifo && errno == ENXIO) {
      user_error("cannot write {}: it is a FIFO that no process is reading", path.string());
    }
    user_error("cannot write {}: {}", path.string(), std::strerror(errno));
  }
  if (fifo) ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
  if (const int error = write_all(fd.get(), bytes)) {
    user_error("cannot write {}: {}", path.string(), std::strerror(error));
  }
  if (const int error = fd.close_now())
    user_error("cannot write {}: {}", path.string(), std::strerror(error));
}

}  // namespace

bool is_stdout_path(const fs::path& path) { return path == "-" || path == "/dev/stdout"; }

void create_parent_folder(const fs::path& path) {
  if (is_stdout_path(path) || !path.has_parent_path()) return;
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) user_error("cannot write {}: cannot create its folder ({})", path.string(), ec.message());
}

namespace {

enum class Target { kStdout, kReplace, kReplaceLinkTarget, kInPlace, kInPlaceFifo };

// How an output path is written, or a UserError for a path never written.
Target classify_output(const fs::path& path) {
  if (path.empty())
    user_error("cannot write an output file with an empty name; give a path or '-'");
  if (is_stdout_path(path)) return Target::kStdout;
  struct stat link_info {};
  if (::lstat(path.c_str(), &link_info) != 0) {
    if (errno != ENOENT) user_error("cannot write {}: {}", path.string(), std::strerror(errno));
    return Target::kReplace;
  }
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    // Only a link can lstat but not stat: its target is missing.
    user_error(
        "cannot write {}: it is a symbolic link to a missing file; remove the link or give "
        "another path",
        path.string());
  }
  if (S_ISREG(info.st_mode))
    return S_ISLNK(link_info.st_mode) ? Target::kReplaceLinkTarget : Target::kReplace;
  if (S_ISCHR(info.st_mode)) return Target::kInPlace;
  if (S_ISFIFO(info.st_mode)) return Target::kInPlaceFifo;
  if (S_ISDIR(info.st_mode))
    user_error("cannot write {}: it is a folder; give a file name", path.string());
  user_error(
      "cannot write {}: it is neither a regular file, a character device nor a FIFO; give "
      "another path",
      path.string());
}

}  // namespace

void check_output_path(const fs::path& path) { (void)classify_output(path); }

void write_file_atomically(const fs::path& path, std::string_view bytes) {
  switch (classify_output(path)) {
    case Target::kStdout:
      // Whatever the program printed before comes first. Standard output may
      // be a file the shell truncated: written through the descriptor, never
      // replaced behind the shell's back.
      std::cout.flush();
      std::fflush(stdout);
      if (const int error = write_all(STDOUT_FILENO, bytes)) {
        user_error("cannot write to standard output: {}", std::strerror(error));
      }
      return;
    case Target::kReplace:
      write_replacing(path, path, bytes);
      return;
    case Target::kReplaceLinkTarget: {
      std::error_code ec;
      const fs::path target = fs::canonical(path, ec);
      if (ec)
        user_error("cannot write {}: cannot resolve the symbolic link ({})", path.string(),
                   ec.message());
      write_replacing(path, target, bytes);
      return;
    }
    case Target::kInPlace:
      write_in_place(path, false, bytes);
      return;
    case Target::kInPlaceFifo:
      write_in_place(path, true, bytes);
      return;
  }
}

std::string read_file_limited(const fs::path& path, uint64_t max_bytes, std::string_view what) {
  // O_NONBLOCK: opening a FIFO that nobody writes returns at once (and reads
  // as empty) instead of waiting forever; reads block as usual afterwards.
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) {
    if (errno == ENOENT)
      user_error("{}: cannot open the {}: no such file; check the path", path.string(), what);
    user_error("{}: cannot open the {} ({})", path.string(), what, std::strerror(errno));
  }
  ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) {
    user_error("{}: cannot read the {} ({})", path.string(), what, std::strerror(errno));
  }
  if (S_ISDIR(info.st_mode))
    user_error("{}: is a folder; give the path of the {}", path.string(), what);
  auto too_large = [&] {
    user_error(
        "{}: the {} is larger than {} MiB, the limit for this kind of file; it is not a "
        "file ios wrote",
        path.string(), what, max_bytes >> 20);
  };
  if (S_ISREG(info.st_mode) && static_cast<uint64_t>(info.st_size) > max_bytes) too_large();
  std::string bytes;
  if (S_ISREG(info.st_mode)) bytes.reserve(static_cast<size_t>(info.st_size));
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd.get(), chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      user_error("{}: read error in the {} ({})", path.string(), what, std::strerror(errno));
    if (n == 0) break;
    // A device or pipe has no size: stop as soon as it passes the limit.
    if (bytes.size() + static_cast<size_t>(n) > max_bytes) too_large();
    bytes.append(chunk, static_cast<size_t>(n));
  }
  return bytes;
}

bool same_file(const fs::path& a, const fs::path& b) {
  if (a == "-" || b == "-") return false;  // /dev/stdout may well be the same file: it is checked
  std::error_code ec;
  const bool same = fs::equivalent(a, b, ec);
  return !ec && same;
}

bool is_existing_regular_file(const fs::path& path) {
  if (is_stdout_path(path)) return false;
  std::error_code ec;
  return fs::is_regular_file(fs::status(path, ec));
}

}  // namespace ios
