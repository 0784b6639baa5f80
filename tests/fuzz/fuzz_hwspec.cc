// libFuzzer target: the hwspec parser. Any text must parse or fail with a
// UserError; nothing else may escape, crash or trip a sanitizer.
#include <cstddef>
#include <cstdint>
#include <string>

#include "loom/error.h"
#include "loom/hwspec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    loom::HwSpec spec = loom::parse_hwspec_yaml(std::string(reinterpret_cast<const char*>(data), size), "fuzz.yaml");
    (void)loom::hwspec_fingerprint(spec);
  } catch (const loom::UserError&) {
  }
  return 0;
}
