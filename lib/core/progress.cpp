#include "core/progress.h"

#include <cstdio>

#include "core/log.h"

namespace ios {

bool progress_wanted(bool quiet) { return !quiet && stderr_is_tty(); }

void ProgressLine::update(std::string_view text, bool force) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (!force && shown_ > 0 && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  // Pad with spaces over the rest of a longer previous line.
  const size_t pad = shown_ > text.size() ? shown_ - text.size() : 0;
  std::fprintf(stderr, "\r%.*s%*s", static_cast<int>(text.size()), text.data(),
               static_cast<int>(pad), "");
  std::fflush(stderr);
  shown_ = text.size();
}

void ProgressLine::clear() {
  if (!enabled_ || shown_ == 0) return;
  std::fprintf(stderr, "\r%*s\r", static_cast<int>(shown_), "");
  std::fflush(stderr);
  shown_ = 0;
}

}  // namespace ios
