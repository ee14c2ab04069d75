// What the front ends share: the closest-option suggestion of parser errors,
// and the labels ios-run gives schedules in its reports.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "cli/parse_error.h"
#include "core/error.h"
#include "runner/schedule_labels.h"

namespace ios::cli {
namespace {

const std::vector<std::string> kOptions = {"-o",       "--output",     "-s",        "--scheduler",
                                           "--params", "--batch",      "--dry-run", "--iterations",
                                           "--input",  "--input-shape"};

TEST_CASE("closest option: typos, prefixes, and nothing for unrelated words", "[cli]") {
  CHECK(closest_option("--schedular", kOptions) == "--scheduler");
  CHECK(closest_option("--sched", kOptions) == "--scheduler");  // unique prefix
  CHECK(closest_option("--dryrun", kOptions) == "--dry-run");
  CHECK(closest_option("--itrations=5", kOptions) == "--iterations");  // the value is ignored
  CHECK(closest_option("--inp", kOptions) == "--input");  // prefix of two: the nearer one
  CHECK(closest_option("--zzzzzzzzzz", kOptions).empty());
  CHECK(closest_option("--color", kOptions).empty());
}

TEST_CASE("closest option: from a real CLI11 app's names", "[cli]") {
  CLI::App app{"test", "prog"};
  std::string value;
  bool verbose = false;
  app.add_option("-m,--max-block-units", value, "");
  app.add_flag("--verbose", verbose, "");
  const std::vector<std::string> names = option_names(app);
  CHECK(std::find(names.begin(), names.end(), "--max-block-units") != names.end());
  CHECK(std::find(names.begin(), names.end(), "-m") != names.end());
  CHECK(closest_option("--max-blok-units", names) == "--max-block-units");
  CHECK(closest_option("--verbos", names) == "--verbose");
}

std::vector<std::string> labels(const std::vector<std::string>& specs) {
  std::vector<std::string> out;
  for (const auto& l : runner::label_schedule_paths(specs)) out.push_back(l.label);
  return out;
}

TEST_CASE("schedule labels: file names, lengthened until unique", "[cli][labels]") {
  CHECK(labels({"x/a.json", "y/b.json"}) == std::vector<std::string>{"a.json", "b.json"});
  CHECK(labels({"x/s.json", "y/s.json"}) == std::vector<std::string>{"x/s.json", "y/s.json"});
  CHECK(labels({"r/x/s.json", "q/x/s.json", "t.json"}) ==
        std::vector<std::string>{"r/x/s.json", "q/x/s.json", "t.json"});
  CHECK(labels({"x/s.json", "./x/s.json"}) == std::vector<std::string>{"s.json", "s.json #2"});
  CHECK(labels({"/abs/s.json", "s.json"}) == std::vector<std::string>{"abs/s.json", "s.json"});
}

TEST_CASE("schedule labels: NAME=FILE", "[cli][labels]") {
  const auto l = runner::label_schedule_paths({"ios=x/s.json", "y/s.json", "seq=z/s.json"});
  REQUIRE(l.size() == 3);
  CHECK(l[0].label == "ios");
  CHECK(l[0].path == "x/s.json");
  CHECK(l[1].label == "s.json");  // unique among the labels shown
  CHECK(l[2].path == "z/s.json");
  // A folder path before '=' is a path, not a NAME.
  CHECK(runner::label_schedule_paths({"a=b/c.json"})[0].label == "a");
  CHECK(runner::label_schedule_paths({"dir/a=b.json"})[0].label == "a=b.json");
  CHECK_THROWS_AS(runner::label_schedule_paths({"x=a.json", "x=b.json"}), UserError);
  CHECK_THROWS_AS(runner::label_schedule_paths({"=a.json"}), UserError);
  CHECK_THROWS_AS(runner::label_schedule_paths({"x="}), UserError);
}

TEST_CASE("schedule labels: an existing file whose name holds '=' is a file", "[cli][labels]") {
  const auto dir = std::filesystem::temp_directory_path() / "ios_label_test";
  std::filesystem::create_directories(dir);
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir);
  { std::ofstream("k=v.json") << "{}"; }
  const auto l = runner::label_schedule_paths({"k=v.json"});
  std::filesystem::current_path(cwd);
  std::filesystem::remove_all(dir);
  REQUIRE(l.size() == 1);
  CHECK(l[0].label == "k=v.json");
  CHECK(l[0].path == "k=v.json");
}

}  // namespace
}  // namespace ios::cli
