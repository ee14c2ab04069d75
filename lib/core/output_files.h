// The one policy for every file ios writes (schedules, reports, pictures,
// pages, traces, timings, device profiles, output tensors), used by both
// programs so that no run can lose a file it did not create, or one of its
// own outputs to another:
//  - every output is declared and checked before any work starts: a name
//    (not empty, not ending in '/'), a writable place (not a folder, not a
//    socket, not a dangling link, its folder creatable), not a file the run
//    reads, not another output of the same run;
//  - an existing regular file is replaced only when it is of the kind ios
//    writes there (recognised by its content: ios marks every kind it
//    writes), or with --force;
//  - the writes themselves are atomic (core/file_io.h);
//  - each regular file is locked from its declaration until the run ends: a
//    second run that would write it meanwhile is refused (standard output,
//    FIFOs and devices are not locked).
// Output tensors in a folder (ios-run --output-dir) get unique file names.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace ios {

enum class OutputKind {
  kSchedule,        // ios-optimize -o: JSON, "format": "ios-schedule"
  kOptimizeReport,  // ios-optimize --report-json: "format": "ios-optimize-report"
  kTimes,           // ios-run --export-times: "format": "ios-times"
  kTrace,           // ios-run --trace: Chrome trace whose otherData has "format": "ios-trace"
  kDot,             // --dot FILE: Graphviz text starting with kDotMarker
  kSvg,             // --dot FILE.svg: SVG holding kSvgMarker
  kHtml,            // ios-optimize --html: a page holding kHtmlMarker
  kDeviceProfile,   // ios-optimize --calibrate -o: a device profile (JSON with "sm_count")
  kNpy,             // ios-run --output-dir: NumPy .npy files
  kOnnx,            // ios-optimize --write-onnx: an ONNX model whose producer is kOnnxProducer
};

// The marks that make ios's own pictures and pages recognisable.
inline constexpr std::string_view kDotMarker = "// ios schedule picture";
inline constexpr std::string_view kSvgMarker = "<!-- ios schedule picture -->";
inline constexpr std::string_view kHtmlMarker = "<meta name=\"generator\" content=\"ios\">";
// ModelProto's producer_name: field 2, serialized before the graph.
inline constexpr std::string_view kOnnxProducer = "ios-optimize --write-onnx";

// "an ios schedule", "a Graphviz picture written by ios", ...
std::string_view describe(OutputKind kind);

// True when the regular file at `path` is of `kind` as ios writes it. Reads a
// bounded prefix (JSON kinds are scanned without building a document, so a
// hostile file costs neither memory nor time).
bool is_file_of_kind(const std::filesystem::path& path, OutputKind kind);

// A file a run reads, and what it is to the run ("the input model").
struct InputFile {
  std::string path;
  std::string what;
};

class OutputFiles {
 public:
  // `inputs`: every file the run reads (the model, schedules, profiles...);
  // outputs never replace one of them, --force or not. `force`: replace an
  // existing file of another kind.
  OutputFiles(const std::vector<InputFile>& inputs, bool force);
  ~OutputFiles();  // releases the locks
  OutputFiles(const OutputFiles&) = delete;
  OutputFiles& operator=(const OutputFiles&) = delete;

  // Declares an output and checks it now; a UserError names `option` and
  // `path`. "-" and /dev/stdout are standard output (at most one output of a
  // run may go there).
  void add(std::string_view option, const std::string& path, OutputKind kind);

  // Declares an output folder (ios-run --output-dir): an existing folder, or
  // a path whose folder can be created; not an existing file.
  void add_folder(std::string_view option, const std::string& folder);

  // The file in `folder` for the output tensor `name`: its characters
  // outside [A-Za-z0-9._-] become '_', long names are shortened, and a name
  // that would repeat an earlier one gets "-2", "-3"... (outputs "y/0" and
  // "y_0" become y_0.npy and y_0-2.npy). Declared and checked like add().
  std::string add_in_folder(std::string_view option, const std::string& folder,
                            const std::string& name, std::string_view extension, OutputKind kind);

 private:
  // A file's identity: its normal path (compares paths not yet created) and,
  // for an existing file, its device and inode (hard links, links to it).
  using Inode = std::pair<uintmax_t, uintmax_t>;
  struct Named {
    std::string option;  // outputs: the option; inputs: what the file is to the run
    std::string path;
  };
  void remember(std::map<std::filesystem::path, Named>& by_path, std::map<Inode, Named>& by_inode,
                const std::filesystem::path& normal, const std::optional<Inode>& inode,
                Named named);

  void lock(std::string_view option, const std::string& path, const std::filesystem::path& normal);

  bool force_;
  std::vector<int> locks_;  // open lock files, each flock'ed (lock())
  std::map<std::filesystem::path, Named> inputs_by_path_, outputs_by_path_;
  std::map<Inode, Named> inputs_by_inode_, outputs_by_inode_;
  std::optional<std::string> stdout_option_;  // the output that goes to standard output
  std::set<std::string> folder_names_;        // add_in_folder's files so far
};

}  // namespace ios
