#include "search/faults.h"

#include <cstdlib>
#include <sstream>

#include "loom/error.h"

namespace loom {

Fault FaultPlan::decide(uint64_t key) const {
  // splitmix64 of the key and seed, as a uniform number in [0, 1).
  uint64_t z = key + seed * 0x9e3779b97f4a7c15ULL + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  const double u = double(z >> 11) * 0x1.0p-53;
  if (u < crash) return Fault::Crash;
  if (u < crash + hang) return Fault::Hang;
  if (u < crash + hang + wrong) return Fault::Wrong;
  return Fault::None;
}

FaultPlan parse_faults(const std::string& text) {
  FaultPlan plan;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    LOOM_USER_CHECK(eq != std::string::npos, "LOOM_FAULTS entry '", item, "' is not <kind>=<value>");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    LOOM_USER_CHECK(!value.empty() && *end == '\0', "LOOM_FAULTS entry '", item, "': '", value, "' is not a number");
    if (key == "seed") {
      LOOM_USER_CHECK(v >= 0 && v < 1e15, "LOOM_FAULTS seed=", value, " must be in [0, 1e15)");
      plan.seed = uint64_t(v);
      continue;
    }
    LOOM_USER_CHECK(v >= 0 && v <= 1, "LOOM_FAULTS ", key, "=", value, " must be a fraction in [0, 1]");
    if (key == "crash") plan.crash = v;
    else if (key == "hang") plan.hang = v;
    else if (key == "wrong") plan.wrong = v;
    else throw UserError("LOOM_FAULTS kind '" + key + "' is unknown (known: crash, hang, wrong, seed)");
  }
  LOOM_USER_CHECK(plan.crash + plan.hang + plan.wrong <= 1, "LOOM_FAULTS fractions add up to more than 1: '", text,
                  "'");
  return plan;
}

FaultPlan faults_from_environment() {
  const char* env = std::getenv("LOOM_FAULTS");
  return env ? parse_faults(env) : FaultPlan{};
}

}  // namespace loom
