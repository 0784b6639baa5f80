// The specs a benchmark can build for, by name: any bundled spec or spec
// file, the measured host, and the host restricted to AVX2.
#pragma once

#include <string>

#include "loom/hwspec.h"

namespace bench {

// `host256` is this core restricted to AVX2 (vector_bits 256, 16 registers,
// no avx512f: kernels are compiled as AVX2 code), its FMA and bandwidth
// figures measured again at 256 bits; any other name or path is loaded as a
// spec (`host`: the detected, cached host).
loom::HwSpec spec_named(const std::string& name);

}  // namespace bench
