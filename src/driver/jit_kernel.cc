// The dynamic-shape runtime: dispatch by bound sizes, generic kernels per
// bucket, background specialization and its swap, eviction.
#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <unordered_map>

#include "driver/buffer_call.h"
#include "driver/cached_build.h"
#include "driver/compile_schedule.h"
#include "driver/target.h"
#include "ir/expr_nodes.h"
#include "ir/size_binding.h"
#include "loom/error.h"
#include "loom/jit.h"
#include "runtime/compile_queue.h"
#include "runtime/thread_pool.h"
#include "support/files.h"

namespace loom {

const char* to_string(ServedBy s) {
  switch (s) {
    case ServedBy::Generic: return "generic";
    case ServedBy::Specialized: return "specialized";
    case ServedBy::Disk: return "disk";
  }
  return "?";
}

class RuntimeImpl {
 public:
  explicit RuntimeImpl(const RuntimeOptions& o) : options(o) {
    LOOM_USER_CHECK(o.compile_threads >= 1 && o.compile_threads <= kMaxCompileThreads, "compile_threads=",
                    o.compile_threads, " is outside [1, ", kMaxCompileThreads, "]");
    check_cpus_usable(o.compile_cpus, "compile_cpus");
    LOOM_USER_CHECK(o.cache_max_mb >= 1 && o.cache_max_mb <= (int64_t(1) << 20), "cache_max_mb=", o.cache_max_mb,
                    " is outside [1, 1048576]");
    if (o.disk_cache) {
      cache_dir = o.cache_dir.empty() ? cache_directory() : o.cache_dir;
      cache = std::make_unique<KernelCache>(cache_dir, o.cache_max_mb << 20);
    }
    queue = std::make_unique<CompileQueue>(o.compile_threads, o.compile_cpus);
  }

  RuntimeOptions options;
  std::string cache_dir;
  std::unique_ptr<KernelCache> cache;
  std::unique_ptr<CompileQueue> queue;  // reset when the Runtime is destroyed
  std::mutex queue_mutex;
};

namespace {

// Bound sizes, op.size_vars order; unused slots are 0.
struct SizeKey {
  std::array<int64_t, kMaxSymbolicSizes> v{};
  bool operator==(const SizeKey& o) const { return v == o.v; }
  bool operator<(const SizeKey& o) const { return v < o.v; }
};
struct SizeKeyHash {
  size_t operator()(const SizeKey& k) const {
    uint64_t h = 1469598103934665603ULL;
    for (int64_t x : k.v) h = (h ^ uint64_t(x)) * 1099511628211ULL;
    return size_t(h ^ (h >> 29));
  }
};

std::vector<int64_t> to_vector(const SizeKey& k, size_t n) { return {k.v.begin(), k.v.begin() + long(n)}; }

// Every size rounded up to a power of two: the bucket a generic kernel serves.
SizeKey bucket_of(const SizeKey& k) {
  SizeKey b;
  for (size_t i = 0; i < k.v.size(); ++i) b.v[i] = k.v[i] > 0 ? int64_t(std::bit_ceil(uint64_t(k.v[i]))) : 0;
  return b;
}

double bucket_distance(const SizeKey& a, const SizeKey& b) {
  double d = 0;
  for (size_t i = 0; i < a.v.size(); ++i)
    if (a.v[i] > 0) d += std::abs(std::log2(double(a.v[i])) - std::log2(double(b.v[i])));
  return d;
}

struct Code {
  std::unique_ptr<codegen::CompiledFunction> fn;
  std::string schedule;
  ServedBy kind = ServedBy::Generic;
};
using CodeRef = std::shared_ptr<const Code>;

struct ShapeEntry {
  ExpectedBuffers buffers;                   // what calls of this shape pass
  CodeRef serving;                           // specialized when ready, else a generic kernel
  bool special = false;                      // serving is this shape's own kernel
  std::atomic<int64_t> hits{0};
  std::atomic<uint64_t> last_use{0};
  std::atomic<bool> queued{false};           // a specialization is queued or running (or failed)
};

}  // namespace

class JitKernelImpl : public std::enable_shared_from_this<JitKernelImpl> {
 public:
  JitKernelImpl(const Operator& o, const JitOptions& opts, std::shared_ptr<RuntimeImpl> rt)
      : op(o), options(opts), runtime(std::move(rt)) {
    check_compile_options(options.compile);
    LOOM_USER_CHECK(options.compile.top_k == 1, "jit: top_k=", options.compile.top_k,
                    " is not supported (kernels are built unmeasured, in the background); use 1");
    LOOM_USER_CHECK(options.specialize_after >= 1 && options.specialize_after <= 1000000000, "specialize_after=",
                    options.specialize_after, " is outside [1, 1000000000]");
    LOOM_USER_CHECK(options.max_specialized >= 0 && options.max_specialized <= 1000000, "max_specialized=",
                    options.max_specialized, " is outside [0, 1000000]");
    LOOM_USER_CHECK(op.size_vars.size() <= size_t(kMaxSymbolicSizes), op.name, " has ", op.size_vars.size(),
                    " symbolic sizes; jit supports at most ", kMaxSymbolicSizes);
    std::string note;
    threads = resolve_threads(options.compile.threads, note);
    target = resolve_target(options.compile.target);
    pool = &ThreadPool::with_threads(threads);
    for (const Var& v : op.size_vars) size_source.push_back(find_source(v));
  }

