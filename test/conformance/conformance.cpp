// ONNX's backend node tests run through ios.
//
// Every test directory (model.onnx, test_data_set_0/{input,output}_K.pb) goes
// through the same pipelines as the two programs: ios-optimize writes a
// sequential schedule (and an IOS schedule when the model has more than one
// unit), ios-run executes them on the CPU backend (and on CUDA when a GPU is
// usable) with the test's inputs and checks every output against the
// expected one. Each test runs in a forked child, so a crash or hang is
// recorded as such and the run goes on. Outcomes:
//   pass     every output of every schedule within tolerance
//   refused  a UserError (what the programs report with exit 2), with its message
//   wrong    an output beyond tolerance (exit 4) or of the wrong shape
//   crash    a signal, a time-out or an internal error (exit 1)
//
// ONNX's PyTorch suites of the same package (pytorch-converted,
// pytorch-operator: modules and operators exported by PyTorch at opset 6,
// given with --suite) run the same way and are reported in their own
// section of docs/operators.md, every refusal with its reason.
//
// The run fails on any wrong or crash, and on any refused test whose
// operators ios supports unless its message matches a reviewed entry of the
// known-limitations file. With --write-docs / --check-docs it writes or
// checks docs/operators.md, the per-operator table generated from the
// results (CPU backend).
#include <onnx/onnx_pb.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "cuda/engine.h"
#include "exec/npy.h"
#include "onnx/const_tensor.h"
#include "onnx/graph_builder.h"
#include "optimize/optimizer.h"
#include "runner/runner.h"

namespace fs = std::filesystem;

namespace {

// ONNX's backend test tolerances (onnx/backend/test/case/node/__init__.py).
// ios compares with Polygraphy's rule (fail only beyond both), which is
// stricter than numpy's atol + rtol * |expected|.
constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-7;
// cuDNN picks convolution algorithms whose summation order differs from the
// CPU's; the GPU run uses FP32 math with this absolute tolerance.
constexpr double kGpuAtol = 1e-5;
constexpr unsigned kTimeoutSeconds = 120;

enum class Outcome { kPass, kRefused, kWrong, kCrash };

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kPass:
      return "pass";
    case Outcome::kRefused:
      return "refused";
    case Outcome::kWrong:
      return "wrong";
    case Outcome::kCrash:
      return "crash";
  }
  return "?";
}

struct NodeInfo {
  std::string op_type;
  std::set<std::string> attributes;
};

// One node test, as read from its model.onnx (in the parent).
struct Case {
  std::string name;  // directory name without "test_"
  std::string suite;  // "node", or the folder name of a --suite (pytorch-converted)
  fs::path dir;
  std::vector<NodeInfo> nodes;
  std::vector<std::string> inputs, outputs;  // graph inputs (not initializers) and outputs
  std::map<std::string, int32_t> declared_types;  // their element types, as the model declares them
  bool all_supported = false;                // every node's operator is one ios lists as supported
  // Graph inputs read only as attribute inputs (a Reshape target, Slice
  // bounds, Split sizes, Pad amounts, Clip bounds, Resize scales and sizes),
  // which ios needs constant.
  std::set<std::string> attribute_inputs;
  // The variant that makes `attribute_inputs` initializers holding the
  // test's values: the operator's form is tested although ios refuses the
  // runtime form.
  bool constant_variant = false;
  // Graph outputs that only the runtime form can have: LayerNormalization's
  // Mean and InvStdDev, which ios does not compute. The constant-inputs
  // variant drops them and checks the other outputs.
  std::set<std::string> statistics_outputs;

  std::string label() const { return constant_variant ? name + " (constant inputs)" : name; }
};

// Inputs that ONNX turned from attributes into tensors in later opsets.
bool is_attribute_input(const std::string& op, int index) {
  if (op == "Reshape" || op == "Split" || op == "Tile" || op == "ReduceSum" || op == "Squeeze" ||
      op == "Unsqueeze") {
    return index == 1;
  }
  if (op == "Slice") return index >= 1;
  if (op == "Pad" || op == "Clip") return index == 1 || index == 2;
  if (op == "Pow") return index == 1;  // not an attribute in ONNX, but ios needs the exponent constant
  if (op == "Resize" || op == "Upsample") return index >= 1;  // roi, scales, sizes
  // Scale and B: weights, constants in every exported model.
  if (op == "LayerNormalization" || op == "InstanceNormalization") return index == 1 || index == 2;
  return false;
}

struct Result {
  Outcome outcome = Outcome::kCrash;
  std::string reason;
};

struct CaseResults {
  Result cpu;
  std::optional<Result> cuda;
};

std::string strip_test_prefix(const std::string& name) {
  return name.rfind("test_", 0) == 0 ? name.substr(5) : name;
}

