// Options that would do nothing in the mode the command line chose are usage
// errors (exit 2), never silently ignored.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/precision.h"

namespace ios::cli {

// Throws UserError naming the first of `options` that was given on the
// command line: "OPTION has no effect CONTEXT: WHY", e.g. "--check has no
// effect with --dry-run: it runs nothing; drop one of them". The caller
// calls it only when the mode that makes `options` useless is in effect.
void reject_options_without_effect(const CLI::App& app, std::string_view context,
                                   const std::vector<std::string>& options, std::string_view why);

// Throws UserError for the first of `options` (each taking a path) given with
// an empty value: "OPTION needs WHAT, not an empty string", e.g. WHAT "a file
// name or - (standard output)". An empty value would otherwise mean "not
// given".
void reject_empty_paths(const CLI::App& app, const std::vector<std::string>& options,
                        std::string_view what);

// CLI::Range for floating-point options that also refuses NaN (which every
// comparison lets through, so CLI::Range accepts it) and infinities: "--X nan"
// would otherwise pass the range check and change the result.
CLI::Validator finite_range(double min, double max);

// --precision NAME, parsed once into `precision` (ir/precision.h): the names
// the help shows and the parser accepts are ir::precision_names(), which bash
// completion reads back from --help.
CLI::Option* add_precision_option(CLI::App& app, std::optional<ir::Precision>& precision,
                                  const std::string& help);

// The names of every --keep-fp32 occurrence, each split by
// ir::parse_keep_fp32 (commas separate, "\," is a comma in a name); throws
// UserError for an empty entry.
std::vector<std::string> keep_fp32_names(const std::vector<std::string>& values);

// True when `option` appeared on the command line.
bool given(const CLI::App& app, const std::string& option);

}  // namespace ios::cli