  ServedBy run(const std::vector<Buffer>& inputs, const std::vector<Buffer>& outputs);
  void wait_idle() {
    std::unique_lock<std::mutex> lock(pending_mutex);
    pending_done.wait(lock, [&] { return pending == 0; });
  }
  JitStats stats() const;
  std::string schedule_for(const std::vector<int64_t>& sizes) const;
  // The code serving the buffers' shape now; null when it has not been seen.
  std::shared_ptr<const Code> serving(const std::vector<Buffer>& inputs, SizeKey& key) const {
    if (!read_sizes(inputs, key)) return nullptr;
    std::shared_lock<std::shared_mutex> lock(mutex);
    auto it = shapes.find(key);
    return it == shapes.end() ? nullptr : it->second->serving;
  }
  void call(const Code& code, const SizeKey& key, const std::vector<Buffer>& inputs,
            const std::vector<Buffer>& outputs) const;

  const Operator op;

 private:
  std::pair<size_t, size_t> find_source(const Var& v) const {
    for (size_t i = 0; i < op.inputs.size(); ++i)
      for (size_t d = 0; d < op.inputs[i].shape().size(); ++d)
        if (op.inputs[i].shape()[d].get() == v.get()) return {i, d};
    throw UserError("jit: size '" + v.name() + "' of " + op.name + " is not the extent of any input dimension");
  }

  bool read_sizes(const std::vector<Buffer>& inputs, SizeKey& key) const {
    if (inputs.size() != op.inputs.size()) return false;
    for (size_t i = 0; i < size_source.size(); ++i) {
      const auto& shape = inputs[size_source[i].first].shape();
      if (size_source[i].second >= shape.size()) return false;
      key.v[i] = shape[size_source[i].second];
    }
    return true;
  }
  ServedBy miss(const SizeKey& key, const std::vector<Buffer>& inputs, const std::vector<Buffer>& outputs);
  BuiltCode build(const SizeKey& key, bool specialized, bool cache_only);
  CodeRef generic_for(const SizeKey& bucket) const;  // caller holds mutex
  // Builds the first generic kernel when there is none; true when this call waited for LLVM.
  bool ensure_first_generic(const SizeKey& bucket);
  void install_generic(const SizeKey& bucket, CodeRef code);
  void install_special(const SizeKey& key, CodeRef code);
  void queue_generic(const SizeKey& bucket);     // caller holds mutex exclusively
  void queue_special(const SizeKey& key, ShapeEntry& e);
  void post(std::function<void(JitKernelImpl&)> job);
  friend class PendingJob;
  void job_finished();
  void warn(const std::string& w) {
    std::lock_guard<std::mutex> lock(warnings_mutex);
    warnings.push_back(w);
  }

