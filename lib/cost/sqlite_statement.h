// A prepared SQLite statement finalized on scope exit, and a text column
// read as a string: what the profile database and the plan cache share.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>

namespace ios::cost {

class Statement {
 public:
  Statement(sqlite3* db, const char* sql) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) stmt_ = nullptr;
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  bool ok() const { return stmt_ != nullptr; }
  sqlite3_stmt* get() const { return stmt_; }
  void bind(int i, const std::string& s) {
    sqlite3_bind_text(stmt_, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
  }
  void bind(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void bind(int i, double v) { sqlite3_bind_double(stmt_, i, v); }
  int step() { return sqlite3_step(stmt_); }
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

// A text column as a string; NULL reads as empty.
inline std::string column_text(sqlite3_stmt* q, int column) {
  const unsigned char* value = sqlite3_column_text(q, column);
  return value ? std::string(reinterpret_cast<const char*>(value)) : std::string();
}

}  // namespace ios::cost