Case read_case(const fs::path& dir, const std::string& suite) {
  Case c;
  c.suite = suite;
  c.dir = dir;
  c.name = strip_test_prefix(dir.filename().string());
  ::onnx::ModelProto model;
  std::ifstream in(dir / "model.onnx", std::ios::binary);
  if (!in || !model.ParseFromIstream(&in)) {
    throw std::runtime_error((dir / "model.onnx").string() +
                             ": cannot parse the node test's model");
  }
  std::set<std::string> weights;
  for (const auto& t : model.graph().initializer()) weights.insert(t.name());
  for (const auto& i : model.graph().input()) {
    if (!weights.count(i.name())) c.inputs.push_back(i.name());
  }
  for (const auto& o : model.graph().output()) c.outputs.push_back(o.name());
  for (const auto* list : {&model.graph().input(), &model.graph().output()}) {
    for (const auto& v : *list) c.declared_types[v.name()] = v.type().tensor_type().elem_type();
  }
  c.all_supported = model.graph().node_size() > 0;
  for (const auto& node : model.graph().node()) {
    NodeInfo info;
    info.op_type = node.op_type();
    for (const auto& a : node.attribute()) info.attributes.insert(a.name());
    c.all_supported = c.all_supported && (node.domain().empty() || node.domain() == "ai.onnx") &&
                      ios::onnx::is_supported_op(node.op_type());
    c.nodes.push_back(std::move(info));
    for (int k = 1; node.op_type() == "LayerNormalization" && k < node.output_size(); ++k) {
      if (std::find(c.outputs.begin(), c.outputs.end(), node.output(k)) != c.outputs.end()) {
        c.statistics_outputs.insert(node.output(k));
      }
    }
  }
  std::set<std::string> data_inputs;
  for (const auto& node : model.graph().node()) {
    for (int k = 0; k < node.input_size(); ++k) {
      if (is_attribute_input(node.op_type(), k)) {
        c.attribute_inputs.insert(node.input(k));
      } else {
        data_inputs.insert(node.input(k));
      }
    }
  }
  for (auto it = c.attribute_inputs.begin(); it != c.attribute_inputs.end();) {
    const bool graph_input = std::find(c.inputs.begin(), c.inputs.end(), *it) != c.inputs.end();
    it = graph_input && !data_inputs.count(*it) ? std::next(it) : c.attribute_inputs.erase(it);
  }
  return c;
}

// The node test's model with its attribute inputs made initializers (the
// values of test_data_set_0), written to `work`.
fs::path constant_inputs_model(const Case& c, const fs::path& work) {
  ::onnx::ModelProto model;
  std::ifstream in(c.dir / "model.onnx", std::ios::binary);
  if (!in || !model.ParseFromIstream(&in))
    throw std::runtime_error(c.dir.string() + ": cannot parse model.onnx");
  auto& graph = *model.mutable_graph();
  google::protobuf::RepeatedPtrField<::onnx::ValueInfoProto> kept;
  for (const auto& input : graph.input()) {
    const auto at = std::find(c.inputs.begin(), c.inputs.end(), input.name());
    if (at == c.inputs.end() || !c.attribute_inputs.count(input.name())) {
      *kept.Add() = input;
      continue;
    }
    const fs::path pb =
        c.dir / "test_data_set_0" / fmt::format("input_{}.pb", at - c.inputs.begin());
    ::onnx::TensorProto value;
    std::ifstream value_in(pb, std::ios::binary);
    if (!value_in || !value.ParseFromIstream(&value_in))
      throw std::runtime_error(pb.string() + ": cannot parse");
    value.set_name(input.name());
    *graph.add_initializer() = value;
    // Before IR version 4 every initializer is also a graph input.
    if (model.ir_version() < 4) *kept.Add() = input;
  }
  graph.mutable_input()->Swap(&kept);
  google::protobuf::RepeatedPtrField<::onnx::ValueInfoProto> outputs;
  for (const auto& output : graph.output()) {
    if (!c.statistics_outputs.count(output.name())) *outputs.Add() = output;
  }
  graph.mutable_output()->Swap(&outputs);
  const fs::path path = work / "model.onnx";
  std::ofstream out(path, std::ios::binary);
  if (!model.SerializeToOstream(&out)) throw std::runtime_error(path.string() + ": cannot write");
  return path;
}

// test_data_set_0/input_K.pb as an .npy file; returns the tensor's name
// (the graph input of the same index when the file names none).
// ios reads and writes every tensor as float32 values (a float16 or
// bfloat16 tensor's values are exact in float32); ONNX 1.12's node tests
// store bfloat16 data as uint16 patterns.
std::string pb_to_npy(const fs::path& pb, const std::string& fallback_name, const fs::path& npy,
                      int32_t declared_type) {
  using ::onnx::TensorProto;
  TensorProto proto;
  std::ifstream in(pb, std::ios::binary);
  if (!in || !proto.ParseFromIstream(&in)) throw std::runtime_error(pb.string() + ": cannot parse");
  ios::ir::Shape shape(proto.dims().begin(), proto.dims().end());
  if (proto.data_type() == TensorProto::UINT16 && declared_type == TensorProto::BFLOAT16) {
    proto.set_data_type(TensorProto::BFLOAT16);
  }
  if (proto.data_type() != TensorProto::FLOAT && proto.data_type() != TensorProto::FLOAT16 &&
      proto.data_type() != TensorProto::BFLOAT16) {
    // The model imported, so its inputs are float32: a non-float tensor here
    // is an expected output of another type, which ios cannot produce.
    throw std::runtime_error(
        fmt::format("{}: expected tensor has element type {}; ios produced float32",
                    pb.filename().string(), ios::onnx::type_name(proto.data_type())));
  }
  ios::exec::write_npy(
      npy, ios::exec::HostTensor(shape, ios::onnx::decode_float_weights(proto, pb.string())));
  return proto.name().empty() ? fallback_name : proto.name();
}

