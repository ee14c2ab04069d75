// How ios-run names schedules in its reports: NAME=FILE arguments, and
// default labels that tell files of the same name apart.
#pragma once

#include <string>
#include <vector>

namespace ios::runner {

struct LabeledPath {
  std::string label;  // shown in tables and check lines
  std::string path;   // the schedule file
};

// The labels for `specs` (FILE or NAME=FILE) and the files: NAME when given,
// else the file name, lengthened by parent folders until every label is
// unique ("a/s.json", "b/s.json"); the same file given twice gets " #2".
// An argument that is an existing file, or whose part before '=' holds a
// '/', is a file. UserError for an empty or repeated NAME or an empty FILE.
std::vector<LabeledPath> label_schedule_paths(const std::vector<std::string>& specs);

}  // namespace ios::runner
