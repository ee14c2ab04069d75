// libFuzzer target for the ONNX importer and everything a model reaches
// before scheduling: parse, checks, ONNX's checker and shape inference,
// constant folding, the IR and its passes, unit formation and blocks, and the
// simulated cost model's per-unit work. Any byte string must import or be
// refused with UserError; any other exception, a crash, a leak, undefined
// behaviour or a run past libFuzzer's -rss_limit_mb / -timeout is a finding.
// Built with -DIOS_FUZZ=ON; scripts/fuzz.sh runs it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/log.h"
#include "cost/unit_work.h"
#include "onnx/importer.h"
#include "sched/unit_graph.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ios::set_verbosity(ios::Verbosity::kQuiet);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    ios::onnx::ImportOptions options;
    options.batch = 1;  // symbolic batches are the common case; fix them
    // The path's folder is where external data would be read: a folder that
    // does not exist, so the target never reads the file system.
    const ios::onnx::ImportedModel model =
        ios::onnx::import_model_from_bytes(bytes, "/nonexistent-ios-fuzz/model.onnx", options);
    const ios::sched::UnitGraph units = ios::sched::UnitGraph::form(model.graph);
    for (ios::sched::UnitId u = 0; u < units.size(); ++u) (void)ios::cost::unit_work(units, u);
  } catch (const ios::UserError&) {
    // Refused with a message: the expected outcome for most inputs.
  }
  return 0;
}