  JitOptions options;
  std::shared_ptr<RuntimeImpl> runtime;
  int threads = 1;
  HwSpec target;
  ThreadPool* pool = nullptr;
  std::vector<std::pair<size_t, size_t>> size_source;  // (input, dim) each size is read from

  mutable std::shared_mutex mutex;  // guards the maps and every entry's serving/special
  std::unordered_map<SizeKey, std::shared_ptr<ShapeEntry>, SizeKeyHash> shapes;
  std::unordered_map<SizeKey, CodeRef, SizeKeyHash> generic;  // by bucket
  std::set<SizeKey> generic_queued;
  std::mutex first_generic_mutex;

  std::atomic<uint64_t> clock{0};  // advances once per call: recency for eviction, and the call count
  std::atomic<int> critical{0}, background{0}, disk_loads{0}, llvm{0}, evictions{0}, failed{0};
  mutable std::mutex warnings_mutex;  // also guards miss_overhead_max_ms
  std::vector<std::string> warnings;
  double miss_overhead_max_ms = 0;

  std::mutex pending_mutex;
  std::condition_variable pending_done;
  int pending = 0;
};

void JitKernelImpl::call(const Code& code, const SizeKey& key, const std::vector<Buffer>& inputs,
                         const std::vector<Buffer>& outputs) const {
  call_on_buffers(*code.fn, *pool, inputs, outputs, key.v.data());
}

ServedBy JitKernelImpl::run(const std::vector<Buffer>& inputs, const std::vector<Buffer>& outputs) {
  SizeKey key;
  if (!read_sizes(inputs, key)) return miss(key, inputs, outputs);  // reports the error
  ShapeEntry* entry = nullptr;  // entries live as long as the kernel
  CodeRef code;
  bool special = false;
  {
    std::shared_lock<std::shared_mutex> lock(mutex);
    auto it = shapes.find(key);
    if (it == shapes.end() || !it->second->buffers.match(inputs, outputs)) {
      lock.unlock();
      return miss(key, inputs, outputs);  // builds the entry, or reports the bad buffer
    }
    entry = it->second.get();
    code = entry->serving;
    special = entry->special;
  }
  check_no_output_aliasing(inputs, outputs);
  entry->last_use.store(clock.fetch_add(1, std::memory_order_relaxed), std::memory_order_relaxed);
  if (!special && entry->hits.fetch_add(1, std::memory_order_relaxed) + 1 >= options.specialize_after)
    queue_special(key, *entry);
  call(*code, key, inputs, outputs);
  return code->kind;
}

ServedBy JitKernelImpl::miss(const SizeKey& key, const std::vector<Buffer>& inputs,
                             const std::vector<Buffer>& outputs) {
  const auto start = std::chrono::steady_clock::now();
  bool waited_for_compile = false;
  // The full checks: a UserError naming the bad buffer, or the shapes to expect.
  SizeBinding binding = bind_sizes(op, inputs);
  check_output_shapes(op, outputs, binding);
  check_no_output_aliasing(inputs, outputs);
  auto entry = std::make_shared<ShapeEntry>();
  entry->buffers = ExpectedBuffers::of(op, binding);
  const SizeKey bucket = bucket_of(key);
  const bool specialize_now = options.specialize_after <= 1 && options.max_specialized > 0;

  // A specialized kernel a previous process left in the disk cache serves
  // at once; with background compiles off, one is built here.
  CodeRef special;
  if (specialize_now) {
    BuiltCode built = build(key, true, /*cache_only=*/options.background);
    if (built.fn) {
      waited_for_compile = !built.from_disk;
      if (!built.from_disk) critical.fetch_add(1);
      special = std::make_shared<Code>(Code{std::move(built.fn), built.schedule,
                                            built.from_disk ? ServedBy::Disk : ServedBy::Specialized});
    }
  }
  if (!special) waited_for_compile = ensure_first_generic(bucket);

  std::shared_ptr<ShapeEntry> e;
  {
    std::unique_lock<std::shared_mutex> lock(mutex);
    auto [it, inserted] = shapes.emplace(key, entry);
    e = it->second;
    if (inserted) {
      e->serving = special ? special : generic_for(bucket);
      e->special = special != nullptr;
      e->queued = e->special;
      if (!generic.count(bucket)) queue_generic(bucket);
    }
  }
  if (special) install_special(key, special);  // counts it and evicts beyond max_specialized
  e->last_use.store(clock.fetch_add(1, std::memory_order_relaxed), std::memory_order_relaxed);
  CodeRef code;
  {
    std::shared_lock<std::shared_mutex> lock(mutex);
    code = e->serving;
  }
  if (!e->special && e->hits.fetch_add(1) + 1 >= options.specialize_after) queue_special(key, *e);
  if (!waited_for_compile) {
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::lock_guard<std::mutex> lock(warnings_mutex);
    miss_overhead_max_ms = std::max(miss_overhead_max_ms, ms);
  }
  call(*code, key, inputs, outputs);
  return code->kind;
}

BuiltCode JitKernelImpl::build(const SizeKey& key, bool specialized, bool cache_only) {
  const std::vector<int64_t> sizes = to_vector(key, op.size_vars.size());
  const Operator concrete = specialized ? with_sizes(op, sizes) : Operator();
  BuildRequest r;
  r.op = specialized ? &concrete : &op;
  // A bucket (hi/2, hi] is planned at 3/4 of hi, a typical size in it: planned at hi, construction would
  // take the exact fit (e.g. vectors along the symbolic axis) that every other size in the bucket misses.
  if (!specialized)
    for (int64_t hi : sizes) r.plan_sizes.push_back(std::max<int64_t>(1, (3 * hi + 3) / 4));
  r.options = &options.compile;
  r.target = target;
  r.threads = threads;
  r.cache = runtime->cache.get();
  std::vector<std::string> build_warnings;
  BuiltCode built = build_code(r, cache_only, build_warnings);
  for (const std::string& w : build_warnings) warn(w);
  if (built.fn) (built.from_disk ? disk_loads : llvm).fetch_add(1);
  return built;
}

CodeRef JitKernelImpl::generic_for(const SizeKey& bucket) const {
  if (auto it = generic.find(bucket); it != generic.end()) return it->second;
  CodeRef nearest;
  double best = 0;
  for (const auto& [b, code] : generic) {
    const double d = bucket_distance(bucket, b);
    if (!nearest || d < best) nearest = code, best = d;
  }
  return nearest;
}

bool JitKernelImpl::ensure_first_generic(const SizeKey& bucket) {
  {
    std::shared_lock<std::shared_mutex> lock(mutex);
    if (!generic.empty()) return false;
  }
  std::lock_guard<std::mutex> first(first_generic_mutex);
  {
    std::shared_lock<std::shared_mutex> lock(mutex);
    if (!generic.empty()) return true;  // another caller compiled it while this one waited
  }
  BuiltCode built = build(bucket, false, false);
  if (!built.from_disk) critical.fetch_add(1);
  install_generic(bucket, std::make_shared<Code>(Code{std::move(built.fn), built.schedule, ServedBy::Generic}));
  return !built.from_disk;
}

void JitKernelImpl::install_generic(const SizeKey& bucket, CodeRef code) {
  std::unique_lock<std::shared_mutex> lock(mutex);
  generic[bucket] = code;
  generic_queued.erase(bucket);
  for (auto& [key, e] : shapes)
    if (!e->special && bucket_of(key) == bucket) e->serving = code;
}

void JitKernelImpl::install_special(const SizeKey& key, CodeRef code) {
  std::unique_lock<std::shared_mutex> lock(mutex);
  ShapeEntry& e = *shapes.at(key);
  e.serving = std::move(code);
  e.special = true;
  int held = 0;
  for (const auto& [k, s] : shapes) held += s->special;
  while (held > options.max_specialized) {  // least recently used first
    ShapeEntry* victim = nullptr;
    SizeKey victim_key;
    for (const auto& [k, s] : shapes)
      if (s->special && !(k == key) && (!victim || s->last_use < victim->last_use)) victim = s.get(), victim_key = k;
    if (!victim) break;
    victim->serving = generic_for(bucket_of(victim_key));
    victim->special = false;
    victim->hits = 0;
    victim->queued = false;
    evictions.fetch_add(1);
    --held;
  }
}

// Counts a queued job until it has run or been dropped (a destroyed Runtime
// drops its queue), so wait_idle() never waits for a job that will not run.
class PendingJob {
 public:
  explicit PendingJob(std::weak_ptr<JitKernelImpl> k) : kernel_(std::move(k)) {}
  ~PendingJob() {
    if (auto k = kernel_.lock()) k->job_finished();
  }

