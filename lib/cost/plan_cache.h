// PlanCache: the persistent cache of kernel choices (SQLite, beside the
// profile database), so that a second process on the same machine runs the
// same kernels without timing anything (TensorRT's timing cache).
//
// Key: the GPU (name and SM count), the software (driver, cuDNN and cuBLAS
// versions), the kernel selection that chose (exec/kernel_selection.h), and
// the problem: everything the choice depends on in one line (for a
// convolution cuda::ConvGraphSpec::key(): geometry, strides, layout, element
// type, pointer alignments, math mode, fused epilogue, workspace limit).
// Value: the choice by name (a cuDNN engine configuration:
// cuda::EngineConfig::name()), its measured median and when it was chosen.
//
// Written in transactions (a reader sees all of a store or none of it);
// several processes may share one file (WAL journal, a writer waits for
// another's lock); a file that is not an ios plan cache, or a damaged one,
// is refused naming it (UserError, exit 2), never read as empty.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

struct sqlite3;

namespace ios::cost {

struct PlanKey {
  std::string device;  // "NVIDIA H200"
  int64_t sm_count = 0;
  std::string driver;   // "580.159.04"
  std::string cudnn;    // "9.19.0"
  std::string cublas;   // "13.1.0"
  std::string kernels;  // the kernel selection, "graph-1"
  std::string problem;

  bool operator==(const PlanKey&) const = default;
};

struct PlanEntry {
  std::string choice;     // e.g. "eng45 k3=1,k7=0"
  double time_ms = 0.0;   // its median when it was chosen
  int64_t chosen_at = 0;  // Unix time, seconds; 0 in store() means "now"
};

class PlanCache {
 public:
  static constexpr int kSchemaVersion = 1;

  // plans.sqlite beside the profile database `profile_db` (its default:
  // cost::ProfileDb::default_path()).
  static std::filesystem::path default_path(const std::filesystem::path& profile_db);

  // Opens, creating the file, its directories and the schema when absent.
  explicit PlanCache(const std::filesystem::path& path);
  ~PlanCache();
  PlanCache(const PlanCache&) = delete;
  PlanCache& operator=(const PlanCache&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::optional<PlanEntry> find(const PlanKey& key) const;
  void store(const PlanKey& key, const PlanEntry& entry);  // inserts or replaces
  int64_t count() const;
  std::vector<std::pair<PlanKey, PlanEntry>> entries() const;  // ordered by key

 private:
  void exec(const char* sql) const;
  [[noreturn]] void fail(const char* what) const;
  std::filesystem::path path_;
  sqlite3* db_ = nullptr;
};

}  // namespace ios::cost
