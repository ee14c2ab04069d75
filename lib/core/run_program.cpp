#include "core/run_program.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

extern char** environ;

namespace ios {

ProgramResult run_program(const std::vector<std::string>& argv) {
  ProgramResult result;
  if (argv.empty()) return result;
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // stderr goes to a temporary file, read back for the error message.
  char errors_path[] = "/tmp/ios-program-XXXXXX";
  const int errors_fd = ::mkstemp(errors_path);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  if (errors_fd >= 0) posix_spawn_file_actions_adddup2(&actions, errors_fd, STDERR_FILENO);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc == 0) {
    result.started = true;
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  if (errors_fd >= 0) {
    char buffer[512];
    const ssize_t n = ::pread(errors_fd, buffer, sizeof(buffer) - 1, 0);
    if (n > 0) {
      result.errors.assign(buffer, static_cast<size_t>(n));
      const size_t newline = result.errors.find('\n');
      if (newline != std::string::npos) result.errors.resize(newline);
    }
    ::close(errors_fd);
    ::unlink(errors_path);
  }
  return result;
}

}  // namespace ios
