// Parsing untrusted JSON with bounded memory, and echoing untrusted strings
// in one-line messages.
//
// A byte limit alone does not bound the memory of a parsed document: every
// JSON value costs a node of 16 bytes or more plus its container's
// allocation, so 63 MB of `[[[[...` or of `[],[],...` takes about 2 GB once
// parsed. parse_json_limited counts nesting depth and values in one pass over
// the text before the document is built, and refuses a text over either limit
// with the byte offset where the limit was crossed.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace ios {

struct JsonLimits {
  // No file ios writes nests deeper than 5 levels.
  int max_depth = 64;
  // Values counted: every array, object, string (object keys included),
  // number, true, false and null. The largest schedule the tests make (40,001
  // units, 4.9 MB) holds 360,060; this allows 11 times that. The costliest
  // documents at this limit (4 million empty objects, or 3.3 million short
  // strings) parse in 0.6 s and 430 MB (docs/cli.md, *Limits*).
  uint64_t max_values = uint64_t{1} << 22;
};

// Parses `text`, the contents of `file` (`what` names the kind of file in
// messages: "schedule file"). Every failure is a UserError naming `file`:
// the depth or value limit crossed (with the limit and the byte offset),
// invalid JSON (with the byte offset) or a number out of range.
nlohmann::json parse_json_limited(std::string_view text, const std::string& file,
                                  std::string_view what, JsonLimits limits = {});

// A user string (a unit id, a node or tensor name) for a one-line message:
// in single quotes, control characters escaped (\n, \t, \xNN: a NUL or a
// newline would cut or split the line), and cut after `max_bytes` bytes (at a
// UTF-8 character boundary) with "... (N bytes)" after the quote, so that a
// 50 MB name costs 100 bytes of message.
std::string quote_excerpt(std::string_view text, size_t max_bytes = 80);

}  // namespace ios
