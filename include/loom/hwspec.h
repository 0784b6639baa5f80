// Hardware descriptions read by legality checks and the analytic model.
//
// A HwSpec is a plain struct: parsing (YAML, one place: src/hwspec/) and host
// detection fill it; everything else only reads it. The YAML schema is
// documented in hwspecs/README.md, field for field with this struct.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace loom {

// The run length the scattered bandwidths below are defined at (and the
// host probe reads): 256-byte runs, each in a row 16 KiB from the last.
constexpr int64_t kScatteredRunBytes = 256;

struct CacheLevel {
  std::string name;          // "L1d", "L2", "L3"
  int64_t size_bytes = 0;    // capacity of one instance
  int64_t line_bytes = 64;
  int64_t associativity = 8;
  int64_t shared_by_cores = 1;  // cores sharing one instance
  double bandwidth_gbs = 0;     // per core; 0 when unknown
  // Per core, read in runs of kScatteredRunBytes scattered over rows, where
  // no prefetcher helps; 0 when unknown (taken as bandwidth_gbs).
  double scattered_bandwidth_gbs = 0;
  // Cycles a micro-kernel step pays beyond its compute when the lines it
  // reads in place fall in one set of this cache, associativity + 0, 1,
  // 2, ... of them (measured on L1). Empty when unknown: each line past the
  // associativity is then refilled from the next level once a step.
  std::vector<double> crowded_set_cycles;
  // Cycles per line this cache is refilled at from the next level when the
  // lines of a stream, each read once, fall in 1, 2, 4, ... of its sets (a
  // micro-kernel's steps reading rows in place a multiple of a way apart:
  // the refills of one set queue behind each other). The list ends where a
  // stream that spread runs as fast as one over all sets. Measured on L1;
  // empty when unknown: no such limit.
  std::vector<double> set_stream_cycles;

  // Bytes of it that are one core's: all of a private cache, its share of a shared one.
  double core_share() const { return double(size_bytes) / double(shared_by_cores > 1 ? shared_by_cores : 1); }
};

struct CpuSpec {
  int cores = 1;
  int threads_per_core = 1;
  int vector_bits = 128;   // widest usable SIMD register
  int fma_units = 1;       // vector FMA pipes per core
  int fma_latency = 4;     // cycles
  int vector_registers = 16;
  double frequency_ghz = 1.0;
  double peak_gflops_per_core = 0;  // fp32; derived when absent
  double dram_bandwidth_gbs = 0;       // the whole machine's
  double dram_core_bandwidth_gbs = 0;  // what one core reads alone; 0 when unknown
  double dram_core_scattered_bandwidth_gbs = 0;  // the same in short scattered runs (see CacheLevel); 0: unknown
  int load_bytes_per_cycle = 0;     // L1 load bandwidth; 0: two full vectors
  // Cycles per FMA whose other operand is broadcast from memory, in a stream
  // of them (an outer-product step); 0: unknown (half a cycle, two ports).
  double broadcast_fma_cycles = 0;
  std::vector<CacheLevel> caches;  // innermost first
  std::vector<std::string> isa;    // e.g. {"avx2", "fma", "avx512f"}

  int fp32_lanes() const { return vector_bits / 32; }
  int load_bytes() const { return load_bytes_per_cycle > 0 ? load_bytes_per_cycle : vector_bits / 4; }
};

struct GpuSpec {
  int sms = 1;
  int warp_size = 32;
  int max_threads_per_block = 1024;
  int max_threads_per_sm = 2048;
  int max_blocks_per_sm = 32;
  int64_t shared_memory_per_block = 48 * 1024;
  int64_t shared_memory_per_sm = 96 * 1024;
  int64_t registers_per_sm = 65536;
  int max_registers_per_thread = 255;
  int64_t l2_bytes = 0;
  double dram_bandwidth_gbs = 0;
  double peak_fp32_tflops = 0;
  double clock_ghz = 1.0;
  int shared_memory_banks = 32;    // 4-byte banks
  double l2_bandwidth_gbs = 0;     // 0: unknown (the model assumes 3x DRAM)
  std::string compute_capability;  // "9.0"
};

enum class TargetKind { Cpu, Gpu };

struct HwSpec {
  std::string name;
  std::string source;  // file it came from, or "detected"
  TargetKind kind = TargetKind::Cpu;
  CpuSpec cpu;  // valid when kind == Cpu
  GpuSpec gpu;  // valid when kind == Gpu
};

// Loads a spec by name ("host", "skylake_avx512", "h100", ...) from the
// bundled hwspecs/ folder, or from a path to a YAML file. "host" is detected
// at run time (cpuid + sysfs). Throws UserError naming the file, field and
// value for a malformed or inconsistent spec, or the name when unknown.
HwSpec load_hwspec(const std::string& name_or_path);
HwSpec parse_hwspec_yaml(const std::string& yaml_text, const std::string& source);
// The spec as YAML in the hwspecs/ schema; parse_hwspec_yaml reads it back
// to a spec with the same fingerprint.
std::string hwspec_to_yaml(const HwSpec& spec);
HwSpec detect_host_cpu();
std::vector<std::string> bundled_hwspec_names();
// A short hash of every field of `spec` (not its name or source): records of
// measurements match a spec by it.
std::string hwspec_fingerprint(const HwSpec& spec);

}  // namespace loom
