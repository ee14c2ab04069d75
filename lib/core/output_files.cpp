#include "core/output_files.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_io.h"
#include "core/sha256.h"

namespace ios {
namespace {

namespace fs = std::filesystem;

// Outputs ios writes are at most this large; a larger existing file is not
// one of them (and is not scanned).
constexpr uintmax_t kMaxOwnFileBytes = uintmax_t{1} << 30;
// Pictures and pages carry their mark near the start.
constexpr size_t kMarkerWindow = 64 * 1024;
// Output file names in a folder: longer names are shortened (file systems
// allow 255 bytes) and told apart by a hash of the whole name.
constexpr size_t kMaxFileStem = 180;

// Finds, without building a document, whether a JSON file has a string
// `value` at `keys` (object keys from the top level down), or when `value`
// is empty, any value there. Stops at the answer, at a parse error and at a
// nesting depth no ios output has.
class KeyFinder : public nlohmann::json_sax<nlohmann::json> {
 public:
  KeyFinder(std::vector<std::string> keys, std::string value)
      : keys_(std::move(keys)), value_(std::move(value)) {}
  bool found() const { return found_; }

  bool null() override { return scalar(nullptr); }
  bool boolean(bool) override { return scalar(nullptr); }
  bool number_integer(number_integer_t) override { return scalar(nullptr); }
  bool number_unsigned(number_unsigned_t) override { return scalar(nullptr); }
  bool number_float(number_float_t, const string_t&) override { return scalar(nullptr); }
  bool string(string_t& s) override { return scalar(&s); }
  bool binary(binary_t&) override { return scalar(nullptr); }
  bool start_object(std::size_t) override { return open(true); }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(false); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    path_.back() = k;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  static constexpr size_t kMaxDepth = 64;
  // True when the value now being read sits at keys_.
  bool at_target() const {
    if (path_.size() != keys_.size()) return false;
    for (size_t i = 0; i < keys_.size(); ++i) {
      if (!objects_[i] || path_[i] != keys_[i]) return false;
    }
    return true;
  }
  bool scalar(const std::string* s) {
    if (at_target() && (value_.empty() || (s != nullptr && *s == value_))) found_ = true;
    return !found_;
  }
  bool open(bool object) {
    if (at_target() && value_.empty()) found_ = true;
    path_.emplace_back();
    objects_.push_back(object);
    return !found_ && path_.size() <= kMaxDepth;
  }
  bool close() {
    path_.pop_back();
    objects_.pop_back();
    return true;
  }

  std::vector<std::string> keys_;
  std::string value_;
  std::vector<std::string> path_;  // the key of each open object (arrays: unused)
  std::vector<bool> objects_;
  bool found_ = false;
};

bool json_has(const fs::path& path, std::vector<std::string> keys, std::string value) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  KeyFinder finder(std::move(keys), std::move(value));
  try {
    nlohmann::json::sax_parse(in, &finder);
  } catch (const std::exception&) {
  }
  return finder.found();
}

std::string head(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes(kMarkerWindow, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  bytes.resize(static_cast<size_t>(in.gcount()));
  return bytes;
}

// The absolute, lexically normal form of a path, with symbolic links of its
// existing part resolved: two spellings of one file compare equal before the
// file exists.
fs::path normal_path(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  if (ec) p = fs::absolute(path, ec).lexically_normal();
  return p;
}

// Where the locks of the files being written live: one small file per
// output path, named by the hash of its normal path, in a folder of the
// user's own (never beside the outputs, which would litter the user's
// folders). IOS_LOCK_DIR overrides it. Empty when no such folder can be
// made: the run then goes on unlocked.
std::string lock_folder() {
  if (const char* dir = std::getenv("IOS_LOCK_DIR"); dir != nullptr && *dir != '\0') return dir;
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  const std::string base = runtime != nullptr && *runtime == '/' ? runtime : "/tmp";
  const std::string folder = fmt::format("{}/ios-locks-{}", base, getuid());
  if (mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST) return {};
  // In a shared /tmp the folder must be ours and a folder, not a link planted by another user.
  struct stat st {};
  if (lstat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid()) return {};
  return folder;
}

// The folder an output will be created in must be, or be creatable in, a
// writable folder. Nothing is created here: that happens when it is written.
void check_folder_writable(std::string_view option, const std::string& shown,
                           const fs::path& folder) {
  fs::path existing = folder;
  std::error_code ec;
  while (!existing.empty() && !fs::exists(existing, ec)) {
    if (existing == existing.parent_path()) break;
    existing = existing.parent_path();
  }
  if (existing.empty()) existing = ".";
  if (!fs::is_directory(existing, ec)) {
    user_error("{} {}: '{}' is a file, not a folder; give a path in a folder", option, shown,
               existing.string());
  }
  if (::access(existing.c_str(), W_OK | X_OK) != 0) {
    user_error("{} {}: cannot write in the folder '{}' ({}); give a path in a writable folder",
               option, shown, existing.string(), std::strerror(errno));
  }
}

std::optional<std::pair<uintmax_t, uintmax_t>> inode_of(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return std::nullopt;
  return std::pair<uintmax_t, uintmax_t>{info.st_dev, info.st_ino};
}

std::string safe_file_stem(const std::string& name) {
  std::string out;
  for (char c : name) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    out += keep ? c : '_';
  }
  // No hidden files, and never "." or "..".
  if (out.empty() || out[0] == '.') out.insert(out.begin(), '_');
  if (out.size() > kMaxFileStem) {
    out = out.substr(0, kMaxFileStem) + "-" + sha256_hex(name).substr(0, 12);
  }
  return out;
}

}  // namespace