struct WrongAnswer : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Runs in the child: the two programs' pipelines on one node test.
Result run_case(const Case& c, const fs::path& work, const std::string& backend) {
  using ios::optimize::OptimizeOptions;
  // ONNX 1.12's expected outputs of a float32 -> bfloat16 Cast truncate the
  // mantissa; ONNX 1.14 rounds to nearest even, as ios and every GPU do, and
  // corrected the data. The test is not held to the old data.
  if (c.name == "cast_FLOAT_to_BFLOAT16") {
    ios::user_error(
        "{}: ONNX 1.12's expected bfloat16 values truncate, where ios rounds to nearest even",
        c.name);
  }
  std::ostringstream sink;
  const fs::path model = c.constant_variant ? constant_inputs_model(c, work) : c.dir / "model.onnx";
  std::vector<std::string> schedules;
  auto optimize = [&](const std::string& scheduler) {
    OptimizeOptions o;
    o.model_path = model.string();
    o.output_path = (work / (scheduler + ".json")).string();
    o.scheduler = scheduler;
    o.cost = "simulated";
    o.quiet = true;
    ios::optimize::run_optimize(o, sink);
    schedules.push_back(o.output_path);
  };
  optimize("sequential");
  std::ifstream schedule_file(schedules[0]);
  const auto schedule = nlohmann::json::parse(schedule_file);
  if (schedule.at("model").at("units").get<int64_t>() > 1) optimize("ios");

  ios::runner::RunOptions r;
  r.model_path = model.string();
  r.schedule_paths = schedules;
  r.backend = backend;
  // Strict FP32 math for float32 models; a typed model runs at its own
  // 16-bit type, which its schedules record.
  bool typed = false;
  for (const auto& [name, type] : c.declared_types) {
    typed |= type == ::onnx::TensorProto::FLOAT16 || type == ::onnx::TensorProto::BFLOAT16;
  }
  if (!typed) r.precision = ios::ir::Precision::float32(ios::ir::MathMode::kFp32);
  r.warmup = 0;
  r.iterations = 1;
  r.threads = 1;
  r.quiet = true;
  r.rtol = kRtol;
  r.atol = backend == "cpu" ? kAtol : kGpuAtol;
  const fs::path data = c.dir / "test_data_set_0";
  for (size_t k = 0; k < c.inputs.size(); ++k) {
    const fs::path pb = data / fmt::format("input_{}.pb", k);
    if (!fs::exists(pb)) break;
    if (c.constant_variant && c.attribute_inputs.count(c.inputs[k])) continue;
    const fs::path npy = work / fmt::format("input_{}.npy", k);
    r.inputs.push_back(pb_to_npy(pb, c.inputs[k], npy, c.declared_types.at(c.inputs[k])) + "=" +
                       npy.string());
  }
  for (size_t k = 0; k < c.outputs.size(); ++k) {
    const fs::path pb = data / fmt::format("output_{}.pb", k);
    if (!fs::exists(pb)) break;
    if (c.constant_variant && c.statistics_outputs.count(c.outputs[k])) continue;
    const fs::path npy = work / fmt::format("expected_{}.npy", k);
    std::string name;
    try {
      name = pb_to_npy(pb, c.outputs[k], npy, c.declared_types.at(c.outputs[k]));
    } catch (const std::runtime_error& e) {
      throw WrongAnswer(e.what());
    }
    r.references.push_back(name + "=" + npy.string());
  }
  if (r.references.empty()) throw std::runtime_error("the node test has no expected outputs");
  std::ostringstream report;
  const int rc = ios::runner::run(r, report);
  if (rc == 0) return {Outcome::kPass, ""};
  // The first failed comparison and its statistics.
  std::string text = report.str(), first;
  const size_t failed = text.find("FAILED");
  if (failed != std::string::npos) {
    const size_t line = text.rfind('\n', failed);
    first = text.substr(line == std::string::npos ? 0 : line + 1, 400);
  }
  return {Outcome::kWrong, first};
}

std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  std::replace(text.begin(), text.end(), '\t', ' ');
  return text;
}

// Messages name the test's files: shorten them so that reasons read (and
// match the known-limitations list) the same on every machine.
std::string normalize_reason(std::string text, const Case& c, const fs::path& work) {
  auto replace_all = [&](const std::string& from, const std::string& to) {
    for (size_t at = 0; !from.empty() && (at = text.find(from, at)) != std::string::npos;
         at += to.size()) {
      text.replace(at, from.size(), to);
    }
  };
  replace_all(work.string() + "/", "");
  replace_all(c.dir.string() + "/", "");
  return one_line(text);
}

// Forks a child for one case on one backend; the child reports through a pipe.
struct Child {
  pid_t pid = -1;
  int fd = -1;
  size_t index = 0;
  std::string backend;
  fs::path work;
};

