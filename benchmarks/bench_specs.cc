#include "bench_specs.h"

#include "hwspec/host_probe.h"

namespace bench {

loom::HwSpec spec_named(const std::string& name) {
  if (name != "host256") return loom::load_hwspec(name);
  loom::HwSpec s = loom::detect_host_cpu();
  s.name = "host256";
  s.cpu.vector_bits = 256;
  s.cpu.vector_registers = 16;
  s.cpu.isa = {"sse4.2", "avx2", "fma"};
  loom::apply_probe(loom::probe_host(256, s.cpu.caches), s.cpu);
  return s;
}

}  // namespace bench
