// Compiled twice by the "compile:" tests (test/CMakeLists.txt): as shipped,
// and with IOS_TEST_EXTRA_ELEMENT_TYPE, which adds a fourth line to the
// element-type table (ir/element_type.h). The second must not compile: every
// switch over ElementType has no default, and -Werror=switch refuses the one
// that does not handle the new type. Nothing here is run.
#include "ir/element_type.h"
#include "ir/precision.h"

namespace ios::ir {

// Each function that converts by type, instantiated on every type of the
// table (the switches are in the header; this makes their use explicit).
float round_trip_every_type(float x) {
  float sum = 0.0f;
  for (const ElementTypeInfo& t : kElementTypes) {
    sum += round_to(x, t.type) + from_bits(to_bits(x, t.type), t.type);
  }
  return sum;
}

}  // namespace ios::ir
