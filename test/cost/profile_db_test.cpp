// The persistent profile database and canonical stage signatures.
#include "cost/profile_db.h"

#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "core/error.h"
#include "cost/ir_builder.h"
#include "cost/temp_dir.h"
#include "sched/signature.h"
#include "sched/unit_graph.h"

using Catch::Matchers::Contains;
using ios::cost::ProfileDb;
using ios::cost::ProfileEntry;
using ios::cost::ProfileKey;
using ios::sched::stage_signature;
using ios::sched::Stage;
using ios::sched::Strategy;
using ios::sched::UnitGraph;
using ios::sched::UnitId;
using ios::test::IrBuilder;
using ios::test::TempDir;

namespace {

ProfileKey key(const std::string& signature, int64_t batch = 1) {
  return ProfileKey{"NVIDIA H100 80GB HBM3", "570.86.15", "9.19.0", "fp32", batch, signature};
}

std::string open_error(const std::filesystem::path& path) {
  try {
    ProfileDb db(path);
  } catch (const ios::UserError& e) {
    return e.what();
  }
  FAIL("no UserError opening " << path);
  return {};
}

// An Inception-style module: four branches over `x`, concatenated into 4*c
// channels. With 4*c equal to x's channels, chained modules are identical.
ios::ir::TensorId module(IrBuilder& b, const std::string& p, ios::ir::TensorId x, int64_t c) {
  const auto b1 = b.conv(p + "b1", x, c, 1);
  const auto b2 = b.conv(p + "b2b", b.conv(p + "b2a", x, c / 2, 1), c, 5, 1, 2);
  const auto b3 =
      b.conv(p + "b3c", b.conv(p + "b3b", b.conv(p + "b3a", x, c / 2, 1), c, 3, 1, 1), c, 3, 1, 1);
  const auto b4 = b.conv(p + "b4", b.avg_pool(p + "pool", x, 3, 1, 1), c, 1);
  return b.concat(p + "cat", {b1, b2, b3, b4});
}

UnitId unit(const UnitGraph& g, const std::string& id) {
  const auto u = g.find(id);
  REQUIRE(u.has_value());
  return *u;
}

Stage stage(Strategy strategy, std::vector<std::vector<UnitId>> groups) {
  Stage s;
  s.strategy = strategy;
  s.groups = std::move(groups);
  return s;
}

}  // namespace

TEST_CASE("profile db: store and look up", "[cost][profile_db]") {
  TempDir dir;
  ProfileDb db(dir / "nested" / "dirs" / "profile.sqlite");  // directories are created
  CHECK(db.count() == 0);
  CHECK_FALSE(db.lookup(key("s1")).has_value());

  db.store(key("s1"), 0.125, 50);
  REQUIRE(db.lookup(key("s1")).has_value());
  CHECK(*db.lookup(key("s1")) == 0.125);
  const auto entry = db.find(key("s1"));
  REQUIRE(entry.has_value());
  CHECK(entry->repetitions == 50);
  CHECK(entry->measured_at > 1600000000);  // "now", as Unix seconds

  // Every key field takes part in the key.
  CHECK_FALSE(db.lookup(key("s1", 2)).has_value());
  ProfileKey other = key("s1");
  other.precision = "tf32";
  CHECK_FALSE(db.lookup(other).has_value());
  other = key("s1");
  other.cudnn = "9.20.0";
  CHECK_FALSE(db.lookup(other).has_value());
  other = key("s1");
  other.driver = "580.0";
  CHECK_FALSE(db.lookup(other).has_value());
  other = key("s1");
  other.device = "NVIDIA H200";
  CHECK_FALSE(db.lookup(other).has_value());

  db.store(key("s1"), ProfileEntry{0.25, 10, 1700000000});  // replaces
  CHECK(db.count() == 1);
  CHECK(db.find(key("s1"))->latency_ms == 0.25);
  CHECK(db.find(key("s1"))->measured_at == 1700000000);

  db.store_all({{key("s2"), {1.0, 3, 0}}, {key("s3"), {2.0, 3, 0}}});
  CHECK(db.count() == 3);
  db.clear();
  CHECK(db.count() == 0);
}

