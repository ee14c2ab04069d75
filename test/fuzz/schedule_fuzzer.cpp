// libFuzzer target for the schedule file: parse, resolve unit ids, validate
// (every unit once, dependencies, merge legality) and lower to an ExecPlan,
// against a real model with mergeable convolutions (make_bad_models.py's
// inception_like.onnx; IOS_FUZZ_MODEL overrides the path). Any byte string
// must give a plan or a UserError; anything else is a finding.
// Built with -DIOS_FUZZ=ON; scripts/fuzz.sh runs it.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "core/error.h"
#include "core/log.h"
#include "exec/plan.h"
#include "onnx/importer.h"
#include "sched/schedule_io.h"
#include "sched/unit_graph.h"

namespace {

struct Model {
  ios::onnx::ImportedModel imported;
  std::unique_ptr<ios::sched::UnitGraph> units;  // points into imported.graph
};

Model* model = nullptr;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ios::set_verbosity(ios::Verbosity::kQuiet);
  const char* env = std::getenv("IOS_FUZZ_MODEL");
  const std::string path = env ? env : IOS_MODELS_DIR "/bad/inception_like.onnx";
  try {
    model = new Model;
    model->imported = ios::onnx::import_model(path);
    model->units =
        std::make_unique<ios::sched::UnitGraph>(ios::sched::UnitGraph::form(model->imported.graph));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "schedule_fuzzer: cannot load %s (%s); run scripts/make-models.sh\n",
                 path.c_str(), e.what());
    std::exit(2);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const ios::sched::Schedule schedule =
        ios::sched::parse_schedule(text, "fuzz.json", *model->units);
    (void)ios::exec::lower(*model->units, schedule);
    (void)ios::exec::lower(*model->units, schedule, ios::exec::StageJoin::kDeviceSync);
  } catch (const ios::UserError&) {
    // Refused with a message: the expected outcome for most inputs.
  }
  return 0;
}
