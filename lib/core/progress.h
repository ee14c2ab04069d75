// A progress line on stderr for long work (import, search, profiling),
// rewritten in place. Shown only on a terminal and not with --quiet, so logs
// and pipes never see it; stdout is never touched.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace ios {

class ProgressLine {
 public:
  // Disabled lines do nothing at all.
  explicit ProgressLine(bool enabled) : enabled_(enabled) {}
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  ~ProgressLine() { clear(); }

  // Shows `text` in place of the previous line; at most ten redraws a second
  // unless `force` (the first and last state of a phase are always shown).
  void update(std::string_view text, bool force = false);
  // Erases the line (before normal output or at the end of a phase).
  void clear();
  bool enabled() const { return enabled_; }

 private:
  bool enabled_;
  size_t shown_ = 0;  // characters on screen
  std::chrono::steady_clock::time_point last_{};
};

// Whether progress lines should be shown: stderr is a terminal and not quiet.
bool progress_wanted(bool quiet);

}  // namespace ios
