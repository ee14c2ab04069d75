#include "cli/help_text.h"

#include "sched/scheduler.h"

namespace ios::cli {

std::string scheduler_names() {
  std::string names;
  for (const sched::SchedulerEntry& entry : sched::scheduler_registry()) {
    names += (names.empty() ? "" : ", ") + entry.name;
  }
  return names;
}

}  // namespace ios::cli
