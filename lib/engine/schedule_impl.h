// What an ios::Schedule holds (include/ios/engine.h): the document, parsed
// once, and the report of the search that found it.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "ios/engine.h"

namespace ios {

struct Schedule::Impl {
  nlohmann::json document;          // checked by sched::parse_schedule_document
  std::string json;                 // the file's text
  std::string source;               // names it in messages: its path, or where it came from
  std::string report, report_json;  // ios-optimize's summary and --report-json; empty when loaded
};

}  // namespace ios