std::string_view describe(OutputKind kind) {
  switch (kind) {
    case OutputKind::kSchedule: return "an ios schedule";
    case OutputKind::kOptimizeReport: return "an ios-optimize report";
    case OutputKind::kTimes: return "an ios-run timing export";
    case OutputKind::kTrace: return "an ios trace";
    case OutputKind::kDot: return "a schedule picture (DOT) written by ios";
    case OutputKind::kSvg: return "a schedule picture (SVG) written by ios";
    case OutputKind::kHtml: return "an ios-optimize page";
    case OutputKind::kDeviceProfile: return "a device profile";
    case OutputKind::kNpy: return "a .npy file";
    case OutputKind::kOnnx:
      return "an ONNX model written by ios-optimize --write-onnx";
  }
  return "an ios file";
}

bool is_file_of_kind(const fs::path& path, OutputKind kind) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  const uintmax_t size = fs::file_size(path, ec);
  if (ec || size > kMaxOwnFileBytes) return false;
  switch (kind) {
    case OutputKind::kSchedule: return json_has(path, {"format"}, "ios-schedule");
    case OutputKind::kOptimizeReport: return json_has(path, {"format"}, "ios-optimize-report");
    case OutputKind::kTimes: return json_has(path, {"format"}, "ios-times");
    case OutputKind::kTrace: return json_has(path, {"otherData", "format"}, "ios-trace");
    case OutputKind::kDeviceProfile: return json_has(path, {"sm_count"}, "");
    case OutputKind::kDot: {
      // Earlier versions wrote no mark; their pictures began like this.
      const std::string text = head(path);
      return text.starts_with(kDotMarker) || text.starts_with("digraph schedule {\n  label=");
    }
    case OutputKind::kSvg: {
      const std::string text = head(path);
      return text.find(kSvgMarker) != std::string::npos ||
             text.find("<!-- Title: schedule Pages: 1 -->") != std::string::npos;
    }
    case OutputKind::kHtml: {
      const std::string text = head(path);
      return text.find(kHtmlMarker) != std::string::npos ||
             text.find("<title>ios-optimize: ") != std::string::npos;
    }
    case OutputKind::kNpy: return head(path).starts_with("\x93NUMPY");
    case OutputKind::kOnnx:
      return head(path).find(kOnnxProducer) != std::string::npos;
  }
  return false;
}

OutputFiles::OutputFiles(const std::vector<InputFile>& inputs, bool force) : force_(force) {
  for (const InputFile& input : inputs) {
    if (input.path.empty() || is_stdout_path(input.path)) continue;
    remember(inputs_by_path_, inputs_by_inode_, normal_path(input.path), inode_of(input.path),
             {input.what, input.path});
  }
}

void OutputFiles::remember(std::map<fs::path, Named>& by_path, std::map<Inode, Named>& by_inode,
                           const fs::path& normal, const std::optional<Inode>& inode, Named named) {
  if (inode) by_inode.emplace(*inode, named);
  by_path.emplace(normal, std::move(named));
}

