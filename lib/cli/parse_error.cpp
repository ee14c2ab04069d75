#include "cli/parse_error.h"

#include <fmt/format.h>

#include <algorithm>

namespace ios::cli {
namespace {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string suggestion(std::string_view word, const std::vector<std::string>& names) {
  const std::string closest = closest_option(word, names);
  return closest.empty() ? "" : fmt::format("; did you mean '{}'?", closest);
}

}  // namespace

std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& l : option->get_lnames()) names.push_back("--" + l);
    for (const std::string& s : option->get_snames()) names.push_back("-" + s);
  }
  return names;
}

std::string closest_option(std::string_view word, const std::vector<std::string>& candidates) {
  // "--name=value": only the name is compared.
  word = word.substr(0, word.find('='));
  std::vector<std::string> prefixed;
  for (const std::string& c : candidates) {
    if (word.size() >= 3 && c.size() > word.size() && c.compare(0, word.size(), word) == 0) {
      prefixed.push_back(c);
    }
  }
  if (prefixed.size() == 1) return prefixed[0];
  std::string best;
  size_t best_distance = std::string::npos;
  for (const std::string& c : candidates) {
    if (c.size() <= 2) continue;  // short options: any one-letter typo is as close as another
    const size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  // Within a third of the word (at least 2): a typo, not a different word.
  const size_t limit = std::max<size_t>(2, word.size() / 3);
  return best_distance <= limit ? best : "";
}

std::string describe_parse_error(const CLI::App& app, const CLI::ParseError& error,
                                 std::string_view program) {
  std::string what;
  // By type: CLI11 gives an ExtrasError the app's name as its name.
  if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr) {
    // The words CLI11 could not place: unknown options, or extra positionals.
    const std::vector<std::string> extras = app.remaining();
    const auto unknown = std::find_if(extras.begin(), extras.end(), [](const std::string& w) {
      return w.size() > 1 && w[0] == '-';
    });
    if (unknown != extras.end()) {
      what =
          fmt::format("unknown option '{}'{}", *unknown, suggestion(*unknown, option_names(app)));
    } else if (!extras.empty()) {
      what = fmt::format("unexpected argument '{}'", extras.front());
    } else {
      what = error.what();
    }
  } else if (dynamic_cast<const CLI::RequiredError*>(&error) != nullptr &&
             app.get_option_no_throw("model") != nullptr &&
             app.get_option_no_throw("model")->count() == 0) {
    what = "no model given; the first argument is the ONNX model file";
  } else {
    what = error.what();
  }
  return fmt::format("{}: error: {} (see {} --help)", program, what, program);
}

}  // namespace ios::cli
