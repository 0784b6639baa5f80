// The one place hardware specs are parsed from YAML.
//
// Every field is checked: unknown keys (typos) are rejected, required keys
// must be present, values must have the right type and range, and the spec
// must be self-consistent. Errors name the file, the field and the value.
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "loom/error.h"
#include "loom/hwspec.h"

namespace loom {

namespace {

class Reader {
 public:
  Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& message) const {
    throw UserError(source_ + ": field '" + field + "': " + message);
  }

  // Rejects unknown and repeated keys (YAML maps may not repeat a key;
  // yaml-cpp would silently keep one of them).
  void only_keys(const YAML::Node& map, const std::string& where, const std::set<std::string>& allowed) const {
    if (!map.IsMap()) fail(where, "expected a mapping");
    std::set<std::string> seen;
    for (const auto& kv : map) {
      std::string key = kv.first.as<std::string>();
      if (!allowed.count(key)) {
        std::string all;
        for (const auto& a : allowed) all += (all.empty() ? "" : ", ") + a;
        fail(join(where, key), "unknown field (allowed: " + all + ")");
      }
      if (!seen.insert(key).second) fail(join(where, key), "given twice");
    }
  }

  // Fails unless `value` (of `field`) is at most `limit` (of `limit_name`).
  void at_most(const std::string& field, double value, const std::string& limit_name, double limit) const {
    if (value > limit)
      fail(field, "value '" + shortest(value) + "' exceeds " + limit_name + " " + shortest(limit));
  }

  static std::string join(const std::string& where, const std::string& key) {
    return where.empty() ? key : where + "." + key;
  }

  std::string text(const YAML::Node& map, const std::string& where, const std::string& key, bool required = true,
                   const std::string& fallback = "") const {
    YAML::Node v = map[key];
    if (!v) {
      if (required) fail(join(where, key), "missing");
      return fallback;
    }
    if (!v.IsScalar()) fail(join(where, key), "expected a scalar value");
    return v.Scalar();
  }

  double number(const YAML::Node& map, const std::string& where, const std::string& key, bool required,
                double fallback, double minimum, double maximum) const {
    std::string s = text(map, where, key, required, "");
    if (s.empty() && !required) return fallback;
    return parse_number(join(where, key), s, minimum, maximum);
  }

  // An optional list of at most `most` numbers, each in [minimum, maximum].
  std::vector<double> numbers(const YAML::Node& map, const std::string& where, const std::string& key, size_t most,
                              double minimum, double maximum) const {
    YAML::Node list = map[key];
    if (!list) return {};
    const std::string field = join(where, key);
    if (!list.IsSequence()) fail(field, "expected a list of numbers");
    if (list.size() > most) fail(field, "has " + std::to_string(list.size()) + " entries, at most " +
                                            std::to_string(most) + " allowed");
    std::vector<double> values;
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string item = field + "[" + std::to_string(i) + "]";
      if (!list[i].IsScalar()) fail(item, "expected a number");
      values.push_back(parse_number(item, list[i].Scalar(), minimum, maximum));
    }
    return values;
  }

  int64_t integer(const YAML::Node& map, const std::string& where, const std::string& key, bool required,
                  int64_t fallback, int64_t minimum, int64_t maximum) const {
    double v = number(map, where, key, required, double(fallback), double(minimum), double(maximum));
    if (v != std::floor(v)) fail(join(where, key), "value '" + text(map, where, key) + "' is not an integer");
    return int64_t(v);  // exact: within [minimum, maximum], both far below 2^53
  }

  // Sizes are bytes, or a number with a KiB/MiB/GiB (or KB/MB/GB) suffix.
  int64_t bytes(const YAML::Node& map, const std::string& where, const std::string& key, bool required,
                int64_t fallback, int64_t minimum, int64_t maximum) const {
    std::string s = text(map, where, key, required, "");
    if (s.empty() && !required) return fallback;
    std::istringstream is(s);
    double v = 0;
    std::string unit;
    if (!(is >> v) || !std::isfinite(v)) fail(join(where, key), "value '" + s + "' is not a size");
    is >> unit;
    double scale = unit.empty() || unit == "B" ? 1
                   : unit == "KiB" || unit == "KB" ? 1024.0
                   : unit == "MiB" || unit == "MB" ? 1024.0 * 1024
                   : unit == "GiB" || unit == "GB" ? 1024.0 * 1024 * 1024
                                                   : -1;
    if (scale < 0 || !is.eof()) fail(join(where, key), "value '" + s + "' has an unknown unit (use B, KiB, MiB, GiB)");
    const double b = v * scale;
    if (b < double(minimum) || b > double(maximum))
      fail(join(where, key), "value '" + s + "' is outside the physical range [" + std::to_string(minimum) + ", " +
                                 std::to_string(maximum) + "] bytes");
    if (b != std::floor(b)) fail(join(where, key), "value '" + s + "' is not a whole number of bytes");
    return int64_t(b);
  }

