// What compile() and tune() share about a request: the target it names
// (the given spec, or the detected host) and its thread count's range.
#pragma once

#include "loom/compile.h"
#include "loom/error.h"
#include "loom/hwspec.h"

#include <string>

namespace loom {

// The thread count to run with: `requested` when the process may use that
// many CPUs, else the CPUs it may use, with `note` saying so. UserError
// outside [0, kMaxThreads].
inline int resolve_threads(int requested, std::string& note) {
  LOOM_USER_CHECK(requested >= 0 && requested <= kMaxThreads, "threads=", requested, " is outside [0, ", kMaxThreads,
                  "]");
  const int cpus = usable_cpus();
  if (requested <= cpus) return requested;
  note = "threads=" + std::to_string(requested) + " clamped to the " + std::to_string(cpus) +
         " CPUs this process may use";
  return cpus;
}

inline HwSpec resolve_target(const HwSpec& requested) {
  return requested.name.empty() ? detect_host_cpu() : requested;
}

}  // namespace loom
