#include "cli/option_rules.h"

#include "core/error.h"

namespace ios::cli {

bool given(const CLI::App& app, const std::string& option) { return app.count(option) > 0; }

void reject_options_without_effect(const CLI::App& app, std::string_view context,
                                   const std::vector<std::string>& options, std::string_view why) {
  for (const std::string& option : options) {
    if (given(app, option)) user_error("{} has no effect {}: {}", option, context, why);
  }
}

}  // namespace ios::cli
