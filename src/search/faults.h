// Injected measurement faults, for testing that tuning survives bad candidates.
//
// LOOM_FAULTS=crash=0.2,hang=0.1,wrong=0.1[,seed=N] makes the measurement
// worker crash (SIGSEGV), hang (sleep until killed) or corrupt a kernel's
// outputs for those fractions of candidates. The choice is a deterministic
// function of the candidate's state and the seed, so a candidate that
// faulted once faults again. Only isolated (worker-process) measurement
// injects faults: in process there is nothing to protect loom with.
#pragma once

#include <cstdint>
#include <string>

namespace loom {

enum class Fault { None, Crash, Hang, Wrong };

struct FaultPlan {
  double crash = 0, hang = 0, wrong = 0;
  uint64_t seed = 0;
  bool any() const { return crash > 0 || hang > 0 || wrong > 0; }
  // The fault for the candidate whose state hashes to `key`.
  Fault decide(uint64_t key) const;
};

// Parses the LOOM_FAULTS syntax; UserError naming the bad entry.
FaultPlan parse_faults(const std::string& text);
// The plan in the environment (no faults when LOOM_FAULTS is unset).
FaultPlan faults_from_environment();

}  // namespace loom