TEST_CASE("profile db: entries persist across reopening and connections", "[cost][profile_db]") {
  TempDir dir;
  const auto path = dir / "profile.sqlite";
  {
    ProfileDb db(path);
    db.store(key("persist"), 0.5, 7);
  }
  ProfileDb reopened(path);
  CHECK(reopened.count() == 1);
  CHECK(reopened.lookup(key("persist")) == 0.5);

  // A second connection to the same file (as another process would have)
  // sees the first one's writes and can write itself.
  ProfileDb second(path);
  second.store(key("other"), 0.75, 7);
  CHECK(reopened.lookup(key("other")) == 0.75);
  reopened.store(key("third"), 1.5, 7);
  CHECK(second.count() == 3);

  ProfileDb moved = std::move(second);
  CHECK(moved.count() == 3);
  CHECK(moved.path() == path);
}

TEST_CASE("profile db: a file that is not a profile database is a user error",
          "[cost][profile_db]") {
  TempDir dir;
  SECTION("garbage bytes") {
    const auto path = dir / "profile.sqlite";
    std::ofstream(path) << std::string(4096, 'x');
    const std::string message = open_error(path);
    CHECK_THAT(message, Contains(path.string()));
    CHECK_THAT(message, Contains("delete"));
  }
  SECTION("another program's SQLite database") {
    const auto path = dir / "foreign.sqlite";
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "CREATE TABLE users (name TEXT)", nullptr, nullptr, nullptr) ==
            SQLITE_OK);
    sqlite3_close(db);
    const std::string message = open_error(path);
    CHECK_THAT(message, Contains(path.string()));
    CHECK_THAT(message, Contains("not an ios profile database"));
  }
  SECTION("a database of another schema version") {
    const auto path = dir / "future.sqlite";
    { ProfileDb created(path); }
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "UPDATE schema_version SET version = 99", nullptr, nullptr, nullptr) ==
            SQLITE_OK);
    sqlite3_close(db);
    const std::string message = open_error(path);
    CHECK_THAT(message, Contains("schema version 99"));
    CHECK_THAT(message, Contains(path.string()));
  }
  SECTION("a version 1 database: measured before the L2 flush and the launch mode, never reused") {
    // The schema ios wrote as version 1, with one measured row in it.
    const auto path = dir / "v1.sqlite";
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db,
                         "CREATE TABLE schema_version (version INTEGER NOT NULL);"
                         "INSERT INTO schema_version VALUES (1);"
                         "CREATE TABLE stage_latency ("
                         " device TEXT NOT NULL, driver TEXT NOT NULL, cudnn TEXT NOT NULL,"
                         " precision TEXT NOT NULL, batch INTEGER NOT NULL, signature TEXT NOT NULL,"
                         " latency_ms REAL NOT NULL, repetitions INTEGER NOT NULL,"
                         " measured_at INTEGER NOT NULL,"
                         " PRIMARY KEY (device, driver, cudnn, precision, batch, signature)) WITHOUT ROWID;"
                         "INSERT INTO stage_latency VALUES ('NVIDIA H100 80GB HBM3', '570.86.15', "
                         "'9.19.0', 'fp32', 1, 's1', 0.5, 100, 0);",
                         nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
    const std::string message = open_error(path);
    CHECK_THAT(message, Contains(path.string()));
    CHECK_THAT(message, Contains("schema version 1 (this ios uses 3"));
    CHECK_THAT(message, Contains("delete the file"));
    CHECK(message.find('\n') == std::string::npos);
    // Calibration (read-only) refuses it the same way.
    try {
      ProfileDb read_only(path, ProfileDb::Access::kReadOnly);
      FAIL("a version 1 database was opened read-only");
    } catch (const ios::UserError& e) {
      CHECK_THAT(std::string(e.what()), Contains("schema version 1"));
    }
  }
}

TEST_CASE("profile db: the kernel selection is part of the key", "[cost][profile_db]") {
  TempDir dir;
  ProfileDb db(dir / "profile.sqlite");
  ProfileKey legacy = key("s1");
  CHECK(legacy.kernels == "legacy-1");  // what a key without it means
  ProfileKey graph = legacy;
  graph.kernels = "graph-1";
  db.store(legacy, 0.5, 10);
  // A stage measured with the legacy kernels is measured again for the graph path.
  CHECK_FALSE(db.lookup(graph).has_value());
  db.store(graph, 0.25, 10);
  CHECK(db.lookup(legacy) == 0.5);
  CHECK(db.lookup(graph) == 0.25);
  const auto rows = db.entries();
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].first.kernels == "graph-1");  // ordered by key
  CHECK(rows[1].first.kernels == "legacy-1");
}

