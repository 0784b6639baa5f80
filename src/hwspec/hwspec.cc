// Finding hardware specs by name, and detecting the host CPU.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <optional>
#include <set>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "loom/error.h"
#include "hwspec/host_probe.h"
#include "loom/hwspec.h"
#include "support/files.h"

namespace loom {

HwSpec load_hwspec_file(const std::string& path);  // hwspec_yaml.cc

namespace {

bool is_file(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

int64_t parse_sysfs_size(const std::string& s) {  // "48K", "2048K", "32768K"
  if (s.empty()) return 0;
  int64_t v = std::stoll(s);
  char unit = s.back();
  return unit == 'K' ? v * 1024 : unit == 'M' ? v * 1024 * 1024 : v;
}

int count_cpus_in_list(const std::string& list) {  // "0-3,8"
  int n = 0;
  size_t pos = 0;
  while (pos < list.size()) {
    size_t comma = list.find(',', pos);
    std::string part = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    size_t dash = part.find('-');
    n += dash == std::string::npos ? 1 : std::stoi(part.substr(dash + 1)) - std::stoi(part.substr(0, dash)) + 1;
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return n;
}

}  // namespace

std::vector<std::string> bundled_hwspec_names() {
  std::vector<std::string> names{"host"};
  if (DIR* d = opendir(hwspec_directory().c_str())) {
    while (dirent* e = readdir(d)) {
      std::string f = e->d_name;
      if (f.size() > 5 && f.substr(f.size() - 5) == ".yaml") names.push_back(f.substr(0, f.size() - 5));
    }
    closedir(d);
  }
  std::sort(names.begin() + 1, names.end());
  return names;
}

HwSpec load_hwspec(const std::string& name_or_path) {
  if (name_or_path.empty() || name_or_path == "host") return detect_host_cpu();
  if (is_file(name_or_path)) return load_hwspec_file(name_or_path);
  const std::string dir = hwspec_directory();
  LOOM_USER_CHECK(!dir.empty() || name_or_path.find('/') != std::string::npos, "hwspec '", name_or_path,
                  "': the bundled hwspecs were not found (share/loom/hwspecs beside the library); set LOOM_HWSPEC_DIR");
  std::string bundled = dir + "/" + name_or_path + ".yaml";
  if (is_file(bundled)) return load_hwspec_file(bundled);
  struct stat st;
  if (stat(name_or_path.c_str(), &st) == 0)
    throw UserError("hwspec '" + name_or_path + "' exists but is " +
                    (S_ISDIR(st.st_mode) ? "a directory" : "not a regular file") + "; give a YAML file or a bundled name");
  std::string known;
  for (const auto& n : bundled_hwspec_names()) known += (known.empty() ? "" : ", ") + n;
  throw UserError("unknown hwspec '" + name_or_path + "': no such file and not a bundled spec (" + known + ")");
}

namespace {

// What cpuid and sysfs tell: core count, vector ISA, register file, caches.
HwSpec detect_host_structure() {
  HwSpec spec;
  spec.name = "host";
  spec.source = "detected";
  spec.kind = TargetKind::Cpu;
  CpuSpec& c = spec.cpu;
  c.cores = int(std::max(1u, std::thread::hardware_concurrency()));
  std::string siblings = read_line("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list");
  c.threads_per_core = siblings.empty() ? 1 : std::max(1, count_cpus_in_list(siblings));
  c.cores = std::max(1, c.cores / c.threads_per_core);

  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    c.vector_bits = 512;
    c.vector_registers = 32;
    c.isa = {"sse4.2", "avx2", "fma", "avx512f"};
  } else if (__builtin_cpu_supports("avx2")) {
    c.vector_bits = 256;
    c.vector_registers = 16;
    c.isa = {"sse4.2", "avx2"};
    if (__builtin_cpu_supports("fma")) c.isa.push_back("fma");
  } else {
    c.vector_bits = 128;
    c.vector_registers = 16;
  }
  // Placeholders until the probe measures them (it does on every x86 core
  // with FMA); the nominal clock is a last resort, often far from the real one.
  c.fma_units = 1;
  c.fma_latency = 4;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("cpu MHz", 0) == 0) {
      c.frequency_ghz = std::stod(line.substr(line.find(':') + 1)) / 1000.0;
      break;
    }
  }
  if (c.frequency_ghz < 0.5) c.frequency_ghz = 2.0;
  c.peak_gflops_per_core = c.frequency_ghz * c.fma_units * c.fp32_lanes() * 2;
  c.dram_bandwidth_gbs = 20.0 * c.cores;  // rough per-core share; not detectable cheaply

  for (int i = 0; i < 8; ++i) {
    std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::string type = read_line(dir + "type");
    if (type.empty()) break;
    if (type == "Instruction") continue;
    CacheLevel lvl;
    lvl.name = "L" + read_line(dir + "level") + (type == "Data" ? "d" : "");
    lvl.size_bytes = parse_sysfs_size(read_line(dir + "size"));
    std::string line = read_line(dir + "coherency_line_size"), ways = read_line(dir + "ways_of_associativity");
    lvl.line_bytes = line.empty() ? 64 : std::stoll(line);
    lvl.associativity = ways.empty() || std::stoll(ways) <= 0 ? 8 : std::stoll(ways);
    std::string shared = read_line(dir + "shared_cpu_list");
    lvl.shared_by_cores = shared.empty() ? 1 : std::max(1, count_cpus_in_list(shared) / c.threads_per_core);
    if (lvl.size_bytes > 0) c.caches.push_back(lvl);
  }
  if (c.caches.empty()) {  // containers without sysfs cache info
    c.caches = {{"L1d", 32 << 10, 64, 8, 1, 0, 0, {}}, {"L2", 1 << 20, 64, 16, 1, 0, 0, {}},
                {"L3", 32 << 20, 64, 16, c.cores, 0, 0, {}}};
  }
  return spec;
}

// The CPU model as /proc/cpuinfo names it, with family, model and stepping
// (the first processor's entry).
std::string cpu_model_text() {
  static const std::set<std::string> keys{"vendor_id", "cpu family", "model", "model name", "stepping"};
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string text;
  for (std::string line; std::getline(cpuinfo, line) && !line.empty();) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    if (keys.count(key)) text += line + "\n";
  }
  return text;
}