  double parse_number(const std::string& field, const std::string& s, double minimum, double maximum) const {
    double v = 0;
    std::istringstream is(s);
    if (!(is >> v) || !is.eof() || !std::isfinite(v)) fail(field, "value '" + s + "' is not a number");
    if (v < minimum || v > maximum)
      fail(field, "value '" + s + "' is outside the physical range [" + shortest(minimum) + ", " + shortest(maximum) +
                      "]");
    return v;
  }

  static std::string shortest(double v) {
    std::ostringstream os;
    os << v;
    return os.str();
  }

 private:
  std::string source_;
};

// Documents in `text`, counting up to `limit`. Not YAML::LoadAll: in
// yaml-cpp 0.7 it loops forever, allocating, on some malformed streams (a
// lone ',': jbeder/yaml-cpp#1040, fixed upstream by #1319), so the parser is
// driven here a bounded number of times.
int count_documents(const std::string& text, int limit) {
  struct Ignore : YAML::EventHandler {
    void OnDocumentStart(const YAML::Mark&) override {}
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
    void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnMapEnd() override {}
  } ignore;
  std::istringstream in(text);
  YAML::Parser parser(in);
  int count = 0;
  while (count < limit && parser.HandleNextDocument(ignore)) ++count;
  return count;
}

CpuSpec parse_cpu(const YAML::Node& n, const Reader& r) {
  r.only_keys(n, "cpu", {"cores", "threads_per_core", "vector_bits", "fma_units", "fma_latency",
                         "vector_registers", "frequency_ghz", "peak_gflops_per_core", "dram_bandwidth_gbs",
                         "dram_core_bandwidth_gbs", "dram_core_scattered_bandwidth_gbs", "load_bytes_per_cycle",
                         "broadcast_fma_cycles", "caches", "isa"});
  CpuSpec c;
  c.cores = int(r.integer(n, "cpu", "cores", true, 1, 1, 4096));
  c.threads_per_core = int(r.integer(n, "cpu", "threads_per_core", false, 1, 1, 8));
  c.vector_bits = int(r.integer(n, "cpu", "vector_bits", true, 128, 128, 512));
  if (c.vector_bits != 128 && c.vector_bits != 256 && c.vector_bits != 512)
    r.fail("cpu.vector_bits", "value '" + std::to_string(c.vector_bits) + "' must be 128, 256 or 512");
  c.fma_units = int(r.integer(n, "cpu", "fma_units", true, 1, 1, 8));
  c.fma_latency = int(r.integer(n, "cpu", "fma_latency", false, 4, 1, 64));
  c.vector_registers = int(r.integer(n, "cpu", "vector_registers", true, 16, 4, 256));
  c.frequency_ghz = r.number(n, "cpu", "frequency_ghz", true, 1.0, 0.1, 10);
  c.peak_gflops_per_core = r.number(n, "cpu", "peak_gflops_per_core", false, 0.0, 0.0, 1e5);
  if (c.peak_gflops_per_core == 0)
    c.peak_gflops_per_core = c.frequency_ghz * c.fma_units * c.fp32_lanes() * 2;
  c.dram_bandwidth_gbs = r.number(n, "cpu", "dram_bandwidth_gbs", true, 0.0, 0.1, 1e5);
  c.dram_core_bandwidth_gbs = r.number(n, "cpu", "dram_core_bandwidth_gbs", false, 0.0, 0.0, 1e5);
  r.at_most("cpu.dram_core_bandwidth_gbs", c.dram_core_bandwidth_gbs, "dram_bandwidth_gbs", c.dram_bandwidth_gbs);
  c.dram_core_scattered_bandwidth_gbs = r.number(n, "cpu", "dram_core_scattered_bandwidth_gbs", false, 0.0, 0.0, 1e5);
  r.at_most("cpu.dram_core_scattered_bandwidth_gbs", c.dram_core_scattered_bandwidth_gbs, "dram_core_bandwidth_gbs",
            c.dram_core_bandwidth_gbs);
  c.load_bytes_per_cycle = int(r.integer(n, "cpu", "load_bytes_per_cycle", false, 0, 0, 4096));
  c.broadcast_fma_cycles = r.number(n, "cpu", "broadcast_fma_cycles", false, 0.0, 0.0, 16);
  if (YAML::Node isa = n["isa"]) {
    if (!isa.IsSequence()) r.fail("cpu.isa", "expected a list of ISA extension names");
    for (const auto& e : isa) c.isa.push_back(e.as<std::string>());
  }
  YAML::Node caches = n["caches"];
  if (!caches) r.fail("cpu.caches", "missing");
  if (!caches.IsSequence() || caches.size() == 0) r.fail("cpu.caches", "expected a non-empty list of cache levels");
  for (size_t i = 0; i < caches.size(); ++i) {
    std::string where = "cpu.caches[" + std::to_string(i) + "]";
    const YAML::Node& cn = caches[i];
    r.only_keys(cn, where,
                {"name", "size", "line_bytes", "associativity", "shared_by_cores", "bandwidth_gbs",
                 "scattered_bandwidth_gbs", "crowded_set_cycles", "set_stream_cycles"});
    CacheLevel lvl;
    lvl.name = r.text(cn, where, "name");
    lvl.size_bytes = r.bytes(cn, where, "size", true, 0, 1024, int64_t(1) << 40);
    lvl.line_bytes = r.integer(cn, where, "line_bytes", false, 64, 8, 4096);
    if (lvl.line_bytes & (lvl.line_bytes - 1))
      r.fail(where + ".line_bytes", "value '" + std::to_string(lvl.line_bytes) + "' is not a power of two");
    lvl.associativity = r.integer(cn, where, "associativity", true, 8, 1, 4096);
    lvl.shared_by_cores = r.integer(cn, where, "shared_by_cores", false, 1, 1, 4096);
    lvl.bandwidth_gbs = r.number(cn, where, "bandwidth_gbs", false, 0.0, 0.0, 1e6);
    lvl.scattered_bandwidth_gbs = r.number(cn, where, "scattered_bandwidth_gbs", false, 0.0, 0.0, 1e6);
    r.at_most(where + ".scattered_bandwidth_gbs", lvl.scattered_bandwidth_gbs, "bandwidth_gbs", lvl.bandwidth_gbs);
    lvl.crowded_set_cycles = r.numbers(cn, where, "crowded_set_cycles", 64, 0.0, 1e4);
    lvl.set_stream_cycles = r.numbers(cn, where, "set_stream_cycles", 16, 0.0, 1e4);
    // Both products stay below 2^52: size <= 2^40, shared_by_cores <= 2^12.
    if (!c.caches.empty() && lvl.size_bytes * lvl.shared_by_cores <=
                                 c.caches.back().size_bytes * c.caches.back().shared_by_cores)
      r.fail(where + ".size", "cache levels must grow outward, but " + lvl.name + " is not larger than " +
                                  c.caches.back().name);
    c.caches.push_back(lvl);
  }
  return c;
}

