#include "cli/option_rules.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

#include "core/error.h"
#include "ir/half_conversion.h"

namespace ios::cli {

CLI::Validator finite_range(double min, double max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value)) {
          return fmt::format("Value {} is not a finite number", text);
        }
        if (value < min || value > max) return fmt::format("Value {} not in range [{} - {}]", text, min, max);
        return {};
      },
      fmt::format("FLOAT in [{} - {}]", min, max));
}

bool given(const CLI::App& app, const std::string& option) { return app.count(option) > 0; }

void reject_options_without_effect(const CLI::App& app, std::string_view context,
                                   const std::vector<std::string>& options, std::string_view why) {
  for (const std::string& option : options) {
    if (given(app, option)) user_error("{} has no effect {}: {}", option, context, why);
  }
}

void reject_empty_paths(const CLI::App& app, const std::vector<std::string>& options,
                        std::string_view what) {
  for (const std::string& name : options) {
    const CLI::Option* option = app.get_option_no_throw(name);
    if (option == nullptr || option->count() == 0) continue;
    for (const std::string& value : option->results()) {
      if (value.empty()) {
        user_error("{} needs {}, not an empty string", name, what);
      }
    }
  }
}

std::vector<std::string> keep_fp32_names(const std::vector<std::string>& values) {
  std::vector<std::string> names;
  for (const std::string& value : values) {
    for (std::string& name : ir::parse_keep_fp32(value)) names.push_back(std::move(name));
  }
  return names;
}

CLI::Option* add_precision_option(CLI::App& app, std::optional<ir::Precision>& precision,
                                  const std::string& help) {
  return app
      .add_option_function<std::string>(
          "--precision", [&precision](const std::string& name) { precision = ir::parse_precision(name, "--precision"); },
          help)
      ->type_name("TEXT")
      ->check(CLI::IsMember(ir::precision_names()));
}

}  // namespace ios::cli
