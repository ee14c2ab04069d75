#include "cost/profile_db.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <ranges>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include "core/error.h"
#include "cost/device_profile.h"
#include "cost/sqlite_statement.h"

namespace ios::cost {
namespace {

constexpr int kBusyTimeoutMs = 30000;  // another process may hold the write lock while it stores
// Reading for --calibrate waits briefly: a lock held longer is reported.
constexpr int kReadOnlyBusyTimeoutMs = 2000;

// The key's columns, bound in the order of the statements below.
void bind_key(Statement& s, const ProfileKey& key) {
  s.bind(1, key.device);
  s.bind(2, key.driver);
  s.bind(3, key.cudnn);
  s.bind(4, key.precision);
  s.bind(5, key.batch);
  s.bind(6, key.launch);
  s.bind(7, key.signature);
  s.bind(8, key.kernels);
}

// `path` as a file: URI (RFC 3986: every byte but the unreserved ones and
// '/' percent-encoded, so '?', '#' and '%' in a file name stay literal).
std::string file_uri(const std::filesystem::path& path) {
  std::string out = "file:";
  for (const char ch : std::filesystem::absolute(path).string()) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '/' || c == '-' || c == '.' || c == '_' || c == '~') {
      out += ch;
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

// The key of a row whose first eight columns are the key's (device, driver,
// cuDNN, precision, batch, launch, signature, kernels: kKeyColumns).
ProfileKey read_key(sqlite3_stmt* q) {
  return {column_text(q, 0), column_text(q, 1),          column_text(q, 2), column_text(q, 3),
          sqlite3_column_int64(q, 4), column_text(q, 6), column_text(q, 5), column_text(q, 7)};
}
constexpr int kKeyColumns = 8;
#define IOS_PROFILE_KEY_COLUMNS "device, driver, cudnn, precision, batch, launch, signature, kernels"

// The table of schema version 3.
constexpr const char* kCreateTable =
    "CREATE TABLE IF NOT EXISTS {} ("
    " device TEXT NOT NULL, driver TEXT NOT NULL, cudnn TEXT NOT NULL,"
    " precision TEXT NOT NULL, batch INTEGER NOT NULL, launch TEXT NOT NULL,"
    " signature TEXT NOT NULL, kernels TEXT NOT NULL,"
    " latency_ms REAL NOT NULL, repetitions INTEGER NOT NULL, measured_at INTEGER NOT NULL,"
    " PRIMARY KEY (" IOS_PROFILE_KEY_COLUMNS ")) WITHOUT ROWID";

// A version-2 row's columns as version 3 reads them: measured with the
// legacy kernels, the only ones there were.
constexpr const char* kVersion2Columns =
    "device, driver, cudnn, precision, batch, launch, signature, 'legacy-1' AS kernels, latency_ms, "
    "repetitions, measured_at";

// The entry in columns first.. of a row, its latency checked: a number in
// [0, kMaxLatencyMs] (SQLite stores whatever a writer gave it, NaN as NULL).
ProfileEntry read_entry(const std::filesystem::path& path, sqlite3_stmt* q, int first,
                        const ProfileKey& key) {
  ProfileEntry entry{sqlite3_column_double(q, first), sqlite3_column_int64(q, first + 1),
                     sqlite3_column_int64(q, first + 2)};
  const int type = sqlite3_column_type(q, first);
  const bool number = type == SQLITE_FLOAT || type == SQLITE_INTEGER;
  if (!number || !std::isfinite(entry.latency_ms) || entry.latency_ms < 0.0 ||
      entry.latency_ms > kMaxLatencyMs) {
    user_error(
        "profile database {}: the row of device {}, batch {}, signature {} has latency_ms {}, "
        "not a measured latency in [0, {}] ms; delete the row or the database",
        path.string(), quoted_excerpt(key.device), key.batch, quoted_excerpt(key.signature),
        number ? fmt::format("{}", entry.latency_ms) : std::string("that is not a number"),
        kMaxLatencyMs);
  }
  return entry;
}

constexpr const char* kKeyWhere =
    "device = ?1 AND driver = ?2 AND cudnn = ?3 AND precision = ?4 AND batch = ?5 AND "
    "launch = ?6 AND signature = ?7 AND kernels = ?8";

}  // namespace

std::filesystem::path ProfileDb::default_path() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  // The XDG spec says relative values are invalid and must be ignored.
  if (xdg != nullptr && *xdg == '/') return std::filesystem::path(xdg) / "ios" / "profile.sqlite";
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home != '\0') {
    return std::filesystem::path(home) / ".cache" / "ios" / "profile.sqlite";
  }
  user_error(
      "cannot place the profile database: neither XDG_CACHE_HOME nor HOME is set; "
      "give its path explicitly (--profile-db FILE)");
}