Child start_child(const Case& c, size_t index, const std::string& backend,
                  const fs::path& work_root) {
  Child child;
  child.index = index;
  child.backend = backend;
  child.work = work_root / fmt::format("{}-{}", index, backend);
  fs::create_directories(child.work);
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  std::cout.flush();
  std::cerr.flush();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    close(fds[0]);
    alarm(kTimeoutSeconds);
    Result result;
    try {
      result = run_case(c, child.work, backend);
    } catch (const WrongAnswer& e) {
      result = {Outcome::kWrong, e.what()};
    } catch (const ios::UserError& e) {
      result = {Outcome::kRefused, e.what()};
    } catch (const ios::Error& e) {
      result = {Outcome::kCrash,
                fmt::format("exit {}: {}", static_cast<int>(e.exit_code()), e.what())};
    } catch (const std::exception& e) {
      result = {Outcome::kCrash, std::string("uncaught exception: ") + e.what()};
    }
    const std::string message = std::string(outcome_name(result.outcome)) + "\t" +
                                normalize_reason(result.reason, c, child.work).substr(0, 2000);
    const ssize_t written = write(fds[1], message.data(), message.size());
    _exit(written == static_cast<ssize_t>(message.size()) ? 0 : 1);
  }
  close(fds[1]);
  child.pid = pid;
  child.fd = fds[0];
  return child;
}

// Runs every (case, backend) pair, `jobs` children at a time.
std::vector<CaseResults> run_all(const std::vector<Case>& cases, bool with_cpu, bool with_cuda,
                                 int jobs, bool verbose) {
  const fs::path work_root =
      fs::temp_directory_path() / fmt::format("ios-conformance-{}", getpid());
  fs::create_directories(work_root);
  std::vector<CaseResults> results(cases.size());
  std::vector<std::pair<size_t, std::string>> queue;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (with_cpu) queue.emplace_back(i, "cpu");
    if (with_cuda) queue.emplace_back(i, "cuda");
  }
  std::vector<Child> running;
  size_t next = 0;
  while (next < queue.size() || !running.empty()) {
    while (next < queue.size() && static_cast<int>(running.size()) < jobs) {
      running.push_back(
          start_child(cases[queue[next].first], queue[next].first, queue[next].second, work_root));
      ++next;
    }
    int status = 0;
    const pid_t done = waitpid(-1, &status, WNOHANG);
    if (done <= 0) {
      usleep(2000);
      continue;
    }
    auto it = std::find_if(running.begin(), running.end(),
                           [&](const Child& ch) { return ch.pid == done; });
    if (it == running.end()) continue;
    Child child = *it;
    running.erase(it);
    std::string message;
    char buffer[4096];
    ssize_t n;
    while ((n = read(child.fd, buffer, sizeof buffer)) > 0)
      message.append(buffer, static_cast<size_t>(n));
    close(child.fd);
    fs::remove_all(child.work);
    Result result;
    const size_t tab = message.find('\t');
    if (WIFSIGNALED(status)) {
      const int sig = WTERMSIG(status);
      result = sig == SIGALRM
                   ? Result{Outcome::kCrash, fmt::format("timed out after {} s", kTimeoutSeconds)}
                   : Result{Outcome::kCrash,
                            fmt::format("killed by signal {} ({})", sig, strsignal(sig))};
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || tab == std::string::npos) {
      result = {Outcome::kCrash, "the test process exited without a result"};
    } else {
      const std::string kind = message.substr(0, tab);
      result = {Outcome::kCrash, "unreadable result: " + message};
      for (Outcome o : {Outcome::kPass, Outcome::kRefused, Outcome::kWrong, Outcome::kCrash}) {
        if (kind == outcome_name(o)) result = {o, message.substr(tab + 1)};
      }
    }
    if (verbose) {
      std::cerr << fmt::format("{:<48} {:<5} {}{}\n", cases[child.index].label(), child.backend,
                               outcome_name(result.outcome),
                               result.reason.empty() ? "" : ": " + result.reason);
    }
    if (child.backend == "cpu") {
      results[child.index].cpu = result;
    } else {
      results[child.index].cuda = result;
    }
  }
  fs::remove_all(work_root);
  return results;
}

// The reviewed list: pairs of lines "limitation: TEXT" and "match: REGEX".
struct Limitation {
  std::string key, text, pattern;
  std::regex regex;
  int matched = 0;
};

std::vector<Limitation> read_limitations(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path.string() + ": cannot open the known-limitations list");
  std::vector<Limitation> list;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    const size_t colon = line.find(": ", 12);
    if (line.rfind("limitation: ", 0) == 0 && colon != std::string::npos) {
      list.push_back({line.substr(12, colon - 12), line.substr(colon + 2), "", std::regex(), 0});
    } else if (line.rfind("match: ", 0) == 0 && !list.empty() && list.back().pattern.empty()) {
      list.back().pattern = line.substr(7);
      list.back().regex = std::regex(list.back().pattern, std::regex::ECMAScript);
    } else {
      throw std::runtime_error(
          fmt::format("{}:{}: expected 'limitation: NAME: TEXT' followed by 'match: REGEX'",
                      path.string(), number));
    }
  }
  for (const Limitation& l : list) {
    if (l.pattern.empty())
      throw std::runtime_error(path.string() + ": limitation '" + l.key + "' has no match line");
  }
  return list;
}

Limitation* find_limitation(std::vector<Limitation>& list, const std::string& reason) {
  for (Limitation& l : list) {
    if (std::regex_search(reason, l.regex)) return &l;
  }
  return nullptr;
}

