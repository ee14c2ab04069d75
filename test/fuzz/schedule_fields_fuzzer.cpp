// libFuzzer target for the schedule file's newer fields: the form (staged,
// streamed), a staged schedule's barriers, scheduler.launch, and what
// ios-run does with them: the header read before the model (model.batch
// against model.inputs), the check against the model with and without
// --retarget and --force, lowering with event and device-sync stage joins,
// the dry-run's form description, and the round trip through
// schedule_to_json; the "precision" object (read before the model, as
// ios-run does to convert it) and the "memory" object, each written back
// and read again the same. The first byte chooses the options; the rest is the
// document. Against inception_like.onnx (IOS_FUZZ_MODEL overrides it). Any
// input must give a result or a UserError; anything else is a finding.
// Built with -DIOS_FUZZ=ON; scripts/fuzz.sh runs it.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "core/log.h"
#include "exec/plan.h"
#include "onnx/importer.h"
#include "sched/schedule_io.h"
#include "sched/unit_graph.h"
#include "sched/validate.h"

namespace {

struct Model {
  ios::onnx::ImportedModel imported;
  std::unique_ptr<ios::sched::UnitGraph> units;  // points into imported.graph
  ios::sched::ModelInfo info;
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
    model->info = {path, model->imported.sha256, model->imported.batch, model->imported.inputs};
  } catch (const std::exception& e) {
    std::fprintf(stderr,
                 "schedule_fields_fuzzer: cannot load %s (%s); run scripts/make-models.sh\n",
                 path.c_str(), e.what());
    std::exit(2);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bool retarget = (data[0] & 1) != 0, force = (data[0] & 2) != 0;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  const ios::sched::UnitGraph& units = *model->units;
  try {
    const nlohmann::json document = ios::sched::parse_schedule_document(text, "fuzz.json");
    (void)ios::sched::schedule_batch(document, "fuzz.json");
    // The precision object, as ios-run reads it before importing the model,
    // and back: what ios writes of it, ios reads the same.
    if (const auto precision = ios::sched::schedule_precision(document, "fuzz.json")) {
      nlohmann::json doc = document;
      doc["precision"] = ios::sched::precision_to_json(*precision);
      const auto again = ios::sched::schedule_precision(doc, "fuzz-written.json");
      if (!again || ios::sched::precision_to_json(*again) != doc["precision"]) {
        std::fprintf(stderr, "schedule_fields_fuzzer: the precision object does not read back the same\n");
        std::abort();
      }
    }
    const ios::sched::Schedule schedule =
        ios::sched::schedule_from_document(document, "fuzz.json", units);
    (void)ios::sched::form_description(schedule);
    ios::sched::check_schedule_matches_model(schedule, model->info, "fuzz.json", force, retarget);
    (void)ios::exec::lower(units, schedule);
    (void)ios::exec::lower(units, schedule, ios::exec::StageJoin::kDeviceSync);
    // What ios writes, ios reads back the same (but for the time it was written).
    const std::string written = ios::sched::schedule_to_json(schedule, units);
    const ios::sched::Schedule again =
        ios::sched::parse_schedule(written, "fuzz-written.json", units);
    nlohmann::json first = nlohmann::json::parse(written);
    nlohmann::json second = nlohmann::json::parse(ios::sched::schedule_to_json(again, units));
    first.erase("created");
    second.erase("created");
    if (first != second) {
      std::fprintf(stderr,
                   "schedule_fields_fuzzer: the written schedule does not read back the same\n");
      std::abort();
    }
  } catch (const ios::UserError&) {
    // Refused with a message: the expected outcome for most inputs.
  }
  return 0;
}