ProfileDb::ProfileDb(const std::filesystem::path& path, Access access) : path_(path) {
  if (access == Access::kReadOnly) {
    open_read_only();
  } else {
    open_read_write();
  }
}

void ProfileDb::open_read_write() {
  const std::filesystem::path& path = path_;
  std::error_code ec;
  if (path.has_parent_path()) {
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec) {
      user_error("profile database {}: cannot create directory {}: {}", path.string(),
                 path.parent_path().string(), ec.message());
    }
  }
  if (sqlite3_open_v2(path.string().c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                      nullptr) != SQLITE_OK) {
    const std::string message = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    user_error("profile database {}: cannot open ({}); check the path and its permissions",
               path.string(), message);
  }
  sqlite3_busy_timeout(db_, kBusyTimeoutMs);
  try {
    // The first statement reads the header: a file that is not SQLite fails here.
    exec("PRAGMA journal_mode = WAL");
    exec("BEGIN IMMEDIATE");
    check_schema(true);
    exec("COMMIT");
  } catch (...) {
    sqlite3_close(db_);  // also rolls back an open transaction
    db_ = nullptr;
    throw;
  }
}

void ProfileDb::open_read_only() {
  const std::string name = path_.string();
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path_, ec);
  if (ec) user_error("profile database {}: cannot read it ({})", name, ec.message());
  if (size > kMaxReadOnlyBytes) {
    user_error(
        "profile database {}: {} bytes, larger than the {} GiB calibration reads; calibrate "
        "from a database of the one device (--cost measured --profile-db NEW.sqlite)",
        name, size, kMaxReadOnlyBytes >> 30);
  }
  // The header says whether this is SQLite at all and its journal mode,
  // before SQLite opens anything.
  std::array<char, 100> header{};
  std::ifstream in(path_, std::ios::binary);
  if (!in) user_error("profile database {}: cannot open it for reading", name);
  in.read(header.data(), header.size());
  if (size == 0) {
    user_error(
        "profile database {}: an empty file, not an ios profile database (fill one with "
        "--cost measured --profile-db FILE on a GPU)",
        name);
  }
  if (in.gcount() < static_cast<std::streamsize>(header.size()) ||
      std::string_view(header.data(), 16) != std::string_view("SQLite format 3\0", 16)) {
    user_error("profile database {}: not an SQLite file, so not an ios profile database", name);
  }
  // A WAL database with no -wal file beside it has no open connection and
  // every change in the main file. Opening it with mode=ro would still create
  // the -wal and -shm files (and leave them behind); immutable=1 reads the
  // file as it is without them. Otherwise mode=ro: it takes the shared locks
  // that keep a concurrent writer's half-written pages out of sight.
  // Byte 19 of the header (the write version) decides, as in SQLite's own
  // check: 2 opens a WAL, whatever the read version in byte 18 says.
  const bool wal = header[19] == 2;
  const bool wal_file = std::filesystem::exists(name + "-wal", ec);
  const std::string uri = file_uri(path_) + (wal && !wal_file ? "?immutable=1" : "?mode=ro");
  if (sqlite3_open_v2(uri.c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr) !=
      SQLITE_OK) {
    const std::string message = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    user_error("profile database {}: cannot open it read-only ({})", name, message);
  }
  sqlite3_busy_timeout(db_, kReadOnlyBusyTimeoutMs);
  // No single value of a database ios wrote comes near this: a larger one
  // fails to read instead of being allocated.
  sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, kMaxValueBytes);
  try {
    check_schema(false);
  } catch (...) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