std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : separator) + s;
  return out;
}

// A refusal's reason as the document gives it: the known limitation's name,
// or the message without the file name and the supported-operator list.
std::string refusal_reason(const Result& result, std::vector<Limitation>& limitations) {
  if (const Limitation* l = find_limitation(limitations, result.reason)) return l->key;
  std::string text = result.reason;
  if (const size_t list = text.find("; supported operators:"); list != std::string::npos) text.resize(list);
  if (text.rfind("model.onnx: ", 0) == 0) text = text.substr(12);
  // "node making '3' (Tile): operator Tile is not supported": the tensor
  // names of PyTorch's exports are numbers that say nothing.
  static const std::regex node_prefix("^node [^(]*\\(([A-Za-z0-9]+)\\): ");
  std::smatch m;
  if (std::regex_search(text, m, node_prefix)) {
    const std::string rest = m.suffix().str();
    text = rest.rfind("operator ", 0) == 0 ? rest : m[1].str() + ": " + rest;
  }
  return text;
}

// The section of docs/operators.md on the suites given with --suite.
void pytorch_suites_doc(std::ostringstream& doc, const std::vector<Case>& cases,
                        const std::vector<CaseResults>& results, std::vector<Limitation>& limitations) {
  std::map<std::string, std::map<Outcome, int>> by_suite;
  std::map<Outcome, int> totals, variant_totals;
  int num_tests = 0, num_variants = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (cases[i].suite == "node") continue;
    const Outcome o = results[i].cpu.outcome;
    if (cases[i].constant_variant) {
      ++variant_totals[o];
      ++num_variants;
      continue;
    }
    ++by_suite[cases[i].suite][o];
    ++totals[o];
    ++num_tests;
  }
  if (by_suite.empty()) return;
  std::vector<std::string> suite_names;
  for (const auto& [suite, counts] : by_suite) suite_names.push_back("`" + suite + "`");
  doc << "\n## ONNX's PyTorch test suites\n\n"
      << "The same package's " << join(suite_names, " and ")
      << " suites (PyTorch modules and operators exported\n"
      << "by PyTorch at IR 3 / opset 6, with inputs and expected outputs) run the same way. Models\n"
      << "older than opset 7 are converted to opset 9 by ONNX's version converter at import\n"
      << "(`lib/onnx/opset_adapter.h`). Of " << num_tests << " tests, **" << totals[Outcome::kPass]
      << " pass**, " << totals[Outcome::kRefused] << " are refused with exit 2, "
      << totals[Outcome::kWrong] << " give a wrong answer, " << totals[Outcome::kCrash] << " crash";
  if (num_variants > 0) {
    doc << " (and of " << num_variants << " constant-inputs variant" << (num_variants > 1 ? "s" : "")
        << ", " << variant_totals[Outcome::kPass] << " pass)";
  }
  doc << ".\n\n| suite | tests | pass | refused | wrong | crash |\n|---|---|---|---|---|---|\n";
  for (auto& [suite, counts] : by_suite) {
    doc << "| " << suite << " | "
        << counts[Outcome::kPass] + counts[Outcome::kRefused] + counts[Outcome::kWrong] +
               counts[Outcome::kCrash]
        << " | " << counts[Outcome::kPass] << " | " << counts[Outcome::kRefused] << " | "
        << counts[Outcome::kWrong] << " | " << counts[Outcome::kCrash] << " |\n";
  }
  for (const auto& [suite, counts] : by_suite) {
    std::vector<std::string> passed;
    std::map<std::string, std::vector<std::string>> not_passed;  // by reason or outcome
    for (size_t i = 0; i < cases.size(); ++i) {
      if (cases[i].suite != suite) continue;
      const std::string name = "`" + cases[i].label() + "`";
      const Result& r = results[i].cpu;
      if (r.outcome == Outcome::kPass) {
        passed.push_back(name);
      } else if (r.outcome == Outcome::kRefused) {
        not_passed["refused, " + refusal_reason(r, limitations)].push_back(name);
      } else {
        not_passed[outcome_name(r.outcome)].push_back(name);
      }
    }
    doc << "\n`" << suite << "` (names without `test_`):\n\n- pass: "
        << (passed.empty() ? "none" : join(passed, ", ")) << "\n";
    for (const auto& [why, names] : not_passed) doc << "- " << why << ": " << join(names, ", ") << "\n";
  }
}

