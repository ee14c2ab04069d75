#include "runner/schedule_labels.h"

#include <fmt/format.h>

#include <filesystem>

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
  for (size_t depth = 2; depth < 64; ++depth) {
    // Decide which labels collide before lengthening any, so that both sides
    // of a collision grow ("a/s.json" and "b/s.json", not "a/s.json" and "s.json").
    std::vector<size_t> colliding;
    for (size_t i = 0; i < labeled.size(); ++i) {
      for (size_t j = 0; j < labeled.size() && !named[i]; ++j) {
        // The same file twice cannot be told apart by its path (see below).
        const bool same_file = !named[j] && fs::path(labeled[j].path).lexically_normal() ==
                                                fs::path(labeled[i].path).lexically_normal();
        if (j != i && labeled[j].label == labeled[i].label && !same_file) {
          colliding.push_back(i);
          break;
        }
      }
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
  for (size_t i = 0; i < labeled.size(); ++i) {
    int same = 0;
    for (size_t j = 0; j < i; ++j) same += labeled[j].label == labeled[i].label;
    if (same == 0) continue;
    if (named[i])
      user_error("schedule label '{}' is given twice; give each schedule its own NAME=",
                 labeled[i].label);
    labeled[i].label += fmt::format(" #{}", same + 1);
  }
  return labeled;
}

}  // namespace ios::runner