void ProfileDb::check_schema(bool create) {
  {
    Statement tables(db_, "SELECT name FROM sqlite_master WHERE type = 'table'");
    if (!tables.ok()) fail("reading the schema");
    bool latency = false, version = false;
    int rc = SQLITE_ROW;
    while ((rc = tables.step()) == SQLITE_ROW) {
      const auto* text = sqlite3_column_text(tables.get(), 0);
      const std::string table = text ? reinterpret_cast<const char*>(text) : "";
      if (table == "stage_latency") {
        latency = true;
      } else if (table == "schema_version") {
        version = true;
      } else if (create) {
        user_error(
            "profile database {}: is an SQLite file but not an ios profile database; "
            "delete it or choose another path (--profile-db)",
            path_.string());
      } else {
        user_error(
            "profile database {}: an SQLite file but not an ios profile database (it has "
            "a table {})",
            path_.string(), quoted_excerpt(table));
      }
    }
    if (rc != SQLITE_DONE) fail("reading the schema");
    if (!create && !(latency && version)) {
      user_error(
          "profile database {}: an SQLite file but not an ios profile database (no table "
          "'{}'; fill one with --cost measured --profile-db FILE on a GPU)",
          path_.string(), latency ? "schema_version" : "stage_latency");
    }
  }
  if (create) {
    exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)");
    exec(fmt::format(kCreateTable, "stage_latency").c_str());
  }
  int rc = SQLITE_ERROR;
  int64_t found = -1;
  {
    // Finalized before an upgrade: SQLite drops no table under a pending statement.
    Statement version(db_, "SELECT version FROM schema_version");
    if (!version.ok()) fail("reading the schema version");
    rc = version.step();
    if (rc == SQLITE_ROW) found = sqlite3_column_int64(version.get(), 0);
  }
  if (rc == SQLITE_ROW) {
    if (found == kUpgradableVersion) {
      upgrade_version2(create);
    } else if (found != kSchemaVersion) {
      // Older versions hold latencies measured by an earlier method (no L2
      // flush, a graph launch's gap in every stage), not to be mixed in.
      user_error(
          "profile database {}: schema version {} (this ios uses {}; its measurements are not "
          "comparable); delete the file to start a new database",
          path_.string(), found, kSchemaVersion);
    }
  } else if (rc == SQLITE_DONE && create) {
    exec(fmt::format("INSERT INTO schema_version (version) VALUES ({})", kSchemaVersion).c_str());
  } else if (rc == SQLITE_DONE) {
    user_error("profile database {}: not an ios profile database (no schema version)",
               path_.string());
  } else {
    fail("reading the schema version");
  }
}

void ProfileDb::upgrade_version2(bool read_write) {
  if (read_write) {
    // Inside open_read_write's transaction: all of it or none.
    exec(fmt::format(kCreateTable, "stage_latency_v3").c_str());
    exec(fmt::format("INSERT INTO stage_latency_v3 SELECT {} FROM stage_latency", kVersion2Columns).c_str());
    exec("DROP TABLE stage_latency");
    exec("ALTER TABLE stage_latency_v3 RENAME TO stage_latency");
    exec(fmt::format("UPDATE schema_version SET version = {}", kSchemaVersion).c_str());
    return;
  }
  // Read-only (calibration): the file stays as it is; a view in the
  // connection's own temporary schema, which unqualified names find first,
  // reads its rows as version 3's.
  if (sqlite3_exec(db_,
                   fmt::format("CREATE TEMP VIEW stage_latency AS SELECT {} FROM main.stage_latency", kVersion2Columns)
                       .c_str(),
                   nullptr, nullptr, nullptr) != SQLITE_OK) {
    user_error("profile database {}: schema version {}, which this ios reads only after upgrading it; open it once "
               "with --cost measured --profile-db {} (it keeps its rows)",
               path_.string(), kUpgradableVersion, path_.string());
  }
}

ProfileDb::~ProfileDb() { sqlite3_close(db_); }

ProfileDb::ProfileDb(ProfileDb&& other) noexcept
    : path_(std::move(other.path_)), db_(std::exchange(other.db_, nullptr)) {}

ProfileDb& ProfileDb::operator=(ProfileDb&& other) noexcept {
  if (this != &other) {
    sqlite3_close(db_);
    path_ = std::move(other.path_);
    db_ = std::exchange(other.db_, nullptr);
  }
  return *this;
}

void ProfileDb::fail(const char* what) const {
  const int code = sqlite3_extended_errcode(db_) & 0xff;
  const std::string message = sqlite3_errmsg(db_);
  if (code == SQLITE_BUSY || code == SQLITE_LOCKED) {
    user_error(
        "profile database {}: locked by another process ({} while {}); retry when it has "
        "finished",
        path_.string(), message, what);
  }
  if (code == SQLITE_TOOBIG) {
    user_error("profile database {}: a value larger than {} bytes ({}), not written by ios",
               path_.string(), kMaxValueBytes, what);
  }
  if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT) {
    user_error(
        "profile database {}: not a valid profile database ({} while {}); delete the "
        "file to start a new one",
        path_.string(), message, what);
  }
  user_error("profile database {}: {} failed: {}", path_.string(), what, message);
}

void ProfileDb::exec(const char* sql) const {
  IOS_ASSERT(db_ != nullptr, "use of a moved-from ProfileDb");
  if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) fail(sql);
}