TEST_CASE(
    "profile db: a version 2 database is read as legacy-1 rows, and upgraded in place read-write",
    "[cost][profile_db]") {
  TempDir dir;
  const auto path = dir / "v2.sqlite";
  auto version_of = [&] {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    sqlite3_stmt* q = nullptr;
    REQUIRE(sqlite3_prepare_v2(db, "SELECT version FROM schema_version", -1, &q, nullptr) ==
            SQLITE_OK);
    REQUIRE(sqlite3_step(q) == SQLITE_ROW);
    const int64_t v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
    return v;
  };
  {
    // The schema ios wrote as version 2, with one measured row.
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(
                db,
                "CREATE TABLE schema_version (version INTEGER NOT NULL);"
                "INSERT INTO schema_version VALUES (2);"
                "CREATE TABLE stage_latency ("
                " device TEXT NOT NULL, driver TEXT NOT NULL, cudnn TEXT NOT NULL,"
                " precision TEXT NOT NULL, batch INTEGER NOT NULL, launch TEXT NOT NULL,"
                " signature TEXT NOT NULL, latency_ms REAL NOT NULL, repetitions INTEGER NOT NULL,"
                " measured_at INTEGER NOT NULL,"
                " PRIMARY KEY (device, driver, cudnn, precision, batch, launch, signature)) "
                "WITHOUT ROWID;"
                "INSERT INTO stage_latency VALUES ('NVIDIA H100 80GB HBM3', '570.86.15', "
                "'9.19.0', 'fp32', 1, 'graph', 's1', 0.5, 100, 7);",
                nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  {
    // Read-only (calibration): read as legacy-1, the file left as it was.
    const ProfileDb read_only(path, ProfileDb::Access::kReadOnly);
    const auto rows = read_only.entries();
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].first == key("s1"));
    CHECK(rows[0].second.latency_ms == 0.5);
  }
  CHECK(version_of() == 2);
  {
    ProfileDb db(path);
    CHECK(db.lookup(key("s1")) == 0.5);
    ProfileKey graph = key("s1");
    graph.kernels = "graph-1";
    CHECK_FALSE(db.lookup(graph).has_value());
    const auto entry = db.find(key("s1"));
    REQUIRE(entry);
    CHECK(entry->repetitions == 100);
    CHECK(entry->measured_at == 7);
  }
  CHECK(version_of() == 3);
  ProfileDb again(path);  // a version 3 database now: opened as it is
  CHECK(again.count() == 1);
}

TEST_CASE("profile db: the launch mode is part of the key", "[cost][profile_db]") {
  TempDir dir;
  ProfileDb db(dir / "profile.sqlite");
  ProfileKey graph = key("s1");
  CHECK(graph.launch == "graph");  // the default: what a key without it means
  ProfileKey plain = graph, synced = graph;
  plain.launch = "plain";
  synced.launch = "synced";
  db.store(graph, 0.5, 10);
  CHECK(db.lookup(plain) == std::nullopt);
  db.store(plain, 0.7, 10);
  CHECK(db.lookup(graph) == 0.5);
  CHECK(db.lookup(plain) == 0.7);
  CHECK(db.lookup(synced) == std::nullopt);
  CHECK(db.count() == 2);
  const auto all = db.entries();
  REQUIRE(all.size() == 2);
  CHECK(all[0].first == graph);  // ordered by key: "graph" < "plain"
  CHECK(all[1].first == plain);
  int seen = 0;
  db.for_each_entry(ios::ir::MathMode::kFp32, 1, [&](const ProfileKey& k, const ProfileEntry& e) {
    ++seen;
    CHECK(e.latency_ms == (k.launch == "graph" ? 0.5 : 0.7));
    CHECK(k.signature == "s1");
  });
  CHECK(seen == 2);
}

TEST_CASE("profile db: default path follows XDG_CACHE_HOME, then HOME", "[cost][profile_db]") {
  const char* old_xdg = std::getenv("XDG_CACHE_HOME");
  const std::string saved_xdg = old_xdg ? old_xdg : "";
  setenv("XDG_CACHE_HOME", "/tmp/xdg-cache", 1);
  CHECK(ProfileDb::default_path() == "/tmp/xdg-cache/ios/profile.sqlite");
  unsetenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home != '\0') {
    CHECK(ProfileDb::default_path() == std::filesystem::path(home) / ".cache/ios/profile.sqlite");
  }
  if (old_xdg) setenv("XDG_CACHE_HOME", saved_xdg.c_str(), 1);
}

