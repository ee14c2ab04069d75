#include "cost/plan_cache.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <ctime>

#include "core/error.h"
#include "cost/sqlite_statement.h"

namespace ios::cost {
namespace {

constexpr int kBusyTimeoutMs = 30000;  // another process may hold the write lock while it stores

// The key's columns, bound in the order of the statements below.
void bind_key(Statement& s, const PlanKey& k) {
  s.bind(1, k.device);
  s.bind(2, k.sm_count);
  s.bind(3, k.driver);
  s.bind(4, k.cudnn);
  s.bind(5, k.cublas);
  s.bind(6, k.kernels);
  s.bind(7, k.problem);
}

#define IOS_PLAN_KEY_COLUMNS "device, sm_count, driver, cudnn, cublas, kernels, problem"

}  // namespace

std::filesystem::path PlanCache::default_path(const std::filesystem::path& profile_db) {
  return profile_db.parent_path() / "plans.sqlite";
}

PlanCache::PlanCache(const std::filesystem::path& path) : path_(path) {
  std::error_code ec;
  if (path.has_parent_path()) {
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec) {
      user_error("plan cache {}: cannot create directory {}: {}", path.string(),
                 path.parent_path().string(), ec.message());
    }
  }
  if (sqlite3_open_v2(path.string().c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                      nullptr) != SQLITE_OK) {
    const std::string message = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    user_error("plan cache {}: cannot open ({}); check the path and its permissions (--plan-cache)",
               path.string(), message);
  }
  sqlite3_busy_timeout(db_, kBusyTimeoutMs);
  try {
    // The first statement reads the header: a file that is not SQLite fails here.
    exec("PRAGMA journal_mode = WAL");
    exec("BEGIN IMMEDIATE");
    {
      Statement tables(db_, "SELECT name FROM sqlite_master WHERE type = 'table'");
      if (!tables.ok()) fail("reading the schema");
      bool plans = false, version = false;
      int rc = SQLITE_ROW;
      while ((rc = tables.step()) == SQLITE_ROW) {
        const std::string table = column_text(tables.get(), 0);
        if (table == "plan") {
          plans = true;
        } else if (table == "schema_version") {
          version = true;
        } else {
          user_error(
              "plan cache {}: an SQLite file but not an ios plan cache (it has a table '{}'); "
              "delete it or "
              "choose another path (--plan-cache)",
              path_.string(), table);
        }
      }
      if (rc != SQLITE_DONE) fail("reading the schema");
      if (plans != version) {
        user_error(
            "plan cache {}: not an ios plan cache (no table '{}'); delete it or choose another "
            "path "
            "(--plan-cache)",
            path_.string(), plans ? "schema_version" : "plan");
      }
    }
    exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)");
    exec(
        "CREATE TABLE IF NOT EXISTS plan ("
        " device TEXT NOT NULL, sm_count INTEGER NOT NULL, driver TEXT NOT NULL, cudnn TEXT NOT "
        "NULL,"
        " cublas TEXT NOT NULL, kernels TEXT NOT NULL, problem TEXT NOT NULL,"
        " choice TEXT NOT NULL, time_ms REAL NOT NULL, chosen_at INTEGER NOT NULL,"
        " PRIMARY KEY (" IOS_PLAN_KEY_COLUMNS ")) WITHOUT ROWID");
    Statement v(db_, "SELECT version FROM schema_version");
    if (!v.ok()) fail("reading the schema version");
    const int rc = v.step();
    if (rc == SQLITE_ROW) {
      const int64_t found = sqlite3_column_int64(v.get(), 0);
      if (found != kSchemaVersion) {
        user_error(
            "plan cache {}: schema version {} (this ios uses {}); delete the file to start a new "
            "cache",
            path_.string(), found, kSchemaVersion);
      }
    } else if (rc == SQLITE_DONE) {
      exec(fmt::format("INSERT INTO schema_version (version) VALUES ({})", kSchemaVersion).c_str());
    } else {
      fail("reading the schema version");
    }
    exec("COMMIT");
  } catch (...) {
    sqlite3_close(db_);  // also rolls back the open transaction
    db_ = nullptr;
    throw;
  }
}

PlanCache::~PlanCache() { sqlite3_close(db_); }

void PlanCache::fail(const char* what) const {
  const int code = sqlite3_extended_errcode(db_) & 0xff;
  const std::string message = sqlite3_errmsg(db_);
  if (code == SQLITE_BUSY || code == SQLITE_LOCKED) {
    user_error("plan cache {}: locked by another process ({} while {}); retry when it has finished",
               path_.string(), message, what);
  }
  if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT) {
    user_error(
        "plan cache {}: not a valid ios plan cache ({} while {}); delete the file to start a new "
        "one",
        path_.string(), message, what);
  }
  user_error("plan cache {}: {} failed: {}", path_.string(), what, message);
}

void PlanCache::exec(const char* sql) const {
  if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) fail(sql);
}

std::optional<PlanEntry> PlanCache::find(const PlanKey& key) const {
  Statement q(db_,
              "SELECT choice, time_ms, chosen_at FROM plan WHERE device = ?1 AND sm_count = ?2 AND "
              "driver = ?3 AND cudnn = ?4 AND cublas = ?5 AND kernels = ?6 AND problem = ?7");
  if (!q.ok()) fail("preparing a lookup");
  bind_key(q, key);
  const int rc = q.step();
  if (rc == SQLITE_DONE) return std::nullopt;
  if (rc != SQLITE_ROW) fail("looking up a plan");
  return PlanEntry{column_text(q.get(), 0), sqlite3_column_double(q.get(), 1),
                   sqlite3_column_int64(q.get(), 2)};
}

void PlanCache::store(const PlanKey& key, const PlanEntry& entry) {
  exec("BEGIN IMMEDIATE");
  try {
    Statement insert(
        db_, "INSERT OR REPLACE INTO plan (" IOS_PLAN_KEY_COLUMNS
             ", choice, time_ms, chosen_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
    if (!insert.ok()) fail("preparing a store");
    bind_key(insert, key);
    insert.bind(8, entry.choice);
    insert.bind(9, entry.time_ms);
    insert.bind(10,
                entry.chosen_at != 0 ? entry.chosen_at : static_cast<int64_t>(std::time(nullptr)));
    if (insert.step() != SQLITE_DONE) fail("storing a plan");
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

int64_t PlanCache::count() const {
  Statement q(db_, "SELECT count(*) FROM plan");
  if (!q.ok() || q.step() != SQLITE_ROW) fail("counting plans");
  return sqlite3_column_int64(q.get(), 0);
}

std::vector<std::pair<PlanKey, PlanEntry>> PlanCache::entries() const {
  Statement q(db_, "SELECT " IOS_PLAN_KEY_COLUMNS
                   ", choice, time_ms, chosen_at FROM plan ORDER BY " IOS_PLAN_KEY_COLUMNS);
  if (!q.ok()) fail("preparing a listing");
  std::vector<std::pair<PlanKey, PlanEntry>> out;
  int rc = SQLITE_ROW;
  while ((rc = q.step()) == SQLITE_ROW) {
    sqlite3_stmt* s = q.get();
    out.push_back(
        {PlanKey{column_text(s, 0), sqlite3_column_int64(s, 1), column_text(s, 2),
                 column_text(s, 3), column_text(s, 4), column_text(s, 5), column_text(s, 6)},
         PlanEntry{column_text(s, 7), sqlite3_column_double(s, 8), sqlite3_column_int64(s, 9)}});
  }
  if (rc != SQLITE_DONE) fail("listing the plans");
  return out;
}

}  // namespace ios::cost
