#include "core/file_io.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace ios {

void create_parent_folder(const std::filesystem::path& path) {
  if (!path.has_parent_path()) return;
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) user_error("cannot write {}: cannot create its folder ({})", path.string(), ec.message());
}

void write_file_atomically(const std::filesystem::path& path, std::string_view bytes) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (path.has_parent_path() && !fs::is_directory(path.parent_path(), ec)) {
    user_error("cannot write {}: the folder '{}' does not exist", path.string(),
               path.parent_path().string());
  }
  static std::atomic<int> counter{0};
  fs::path temp = path;
  temp += fmt::format(".tmp-{}-{}", static_cast<long>(::getpid()), counter++);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    user_error("cannot write {}: cannot create {} ({})", path.string(), temp.string(),
               std::strerror(errno));
  }
  auto discard = [&](std::string why) {
    ::close(fd);
    std::error_code ignored;
    fs::remove(temp, ignored);
    user_error("cannot write {}: {}", path.string(), why);
  };
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) discard(std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  // The data is on disk before the rename makes the new name visible.
  if (::fsync(fd) != 0) discard(std::strerror(errno));
  if (::close(fd) != 0) {
    const int close_errno = errno;
    std::error_code ignored;
    fs::remove(temp, ignored);
    user_error("cannot write {}: {}", path.string(), std::strerror(close_errno));
  }
  fs::rename(temp, path, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(temp, ignored);
    user_error("cannot write {}: {}", path.string(), ec.message());
  }
}

}  // namespace ios
