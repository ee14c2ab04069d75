#include "runner/schedule_labels.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <set>

#include "core/error.h"

namespace ios::runner {

std::vector<LabeledPath> label_schedule_paths(const std::vector<std::string>& specs) {
  namespace fs = std::filesystem;
  std::vector<LabeledPath> labeled;
  std::vector<bool> named;
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    // NAME=FILE, unless the whole argument is an existing file or NAME looks
    // like a folder path (a file name may contain '=').
    const bool is_label = eq != std::string::npos &&
                          spec.substr(0, eq).find('/') == std::string::npos && !fs::exists(spec);
    if (is_label) {
      const std::string name = spec.substr(0, eq), path = spec.substr(eq + 1);
      if (name.empty() || path.empty()) {
        user_error("schedule '{}': write NAME=FILE with a non-empty name and file", spec);
      }
      labeled.push_back({name, path});
    } else {
      labeled.push_back({"", spec});
    }
    named.push_back(is_label);
  }
  // Default labels: the last `depth` components of the path, the smallest
  // depth that tells every unnamed schedule apart from all other labels.
  auto tail = [](const std::string& path, size_t depth) {
    std::vector<std::string> parts;
    for (const auto& part : fs::path(path).lexically_normal()) {
      if (!part.empty()) parts.push_back(part.string());
    }
    const size_t from = parts.size() > depth ? parts.size() - depth : 0;
    std::string out;
    for (size_t i = from; i < parts.size(); ++i)
      out += (out.empty() || out == "/" ? "" : "/") + parts[i];
    return out;
  };
  for (size_t i = 0; i < labeled.size(); ++i) {
    if (!named[i]) labeled[i].label = tail(labeled[i].path, 1);
  }
  // Counting labels in maps keeps this linear in the number of schedules (a
  // script may pass thousands).
  std::vector<std::string> normal(labeled.size());
  for (size_t i = 0; i < labeled.size(); ++i) {
    if (!named[i]) normal[i] = fs::path(labeled[i].path).lexically_normal().string();
  }
  for (size_t depth = 2; depth < 64; ++depth) {
    // Decide which labels collide before lengthening any, so that both sides
    // of a collision grow ("a/s.json" and "b/s.json", not "a/s.json" and "s.json").
    // The same file twice cannot be told apart by its path (see below): a
    // label collides when it is shared with a named schedule or with
    // another file.
    std::map<std::string, int> named_uses;
    std::map<std::string, std::set<std::string>> files_using;
    for (size_t i = 0; i < labeled.size(); ++i) {
      if (named[i]) ++named_uses[labeled[i].label];
      else files_using[labeled[i].label].insert(normal[i]);
    }
    std::vector<size_t> colliding;
    for (size_t i = 0; i < labeled.size(); ++i) {
      if (named[i]) continue;
      const std::string& label = labeled[i].label;
      if (named_uses.count(label) > 0 || files_using[label].size() > 1) colliding.push_back(i);
    }
    bool changed = false;
    for (size_t i : colliding) {
      const std::string longer = tail(labeled[i].path, depth);
      changed |= longer != labeled[i].label;
      labeled[i].label = longer;
    }
    if (!changed) break;
  }
  // What is still equal is the same file given twice, or a repeated NAME.
  std::map<std::string, int> seen;
  for (size_t i = 0; i < labeled.size(); ++i) {
    const int same = seen[labeled[i].label]++;
    if (same == 0) continue;
    if (named[i])
      user_error("schedule label '{}' is given twice; give each schedule its own NAME=",
                 labeled[i].label);
    labeled[i].label += fmt::format(" #{}", same + 1);
  }
  return labeled;
}

}  // namespace ios::runner