 private:
  std::weak_ptr<JitKernelImpl> kernel_;
};

void JitKernelImpl::job_finished() {
  std::lock_guard<std::mutex> lock(pending_mutex);
  if (--pending == 0) pending_done.notify_all();
}

void JitKernelImpl::post(std::function<void(JitKernelImpl&)> job) {
  {
    std::lock_guard<std::mutex> lock(pending_mutex);
    ++pending;
  }
  std::weak_ptr<JitKernelImpl> self = weak_from_this();
  auto guard = std::make_shared<PendingJob>(self);
  std::lock_guard<std::mutex> lock(runtime->queue_mutex);
  if (!runtime->queue) return;  // the Runtime is gone: nothing more is compiled (guard releases the count)
  runtime->queue->post([self, job = std::move(job), guard] {
    if (auto k = self.lock()) {
      try {
        job(*k);
      } catch (const std::exception& e) {
        k->failed.fetch_add(1);
        k->warn(std::string("a background build of ") + k->op.name + " failed: " + e.what());
      }
    }
  });
}

void JitKernelImpl::queue_generic(const SizeKey& bucket) {
  if (!generic_queued.insert(bucket).second) return;
  post([bucket](JitKernelImpl& k) {
    BuiltCode built = k.build(bucket, false, false);
    if (!built.from_disk) k.background.fetch_add(1);
    k.install_generic(bucket, std::make_shared<Code>(Code{std::move(built.fn), built.schedule, ServedBy::Generic}));
  });
}

void JitKernelImpl::queue_special(const SizeKey& key, ShapeEntry& e) {
  if (options.max_specialized == 0 || e.queued.exchange(true)) return;
  auto job = [key](JitKernelImpl& k) {
    BuiltCode built = k.build(key, true, false);
    if (!built.from_disk) (k.options.background ? k.background : k.critical).fetch_add(1);
    k.install_special(key, std::make_shared<Code>(Code{std::move(built.fn), built.schedule,
                                                       built.from_disk ? ServedBy::Disk : ServedBy::Specialized}));
  };
  if (options.background) {
    post(job);
  } else {
    job(*this);
  }
}

JitStats JitKernelImpl::stats() const {
  JitStats s;
  s.calls = int64_t(clock.load());
  s.compiles_on_critical_path = critical.load();
  s.background_compiles = background.load();
  s.disk_loads = disk_loads.load();
  s.llvm_compiles = llvm.load();
  s.evictions = evictions.load();
  s.failed = failed.load();
  {
    std::shared_lock<std::shared_mutex> lock(mutex);
    for (const auto& [k, e] : shapes) s.specialized_ready += e->special;
  }
  std::lock_guard<std::mutex> lock(warnings_mutex);
  s.warnings = warnings;
  s.miss_overhead_max_ms = miss_overhead_max_ms;
  return s;
}

std::string JitKernelImpl::schedule_for(const std::vector<int64_t>& sizes) const {
  LOOM_USER_CHECK(sizes.size() == op.size_vars.size(), op.name, " has ", op.size_vars.size(),
                  " symbolic sizes, got ", sizes.size());
  SizeKey key;
  std::copy(sizes.begin(), sizes.end(), key.v.begin());
  std::shared_lock<std::shared_mutex> lock(mutex);
  auto it = shapes.find(key);
  return it == shapes.end() ? "" : it->second->serving->schedule;
}

namespace {
const JitKernelImpl& checked(const std::shared_ptr<JitKernelImpl>& impl) {
  LOOM_USER_CHECK(impl != nullptr, "use of a JitKernel that was never created by jit()");
  return *impl;
}
}  // namespace

ServedBy JitKernel::run(const std::vector<Buffer>& inputs, const std::vector<Buffer>& outputs) const {
  checked(impl_);
  return impl_->run(inputs, outputs);
}
void JitKernel::wait_idle() const {
  checked(impl_);
  impl_->wait_idle();
}
JitStats JitKernel::stats() const { return checked(impl_).stats(); }
const Operator& JitKernel::op() const { return checked(impl_).op; }
std::string JitKernel::schedule_for(const std::vector<int64_t>& sizes) const {
  return checked(impl_).schedule_for(sizes);
}

Runtime::Runtime(const RuntimeOptions& options) : impl_(std::make_shared<RuntimeImpl>(options)) {}

Runtime::~Runtime() { stop_compiling(); }

void Runtime::stop_compiling() {
  std::unique_ptr<CompileQueue> queue;
  {
    std::lock_guard<std::mutex> lock(impl_->queue_mutex);
    queue = std::move(impl_->queue);
  }
  queue.reset();  // drops queued jobs, waits for running ones
}

JitKernel Runtime::jit(const Operator& op, const JitOptions& options) {
  return JitKernel(std::make_shared<JitKernelImpl>(op, options, impl_));
}

void Runtime::wait_idle() {
  CompileQueue* queue = nullptr;
  {
    std::lock_guard<std::mutex> lock(impl_->queue_mutex);
    queue = impl_->queue.get();  // alive while this Runtime is
  }
  if (queue) queue->wait_idle();
}

const std::string& Runtime::cache_dir() const { return impl_->cache_dir; }

Runtime& Runtime::global() {
  // Never destroyed (kernels may run during static destruction), but its
  // compile threads stop at exit, before LLVM's own statics are destroyed.
  static Runtime* runtime = [] {
    auto* r = new Runtime();
    std::atexit([] { Runtime::global().stop_compiling(); });
    return r;
  }();
  return *runtime;
}

JitKernel jit(const Operator& op, const JitOptions& options) { return Runtime::global().jit(op, options); }

DispatchTiming time_dispatch(const JitKernel& k, const std::vector<Buffer>& inputs, const std::vector<Buffer>& outputs,
                             int batches) {
  const JitKernelImpl& impl = checked(k.impl_);
  SizeKey key;
  std::shared_ptr<const Code> code = impl.serving(inputs, key);
  LOOM_USER_CHECK(code != nullptr, "time_dispatch: run the kernel on this shape first");
  LOOM_USER_CHECK(batches >= 1 && batches <= 100000, "batches=", batches, " is outside [1, 100000]");
  constexpr int kCallsPerBatch = 200;
  auto per_call_ns = [](auto&& fn) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kCallsPerBatch; ++i) fn();
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / kCallsPerBatch;
  };
  std::vector<double> run, direct;
  for (int b = 0; b < batches; ++b) {
    run.push_back(per_call_ns([&] { k.run(inputs, outputs); }));
    direct.push_back(per_call_ns([&] { impl.call(*code, key, inputs, outputs); }));
  }
  auto median = [](std::vector<double>& v) {
    std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  return DispatchTiming{median(run), median(direct)};
}

}  // namespace loom