// A cached host spec: YAML in the hwspecs/ schema behind comment lines
// naming the CPU and the measurement, then a checksum line.
std::optional<HwSpec> read_cached_host(const std::string& path) {
  std::optional<std::string> text = read_whole_file(path);
  if (!text) return std::nullopt;
  try {
    std::optional<std::string> body = body_if_checksum_matches(*text);
    if (!body) throw UserError("checksum mismatch (truncated or edited)");
    HwSpec spec = parse_hwspec_yaml(*body, path);
    spec.source = "cached in " + path;
    return spec;
  } catch (const UserError& e) {
    std::fprintf(stderr, "loom: warning: ignoring the cached host spec '%s': %s; measuring the host again\n",
                 path.c_str(), e.what());
    return std::nullopt;
  }
}

void write_cached_host(const std::string& path, const std::string& key, const HwSpec& spec) {
  std::string body = "# loom host spec for:\n";
  std::istringstream key_lines(key);
  for (std::string line; std::getline(key_lines, line);) body += "#   " + line + "\n";
  body += "# " + spec.source + "\n" + hwspec_to_yaml(spec);
  const std::string error = write_file_atomically(path, with_checksum_line(body));
  if (!error.empty()) std::fprintf(stderr, "loom: warning: the host spec is not cached: %s\n", error.c_str());
}

// What the probe measured, for the spec's source line.
std::string describe(const HostProbe& probe) {
  std::ostringstream note;
  note.precision(4);
  note << "measured in " << probe.elapsed_ms << " ms:";
  for (const FmaProbe& f : probe.fma)
    note << " fma" << f.vector_bits << " " << f.gflops << " GFLOP/s latency " << f.latency_cycles << ";";
  note << " clock " << probe.frequency_ghz << " GHz";
  return note.str();
}

HwSpec measure_host() {
  HwSpec spec = detect_host_structure();
  const std::string key = cpu_model_text() + "vector_bits=" + std::to_string(spec.cpu.vector_bits) +
                          " loom=" LOOM_VERSION " probe=6\n";
  std::string path;
  try {
    path = cache_directory() + "/host-" + fnv1a_hex(key) + ".yaml";
  } catch (const UserError& e) {
    std::fprintf(stderr, "loom: warning: %s; the host spec is measured but not cached\n", e.what());
  }
  if (!path.empty())
    if (std::optional<HwSpec> cached = read_cached_host(path)) return *cached;
  const HostProbe probe = probe_host(spec.cpu.vector_bits, spec.cpu.caches);
  apply_probe(probe, spec.cpu);
  spec.source = describe(probe);
  if (!path.empty()) write_cached_host(path, key, spec);
  return spec;
}

}  // namespace

HwSpec detect_host_cpu() {
  static const HwSpec host = measure_host();  // once per process; thread-safe
  return host;
}

}  // namespace loom

namespace loom {

std::string hwspec_fingerprint(const HwSpec& s) {
  // FNV-1a over every field that legality or the model reads.
  std::ostringstream os;
  os.precision(3);  // detected frequencies wobble in the last digits
  const CpuSpec& c = s.cpu;
  const GpuSpec& g = s.gpu;
  os << int(s.kind) << ';' << c.cores << ';' << c.threads_per_core << ';' << c.vector_bits << ';' << c.fma_units << ';'
     << c.fma_latency << ';' << c.vector_registers << ';' << c.frequency_ghz << ';' << c.peak_gflops_per_core << ';'
     << c.dram_bandwidth_gbs << ';' << c.dram_core_bandwidth_gbs << ';' << c.dram_core_scattered_bandwidth_gbs << ';'
     << c.load_bytes_per_cycle << ';' << c.broadcast_fma_cycles << ';';
  for (const CacheLevel& l : c.caches) {
    os << l.name << ',' << l.size_bytes << ',' << l.line_bytes << ',' << l.associativity << ',' << l.shared_by_cores
       << ',' << l.bandwidth_gbs << ',' << l.scattered_bandwidth_gbs;
    for (double cycles : l.crowded_set_cycles) os << ',' << cycles;
    os << '/';
    for (double cycles : l.set_stream_cycles) os << ',' << cycles;
    os << ';';
  }
  for (const std::string& i : c.isa) os << i << ',';
  os << ';' << g.sms << ';' << g.warp_size << ';' << g.max_threads_per_block << ';' << g.max_threads_per_sm << ';'
     << g.max_blocks_per_sm << ';' << g.shared_memory_per_block << ';' << g.shared_memory_per_sm << ';'
     << g.registers_per_sm << ';' << g.max_registers_per_thread << ';' << g.l2_bytes << ';' << g.dram_bandwidth_gbs
     << ';' << g.peak_fp32_tflops << ';' << g.clock_ghz << ';' << g.compute_capability;
  return fnv1a_hex(os.str());
}

}  // namespace loom