void OutputFiles::add(std::string_view option, const std::string& path, OutputKind kind) {
  if (path.empty()) {
    user_error("{} needs a file name or - (standard output), not an empty string", option);
  }
  if (is_stdout_path(path)) {
    if (stdout_option_) {
      user_error("{} and {} both name standard output; give one of them a file name",
                 *stdout_option_, option);
    }
    stdout_option_ = std::string(option);
    return;
  }
  if (path.back() == '/') {
    user_error("{} {}: ends in '/', so it names a folder; give a file name", option, path);
  }
  std::error_code cwd_error;
  const fs::path absolute = fs::absolute(path, cwd_error);
  check_folder_writable(option, path, absolute.parent_path());
  try {
    check_output_path(path);
  } catch (const UserError& e) {
    throw UserError(fmt::format("{}: {}", option, e.what()));
  }
  // Devices and FIFOs are written in place and never replaced: several
  // outputs may go to /dev/null.
  std::error_code ec;
  if (fs::exists(path, ec) && !fs::is_regular_file(path, ec)) return;
  const fs::path normal = normal_path(path);
  const std::optional<Inode> inode = inode_of(path);
  const Named* input = nullptr;
  if (auto it = inputs_by_path_.find(normal); it != inputs_by_path_.end()) input = &it->second;
  if (input == nullptr && inode) {
    if (auto it = inputs_by_inode_.find(*inode); it != inputs_by_inode_.end()) input = &it->second;
  }
  if (input != nullptr) {
    user_error("{} {} is {}{}; writing it would destroy it, give another path", option, path,
               input->option, input->path == path ? "" : " " + input->path);
  }
  const Named* other = nullptr;
  if (auto it = outputs_by_path_.find(normal); it != outputs_by_path_.end()) other = &it->second;
  if (other == nullptr && inode) {
    if (auto it = outputs_by_inode_.find(*inode); it != outputs_by_inode_.end()) other = &it->second;
  }
  if (other != nullptr) {
    user_error("{} and {} both name {}; one output would replace the other, give them different "
               "paths",
               other->option, option, path);
  }
  if (!force_ && is_existing_regular_file(path) && !is_file_of_kind(path, kind)) {
    user_error("{} {}: the file exists and is not {}; give another path, remove the file, or "
               "pass --force to overwrite it",
               option, path, describe(kind));
  }
  lock(option, path, normal);
  remember(outputs_by_path_, outputs_by_inode_, normal, inode, {std::string(option), path});
}

// An exclusive lock on the output's path, held until the run ends: a second
// run that would write the same file while this one holds it is refused, so
// that the files one run writes are one consistent set (a schedule and its
// report from the same run). flock locks belong to the open file, so the
// kernel drops them when the process ends, however it ends.
void OutputFiles::lock(std::string_view option, const std::string& path, const fs::path& normal) {
  const std::string folder = lock_folder();
  if (folder.empty()) return;
  const std::string file = folder + "/" + sha256_hex(normal.string()).substr(0, 32) + ".lock";
  const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return;  // a lock that cannot be taken does not stop the run
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(fd);
    if (error == EWOULDBLOCK) {
      user_error("{} {}: another ios run is writing this file now; wait for it to finish or give "
                 "another path",
                 option, path);
    }
    return;
  }
  locks_.push_back(fd);
}

OutputFiles::~OutputFiles() {
  for (int fd : locks_) ::close(fd);
}

void OutputFiles::add_folder(std::string_view option, const std::string& folder) {
  if (folder.empty()) {
    user_error("{} needs a folder name, not an empty string", option);
  }
  std::error_code ec;
  const fs::path normal = normal_path(folder);
  if (fs::exists(normal, ec) && !fs::is_directory(normal, ec)) {
    user_error("{} {}: is a file, not a folder; give a folder (it is created if missing)", option,
               folder);
  }
  check_folder_writable(option, folder, normal);
}

std::string OutputFiles::add_in_folder(std::string_view option, const std::string& folder,
                                       const std::string& name, std::string_view extension,
                                       OutputKind kind) {
  const std::string stem = safe_file_stem(name);
  const fs::path folder_normal = normal_path(folder);
  std::string file;
  for (int n = 1;; ++n) {
    file = stem + (n == 1 ? "" : fmt::format("-{}", n)) + std::string(extension);
    if (folder_names_.insert((folder_normal / file).string()).second) break;
  }
  const std::string path = (fs::path(folder) / file).string();
  add(option, path, kind);
  return path;
}

}  // namespace ios
