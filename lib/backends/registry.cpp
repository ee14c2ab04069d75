#include "backends/registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "cpu/cpu_backend.h"
#include "cuda/cuda_backend.h"
#include "sim_backend/sim_backend.h"

namespace ios::backends {
namespace {

std::vector<exec::BackendEntry>& registry() {
  static std::vector<exec::BackendEntry> entries = {
      cuda::backend_entry(),
      cpu::backend_entry(),
      sim_backend::backend_entry(),
  };
  return entries;
}

}  // namespace

const std::vector<exec::BackendEntry>& all() { return registry(); }

const exec::BackendEntry& find(const std::string& name) {
  for (const exec::BackendEntry& entry : registry()) {
    if (entry.name == name) return entry;
  }
  user_error("unknown backend '{}'; backends: {}", name, names());
}

std::string names() {
  std::vector<std::string> list;
  for (const exec::BackendEntry& entry : registry()) list.push_back(entry.name);
  return fmt::format("{}", fmt::join(list, ", "));
}

void register_backend(exec::BackendEntry entry) {
  for (const exec::BackendEntry& existing : registry()) {
    IOS_ASSERT(existing.name != entry.name, "backend '{}' registered twice", entry.name);
  }
  registry().push_back(std::move(entry));
}

}  // namespace ios::backends
