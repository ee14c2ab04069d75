#include "onnx/external_data.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <optional>

#include "core/error.h"
#include "onnx/const_tensor.h"

namespace ios::onnx {
namespace {

namespace fs = std::filesystem;
using ::onnx::TensorProto;

struct Reference {
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
};

uint64_t parse_count(const std::string& text, const std::string& key, const std::string& model,
                     const std::string& tensor) {
  uint64_t value = 0;
  bool ok = !text.empty() && text.size() <= 19;
  for (char c : text) {
    ok = ok && c >= '0' && c <= '9';
    if (ok) value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  if (!ok) {
    user_error("{}: tensor '{}': external data '{}' is '{}', not a byte count", model, tensor, key,
               text);
  }
  return value;
}

Reference parse_reference(const TensorProto& t, const std::string& model) {
  Reference ref;
  bool have_location = false;
  for (const auto& entry : t.external_data()) {
    if (entry.key() == "location") {
      ref.location = entry.value();
      have_location = true;
    } else if (entry.key() == "offset") {
      ref.offset = parse_count(entry.value(), "offset", model, t.name());
    } else if (entry.key() == "length") {
      ref.length = parse_count(entry.value(), "length", model, t.name());
    }  // "checksum" and unknown keys carry nothing ios needs
  }
  if (!have_location || ref.location.empty()) {
    user_error(
        "{}: tensor '{}' keeps its data in an external file but names no location; "
        "re-export the model",
        model, t.name());
  }
  return ref;
}

// The location, checked without touching the file system: relative, no
// "..", no NUL; resolved against the model's folder.
fs::path checked_location(const Reference& ref, const fs::path& folder, const std::string& model,
                          const std::string& tensor) {
  auto refuse = [&](std::string_view why) {
    user_error(
        "{}: tensor '{}' names external data '{}', {}; ios reads external data only from "
        "files inside the model's folder",
        model, tensor, ref.location, why);
  };
  if (ref.location.find('\0') != std::string::npos) refuse("which contains a NUL character");
  const fs::path location(ref.location);
  if (location.is_absolute() || location.has_root_name() || location.has_root_directory()) {
    refuse("an absolute path");
  }
  for (const fs::path& part : location) {
    if (part == "..") refuse("a path that leaves the model's folder");
  }
  return folder / location;
}

std::string read_range(const fs::path& file, const fs::path& folder, const Reference& ref,
                       const std::string& model, const std::string& tensor) {
  // A symbolic link inside the folder may still lead out of it.
  std::error_code ec;
  const fs::path real = fs::weakly_canonical(file, ec);
  const fs::path real_folder = fs::weakly_canonical(folder.empty() ? fs::path(".") : folder, ec);
  const auto [folder_end, real_it] =
      std::mismatch(real_folder.begin(), real_folder.end(), real.begin(), real.end());
  if (ec || folder_end != real_folder.end() || real_it == real.end()) {
    user_error(
        "{}: tensor '{}' names external data '{}', which leads out of the model's folder; "
        "ios reads external data only from files inside it",
        model, tensor, ref.location);
  }
  const int fd = ::open(real.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    user_error(
        "{}: tensor '{}': cannot open its external data file '{}' ({}); keep the data file "
        "beside the model",
        model, tensor, ref.location, std::strerror(errno));
  }
  struct stat info {};
  const bool regular = ::fstat(fd, &info) == 0 && S_ISREG(info.st_mode);
  const auto file_size = static_cast<uint64_t>(regular ? info.st_size : 0);
  const uint64_t length = ref.length.value_or(ref.offset <= file_size ? file_size - ref.offset : 0);
  std::string why;
  if (!regular)
    why = "is not a regular file";
  else if (ref.offset > file_size || length > file_size - ref.offset) {
    why = fmt::format("has {} bytes, fewer than offset {} + length {}", file_size, ref.offset,
                      length);
  } else if (length > static_cast<uint64_t>(INT_MAX)) {
    why = fmt::format("gives {} bytes to one tensor, over the 2 GiB limit", length);
  }
  if (!why.empty()) {
    ::close(fd);
    user_error("{}: tensor '{}': the external data file '{}' {}", model, tensor, ref.location, why);
  }
  std::string bytes(static_cast<size_t>(length), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::pread(fd, bytes.data() + done, bytes.size() - done,
                              static_cast<off_t>(ref.offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : EIO;
      ::close(fd);
      user_error("{}: tensor '{}': read error in external data file '{}' ({})", model, tensor,
                 ref.location, std::strerror(error));
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return bytes;
}

}  // namespace

void load_external_data(::onnx::ModelProto& model, const std::string& model_path) {
  const fs::path folder = fs::path(model_path).parent_path();
  uint64_t total = 0;
  for_each_tensor(*model.mutable_graph(), [&](TensorProto& t, const std::string& where) {
    if (t.data_location() != TensorProto::EXTERNAL && t.external_data_size() == 0) return;
    if (t.data_location() != TensorProto::EXTERNAL) {
      user_error(
          "{}: {} '{}' has external data entries but is not marked external; re-export the "
          "model",
          model_path, where, t.name());
    }
    const Reference ref = parse_reference(t, model_path);
    const fs::path file = checked_location(ref, folder, model_path, t.name());
    std::string bytes = read_range(file, folder, ref, model_path, t.name());
    total += bytes.size();
    if (total > kMaxExternalDataBytes) {
      user_error("{}: the model's external data exceeds {} GiB, ios's limit", model_path,
                 kMaxExternalDataBytes >> 30);
    }
    t.clear_external_data();
    t.set_data_location(TensorProto::DEFAULT);
    t.set_raw_data(std::move(bytes));
  });
}

}  // namespace ios::onnx
