// Option-parser errors in the documented form, one line on stderr:
//   PROGRAM: error: unknown option '--schedular'; did you mean '--scheduler'? (see --help)
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace ios::cli {

// The one-line message (no newline) for an error CLI11 raised while parsing
// `app`'s command line.
std::string describe_parse_error(const CLI::App& app, const CLI::ParseError& error,
                                 std::string_view program);

// The option name of `candidates` closest to `word` ("--sched" ->
// "--scheduler"): a unique prefix match, else the smallest edit distance
// when it is small for the word's length; empty when nothing is close.
std::string closest_option(std::string_view word, const std::vector<std::string>& candidates);

// Every "--long" and "-s" name of `app`'s options.
std::vector<std::string> option_names(const CLI::App& app);

}  // namespace ios::cli
