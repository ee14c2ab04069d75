#include "core/json_limits.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace ios {
namespace {

bool is_json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Appends `text` with control characters escaped.
void append_escaped(std::string& out, std::string_view text) {
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (byte < 0x20 || byte == 0x7f) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out += c;
    }
  }
}

// The length of `text`'s first `max_bytes` bytes, shortened so that it does
// not end inside a UTF-8 sequence.
size_t excerpt_length(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text.size();
  size_t n = max_bytes;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  return n;
}

// One pass over the text that counts what the parsed document will hold. It
// does not check the syntax (the parser does, afterwards): on a malformed
// text its counts are still an upper bound of what the parser would build
// before it stops.
void check_limits(std::string_view text, const std::string& file, std::string_view what,
                  const JsonLimits& limits) {
  int depth = 0;
  uint64_t values = 0;
  bool in_string = false, escaped = false, in_scalar = false;
  const auto count_value = [&](size_t offset) {
    if (++values > limits.max_values) {
      user_error("{}: the {} holds more than {} JSON values (the limit is reached at byte {}); "
                 "ios refuses larger JSON documents",
                 file, what, limits.max_values, offset);
    }
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '[' || c == '{') {
      in_scalar = false;
      count_value(i);
      if (++depth > limits.max_depth) {
        user_error("{}: the {} nests arrays and objects more than {} levels deep (at byte {}); "
                   "ios refuses JSON nested that deep",
                   file, what, limits.max_depth, i);
      }
    } else if (c == ']' || c == '}') {
      in_scalar = false;
      if (depth > 0) --depth;
    } else if (c == '"') {
      in_scalar = false;
      in_string = true;
      count_value(i);
    } else if (c == ',' || c == ':' || is_json_space(c)) {
      in_scalar = false;
    } else if (!in_scalar) {  // a number, true, false or null starts
      in_scalar = true;
      count_value(i);
    }
  }
}

}  // namespace

nlohmann::json parse_json_limited(std::string_view text, const std::string& file,
                                  std::string_view what, JsonLimits limits) {
  check_limits(text, file, what, limits);
  // nlohmann's lexer takes a NUL byte for the end of the input (for C
  // strings), so "{...}\0anything" would parse as the object alone. JSON
  // has no NUL outside strings, and inside them only escaped as \u0000.
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    user_error("{}: not valid JSON at byte {} (a NUL byte; is the {} a binary file or damaged?)", file,
               nul, what);
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    user_error("{}: not valid JSON at byte {} (is the {} truncated?)", file, e.byte, what);
  } catch (const nlohmann::json::exception& e) {
    // e.g. out_of_range for a number like 1e400. The message quotes the
    // offending token, which may be megabytes long: cut it.
    std::string_view reason = e.what();
    if (const size_t end = reason.find("] "); end != std::string_view::npos) {
      reason.remove_prefix(end + 2);
    }
    const size_t n = excerpt_length(reason, 120);
    std::string excerpt;
    append_escaped(excerpt, reason.substr(0, n));
    if (n < reason.size()) excerpt += "...";
    user_error("{}: not a valid {} ({})", file, what, excerpt);
  }
}

std::string quote_excerpt(std::string_view text, size_t max_bytes) {
  const size_t n = excerpt_length(text, max_bytes);
  std::string out = "'";
  append_escaped(out, text.substr(0, n));
  out += '\'';
  if (n < text.size()) out += fmt::format("... ({} bytes)", text.size());
  return out;
}

}  // namespace ios