GpuSpec parse_gpu(const YAML::Node& n, const Reader& r) {
  r.only_keys(n, "gpu", {"compute_capability", "sms", "warp_size", "max_threads_per_block", "max_threads_per_sm",
                         "max_blocks_per_sm", "shared_memory_per_block", "shared_memory_per_sm", "registers_per_sm",
                         "max_registers_per_thread", "l2", "dram_bandwidth_gbs", "peak_fp32_tflops", "clock_ghz",
                         "shared_memory_banks", "l2_bandwidth_gbs"});
  GpuSpec g;
  g.compute_capability = r.text(n, "gpu", "compute_capability");
  const std::string& cc = g.compute_capability;
  const size_t dot = cc.find('.');
  if (dot == 0 || dot == std::string::npos || dot + 1 == cc.size() ||
      cc.find_first_not_of("0123456789.") != std::string::npos || cc.find('.', dot + 1) != std::string::npos)
    r.fail("gpu.compute_capability", "value '" + cc + "' is not of the form MAJOR.MINOR (e.g. \"9.0\")");
  g.sms = int(r.integer(n, "gpu", "sms", true, 1, 1, 4096));
  g.warp_size = int(r.integer(n, "gpu", "warp_size", true, 32, 1, 128));
  g.max_threads_per_block = int(r.integer(n, "gpu", "max_threads_per_block", true, 1024, 1, 8192));
  g.max_threads_per_sm = int(r.integer(n, "gpu", "max_threads_per_sm", true, 2048, 1, 65536));
  g.max_blocks_per_sm = int(r.integer(n, "gpu", "max_blocks_per_sm", true, 32, 1, 1024));
  g.shared_memory_per_block = r.bytes(n, "gpu", "shared_memory_per_block", true, 0, 1024, int64_t(1) << 30);
  g.shared_memory_per_sm = r.bytes(n, "gpu", "shared_memory_per_sm", true, 0, 1024, int64_t(1) << 30);
  g.registers_per_sm = r.integer(n, "gpu", "registers_per_sm", true, 65536, 1024, int64_t(1) << 24);
  g.max_registers_per_thread = int(r.integer(n, "gpu", "max_registers_per_thread", true, 255, 16, 4096));
  g.l2_bytes = r.bytes(n, "gpu", "l2", true, 0, 1024, int64_t(1) << 40);
  g.dram_bandwidth_gbs = r.number(n, "gpu", "dram_bandwidth_gbs", true, 0, 0.1, 1e6);
  g.peak_fp32_tflops = r.number(n, "gpu", "peak_fp32_tflops", true, 0, 0.001, 1e5);
  g.clock_ghz = r.number(n, "gpu", "clock_ghz", true, 1.0, 0.1, 10);
  g.shared_memory_banks = int(r.integer(n, "gpu", "shared_memory_banks", false, 32, 1, 1024));
  g.l2_bandwidth_gbs = r.number(n, "gpu", "l2_bandwidth_gbs", false, 0, 0.1, 1e6);
  if (g.max_threads_per_block % g.warp_size != 0)
    r.fail("gpu.max_threads_per_block", "value '" + std::to_string(g.max_threads_per_block) +
                                            "' is not a multiple of warp_size " + std::to_string(g.warp_size));
  if (g.max_threads_per_block > g.max_threads_per_sm)
    r.fail("gpu.max_threads_per_block", "value '" + std::to_string(g.max_threads_per_block) +
                                            "' exceeds max_threads_per_sm " + std::to_string(g.max_threads_per_sm));
  if (g.shared_memory_per_block > g.shared_memory_per_sm)
    r.fail("gpu.shared_memory_per_block", "value '" + std::to_string(g.shared_memory_per_block) +
                                              "' exceeds shared_memory_per_sm " + std::to_string(g.shared_memory_per_sm));
  return g;
}

}  // namespace