std::optional<ProfileEntry> ProfileDb::find(const ProfileKey& key) const {
  IOS_ASSERT(db_ != nullptr, "use of a moved-from ProfileDb");
  Statement q(db_, fmt::format("SELECT latency_ms, repetitions, measured_at FROM stage_latency "
                               "WHERE {}",
                               kKeyWhere)
                       .c_str());
  if (!q.ok()) fail("preparing a lookup");
  bind_key(q, key);
  const int rc = q.step();
  if (rc == SQLITE_DONE) return std::nullopt;
  if (rc != SQLITE_ROW) fail("looking up a stage");
  return read_entry(path_, q.get(), 0, key);
}

std::optional<double> ProfileDb::lookup(const ProfileKey& key) const {
  if (auto entry = find(key)) return entry->latency_ms;
  return std::nullopt;
}

void ProfileDb::store(const ProfileKey& key, const ProfileEntry& entry) {
  store_all({{key, entry}});
}

void ProfileDb::store(const ProfileKey& key, double latency_ms, int64_t repetitions) {
  store(key, ProfileEntry{latency_ms, repetitions, 0});
}

void ProfileDb::store_all(const std::vector<std::pair<ProfileKey, ProfileEntry>>& entries) {
  IOS_ASSERT(db_ != nullptr, "use of a moved-from ProfileDb");
  const auto now = static_cast<int64_t>(std::time(nullptr));
  exec("BEGIN IMMEDIATE");
  try {
    Statement insert(db_,
                     "INSERT OR REPLACE INTO stage_latency (" IOS_PROFILE_KEY_COLUMNS
                     ", latency_ms, repetitions, measured_at) "
                     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
    if (!insert.ok()) fail("preparing a store");
    for (const auto& [key, entry] : entries) {
      IOS_ASSERT(entry.latency_ms >= 0.0 && entry.repetitions >= 0,
                 "bad profile entry: {} ms over {} repetitions", entry.latency_ms,
                 entry.repetitions);
      bind_key(insert, key);
      insert.bind(9, entry.latency_ms);
      insert.bind(10, entry.repetitions);
      insert.bind(11, entry.measured_at != 0 ? entry.measured_at : now);
      if (insert.step() != SQLITE_DONE) fail("storing a stage");
      insert.reset();
    }
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

int64_t ProfileDb::count() const {
  IOS_ASSERT(db_ != nullptr, "use of a moved-from ProfileDb");
  Statement q(db_, "SELECT count(*) FROM stage_latency");
  if (!q.ok() || q.step() != SQLITE_ROW) fail("counting entries");
  return sqlite3_column_int64(q.get(), 0);
}

std::vector<std::pair<ProfileKey, ProfileEntry>> ProfileDb::entries() const {
  IOS_ASSERT(db_ != nullptr, "use of a moved-from ProfileDb");
  Statement q(db_,
              "SELECT " IOS_PROFILE_KEY_COLUMNS ", latency_ms, "
              "repetitions, measured_at FROM stage_latency "
              "ORDER BY " IOS_PROFILE_KEY_COLUMNS);
  if (!q.ok()) fail("preparing a listing");
  std::vector<std::pair<ProfileKey, ProfileEntry>> out;
  int rc = SQLITE_ROW;
  while ((rc = q.step()) == SQLITE_ROW) {
    ProfileKey key = read_key(q.get());
    const ProfileEntry entry = read_entry(path_, q.get(), kKeyColumns, key);
    out.emplace_back(std::move(key), entry);
  }
  if (rc != SQLITE_DONE) fail("listing the stages");
  return out;
}

void ProfileDb::for_each_entry(
    ir::MathMode math, int64_t batch,
    const std::function<void(const ProfileKey&, const ProfileEntry&)>& visit) const {
  IOS_ASSERT(db_ != nullptr, "use of a moved-from ProfileDb");
  Statement q(db_,
              "SELECT " IOS_PROFILE_KEY_COLUMNS ", latency_ms, "
              "repetitions, measured_at FROM stage_latency WHERE precision = ?1 AND batch = ?2");
  if (!q.ok()) fail("preparing a listing");
  q.bind(1, std::string(ir::math_mode_name(math)));
  q.bind(2, batch);
  int rc = SQLITE_ROW;
  while ((rc = q.step()) == SQLITE_ROW) {
    const ProfileKey key = read_key(q.get());
    visit(key, read_entry(path_, q.get(), kKeyColumns, key));
  }
  if (rc != SQLITE_DONE) fail("listing the stages");
}

void ProfileDb::clear() { exec("DELETE FROM stage_latency"); }

}  // namespace ios::cost
