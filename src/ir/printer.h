// Human-readable text for expressions (used by Expr::str and IR dumps).
#pragma once

#include <string>

#include "loom/expr.h"

namespace loom {

std::string to_text(const Expr& e);

}  // namespace loom
