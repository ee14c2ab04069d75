// libFuzzer target for device profiles (--device-profile FILE.json): any
// byte string must give a profile or a UserError. An accepted profile must
// also survive its own round trip (device_profile_json, then the parser),
// which is what --calibrate relies on when it writes one.
// Built with -DIOS_FUZZ=ON; scripts/fuzz.sh runs it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "core/log.h"
#include "cost/device_profile.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ios::set_verbosity(ios::Verbosity::kQuiet);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  ios::cost::DeviceProfile profile;
  try {
    profile = ios::cost::parse_device_profile(text, "fuzz.json");
  } catch (const ios::UserError&) {
    return 0;  // refused with a message: the expected outcome for most inputs
  }
  // Not caught: a refusal here is a finding (abort through the uncaught exception).
  const ios::cost::DeviceProfile again =
      ios::cost::parse_device_profile(ios::cost::device_profile_json(profile), "round trip");
  if (again.name != profile.name || again.sm_count != profile.sm_count ||
      again.compute_efficiency != profile.compute_efficiency) {
    std::abort();
  }
  return 0;
}