TEST_CASE("stage signatures: identical Inception modules share keys", "[cost][signature]") {
  IrBuilder b;
  const auto x = b.input("x", {1, 64, 17, 17});
  const auto m1 = module(b, "m1_", x, 16);
  const auto m2 = module(b, "m2_", m1, 16);
  IrBuilder other;  // the same module on a larger feature map
  module(other, "m1_", other.input("x", {1, 64, 35, 35}), 16);
  b.output(m2);
  const UnitGraph g = UnitGraph::form(b.graph);
  const UnitGraph big = UnitGraph::form(other.graph);

  auto first_stage = [](const UnitGraph& graph, const std::string& p) {
    return stage(Strategy::kConcurrent, {{unit(graph, p + "b1")},
                                         {unit(graph, p + "b2a"), unit(graph, p + "b2b")},
                                         {unit(graph, p + "b3a")},
                                         {unit(graph, p + "pool"), unit(graph, p + "b4")}});
  };
  const std::string s1 = stage_signature(g, first_stage(g, "m1_"));
  const std::string s2 = stage_signature(g, first_stage(g, "m2_"));
  CHECK(s1 == s2);
  CHECK(s1.find("m1_") == std::string::npos);  // names never enter a signature

  // Concurrent groups are unordered.
  const Stage reordered = stage(Strategy::kConcurrent, {{unit(g, "m2_pool"), unit(g, "m2_b4")},
                                                        {unit(g, "m2_b3a")},
                                                        {unit(g, "m2_b1")},
                                                        {unit(g, "m2_b2a"), unit(g, "m2_b2b")}});
  CHECK(stage_signature(g, reordered) == s1);

  // ... but the order inside a group matters, and so do shapes and strategy.
  CHECK(stage_signature(big, first_stage(big, "m1_")) != s1);
  const Stage split = stage(Strategy::kConcurrent, {{unit(g, "m1_b2a")}, {unit(g, "m1_b2b")}});
  const Stage chain = stage(Strategy::kConcurrent, {{unit(g, "m1_b2a"), unit(g, "m1_b2b")}});
  CHECK(stage_signature(g, split) != stage_signature(g, chain));
  const Stage merged = stage(Strategy::kMerge, {{unit(g, "m1_b1"), unit(g, "m1_b2a")}});
  const Stage side_by_side =
      stage(Strategy::kConcurrent, {{unit(g, "m1_b1")}, {unit(g, "m1_b2a")}});
  CHECK(stage_signature(g, merged) != stage_signature(g, side_by_side));
  CHECK(stage_signature(g, merged) ==
        stage_signature(g, stage(Strategy::kMerge, {{unit(g, "m2_b1"), unit(g, "m2_b2a")}})));

  // Convs with equal shapes reading the same tensor differ from ones reading
  // two different tensors of that shape.
  const Stage shared = stage(Strategy::kConcurrent, {{unit(g, "m1_b1")}, {unit(g, "m1_b3a")}});
  const Stage apart = stage(Strategy::kConcurrent, {{unit(g, "m1_b1")}, {unit(g, "m2_b3a")}});
  CHECK(stage_signature(g, shared) != stage_signature(g, apart));
}

