// The importer tests' check that a bad model gives one UserError whose
// single-line message names the file.
#pragma once

#include <catch2/catch.hpp>

#include <string>

#include "core/error.h"
#include "onnx/importer.h"

namespace ios::test {

// Imports and returns the UserError's message; fails the test otherwise.
inline std::string import_error(const std::string& path, const ios::onnx::ImportOptions& options = {}) {
  try {
    ios::onnx::import_model(path, options);
  } catch (const ios::UserError& e) {
    const std::string message = e.what();
    CHECK(message.find('\n') == std::string::npos);
    CHECK(message.find(path) != std::string::npos);
    return message;
  }
  FAIL("no UserError for " << path);
  return {};
}

}  // namespace ios::test
