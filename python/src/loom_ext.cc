// loom._loom: the C++ API for Python (nanobind). The Python package
// (python/loom) wraps it in Python's idiom; this file only converts.
//
// Arrays: inputs are any CPU object nanobind accepts as an ndarray (numpy,
// or anything with __dlpack__), borrowed without a copy after their dtype
// and contiguity are checked; outputs are numpy arrays owning loom Buffers.
// The GIL is released while compiling, tuning and running kernels.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "cli/cli.h"
#include "loom/loom.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace loom::python {

namespace {

using AnyArray = nb::ndarray<nb::device::cpu>;
using NumpyArray = nb::ndarray<nb::numpy, float>;

Buffer borrow(const AnyArray& a, const char* role, size_t index) {
  LOOM_USER_CHECK(a.dtype() == nb::dtype<float>(), role, " #", index, " has dtype code ", int(a.dtype().code),
                  " with ", int(a.dtype().bits), " bits; loom kernels take float32 arrays");
  std::vector<int64_t> shape;
  for (size_t d = 0; d < a.ndim(); ++d) shape.push_back(int64_t(a.shape(d)));
  int64_t expected = 1;
  for (size_t d = a.ndim(); d-- > 0;) {
    LOOM_USER_CHECK(a.shape(d) == 1 || a.stride(d) == expected, role, " #", index,
                    " is not C-contiguous; pass numpy.ascontiguousarray(...)");
    expected *= int64_t(a.shape(d));
  }
  return Buffer::borrow(a.data(), shape);
}

std::vector<Buffer> borrow_all(const std::vector<AnyArray>& arrays, const char* role) {
  std::vector<Buffer> out;
  for (size_t i = 0; i < arrays.size(); ++i) out.push_back(borrow(arrays[i], role, i));
  return out;
}

// A numpy array that owns `b` (kept alive by a capsule).
NumpyArray to_numpy(const Buffer& b) {
  auto* owner = new Buffer(b);
  nb::capsule capsule(owner, [](void* p) noexcept { delete static_cast<Buffer*>(p); });
  std::vector<size_t> shape(b.shape().begin(), b.shape().end());
  return NumpyArray(b.data(), shape.size(), shape.data(), capsule);
}

// Runs `call(inputs, outputs)` on borrowed arrays; allocates the outputs when
// `out` is empty and returns them (as given otherwise).
template <typename Call>
nb::object call_kernel(const Operator& op, const std::vector<AnyArray>& inputs, const std::vector<AnyArray>& out,
                       Call&& call) {
  std::vector<Buffer> in = borrow_all(inputs, "input");
  std::vector<Buffer> outputs;
  if (out.empty()) {
    outputs = allocate_outputs(op, in);
  } else {
    outputs = borrow_all(out, "output");
  }
  {
    nb::gil_scoped_release release;
    call(in, outputs);
  }
  if (!out.empty()) return nb::none();
  if (outputs.size() == 1) return nb::cast(to_numpy(outputs[0]));
  nb::list results;
  for (const Buffer& b : outputs) results.append(to_numpy(b));
  return nb::tuple(results);
}

// k(*inputs, out=None) for Kernel and JitKernel.
template <typename K>
nb::object call(const K& k, nb::args args, std::optional<std::vector<AnyArray>> out) {
  std::vector<AnyArray> inputs;
  for (nb::handle h : args) inputs.push_back(nb::cast<AnyArray>(h));
  return call_kernel(k.op(), inputs, out.value_or(std::vector<AnyArray>{}),
                     [&](const std::vector<Buffer>& in, const std::vector<Buffer>& o) { k.run(in, o); });
}

Expr to_expr(nb::handle h) {
  if (nb::isinstance<Expr>(h)) return nb::cast<Expr>(h);
  if (nb::isinstance<te::IterVar>(h)) return nb::cast<te::IterVar>(h).var;
  if (nb::isinstance<nb::bool_>(h)) throw UserError("a bool is not a loom expression; use a comparison");
  if (nb::isinstance<nb::int_>(h)) return Expr(nb::cast<int64_t>(h));
  if (nb::isinstance<nb::float_>(h)) return Expr(nb::cast<double>(h));
  throw UserError("cannot use a " + std::string(nb::type_name(h.type()).c_str()) + " as a loom expression");
}

std::vector<Expr> to_exprs(nb::handle seq) {
  std::vector<Expr> out;
  if (nb::isinstance<nb::tuple>(seq) || nb::isinstance<nb::list>(seq)) {
    for (nb::handle h : seq) out.push_back(to_expr(h));
  } else {
    out.push_back(to_expr(seq));
  }
  return out;
}

std::vector<te::IterVar> to_axes(nb::handle axis) {
  std::vector<te::IterVar> out;
  if (nb::isinstance<te::IterVar>(axis)) return {nb::cast<te::IterVar>(axis)};
  for (nb::handle h : axis) out.push_back(nb::cast<te::IterVar>(h));
  return out;
}

void bind_expressions(nb::module_& m) {
  auto expr = nb::class_<Expr>(m, "Expr", "An integer or float32 expression (index arithmetic, element math).");
  expr.def("__repr__", &Expr::str).def("__str__", &Expr::str);
  auto binary = [&](const char* name, Expr (*fn)(Expr, Expr), bool reflected) {
    expr.def(name, [fn, reflected](const Expr& a, nb::handle b) {
      return reflected ? fn(to_expr(b), a) : fn(a, to_expr(b));
    });
  };
  binary("__add__", [](Expr a, Expr b) { return a + b; }, false);
  binary("__radd__", [](Expr a, Expr b) { return a + b; }, true);
  binary("__sub__", [](Expr a, Expr b) { return a - b; }, false);
  binary("__rsub__", [](Expr a, Expr b) { return a - b; }, true);
  binary("__mul__", [](Expr a, Expr b) { return a * b; }, false);
  binary("__rmul__", [](Expr a, Expr b) { return a * b; }, true);
  binary("__truediv__", [](Expr a, Expr b) { return a / b; }, false);
  binary("__rtruediv__", [](Expr a, Expr b) { return a / b; }, true);
  binary("__floordiv__", [](Expr a, Expr b) { return a / b; }, false);
  binary("__mod__", [](Expr a, Expr b) { return a % b; }, false);
  binary("__lt__", [](Expr a, Expr b) { return a < b; }, false);
  binary("__le__", [](Expr a, Expr b) { return a <= b; }, false);
  binary("__gt__", [](Expr a, Expr b) { return a > b; }, false);
  binary("__ge__", [](Expr a, Expr b) { return a >= b; }, false);
  binary("__and__", [](Expr a, Expr b) { return a && b; }, false);
  binary("__or__", [](Expr a, Expr b) { return a || b; }, false);
  expr.def("__neg__", [](const Expr& a) { return -a; });
  expr.def("equal", [](const Expr& a, nb::handle b) { return a == to_expr(b); }, "An element-wise == comparison.");

  nb::class_<Var, Expr>(m, "Var", "A named variable: a symbolic size bound from the input shapes when a kernel runs.")
      .def(nb::init<const std::string&>(), "name"_a)
      .def_prop_ro("name", &Var::name);
  nb::implicitly_convertible<int64_t, Expr>();

  auto unary = [&](const char* name, Expr (*fn)(Expr)) { m.def(name, [fn](nb::handle x) { return fn(to_expr(x)); }); };
  unary("exp", [](Expr x) { return exp(x); });
  unary("log", [](Expr x) { return log(x); });
  unary("tanh", [](Expr x) { return tanh(x); });
  unary("erf", [](Expr x) { return erf(x); });
  unary("sqrt", [](Expr x) { return sqrt(x); });
  unary("rsqrt", [](Expr x) { return rsqrt(x); });
  unary("abs", [](Expr x) { return abs(x); });
  m.def("maximum", [](nb::handle a, nb::handle b) { return max(to_expr(a), to_expr(b)); });
  m.def("minimum", [](nb::handle a, nb::handle b) { return min(to_expr(a), to_expr(b)); });
  m.def("if_then_else", [](nb::handle c, nb::handle t, nb::handle f) {
    return te::if_then_else(to_expr(c), to_expr(t), to_expr(f));
  });
}

void bind_tensors(nb::module_& m) {
  nb::class_<te::IterVar>(m, "IterVar", "A reduction axis.")
      .def_prop_ro("var", [](const te::IterVar& v) { return v.var; })
      .def_prop_ro("extent", [](const te::IterVar& v) { return v.extent; })
      .def("__repr__",
           [](const te::IterVar& v) { return "reduce_axis(" + v.extent.str() + ", " + v.var.name() + ")"; });
  nb::class_<te::Tensor>(m, "Tensor", "A placeholder (an input) or a compute.")
      .def_prop_ro("name", &te::Tensor::name)
      .def_prop_ro("shape", [](const te::Tensor& t) { return t.shape(); })
      .def_prop_ro("ndim", &te::Tensor::ndim)
      .def("__getitem__", [](const te::Tensor& t, nb::handle index) {
        std::vector<Expr> idx = to_exprs(index);
        LOOM_USER_CHECK(int(idx.size()) == t.ndim(), "tensor '", t.name(), "' has ", t.ndim(), " dimensions but ",
                        idx.size(), " indices were given");
        return t(idx);
      })
      .def("__repr__", [](const te::Tensor& t) { return "<loom tensor " + t.name() + ">"; });
  m.def("placeholder", [](nb::handle shape, const std::string& name) { return te::placeholder(to_exprs(shape), name); },
        "shape"_a, "name"_a);
  m.def("reduce_axis",
        [](nb::handle extent, const std::string& name) { return te::reduce_axis(to_expr(extent), name); },
        "extent"_a, "name"_a);
  m.def("compute", [](nb::handle shape, nb::callable fcompute, const std::string& name) {
    return te::compute(to_exprs(shape), [&](const std::vector<Var>& axes) {
      nb::list args;
      for (const Var& v : axes) args.append(v);
      return to_expr(fcompute(*nb::tuple(args)));  // a Python exception propagates as itself
    }, name);
  }, "shape"_a, "fcompute"_a, "name"_a);
  m.def("sum", [](nb::handle e, nb::handle axis) { return te::sum(to_expr(e), to_axes(axis)); }, "expr"_a, "axis"_a);
  m.def("reduce_max", [](nb::handle e, nb::handle axis) { return te::max(to_expr(e), to_axes(axis)); }, "expr"_a,
        "axis"_a);
  m.def("reduce_min", [](nb::handle e, nb::handle axis) { return te::min(to_expr(e), to_axes(axis)); }, "expr"_a,
        "axis"_a);
}

void bind_operators(nb::module_& m) {
  nb::class_<Operator>(m, "Operator", "A tensor computation with named inputs and outputs.")
      .def_ro("name", &Operator::name)
      .def_ro("params", &Operator::params)
      .def_prop_ro("inputs", [](const Operator& op) { return op.inputs; })
      .def_prop_ro("outputs", [](const Operator& op) { return op.outputs; })
      .def_prop_ro("size_vars", [](const Operator& op) {
        std::vector<std::string> names;
        for (const Var& v : op.size_vars) names.push_back(v.name());
        return names;
      })
      .def("__repr__", [](const Operator& op) { return "<loom operator " + op.name + ">"; });
  m.def("make_operator", [](const std::string& name, const std::map<std::string, std::string>& params,
                            const std::vector<std::string>& symbolic) { return make_operator(name, params, symbolic); },
        "name"_a, "params"_a, "symbolic"_a);
  m.def("build_operator", &te::build_operator, "name"_a, "inputs"_a, "outputs"_a);
  m.def("list_operators", [] {
    nb::list out;
    for (const OperatorInfo& info : list_operators()) {
      nb::list params;
      for (const ParamSpec& p : info.params)
        params.append(nb::make_tuple(p.name, p.kind == ParamKind::Int ? "int" : "choice", p.default_value, p.choices,
                                     p.doc));
      out.append(nb::make_tuple(info.name, info.summary, params));
    }
    return out;
  });
  m.def("random_inputs", [](const Operator& op, uint64_t seed, const std::vector<int64_t>& sizes) {
    std::vector<NumpyArray> out;
    for (const Buffer& b : random_inputs(op, seed, sizes)) out.push_back(to_numpy(b));
    return out;
  }, "op"_a, "seed"_a = 1, "sizes"_a = std::vector<int64_t>{});
  m.def("check_against_reference", [](const Operator& op, const std::vector<AnyArray>& inputs,
                                      const std::vector<AnyArray>& outputs) {
    CheckResult r = check_against_reference(op, borrow_all(inputs, "input"), borrow_all(outputs, "output"));
    return nb::make_tuple(r.ok, r.max_rel_err, r.points_checked);
  });
}

CompileOptions compile_options(const std::string& strategy, int threads, int top_k, const std::string& hwspec,
                               uint64_t seed, const std::string& records) {
  CompileOptions o;
  o.strategy = strategy;
  o.threads = threads;
  o.top_k = top_k;
  o.target = hwspec.empty() || hwspec == "host" ? HwSpec{} : load_hwspec(hwspec);
  o.seed = seed;
  o.records = records;
  return o;
}

void bind_kernels(nb::module_& m) {
  nb::class_<CompileReport>(m, "CompileReport")
      .def_ro("strategy", &CompileReport::strategy)
      .def_ro("construct_ms", &CompileReport::construct_ms)
      .def_ro("codegen_ms", &CompileReport::codegen_ms)
      .def_ro("measure_ms", &CompileReport::measure_ms)
      .def_ro("candidates", &CompileReport::candidates)
      .def_ro("predicted_ms", &CompileReport::predicted_ms)
      .def_ro("schedule", &CompileReport::schedule)
      .def_ro("loop_ir", &CompileReport::loop_ir)
      .def_ro("from_records", &CompileReport::from_records)
      .def_ro("note", &CompileReport::note);
  nb::class_<Kernel>(m, "Kernel", "A compiled kernel: call it on arrays.")
      .def("__call__", &call<Kernel>, "args"_a, nb::kw_only(), "out"_a = nb::none())
      .def_prop_ro("op", &Kernel::op)
      .def_prop_ro("report", &Kernel::report)
      .def_prop_ro("llvm_ir", &Kernel::llvm_ir)
      .def_prop_ro("source", [](const Kernel& k) { return k.source(false); })
      .def_prop_ro("opencl_source", [](const Kernel& k) { return k.source(true); })
      .def_prop_ro("executed_on", &Kernel::executed_on);
  m.def("compile", [](const Operator& op, const std::string& strategy, int threads, int top_k,
                      const std::string& hwspec, uint64_t seed, const std::string& records) {
    CompileOptions o = compile_options(strategy, threads, top_k, hwspec, seed, records);
    nb::gil_scoped_release release;
    return compile(op, o);
  }, "op"_a, "strategy"_a = "construct", "threads"_a = 0, "top_k"_a = 1, "hwspec"_a = "host", "seed"_a = 1,
        "records"_a = "");

  nb::class_<JitKernel>(m, "JitKernel", "A dynamic-shape kernel: call it on arrays of any bound sizes.")
      .def("__call__", &call<JitKernel>, "args"_a, nb::kw_only(), "out"_a = nb::none())
      .def("run", [](const JitKernel& k, const std::vector<AnyArray>& inputs, const std::vector<AnyArray>& outputs) {
        std::vector<Buffer> in = borrow_all(inputs, "input"), o = borrow_all(outputs, "output");
        nb::gil_scoped_release release;
        return std::string(to_string(k.run(in, o)));
      }, "inputs"_a, "outputs"_a, "Runs into given outputs; says what served the call (generic, specialized, disk).")
      .def("wait_idle", [](const JitKernel& k) {
        nb::gil_scoped_release release;
        k.wait_idle();
      })
      .def("stats", [](const JitKernel& k) {
        JitStats s = k.stats();
        nb::dict d;
        d["calls"] = s.calls;
        d["compiles_on_critical_path"] = s.compiles_on_critical_path;
        d["background_compiles"] = s.background_compiles;
        d["disk_loads"] = s.disk_loads;
        d["llvm_compiles"] = s.llvm_compiles;
        d["specialized_ready"] = s.specialized_ready;
        d["evictions"] = s.evictions;
        d["failed"] = s.failed;
        d["miss_overhead_max_ms"] = s.miss_overhead_max_ms;
        d["warnings"] = s.warnings;
        return d;
      })
      .def_prop_ro("op", &JitKernel::op);
  m.def("jit", [](const Operator& op, const std::string& strategy, int threads, const std::string& hwspec,
                  const std::string& records, int specialize_after, int max_specialized, bool background) {
    JitOptions o;
    o.compile = compile_options(strategy, threads, 1, hwspec, 1, records);
    o.specialize_after = specialize_after;
    o.max_specialized = max_specialized;
    o.background = background;
    return jit(op, o);
  }, "op"_a, "strategy"_a = "construct", "threads"_a = 0, "hwspec"_a = "host", "records"_a = "",
        "specialize_after"_a = 1, "max_specialized"_a = 64, "background"_a = true);

  m.def("tune", [](const Operator& op, const std::string& strategy, int trials, int threads, const std::string& records,
                   const std::string& hwspec, uint64_t seed) {
    TuneOptions o;
    o.strategy = strategy;
    o.trials = trials;
    o.threads = threads;
    o.records = records;
    o.target = hwspec.empty() || hwspec == "host" ? HwSpec{} : load_hwspec(hwspec);
    o.seed = seed;
    TuneResult r;
    {
      nb::gil_scoped_release release;
      r = tune(op, o);
    }
    nb::dict report;
    report["best_time_ms"] = r.report.best_time_ms;
    report["best_gflops"] = r.report.best_gflops;
    report["measured"] = r.report.measured;
    report["errors"] = r.report.errors;
    report["ok"] = r.report.ok;
    report["best_schedule"] = r.report.best_schedule;
    report["records"] = r.report.records;
    report["warnings"] = r.report.warnings;
    return nb::make_tuple(r.kernel, report);
  }, "op"_a, "strategy"_a = "hybrid", "trials"_a = 64, "threads"_a = 0, "records"_a = "", "hwspec"_a = "host",
        "seed"_a = 1);

  m.def("cli", [](const std::vector<std::string>& args) {
    nb::gil_scoped_release release;
    return cli::run_command_line(args);
  }, "args"_a);
}

}  // namespace

NB_MODULE(_loom, m) {
  m.doc() = "loom's C++ API; use the loom package";
  static nb::object user_error = nb::steal(PyErr_NewException("loom.UserError", PyExc_ValueError, nullptr));
  static nb::object internal_error = nb::steal(PyErr_NewException("loom.InternalError", PyExc_RuntimeError, nullptr));
  m.attr("UserError") = user_error;
  m.attr("InternalError") = internal_error;
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const UserError& e) {
      PyErr_SetString(user_error.ptr(), e.what());
    } catch (const InternalError& e) {
      PyErr_SetString(internal_error.ptr(), e.what());
    }
  });
  bind_expressions(m);
  bind_tensors(m);
  bind_operators(m);
  bind_kernels(m);
}

}  // namespace loom::python