// docs/operators.md from the CPU results: deterministic, no timings.
std::string operators_doc(const std::vector<Case>& cases, const std::vector<CaseResults>& results,
                          std::vector<Limitation>& limitations) {
  std::map<Outcome, int> totals, variant_totals;
  int num_tests = 0, num_variants = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (cases[i].suite != "node") continue;
    ++(cases[i].constant_variant ? variant_totals : totals)[results[i].cpu.outcome];
    ++(cases[i].constant_variant ? num_variants : num_tests);
  }
  struct OpEntry {
    std::vector<size_t> tests;
    std::set<std::string> attributes;  // on passing tests
  };
  std::map<std::string, OpEntry> single;  // single-node tests by operator
  std::vector<size_t> multi;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (cases[i].suite != "node") continue;
    if (cases[i].nodes.size() != 1) {
      multi.push_back(i);
      continue;
    }
    OpEntry& e = single[cases[i].nodes[0].op_type];
    e.tests.push_back(i);
    if (results[i].cpu.outcome == Outcome::kPass) {
      e.attributes.insert(cases[i].nodes[0].attributes.begin(), cases[i].nodes[0].attributes.end());
    }
  }
  std::ostringstream doc;
  doc << "# ONNX operators\n\n"
      << "<!-- Generated by scripts/conformance.sh --write-docs; do not edit. The test suite "
         "fails\n"
      << "     when this file differs from what the conformance runner finds. -->\n\n"
      << "ONNX's backend node tests (ONNX 1.12, the Debian package `libonnx-testdata`: "
         "one-operator\n"
      << "models with inputs and expected outputs) run through `ios-optimize` and `ios-run` on "
         "the\n"
      << "CPU backend by `scripts/conformance.sh` (`docs/testing.md`). Of " << num_tests
      << " node tests, **" << totals[Outcome::kPass] << " pass**, " << totals[Outcome::kRefused]
      << " are refused with exit 2, " << totals[Outcome::kWrong] << " give a wrong answer, "
      << totals[Outcome::kCrash] << " crash.\n\n"
      << "Node tests of supported operators that pass an attribute (a Reshape target, Slice "
         "bounds,\n"
      << "Split sizes, Pad amounts, Clip bounds, a Pow exponent, Resize scales and sizes, a\n"
      << "LayerNormalization or InstanceNormalization Scale and B) as a graph input are refused: ios\n"
      << "needs those "
      << "constant. The runner also runs each of them with those inputs made constant (the\n"
      << "test's values as initializers; LayerNormalization's without its Mean and InvStdDev\n"
      << "outputs, which ios does not compute), marked *(constant inputs)* below: of "
      << num_variants << ", "
      << variant_totals[Outcome::kPass] << " pass, " << variant_totals[Outcome::kRefused]
      << " are refused, " << variant_totals[Outcome::kWrong] << " wrong, "
      << variant_totals[Outcome::kCrash] << " crash.\n\n"
      << "A test passes when every output of the sequential schedule (and of an IOS schedule "
         "where\n"
      << "the model has more than one unit) is within ONNX's tolerances, rtol 1e-3 and atol 1e-7\n"
      << "(an element fails when it exceeds both). Every refusal of a supported operator's test "
         "is\n"
      << "one of the reviewed known limitations listed below.\n\n";

  doc << "## Supported operators\n\n"
      << "| operator | node tests | pass | with constant inputs: pass / run | attributes covered "
         "by passing tests |\n"
      << "|---|---|---|---|---|\n";
  std::vector<std::string> supported_ops;
  for (const auto& [op, entry] : single) {
    if (ios::onnx::is_supported_op(op)) supported_ops.push_back(op);
  }
  for (const std::string& op : supported_ops) {
    const OpEntry& e = single[op];
    int tests = 0, pass = 0, variants = 0, variant_pass = 0;
    for (size_t i : e.tests) {
      const bool passed = results[i].cpu.outcome == Outcome::kPass;
      if (cases[i].constant_variant) {
        ++variants;
        variant_pass += passed;
      } else {
        ++tests;
        pass += passed;
      }
    }
    std::vector<std::string> attrs(e.attributes.begin(), e.attributes.end());
    for (auto& a : attrs) a = "`" + a + "`";
    doc << "| " << op << " | " << tests << " | " << pass << " | "
        << (variants ? fmt::format("{} / {}", variant_pass, variants) : std::string("—")) << " | "
        << (attrs.empty() ? "—" : join(attrs, ", ")) << " |\n";
  }
  doc << "\nPer operator, the node tests by result (names without `test_`):\n\n";
  for (const std::string& op : supported_ops) {
    std::vector<std::string> passed;
    std::map<std::string, std::vector<std::string>> not_passed;  // by limitation or outcome
    for (size_t i : single[op].tests) {
      const std::string name = "`" + cases[i].label() + "`";
      if (results[i].cpu.outcome == Outcome::kPass) {
        passed.push_back(name);
      } else {
        const Limitation* l = results[i].cpu.outcome == Outcome::kRefused
                                  ? find_limitation(limitations, results[i].cpu.reason)
                                  : nullptr;
        not_passed[l ? "refused, " + l->key : outcome_name(results[i].cpu.outcome)].push_back(name);
      }
    }
    doc << "- **" << op << "**: pass: " << (passed.empty() ? "none" : join(passed, ", "));
    for (const auto& [why, names] : not_passed) doc << "; " << why << ": " << join(names, ", ");
    doc << "\n";
  }
  doc << "\nThe known limitations (`test/conformance/known_limitations.txt`):\n\n";
  for (const Limitation& l : limitations) doc << "- *" << l.key << "*: " << l.text << "\n";
  std::vector<std::string> others;
  for (const auto& [op, entry] : single) {
    if (!ios::onnx::is_supported_op(op))
      others.push_back(fmt::format("{} ({})", op, entry.tests.size()));
  }
  doc << "\n## Operators ios does not run\n\n"
      << "Their node tests are refused with exit 2 (the number of tests in parentheses). Shape\n"
      << "and mask arithmetic on constants (Shape, Gather, Unsqueeze, Cast, Range, Mod, ScatterND,\n"
      << "ConstantOfShape, Expand, Equal, Where, Not, ...: what Swin's shifted windows are built\n"
      << "from) is folded at import; these operators' node tests compute on runtime inputs, so\n"
      << "they are refused too. Einsum and InstanceNormalization are supported by being imported\n"
      << "as other operators: Einsum of one or two operands as Transpose, Reshape and MatMul\n"
      << "(sums over an index of one operand, diagonals and ellipses are refused),\n"
      << "InstanceNormalization as LayerNormalization with a per-channel Mul and Add.\n\n"
      << join(others, ", ") << "\n";
  std::vector<std::string> multi_passed;
  for (size_t i : multi) {
    if (results[i].cpu.outcome == Outcome::kPass)
      multi_passed.push_back("`" + cases[i].label() + "`");
  }
  doc << "\n## Tests of more than one node\n\n"
      << multi.size() << " node tests are graphs of several nodes (mostly functions expanded into\n"
      << "primitive operators); they pass where ios supports every node: "
      << (multi_passed.empty() ? "none" : join(multi_passed, ", ")) << ".\n";
  pytorch_suites_doc(doc, cases, results, limitations);
  return doc.str();
}

