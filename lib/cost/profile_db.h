// ProfileDb: the persistent cache of measured stage latencies (SQLite), so a
// stage is measured once per device/software/precision/batch and reused by
// later runs and by identical stages elsewhere in the model.
//
// Key: device name, driver version, cuDNN version, precision, batch, the
// launch mode the stage was timed in (sched::kLaunchModes), the canonical
// stage signature (sched::stage_signature) and the kernel selection its
// convolutions ran with (exec/kernel_selection.h). Value: the median
// latency in ms, the number of repetitions it is the median of, and when it
// was measured. Several processes may share one file (WAL journal, busy
// timeout); one ProfileDb object must not be used by two threads at once.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/precision.h"
#include "sched/schedule.h"
#include "sched/unit_graph.h"

struct sqlite3;

namespace ios::cost {

struct ProfileKey {
  std::string device;     // e.g. "NVIDIA H100 80GB HBM3"
  std::string driver;     // e.g. "570.86.15"
  std::string cudnn;      // e.g. "9.19.0"
  std::string precision;  // the math mode: "fp32" / "tf32" (ir::math_mode_name)
  int64_t batch = 1;
  std::string signature;  // sched::stage_signature()
  // How the stage was timed (sched::kLaunchModes): "graph", "plain" or
  // "synced". Last, so that a key written without it means a graph.
  std::string launch = "graph";
  // How its kernels were chosen (exec::kernel_selection): "legacy-1" for
  // cuDNN's legacy calls, which every row of a version-2 database used.
  std::string kernels = "legacy-1";

  bool operator==(const ProfileKey&) const = default;
};

struct ProfileEntry {
  double latency_ms = 0.0;  // median over the repetitions
  int64_t repetitions = 0;
  int64_t measured_at = 0;  // Unix time, seconds; 0 in store() means "now"
};

// Accepted measured latencies, in ms: [0, kMaxLatencyMs]. Ten seconds is far
// beyond any one stage of a CNN; 0 is what CUDA events read for a stage that
// launches nothing. A row outside (or not a number) is refused naming it.
inline constexpr double kMaxLatencyMs = 1e4;

class ProfileDb {
 public:
  // 2: the launch mode in the key, and stages timed with the L2 flushed, the
  // empty graph's launch taken off (cuda/timing_plan.h).
  // 3: the kernel selection in the key. A version-2 database is upgraded
  // when opened read-write (its rows keep their latencies, as "legacy-1",
  // the kernels they were measured with) and read as such read-only. Any
  // other version is refused (UserError naming the file and saying to
  // delete it): version 1 latencies are biased and must not be reused.
  static constexpr int kSchemaVersion = 3;
  static constexpr int kUpgradableVersion = 2;

  // kReadWrite: `--cost measured`, which creates and fills the database.
  // kReadOnly: `--calibrate`, which must leave its input as it was: the file
  // is opened read-only (never created, no schema, no journal-mode switch, no
  // files beside it), a database locked by another process is reported after
  // a short wait, and files over kMaxReadOnlyBytes or values over
  // kMaxValueBytes are refused.
  enum class Access { kReadWrite, kReadOnly };
  static constexpr uint64_t kMaxReadOnlyBytes = uint64_t{1} << 30;
  static constexpr int kMaxValueBytes = 1 << 20;

  // $XDG_CACHE_HOME/ios/profile.sqlite, else ~/.cache/ios/profile.sqlite.
  // Throws UserError when neither XDG_CACHE_HOME nor HOME is set.
  static std::filesystem::path default_path();

  // Opens (creating the file, its directories and the schema when absent).
  // A file that is not an ios profile database is a UserError naming the path
  // and suggesting to delete it.
  explicit ProfileDb(const std::filesystem::path& path, Access access = Access::kReadWrite);
  ~ProfileDb();
  ProfileDb(const ProfileDb&) = delete;
  ProfileDb& operator=(const ProfileDb&) = delete;
  ProfileDb(ProfileDb&& other) noexcept;
  ProfileDb& operator=(ProfileDb&& other) noexcept;

  const std::filesystem::path& path() const { return path_; }

  std::optional<double> lookup(const ProfileKey& key) const;
  std::optional<ProfileEntry> find(const ProfileKey& key) const;
  // Inserts or replaces, in one transaction.
  void store(const ProfileKey& key, const ProfileEntry& entry);
  void store(const ProfileKey& key, double latency_ms, int64_t repetitions);
  // Many entries in one transaction (faster than one store() each).
  void store_all(const std::vector<std::pair<ProfileKey, ProfileEntry>>& entries);
  int64_t count() const;
  // Every entry, ordered by key.
  std::vector<std::pair<ProfileKey, ProfileEntry>> entries() const;
  // Calls `visit` for each entry at `math` and `batch` (every launch mode), one row at a
  // time (calibration reads these without holding the whole file in memory).
  void for_each_entry(
      ir::MathMode math, int64_t batch,
      const std::function<void(const ProfileKey&, const ProfileEntry&)>& visit) const;
  void clear();

 private:
  void open_read_write();
  void open_read_only();
  void check_schema(bool create);
  void upgrade_version2(bool read_write);
  void exec(const char* sql) const;
  [[noreturn]] void fail(const char* what) const;

  std::filesystem::path path_;
  sqlite3* db_ = nullptr;
};

}  // namespace ios::cost
