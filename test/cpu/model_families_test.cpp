// The model families deployed today, end to end on the CPU backend: DeepLabV3
// and FCN (segmentation heads: ASPP, Resize), ConvNeXt (LayerNorm, GELU,
// depthwise 7x7) and a ViT-style encoder (class token, Q/K/V projections,
// batched MatMul, Softmax), exported by onnx_models/export_models.py at
// opset 13 with a symbolic batch and opset 17 with a static one (ConvNeXt and
// the ViT-style encoder also the other way round); Swin-T (shifted windows:
// mask and shape arithmetic folded at import), MaxViT-T (Einsum attention)
// and three detectors' backbone + FPN + heads (several outputs: RetinaNet,
// FCOS with GroupNorm, SSDlite), as torchvision 0.14 exports them (opset 13,
// static batch 1). Networks of other ranks: torchvision 0.14's video
// classifiers on N,3,T,H,W clips (R3D-18, MC3-18, R(2+1)D-18 at 4x28x28;
// S3D, hidden, at 13x209x209, the smallest clip its fixed final pool takes), a 1-D
// audio CNN on N,1,L waveforms and an HRNet-style multi-resolution network
// (onnx_models/nets.py).
//
// The truth is the PyTorch model run in float64 on the same weights and input
// (the export script writes both next to the model; the truth is read back
// rounded to float32, half an ulp, far below either float32 evaluation's
// error). ONNX Runtime (CPU, graph optimizations disabled) is run on the same
// input, and every registered scheduler's schedule must run on the CPU
// executor with at most twice ONNX Runtime's error against that truth: rms
// and max absolute error both. The activation arena each schedule reports
// must be the one the executor allocates (docs/schedulers.md, *Memory*).
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "exec/compare.h"
#include "exec/schedule_memory.h"
#include "model_test_util.h"
#include "sched/merge.h"

