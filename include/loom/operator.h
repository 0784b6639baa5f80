// The operator library: named, parameterised tensor computations.
//
// An Operator is a tensor-expression graph (inputs, outputs, and every compute
// tensor between them) plus the parameters it was built from. Operators are
// built either by name from string parameters (the CLI path, with validation
// and defaults) or directly through the typed builders in loom/ops.h.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "loom/te.h"

namespace loom {

struct Operator {
  std::string name;                           // e.g. "conv2d"
  std::map<std::string, std::string> params;  // as given or defaulted, for reports
  std::vector<te::Tensor> inputs;
  std::vector<te::Tensor> outputs;
  std::vector<Var> size_vars;  // symbolic dimensions bound at run time
  Expr flops;                  // useful floating-point operations (for GFLOP/s)
};

enum class ParamKind { Int, Choice };

struct ParamSpec {
  std::string name;
  ParamKind kind = ParamKind::Int;
  std::string default_value;  // empty: required
  std::vector<std::string> choices;  // for ParamKind::Choice
  std::string doc;
};

struct OperatorInfo {
  std::string name;
  std::string summary;
  std::vector<ParamSpec> params;
};

// Every operator the library can build, in a stable order.
const std::vector<OperatorInfo>& list_operators();

namespace te {
// An Operator from tensors you declared (placeholders, computes): its
// symbolic sizes are the Vars of the inputs' shapes and its flop count is
// derived from the compute definitions. UserError, naming your tensor or
// variable, when: there are no outputs; an output is a placeholder; a tensor
// read is not among `inputs`; a size Var is not itself a dimension of some
// input (no call could bind it); a compute uses a variable that is none of
// its axes, reduction axes or sizes; a dimension is empty; or a read may
// fall outside its tensor (interval analysis over the loop domain; a read
// inside te::if_then_else(cond, read, other) is checked only where `cond`
// holds, so guard or pad reads near edges).
Operator build_operator(const std::string& name, const std::vector<Tensor>& inputs,
                        const std::vector<Tensor>& outputs);
}  // namespace te

// Builds an operator from string parameters ("M" -> "1024"). Throws UserError
// for an unknown operator or parameter, a missing, non-numeric or
// non-positive size, an unknown choice, or shapes that do not compose.
Operator make_operator(const std::string& name,
                       const std::map<std::string, std::string>& params);
// The same, with the size parameters named in `symbolic` left symbolic: Vars
// of those names, bound from the buffers when the kernel runs (dynamic
// shapes; see loom/jit.h). UserError when a name is not a size parameter, is
// also given a value, or must be constant for this operator (convolutions).
Operator make_operator(const std::string& name, const std::map<std::string, std::string>& params,
                       const std::vector<std::string>& symbolic);

}  // namespace loom
