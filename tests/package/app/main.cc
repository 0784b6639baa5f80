// An outside project: a custom operator (a row-wise scaled difference with
// a symbolic row count), compiled, run, and checked against the reference.
#include <loom/loom.h>

#include <iostream>

int main() {
  using namespace loom;
  Var M("M");
  te::Tensor X = te::placeholder({M, 16}, "X"), S = te::placeholder({16}, "S");
  te::Tensor Y = te::compute({M, 15}, [&](const std::vector<Var>& i) {
    return (X(i[0], i[1] + 1) - X(i[0], i[1])) * S(i[1]);
  }, "Y");
  Operator op = te::build_operator("scaled_diff", {X, S}, {Y});
  Kernel k = compile(op, {.threads = 1});
  std::vector<Buffer> in = random_inputs(op, 1, {37});
  Buffer out = Buffer::allocate({37, 15});
  k.run(in, {out});
  CheckResult r = check_against_reference(op, in, {out});
  std::cout << (r.ok ? "ok" : "WRONG") << " max_rel_err " << r.max_rel_err << " hwspecs "
            << list_operators().size() << "\n";
  try {
    te::Tensor bad = te::compute({M, 16}, [&](const std::vector<Var>& i) { return X(i[0], i[1] + 1); }, "Bad");
    te::build_operator("bad", {X}, {bad});
    std::cout << "no error for an out-of-bounds read\n";
    return 1;
  } catch (const UserError& e) {
    std::cout << "UserError: " << e.what() << "\n";
  }
  return r.ok ? 0 : 1;
}