namespace {

std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

size_t files_in(const std::filesystem::path& dir) {
  return static_cast<size_t>(std::distance(std::filesystem::directory_iterator(dir), {}));
}

std::string read_only_error(const std::filesystem::path& path) {
  try {
    ProfileDb db(path, ProfileDb::Access::kReadOnly);
    db.for_each_entry(ios::ir::MathMode::kFp32, 1, [](const ProfileKey&, const ProfileEntry&) {});
  } catch (const ios::UserError& e) {
    return e.what();
  }
  FAIL("no UserError reading " << path);
  return {};
}

void sql(const std::filesystem::path& path, const std::string& statement) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  CHECK(sqlite3_exec(db, statement.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
}

}  // namespace

TEST_CASE("profile db: read-only access changes nothing", "[cost][profile_db]") {
  TempDir dir;
  const auto path = dir / "profile.sqlite";
  {
    ProfileDb db(path);
    db.store(key("a"), 0.5, 10);
    db.store(key("b", 8), 0.75, 10);
    db.store(ProfileKey{"Other", "1", "1", "tf32", 1, "c"}, 1.0, 10);
  }
  const std::string before = read_bytes(path);
  const size_t files = files_in(dir.path());
  {
    const ProfileDb db(path, ProfileDb::Access::kReadOnly);
    std::vector<std::string> seen;
    db.for_each_entry(ios::ir::MathMode::kFp32, 1, [&](const ProfileKey& k, const ProfileEntry& e) {
      seen.push_back(k.signature);
      CHECK(e.latency_ms == 0.5);
    });
    CHECK(seen == std::vector<std::string>{"a"});
    CHECK(db.count() == 3);
    // While it is open, another process may still write.
    ProfileDb writer(path);
    writer.store(key("d"), 0.25, 3);
  }
  // The writer changed the file; without it, reading leaves it as it was.
  const std::string after_write = read_bytes(path);
  CHECK(after_write != before);
  { const ProfileDb db(path, ProfileDb::Access::kReadOnly); }
  CHECK(read_bytes(path) == after_write);
  CHECK(files_in(dir.path()) == files);

  SECTION("an empty file is not made a database") {
    const auto empty = dir / "empty.sqlite";
    std::ofstream(empty).close();
    CHECK_THAT(read_only_error(empty), Contains("not an ios profile database"));
    CHECK(std::filesystem::file_size(empty) == 0);
    CHECK(files_in(dir.path()) == files + 1);
  }
  SECTION("a database of the rollback journal stays in that mode") {
    const auto rollback = dir / "rollback.sqlite";
    sql(rollback,
        "CREATE TABLE schema_version (version INTEGER NOT NULL);"
        "INSERT INTO schema_version VALUES (2);"
        "CREATE TABLE stage_latency (device TEXT, driver TEXT, cudnn TEXT, "
        "precision TEXT, batch INTEGER, launch TEXT, signature TEXT, latency_ms REAL, "
        "repetitions INTEGER, measured_at INTEGER)");
    const std::string rollback_before = read_bytes(rollback);
    { const ProfileDb db(rollback, ProfileDb::Access::kReadOnly); }
    CHECK(read_bytes(rollback) == rollback_before);
    CHECK(rollback_before[18] == 1);  // the header's journal mode: not WAL
  }
  SECTION("only the two tables of the schema: nothing is created") {
    const auto half = dir / "half.sqlite";
    sql(half, "CREATE TABLE schema_version (version INTEGER NOT NULL)");
    CHECK_THAT(read_only_error(half), Contains("no table 'stage_latency'"));
  }
}

TEST_CASE("profile db: latencies that are not measurements name their row", "[cost][profile_db]") {
  TempDir dir;
  const auto path = dir / "profile.sqlite";
  { ProfileDb db(path); }
  SECTION("1e300") {
    sql(path, "INSERT INTO stage_latency VALUES ('GPU', '1', '1', 'fp32', 1, 'graph', 'sig', 'legacy-1', 1e300, 1, 0)");
  }
  SECTION("infinity") {
    sql(path, "INSERT INTO stage_latency VALUES ('GPU', '1', '1', 'fp32', 1, 'graph', 'sig', 'legacy-1', 1e999, 1, 0)");
  }
  SECTION("negative") {
    sql(path, "INSERT INTO stage_latency VALUES ('GPU', '1', '1', 'fp32', 1, 'graph', 'sig', 'legacy-1', -1, 1, 0)");
  }
  SECTION("text") {
    sql(path, "INSERT INTO stage_latency VALUES ('GPU', '1', '1', 'fp32', 1, 'graph', 'sig', 'legacy-1', 'fast', 1, 0)");
  }
  const std::string message = read_only_error(path);
  CHECK_THAT(message, Contains(path.string()));
  CHECK_THAT(message, Contains("device 'GPU', batch 1, signature 'sig'"));
  CHECK_THAT(message, Contains("not a measured latency in [0, 10000] ms"));
  // The read-write path (--cost measured) refuses the cached value too.
  ProfileDb db(path);
  CHECK_THROWS_WITH(db.lookup(ProfileKey{"GPU", "1", "1", "fp32", 1, "sig"}),
                    Contains("not a measured latency"));
}

TEST_CASE("profile db: a database locked by another connection is reported promptly",
          "[cost][profile_db]") {
  TempDir dir;
  const auto path = dir / "locked.sqlite";
  sql(path,
      "CREATE TABLE schema_version (version INTEGER NOT NULL);"
      "INSERT INTO schema_version VALUES (2);"
      "CREATE TABLE stage_latency (device TEXT, driver TEXT, cudnn TEXT, precision TEXT, "
      "batch INTEGER, launch TEXT, signature TEXT, latency_ms REAL, repetitions INTEGER, "
      "measured_at INTEGER)");
  sqlite3* holder = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &holder) == SQLITE_OK);
  REQUIRE(sqlite3_exec(holder, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr) == SQLITE_OK);
  const auto start = std::chrono::steady_clock::now();
  const std::string message = read_only_error(path);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(holder);
  CHECK_THAT(message, Contains("locked by another process"));
  CHECK_THAT(message, Contains("retry"));
  CHECK(seconds < 5.0);
}