HwSpec parse_hwspec_yaml(const std::string& yaml_text, const std::string& source) {
  Reader r(source);
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
    if (!root || !root.IsMap()) throw UserError(source + ": expected a YAML mapping with name, kind and cpu/gpu");
    if (count_documents(yaml_text, 2) > 1)
      throw UserError(source + ": holds more than one YAML document; a hwspec is one");
  } catch (const YAML::Exception& e) {
    throw UserError(source + ": malformed YAML at line " + std::to_string(e.mark.line + 1) + ", column " +
                    std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  try {
    r.only_keys(root, "", {"name", "kind", "description", "cpu", "gpu"});
    HwSpec spec;
    spec.source = source;
    spec.name = r.text(root, "", "name");
    std::string kind = r.text(root, "", "kind");
    if (kind == "cpu") {
      spec.kind = TargetKind::Cpu;
      if (!root["cpu"]) r.fail("cpu", "missing (kind is cpu)");
      if (root["gpu"]) r.fail("gpu", "present but kind is cpu");
      spec.cpu = parse_cpu(root["cpu"], r);
    } else if (kind == "gpu") {
      spec.kind = TargetKind::Gpu;
      if (!root["gpu"]) r.fail("gpu", "missing (kind is gpu)");
      if (root["cpu"]) r.fail("cpu", "present but kind is gpu");
      spec.gpu = parse_gpu(root["gpu"], r);
    } else {
      r.fail("kind", "value '" + kind + "' must be cpu or gpu");
    }
    return spec;
  } catch (const YAML::Exception& e) {
    throw UserError(source + ": invalid value at line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
}

HwSpec load_hwspec_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UserError("cannot read hwspec file '" + path + "': " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_hwspec_yaml(ss.str(), path);
}

namespace {

void emit_cpu(YAML::Emitter& out, const CpuSpec& c) {
  out << YAML::Key << "cpu" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "cores" << YAML::Value << c.cores;
  out << YAML::Key << "threads_per_core" << YAML::Value << c.threads_per_core;
  out << YAML::Key << "frequency_ghz" << YAML::Value << c.frequency_ghz;
  out << YAML::Key << "vector_bits" << YAML::Value << c.vector_bits;
  out << YAML::Key << "fma_units" << YAML::Value << c.fma_units;
  out << YAML::Key << "fma_latency" << YAML::Value << c.fma_latency;
  out << YAML::Key << "vector_registers" << YAML::Value << c.vector_registers;
  out << YAML::Key << "peak_gflops_per_core" << YAML::Value << c.peak_gflops_per_core;
  out << YAML::Key << "dram_bandwidth_gbs" << YAML::Value << c.dram_bandwidth_gbs;
  if (c.dram_core_bandwidth_gbs > 0)
    out << YAML::Key << "dram_core_bandwidth_gbs" << YAML::Value << c.dram_core_bandwidth_gbs;
  if (c.dram_core_scattered_bandwidth_gbs > 0)
    out << YAML::Key << "dram_core_scattered_bandwidth_gbs" << YAML::Value << c.dram_core_scattered_bandwidth_gbs;
  if (c.load_bytes_per_cycle > 0) out << YAML::Key << "load_bytes_per_cycle" << YAML::Value << c.load_bytes_per_cycle;
  if (c.broadcast_fma_cycles > 0) out << YAML::Key << "broadcast_fma_cycles" << YAML::Value << c.broadcast_fma_cycles;
  out << YAML::Key << "isa" << YAML::Value << YAML::Flow << c.isa;
  out << YAML::Key << "caches" << YAML::Value << YAML::BeginSeq;
  for (const CacheLevel& l : c.caches) {
    out << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "name" << YAML::Value << l.name;
    out << YAML::Key << "size" << YAML::Value << l.size_bytes;
    out << YAML::Key << "line_bytes" << YAML::Value << l.line_bytes;
    out << YAML::Key << "associativity" << YAML::Value << l.associativity;
    out << YAML::Key << "shared_by_cores" << YAML::Value << l.shared_by_cores;
    if (l.bandwidth_gbs > 0) out << YAML::Key << "bandwidth_gbs" << YAML::Value << l.bandwidth_gbs;
    if (l.scattered_bandwidth_gbs > 0)
      out << YAML::Key << "scattered_bandwidth_gbs" << YAML::Value << l.scattered_bandwidth_gbs;
    if (!l.crowded_set_cycles.empty())
      out << YAML::Key << "crowded_set_cycles" << YAML::Value << YAML::Flow << l.crowded_set_cycles;
    if (!l.set_stream_cycles.empty())
      out << YAML::Key << "set_stream_cycles" << YAML::Value << YAML::Flow << l.set_stream_cycles;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
}

void emit_gpu(YAML::Emitter& out, const GpuSpec& g) {
  out << YAML::Key << "gpu" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "compute_capability" << YAML::Value << YAML::DoubleQuoted << g.compute_capability;
  out << YAML::Key << "sms" << YAML::Value << g.sms;
  out << YAML::Key << "warp_size" << YAML::Value << g.warp_size;
  out << YAML::Key << "max_threads_per_block" << YAML::Value << g.max_threads_per_block;
  out << YAML::Key << "max_threads_per_sm" << YAML::Value << g.max_threads_per_sm;
  out << YAML::Key << "max_blocks_per_sm" << YAML::Value << g.max_blocks_per_sm;
  out << YAML::Key << "shared_memory_per_block" << YAML::Value << g.shared_memory_per_block;
  out << YAML::Key << "shared_memory_per_sm" << YAML::Value << g.shared_memory_per_sm;
  out << YAML::Key << "registers_per_sm" << YAML::Value << g.registers_per_sm;
  out << YAML::Key << "max_registers_per_thread" << YAML::Value << g.max_registers_per_thread;
  out << YAML::Key << "l2" << YAML::Value << g.l2_bytes;
  out << YAML::Key << "dram_bandwidth_gbs" << YAML::Value << g.dram_bandwidth_gbs;
  out << YAML::Key << "peak_fp32_tflops" << YAML::Value << g.peak_fp32_tflops;
  out << YAML::Key << "clock_ghz" << YAML::Value << g.clock_ghz;
  out << YAML::Key << "shared_memory_banks" << YAML::Value << g.shared_memory_banks;
  if (g.l2_bandwidth_gbs > 0) out << YAML::Key << "l2_bandwidth_gbs" << YAML::Value << g.l2_bandwidth_gbs;
  out << YAML::EndMap;
}

}  // namespace

std::string hwspec_to_yaml(const HwSpec& spec) {
  YAML::Emitter out;
  out.SetDoublePrecision(6);
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << spec.name;
  out << YAML::Key << "kind" << YAML::Value << (spec.kind == TargetKind::Cpu ? "cpu" : "gpu");
  if (spec.kind == TargetKind::Cpu)
    emit_cpu(out, spec.cpu);
  else
    emit_gpu(out, spec.gpu);
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace loom