enum class GpuState { kUsable, kNone, kUnusable };

// Probed in a child: a process that has initialized CUDA must not fork.
GpuState gpu_state() {
  std::cout.flush();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    const ios::cuda::DeviceState state = ios::cuda::device_status().state;
    _exit(state == ios::cuda::DeviceState::kUsable     ? 0
          : state == ios::cuda::DeviceState::kUnusable ? 2
                                                       : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) return GpuState::kUnusable;
  return WEXITSTATUS(status) == 0   ? GpuState::kUsable
         : WEXITSTATUS(status) == 2 ? GpuState::kUnusable
                                    : GpuState::kNone;
}

struct Options {
  fs::path data = "/usr/share/libonnx-testdata/data/node";
  std::vector<fs::path> suites;  // --suite: more folders of tests (ONNX's PyTorch suites)
  fs::path limitations;
  fs::path write_docs, check_docs;
  std::string filter;
  std::string backend = "both";  // cpu, cuda, or both (cuda where a GPU is usable)
  int jobs = 2;
  bool verbose = false;
};

int usage(const std::string& message) {
  std::cerr << "ios-conformance: error: " << message
            << "\nusage: ios_conformance [--data DIR] [--suite DIR]... --known-limitations FILE "
               "[--write-docs FILE | --check-docs FILE] [--filter SUBSTRING] [--backend "
               "cpu|cuda|both] [--jobs N] "
               "[-v]\n";
  return 2;
}

