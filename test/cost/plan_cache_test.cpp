// The persistent plan cache: its key, its file, and the files it refuses.
#include "cost/plan_cache.h"

#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "core/error.h"
#include "cost/temp_dir.h"

using Catch::Matchers::Contains;
using ios::cost::PlanCache;
using ios::cost::PlanEntry;
using ios::cost::PlanKey;
using ios::test::TempDir;

namespace {

PlanKey key() {
  return {"NVIDIA H200",
          132,
          "580.159.04",
          "9.19.0",
          "13.1.0",
          "graph-1",
          "n1c64i56x56|k64f3x3|o56x56|p1x1|s1x1|d1x1|g1|bs200704,200704,0|f1z0|a256,256,256|"
          "float16|nchw|-|ebr|ws268435456"};
}

std::string open_error(const std::filesystem::path& path) {
  try {
    PlanCache cache(path);
  } catch (const ios::UserError& e) {
    return e.what();
  }
  FAIL("no UserError opening " << path);
  return {};
}

}  // namespace

TEST_CASE("plan cache: a stored choice is found again by its key, and only by it",
          "[cost][plan_cache]") {
  TempDir dir;
  const auto path = dir / "plans.sqlite";
  {
    PlanCache cache(path);
    CHECK(cache.count() == 0);
    CHECK_FALSE(cache.find(key()));
    cache.store(key(), PlanEntry{"eng45 k3=1,k7=0", 0.0123, 0});
  }
  // A second process (a new connection) finds it.
  PlanCache cache(path);
  const auto entry = cache.find(key());
  REQUIRE(entry);
  CHECK(entry->choice == "eng45 k3=1,k7=0");
  CHECK(entry->time_ms == 0.0123);
  CHECK(entry->chosen_at > 0);  // "now"
  // Every part of the key counts: another GPU, SM count, driver, cuDNN,
  // cuBLAS, kernel selection or problem is another plan.
  std::vector<PlanKey> others(7, key());
  others[0].device = "NVIDIA H100 80GB HBM3";
  others[1].sm_count = 114;
  others[2].driver = "570.86.15";
  others[3].cudnn = "9.8.0";
  others[4].cublas = "12.9.0";
  others[5].kernels = "graph-2";
  others[6].problem += "|nhwc";
  for (const PlanKey& k : others) CHECK_FALSE(cache.find(k));
  // Storing again replaces.
  cache.store(key(), PlanEntry{"eng22", 0.01, 5});
  CHECK(cache.count() == 1);
  CHECK(cache.find(key())->choice == "eng22");
  CHECK(cache.entries().at(0).first == key());
}

TEST_CASE("plan cache: two writers on one file both land; an unfinished write is not seen",
          "[cost][plan_cache]") {
  TempDir dir;
  const auto path = dir / "plans.sqlite";
  PlanCache a(path);
  PlanCache b(path);
  PlanKey k1 = key(), k2 = key();
  k2.problem += "|other";
  a.store(k1, PlanEntry{"eng1", 1.0, 1});
  b.store(k2, PlanEntry{"eng2", 2.0, 2});
  CHECK(a.count() == 2);
  CHECK(b.find(k1)->choice == "eng1");
  // A writer that dies inside its transaction leaves nothing half-written.
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &raw) == SQLITE_OK);
  REQUIRE(sqlite3_exec(raw,
                       "BEGIN IMMEDIATE; INSERT INTO plan VALUES ('x', 1, 'd', 'c', 'b', "
                       "'graph-1', 'p', 'eng9', 1.0, "
                       "1)",
                       nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(raw);  // closed without COMMIT: rolled back
  CHECK(a.count() == 2);
}

TEST_CASE("plan cache: the default sits beside the profile database", "[cost][plan_cache]") {
  CHECK(PlanCache::default_path("/home/u/.cache/ios/profile.sqlite") ==
        "/home/u/.cache/ios/plans.sqlite");
}

TEST_CASE("plan cache: a file that is not one is refused by name, and left alone",
          "[cost][plan_cache]") {
  TempDir dir;
  SECTION("a text file") {
    const auto path = dir / "notes.sqlite";
    std::ofstream(path) << "engine,ms\neng45,0.01\n";
    const std::string message = open_error(path);
    CHECK_THAT(message, Contains("plan cache " + path.string()));
    CHECK_THAT(message, Contains("not a valid ios plan cache"));
    CHECK(message.find('\n') == std::string::npos);
    std::ifstream in(path);
    std::string first;
    std::getline(in, first);
    CHECK(first == "engine,ms");  // untouched
  }
  SECTION("another program's SQLite database") {
    const auto path = dir / "other.sqlite";
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "CREATE TABLE users (name TEXT)", nullptr, nullptr, nullptr) ==
            SQLITE_OK);
    sqlite3_close(db);
    const std::string message = open_error(path);
    CHECK_THAT(message, Contains(path.string()));
    CHECK_THAT(message, Contains("not an ios plan cache (it has a table 'users')"));
  }
  SECTION("a profile database given as the plan cache") {
    const auto path = dir / "profile.sqlite";
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    REQUIRE(
        sqlite3_exec(
            db,
            "CREATE TABLE schema_version (version INTEGER); CREATE TABLE stage_latency (x TEXT)",
            nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
    CHECK_THAT(open_error(path),
               Contains("not an ios plan cache (it has a table 'stage_latency')"));
  }
  SECTION("a cache of another schema version") {
    const auto path = dir / "future.sqlite";
    { PlanCache created(path); }
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "UPDATE schema_version SET version = 99", nullptr, nullptr, nullptr) ==
            SQLITE_OK);
    sqlite3_close(db);
    const std::string message = open_error(path);
    CHECK_THAT(message, Contains("schema version 99"));
    CHECK_THAT(message, Contains("delete the file"));
  }
}
