#include "core/run_program.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

namespace ios {
namespace {

// Both ends of a pipe, closed on every path out.
struct Pipe {
  int fds[2] = {-1, -1};
  Pipe() {
    if (::pipe2(fds, O_CLOEXEC) != 0) fds[0] = fds[1] = -1;
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  ~Pipe() {
    close_end(0);
    close_end(1);
  }
  bool ok() const { return fds[0] >= 0; }
  void close_end(int end) {
    if (fds[end] >= 0) ::close(fds[end]);
    fds[end] = -1;
  }
};

}  // namespace

ProgramResult run_program(const std::vector<std::string>& argv, std::string_view input,
                          const ProgramLimits& limits) {
  ProgramResult result;
  if (argv.empty()) return result;
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  Pipe to_child, from_child, errors, exec_failed;
  if (!to_child.ok() || !from_child.ok() || !errors.ok() || !exec_failed.ok()) return result;

  const pid_t pid = ::fork();
  if (pid < 0) return result;
  if (pid == 0) {
    // The child: only async-signal-safe calls until exec.
    ::dup2(to_child.fds[0], STDIN_FILENO);
    ::dup2(from_child.fds[1], STDOUT_FILENO);
    ::dup2(errors.fds[1], STDERR_FILENO);
    if (limits.memory_limit_bytes > 0) {
      const rlimit limit{limits.memory_limit_bytes, limits.memory_limit_bytes};
      ::setrlimit(RLIMIT_AS, &limit);
    }
    ::execvp(args[0], args.data());
    const char failed = 1;  // tells the parent the program never started
    [[maybe_unused]] const ssize_t n = ::write(exec_failed.fds[1], &failed, 1);
    ::_exit(127);
  }
  to_child.close_end(0);
  from_child.close_end(1);
  errors.close_end(1);
  exec_failed.close_end(1);
  // A reader that stops early must not kill ios with SIGPIPE.
  struct sigaction ignore {}, previous {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &previous);
  ::fcntl(to_child.fds[1], F_SETFL, O_NONBLOCK);

  const auto start = std::chrono::steady_clock::now();
  size_t written = 0;
  std::string error_text;
  if (input.empty()) to_child.close_end(1);
  auto kill_child = [pid] { ::kill(pid, SIGKILL); };
  while (from_child.fds[0] >= 0 || errors.fds[0] >= 0) {
    pollfd fds[3];
    int n = 0;
    const int out_index = from_child.fds[0] >= 0 ? n++ : -1;
    if (out_index >= 0) fds[out_index] = {from_child.fds[0], POLLIN, 0};
    const int err_index = errors.fds[0] >= 0 ? n++ : -1;
    if (err_index >= 0) fds[err_index] = {errors.fds[0], POLLIN, 0};
    const int in_index = to_child.fds[1] >= 0 ? n++ : -1;
    if (in_index >= 0) fds[in_index] = {to_child.fds[1], POLLOUT, 0};
    int timeout_ms = -1;
    if (limits.time_limit_s > 0) {
      const double left_s =
          limits.time_limit_s -
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (left_s <= 0) {
        result.timed_out = true;
        kill_child();
        break;
      }
      timeout_ms = static_cast<int>(left_s * 1000.0) + 1;
    }
    if (::poll(fds, static_cast<nfds_t>(n), timeout_ms) < 0) {
      if (errno == EINTR) continue;
      kill_child();
      break;
    }
    char buffer[1 << 16];
    if (out_index >= 0 && (fds[out_index].revents & (POLLIN | POLLHUP | POLLERR))) {
      const ssize_t got = ::read(from_child.fds[0], buffer, sizeof(buffer));
      if (got > 0) {
        result.output.append(buffer, static_cast<size_t>(got));
        if (limits.max_output_bytes > 0 && result.output.size() > limits.max_output_bytes) {
          result.output_too_large = true;
          kill_child();
          break;
        }
      } else if (got == 0 || errno != EINTR) {
        from_child.close_end(0);
      }
    }
    if (err_index >= 0 && (fds[err_index].revents & (POLLIN | POLLHUP | POLLERR))) {
      const ssize_t got = ::read(errors.fds[0], buffer, sizeof(buffer));
      if (got > 0) {
        // Only the first line is reported; the rest is read and dropped.
        if (error_text.size() < 4096) error_text.append(buffer, static_cast<size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        errors.close_end(0);
      }
    }
    if (in_index >= 0 && (fds[in_index].revents & (POLLOUT | POLLHUP | POLLERR))) {
      const ssize_t put = ::write(to_child.fds[1], input.data() + written, input.size() - written);
      if (put > 0) written += static_cast<size_t>(put);
      if ((put < 0 && errno != EAGAIN && errno != EINTR) || written == input.size()) {
        to_child.close_end(1);
      }
    }
  }
  to_child.close_end(1);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ::sigaction(SIGPIPE, &previous, nullptr);
  char failed = 0;
  result.started = ::read(exec_failed.fds[0], &failed, 1) != 1;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  const size_t newline = error_text.find('\n');
  result.errors = error_text.substr(0, newline);
  return result;
}

}  // namespace ios
