// The target a request names: the given spec, or the detected host.
#pragma once

#include "loom/hwspec.h"

namespace loom {

inline HwSpec resolve_target(const HwSpec& requested) {
  return requested.name.empty() ? detect_host_cpu() : requested;
}

}  // namespace loom