namespace ios::test {
namespace {

const exec::Tolerance kReportOnly{1e-5,
                                  1e-4};  // the verdict is the ratio to ONNX Runtime, not this

struct Error {
  double rms = 0.0;
  double max_abs = 0.0;
};

Error error_against(const exec::HostTensor& actual, const exec::HostTensor& truth,
                    const std::string& label) {
  const auto result = exec::compare(actual, truth, kReportOnly, label, 3);
  INFO(exec::format_report(result));
  REQUIRE(result.shape_error.empty());
  REQUIRE(result.num_nan == 0);
  return {result.rms_error, result.max_abs_error};
}

// `file` is a model in onnx_models/generated with <stem>.input.npy and
// <stem>.truth.npy beside it, or <stem>.truth.<output>.npy per output for a
// model of several outputs (export_models.py --truth). Every output is held
// to the rule.
void check_family_model(const std::string& file) {
  const auto path = models_dir() / file;
  const std::string stem =
      path.string().substr(0, path.string().size() - std::string(".onnx").size());
  auto require_file = [](const std::string& p) {
    if (!std::filesystem::exists(p)) {
      FAIL(p << " is missing: run scripts/setup.sh (scripts/make-models.sh exports the model "
                "families with onnx_models/export_models.py --truth)");
    }
  };
  require_file(path.string());
  require_file(stem + ".input.npy");
  const auto input = exec::read_npy(stem + ".input.npy");
  onnx::ImportOptions options;
  if (file.find("-bdyn") != std::string::npos) options.batch = input.shape.at(0);

  const auto t0 = std::chrono::steady_clock::now();
  const auto model = onnx::import_model(path.string(), options);
  REQUIRE(model.inputs.size() == 1);
  REQUIRE(model.inputs[0].second == input.shape);
  const auto graph = sched::UnitGraph::form(model.graph);
  auto cost = simulated_cost(graph);
  std::cerr << fmt::format("{}: imported and formed {} units in {} blocks in {:.2f} s\n", file,
                           graph.size(), graph.blocks().size(), seconds_since(t0));

  std::map<std::string, exec::HostTensor> truths;
  const auto& outputs = model.graph.outputs();
  for (ir::TensorId t : outputs) {
    const std::string& name = model.graph.tensor(t).name;
    const std::string truth_file = outputs.size() == 1 ? stem + ".truth.npy" : stem + ".truth." + name + ".npy";
    require_file(truth_file);
    truths[name] = exec::read_npy(truth_file);
  }

  TempDir dir("family_" + std::to_string(std::hash<std::string>{}(file)));
  std::map<std::string, exec::HostTensor> ort;
  if (outputs.size() == 1) ort[truths.begin()->first] = run_onnx_runtime(path, input, dir);
  else ort = run_onnx_runtime_outputs(path, input, dir);
  std::map<std::string, Error> ort_errors;
  for (const auto& [name, truth] : truths) {
    INFO(file << " output " << name);
    REQUIRE(ort.count(name) == 1);
    const Error e = error_against(ort.at(name), truth, file + " " + name + " ONNX Runtime");
    std::cerr << fmt::format(
        "{} '{}': ONNX Runtime vs float64 truth: rms {:.3g}, max abs {:.3g} (|truth| <= {:.3g})\n", file, name,
        e.rms, e.max_abs, exec::value_stats(truth).max_abs);
    REQUIRE(e.max_abs > 0.0);  // a float32 evaluation that equals the truth would make the ratio vacuous
    ort_errors[name] = e;
  }

  for (const auto& entry : sched::scheduler_registry()) {
    const auto t1 = std::chrono::steady_clock::now();
    const auto schedule = make_schedule(entry.name, "", graph, cost);
    cpu::MemoryPlanStats memory;
    const auto ours = run_cpu_outputs(graph, schedule, model.inputs[0].first, input, &memory);
    REQUIRE(ours.size() == truths.size());
    // The activation arena the schedule reports (ios-optimize, the schedule
    // file) is the arena this backend allocates, on every family.
    INFO(file << " scheduled by " << entry.name);
    CHECK(exec::schedule_memory(graph, schedule).arena_bytes == memory.buffer_bytes);
    for (const auto& [name, truth] : truths) {
      const Error error = error_against(ours.at(name), truth, file + " " + name + " " + entry.name);
      const Error& ort_error = ort_errors.at(name);
      std::cerr << fmt::format(
          "{} '{}' {}: rms {:.3g} ({:.2f}x ONNX Runtime), max abs {:.3g} ({:.2f}x), {:.2f} s\n", file, name,
          entry.name, error.rms, error.rms / ort_error.rms, error.max_abs, error.max_abs / ort_error.max_abs,
          seconds_since(t1));
      INFO(file << " output " << name << " scheduled by " << entry.name);
      CHECK(error.rms <= 2.0 * ort_error.rms);
      CHECK(error.max_abs <= 2.0 * ort_error.max_abs);
    }
  }
}

// DeepLabV3's ASPP head runs five branches on one feature map (a 1x1 conv,
// three dilated 3x3 convs, image pooling + 1x1 conv + upsampling) into one
// Concat: all of them must land in one block of width >= 5, where IOS can run
// them side by side.
TEST_CASE("DeepLabV3's ASPP head is one block of width 5", "[cpu][family]") {
  const auto path = models_dir() / "deeplabv3_resnet50-128x128-op17.onnx";
  if (!std::filesystem::exists(path)) FAIL(path.string() << " is missing: run scripts/setup.sh");
  const auto model = onnx::import_model(path.string(), onnx::ImportOptions{});
  const auto graph = sched::UnitGraph::form(model.graph);
  std::set<int> blocks;
  int branch_units = 0;
  for (sched::UnitId u = 0; u < graph.size(); ++u) {
    const auto& unit = graph.unit(u);
    if (unit.anchor == ir::kNone) continue;
    // torch's exporter names nodes by module path: /model/classifier/classifier.0/convs.<i>/...
    if (model.graph.node(unit.anchor).name.find("classifier.0/convs.") == std::string::npos)
      continue;
    ++branch_units;
    blocks.insert(graph.block_of(u));
  }
  INFO(branch_units << " units of the ASPP branches in " << blocks.size() << " block(s)");
  REQUIRE(branch_units >= 5);  // 4 convs, and the pooling branch's pool, conv and resize
  REQUIRE(blocks.size() == 1);
  const auto& block = graph.blocks().at(static_cast<size_t>(*blocks.begin()));
  CHECK(block.width >= 5);
}

// The ViT-style encoder's Q, K and V projections read the same normalized
// tokens: in every block the three MatMul units (with their bias Adds) may
// merge into one, and IOS's search (simulated H100) does merge them.
TEST_CASE("the ViT-style encoder's query, key and value projections merge in every block", "[cpu][family]") {
  const auto path = models_dir() / "vit_style-op17.onnx";
  if (!std::filesystem::exists(path)) FAIL(path.string() << " is missing: run scripts/setup.sh");
  const auto model = onnx::import_model(path.string(), onnx::ImportOptions{});
  const auto graph = sched::UnitGraph::form(model.graph);
  std::map<std::string, std::vector<sched::UnitId>> projections;  // encoder block -> its q, k, v units
  for (sched::UnitId u = 0; u < graph.size(); ++u) {
    const auto& unit = graph.unit(u);
    if (unit.anchor == ir::kNone) continue;
    const std::string& name = model.graph.node(unit.anchor).name;  // /blocks/blocks.<i>/attn/q/MatMul
    for (const char* p : {"/attn/q/", "/attn/k/", "/attn/v/"}) {
      const auto at = name.find(p);
      if (at != std::string::npos) projections[name.substr(0, at)].push_back(u);
    }
  }
  REQUIRE(projections.size() == 4);
  for (const auto& [block, units] : projections) {
    INFO(block);
    REQUIRE(units.size() == 3);
    const auto check = sched::check_merge(graph, units);
    INFO(check.reason);
    CHECK(check.spec.has_value());
  }
  auto cost = simulated_cost(graph);
  const auto schedule = make_schedule("ios", "", graph, cost);
  int merges = 0;
  for (const auto& stage : schedule.staged().stages) {
    if (stage.strategy != sched::Strategy::kMerge) continue;
    ++merges;
    CHECK(stage.groups.at(0).size() == 3);
  }
  CHECK(merges == 4);
}

// The units whose ONNX node names start with each of `prefixes` (torch's
// exporter names nodes by module path): every prefix's units must exist and
// all of them land in one block of width >= `width`, where IOS can run the
// branches side by side.
void check_branches_share_a_block(const std::string& file, const std::vector<std::string>& prefixes,
                                  int width) {
  const auto path = models_dir() / file;
  if (!std::filesystem::exists(path)) FAIL(path.string() << " is missing: run scripts/setup.sh");
  const auto model = onnx::import_model(path.string(), onnx::ImportOptions{});
  const auto graph = sched::UnitGraph::form(model.graph);
  std::set<int> blocks;
  std::map<std::string, int> units_of;
  for (sched::UnitId u = 0; u < graph.size(); ++u) {
    const auto& unit = graph.unit(u);
    if (unit.anchor == ir::kNone) continue;
    const std::string& name = model.graph.node(unit.anchor).name;
    for (const auto& prefix : prefixes) {
      if (name.rfind(prefix, 0) != 0) continue;
      ++units_of[prefix];
      blocks.insert(graph.block_of(u));
    }
  }
  for (const auto& prefix : prefixes) {
    INFO(file << ": units of " << prefix);
    CHECK(units_of[prefix] > 0);
  }
  INFO(file << ": the branches' units in " << blocks.size() << " block(s)");
  REQUIRE(blocks.size() == 1);
  const auto& block = graph.blocks().at(static_cast<size_t>(*blocks.begin()));
  CHECK(block.width >= width);
}

// The multi-resolution network's third stage runs three branches, at 1/2, 1/4
// and 1/8 of the input's resolution, between two exchange units: three
// independent chains of basic blocks, one block of width >= 3.
TEST_CASE("the HRNet-style network's three resolution branches are one block of width 3",
          "[cpu][family]") {
  check_branches_share_a_block("hrnet_style.onnx", {"/stage3.0/", "/stage3.1/", "/stage3.2/"}, 3);
}

// Each of the audio CNN's temporal blocks reads one input into four branches
// of different receptive fields (1, 3 dilated, 1 then 9 grouped, pool then
// 1), concatenated: one block of width >= 4.
TEST_CASE("the audio CNN's temporal branches are one block of width 4", "[cpu][family]") {
  check_branches_share_a_block("audio_cnn.onnx",
                               {"/block2/b1/", "/block2/b3/", "/block2/b9/", "/block2/pool/"}, 4);
}

// A detector's heads run the same convolution towers on every pyramid level
// (five for RetinaNet and FCOS, six feature maps for SSDlite): independent
// work, and IOS's schedule (simulated H100) runs `levels` of them side by
// side, head convolutions of that many feature map sizes in one stage.
void check_heads_run_side_by_side(const std::string& file, size_t levels_side_by_side) {
  const auto path = models_dir() / file;
  if (!std::filesystem::exists(path)) FAIL(path.string() << " is missing: run scripts/setup.sh");
  const auto model = onnx::import_model(path.string(), onnx::ImportOptions{});
  const auto graph = sched::UnitGraph::form(model.graph);
  auto is_head = [&](sched::UnitId u) {
    const auto& unit = graph.unit(u);
    // torch's exporter names nodes by module path: /model/head/classification_head/conv/...
    return unit.anchor != ir::kNone && model.graph.node(unit.anchor).name.find("/head/") != std::string::npos &&
           model.graph.node(unit.anchor).op == ir::OpKind::kConv;
  };
  auto level = [&](sched::UnitId u) {  // the pyramid level, by the feature map's size
    const ir::Shape& out = model.graph.tensor(model.graph.node(graph.unit(u).anchor).outputs.at(0)).shape;
    return out.at(2) * 100000 + out.at(3);
  };
  std::set<int64_t> levels;
  for (sched::UnitId u = 0; u < graph.size(); ++u) {
    if (is_head(u)) levels.insert(level(u));
  }
  INFO(file << ": head convolutions on " << levels.size() << " feature map sizes");
  REQUIRE(levels.size() >= 5);
  auto cost = simulated_cost(graph);
  const auto schedule = make_schedule("ios", "", graph, cost);
  size_t widest = 0;
  for (const auto& stage : schedule.staged().stages) {
    std::set<int64_t> side_by_side;
    for (const auto& group : stage.groups) {
      for (sched::UnitId u : group) {
        if (is_head(u)) side_by_side.insert(level(u));
      }
    }
    widest = std::max(widest, side_by_side.size());
  }
  CHECK(widest >= levels_side_by_side);
}

TEST_CASE("the detectors' heads run on their pyramid levels side by side", "[cpu][family]") {
  check_heads_run_side_by_side("retinanet_resnet50_fpn-128x128.onnx", 5);
  check_heads_run_side_by_side("ssdlite320_mobilenet_v3_large.onnx", 5);
  // FCOS's GroupNorm makes each tower about twice as many units: its head
  // region (about 230 units, width 10) is split by the 40-unit block cap
  // into parts of consecutive units, which follow the export's level-major
  // order, so only two levels share a block (docs/unit-formation.md).
  check_heads_run_side_by_side("fcos_resnet50_fpn-128x128.onnx", 2);
}

TEST_CASE("model family vs float64 truth: deeplabv3_resnet50 at opset 13 with a symbolic batch",
          "[cpu][ort][family]") {
  check_family_model("deeplabv3_resnet50-bdyn-128x128.onnx");
}
TEST_CASE("model family vs float64 truth: deeplabv3_resnet50 at opset 17 with a static batch",
          "[cpu][ort][family]") {
  check_family_model("deeplabv3_resnet50-128x128-op17.onnx");
}
TEST_CASE("model family vs float64 truth: fcn_resnet50 at opset 13 with a symbolic batch",
          "[cpu][ort][family]") {
  check_family_model("fcn_resnet50-bdyn-128x128.onnx");
}
TEST_CASE("model family vs float64 truth: fcn_resnet50 at opset 17 with a static batch",
          "[cpu][ort][family]") {
  check_family_model("fcn_resnet50-128x128-op17.onnx");
}
TEST_CASE("model family vs float64 truth: convnext_tiny at opset 13 with a symbolic batch",
          "[cpu][ort][family]") {
  check_family_model("convnext_tiny-bdyn-64x64.onnx");
}
TEST_CASE("model family vs float64 truth: convnext_tiny at opset 17 with a static batch",
          "[cpu][ort][family]") {
  check_family_model("convnext_tiny-64x64-op17.onnx");
}
TEST_CASE("model family vs float64 truth: vit_style at opset 13 with a symbolic batch",
          "[cpu][ort][family]") {
  check_family_model("vit_style-bdyn.onnx");
}
TEST_CASE("model family vs float64 truth: vit_style at opset 17 with a static batch",
          "[cpu][ort][family]") {
  check_family_model("vit_style-op17.onnx");
}
// The other two combinations where the opset changes the graph most:
// LayerNorm's form, and the class token's shape arithmetic with a symbolic batch.
TEST_CASE("model family vs float64 truth: convnext_tiny at opset 13 with a static batch",
          "[cpu][ort][family]") {
  check_family_model("convnext_tiny-64x64.onnx");
}
TEST_CASE("model family vs float64 truth: convnext_tiny at opset 17 with a symbolic batch",
          "[cpu][ort][family]") {
  check_family_model("convnext_tiny-bdyn-64x64-op17.onnx");
}
TEST_CASE("model family vs float64 truth: vit_style at opset 13 with a static batch",
          "[cpu][ort][family]") {
  check_family_model("vit_style.onnx");
}
TEST_CASE("model family vs float64 truth: vit_style at opset 17 with a symbolic batch",
          "[cpu][ort][family]") {
  check_family_model("vit_style-bdyn-op17.onnx");
}

// The next families, as torchvision 0.14 exports them (opset 13, batch 1).
TEST_CASE("model family vs float64 truth: swin_t at 112x112", "[cpu][ort][family]") {
  check_family_model("swin_t-112x112.onnx");
}
TEST_CASE("model family vs float64 truth: maxvit_t", "[cpu][ort][family]") {
  check_family_model("maxvit_t.onnx");
}
TEST_CASE("model family vs float64 truth: retinanet_resnet50_fpn's raw heads at 128x128", "[cpu][ort][family]") {
  check_family_model("retinanet_resnet50_fpn-128x128.onnx");
}
TEST_CASE("model family vs float64 truth: fcos_resnet50_fpn's raw heads at 128x128", "[cpu][ort][family]") {
  check_family_model("fcos_resnet50_fpn-128x128.onnx");
}
TEST_CASE("model family vs float64 truth: ssdlite320_mobilenet_v3_large's raw heads", "[cpu][ort][family]") {
  check_family_model("ssdlite320_mobilenet_v3_large.onnx");
}

// Networks of other ranks. The video classifiers at clips small enough for
// the CPU (torchvision's default is 16x112x112): 4 frames still reach a
// temporal size of 1 through R3D's and R(2+1)D's strided stages.
TEST_CASE("model family vs float64 truth: r3d_18 on 4x28x28 clips", "[cpu][ort][family]") {
  check_family_model("r3d_18-4x28x28.onnx");
}
TEST_CASE("model family vs float64 truth: mc3_18 on 4x28x28 clips", "[cpu][ort][family]") {
  check_family_model("mc3_18-4x28x28.onnx");
}
TEST_CASE("model family vs float64 truth: r2plus1d_18 on 4x28x28 clips", "[cpu][ort][family]") {
  check_family_model("r2plus1d_18-4x28x28.onnx");
}
// S3D's final AvgPool3d has a fixed 2x7x7 kernel: its smallest clip,
// 13x209x209, is 30 GFLOP (every scheduler's CPU run together 17 s, its
// export up to 45 s: more than CI's budget leaves), and
// scripts/make-models.sh does not export it. Run by name after
//   onnx_models/export_models.py --truth --out-dir onnx_models/generated
//       --models s3d --image-size 13x209x209
TEST_CASE("model family vs float64 truth: s3d on 13x209x209 clips", "[.][s3d][cpu][ort][family]") {
  check_family_model("s3d-13x209x209.onnx");
}
TEST_CASE("model family vs float64 truth: the 1-D audio CNN", "[cpu][ort][family]") {
  check_family_model("audio_cnn.onnx");
}
TEST_CASE("model family vs float64 truth: the HRNet-style multi-resolution network",
          "[cpu][ort][family]") {
  check_family_model("hrnet_style.onnx");
}

}  // namespace
}  // namespace ios::test
