// Error types and exit codes shared by every ios module.
//
// Two kinds of failure, kept apart as in Halide (user_error vs internal_assert):
//  - UserError: the input is wrong (a bad file, an unsupported operator, a
//    schedule that does not fit the model). The message names the file, node
//    or field and says what to do. Exit code 2.
//  - InternalError: an ios invariant broke. Exit code 1.
// NoDeviceError (exit 3) says the requested work needs a GPU that is absent.
// Only main() catches; library code throws and lets RAII clean up. The
// types are public (include/ios/error.h); this header adds the helpers that
// format and throw them.
#pragma once

#include <fmt/format.h>

#include <string>

#include "ios/error.h"  // the types, public: applications catch them

namespace ios {

template <typename... Args>
[[noreturn]] void user_error(fmt::format_string<Args...> format, Args&&... args) {
  throw UserError(fmt::format(format, std::forward<Args>(args)...));
}

template <typename... Args>
[[noreturn]] void internal_error(fmt::format_string<Args...> format, Args&&... args) {
  throw InternalError(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace ios

// Checks an ios invariant; a failure is a bug in ios, never in the input.
#define IOS_ASSERT(cond, ...)                                                        \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      ::ios::internal_error("internal error at {}:{}: {} ({})", __FILE__, __LINE__,  \
                            #cond, ::fmt::format(__VA_ARGS__));                      \
    }                                                                                \
  } while (false)