int run_main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--data")
      o.data = value();
    else if (arg == "--suite")
      o.suites.emplace_back(value());
    else if (arg == "--known-limitations")
      o.limitations = value();
    else if (arg == "--write-docs")
      o.write_docs = value();
    else if (arg == "--check-docs")
      o.check_docs = value();
    else if (arg == "--filter")
      o.filter = value();
    else if (arg == "--backend")
      o.backend = value();
    else if (arg == "--jobs")
      o.jobs = std::max(1, std::stoi(value()));
    else if (arg == "-v" || arg == "--verbose")
      o.verbose = true;
    else
      return usage("unknown option '" + arg + "'");
  }
  if (o.limitations.empty()) return usage("--known-limitations FILE is required");
  if (o.backend != "cpu" && o.backend != "cuda" && o.backend != "both") {
    return usage("--backend '" + o.backend + "': expected cpu, cuda or both");
  }
  if (o.backend == "cuda" && (!o.write_docs.empty() || !o.check_docs.empty())) {
    return usage(
        "--backend cuda: the operators document holds the CPU's results; write or check it with "
        "cpu");
  }
  if (!fs::is_directory(o.data)) {
    return usage(o.data.string() +
                 ": no node tests here; install the Debian package libonnx-testdata "
                 "(scripts/setup.sh does)");
  }
  if (!o.filter.empty() && (!o.write_docs.empty() || !o.check_docs.empty())) {
    return usage("--filter runs a subset: it cannot write or check the operators document");
  }
  std::vector<Limitation> limitations = read_limitations(o.limitations);
  ios::set_verbosity(ios::Verbosity::kQuiet);

  for (const fs::path& suite : o.suites) {
    if (!fs::is_directory(suite)) {
      return usage(suite.string() +
                   ": no tests here; install the Debian package libonnx-testdata (scripts/setup.sh does)");
    }
  }
  std::vector<Case> cases;
  std::vector<std::pair<fs::path, std::string>> folders = {{o.data, "node"}};
  for (const fs::path& suite : o.suites) folders.emplace_back(suite, suite.filename().string());
  for (const auto& [folder, suite] : folders) {
    for (const auto& entry : fs::directory_iterator(folder)) {
      if (!entry.is_directory() || !fs::exists(entry.path() / "model.onnx")) continue;
      if (!o.filter.empty() && entry.path().filename().string().find(o.filter) == std::string::npos)
        continue;
      cases.push_back(read_case(entry.path(), suite));
      if (cases.back().all_supported && !cases.back().attribute_inputs.empty()) {
        cases.push_back(cases.back());
        cases.back().constant_variant = true;
      }
    }
  }
  // The node tests first, then the suites by name; each by label.
  std::sort(cases.begin(), cases.end(), [](const Case& a, const Case& b) {
    return std::make_tuple(a.suite != "node", a.suite, a.label()) <
           std::make_tuple(b.suite != "node", b.suite, b.label());
  });
  if (cases.empty()) return usage("no node tests selected in " + o.data.string());

  const bool with_cpu = o.backend != "cuda";
  const GpuState gpu = o.backend == "cpu" ? GpuState::kNone : gpu_state();
  const bool with_cuda = gpu == GpuState::kUsable;
  if (o.backend == "cuda" && !with_cuda) {
    // The CUDA runs alone: skipped (ctest's SKIP_RETURN_CODE) without a GPU,
    // failed where one is present but unusable or one is required.
    const char* require = std::getenv("IOS_REQUIRE_GPU");
    if (gpu == GpuState::kUnusable || (require != nullptr && std::string(require) == "1")) {
      std::cout << "FAIL --backend cuda: "
                << (gpu == GpuState::kUnusable ? "a GPU is present but unusable"
                                               : "IOS_REQUIRE_GPU=1 but no GPU")
                << "\n";
      return 1;
    }
    std::cout << "no usable GPU: the CUDA runs are skipped (exit code 77)\n";
    return 77;
  }
  const auto start = std::chrono::steady_clock::now();
  const std::vector<CaseResults> results = run_all(cases, with_cpu, with_cuda, o.jobs, o.verbose);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  // Verdicts.
  int failures = 0;
  // Per suite ("node" first), tests apart from constant-inputs variants.
  std::map<std::string, std::map<Outcome, int>> cpu_totals, cuda_totals;
  std::map<std::string, long> num_tests, num_variants;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    ++(c.constant_variant ? num_variants : num_tests)[c.suite];
    if (with_cpu) ++cpu_totals[c.suite][results[i].cpu.outcome];
    if (results[i].cuda) ++cuda_totals[c.suite][results[i].cuda->outcome];
    for (const auto& [backend, result] :
         {std::pair<std::string, std::optional<Result>>{
              "cpu", with_cpu ? std::optional<Result>(results[i].cpu) : std::nullopt},
          {"cuda", results[i].cuda}}) {
      if (!result) continue;
      if (result->outcome == Outcome::kWrong || result->outcome == Outcome::kCrash) {
        std::cout << fmt::format("FAIL {} ({}): {}: {}\n", c.label(), backend,
                                 outcome_name(result->outcome), result->reason);
        ++failures;
      } else if (result->outcome == Outcome::kRefused && c.all_supported) {
        if (Limitation* l = find_limitation(limitations, result->reason)) {
          ++l->matched;
        } else {
          std::cout << fmt::format(
              "FAIL {} ({}): refused, and the reason is no known limitation: {}\n", c.label(),
              backend, result->reason);
          ++failures;
        }
      }
    }
  }
  // Stale entries are judged on full runs only (the ones that check or write the document).
  if (o.filter.empty() && (!o.check_docs.empty() || !o.write_docs.empty())) {
    for (const Limitation& l : limitations) {
      if (l.matched == 0) {
        std::cout << fmt::format(
            "FAIL known limitation '{}' matches no refused test any more; remove it\n", l.key);
        ++failures;
      }
    }
  }
  auto totals_line = [&](std::map<Outcome, int>& t) {
    return fmt::format("{} pass, {} refused, {} wrong, {} crash", t[Outcome::kPass],
                       t[Outcome::kRefused], t[Outcome::kWrong], t[Outcome::kCrash]);
  };
  for (const auto& [folder, suite] : folders) {
    if (!num_tests.count(suite) && !num_variants.count(suite)) continue;
    const std::string cuda = with_cuda            ? totals_line(cuda_totals[suite])
                             : o.backend == "cpu" ? std::string("not run (--backend cpu)")
                                                  : std::string("skipped (no usable GPU)");
    std::cout << fmt::format(
        "{}: {} tests and {} constant-inputs variants: cpu: {}; cuda: {}\n", suite,
        num_tests[suite], num_variants[suite],
        with_cpu ? totals_line(cpu_totals[suite]) : std::string("not run (--backend cuda)"), cuda);
  }
  std::cout << fmt::format("{} runs in {:.1f} s\n", cases.size(), seconds);

  if (!o.write_docs.empty() || !o.check_docs.empty()) {
    for (Limitation& l : limitations) l.matched = 0;
    const std::string doc = operators_doc(cases, results, limitations);
    if (!o.write_docs.empty()) {
      const fs::path tmp = o.write_docs.string() + ".tmp";
      std::ofstream(tmp) << doc;
      fs::rename(tmp, o.write_docs);
      std::cout << "wrote " << o.write_docs.string() << "\n";
    } else {
      std::ifstream in(o.check_docs);
      std::stringstream committed;
      committed << in.rdbuf();
      if (committed.str() != doc) {
        std::cout << fmt::format(
            "FAIL {} differs from the results; run scripts/conformance.sh --write-docs and "
            "review the change\n",
            o.check_docs.string());
        ++failures;
      }
    }
  }
  if (failures > 0) std::cout << failures << " failure(s)\n";
  return failures > 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run_main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "ios-conformance: error: " << e.what() << "\n";
    return 1;
  }
}
