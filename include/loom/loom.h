// The whole public API.
#pragma once

#include "loom/buffer.h"
#include "loom/compile.h"
#include "loom/dtype.h"
#include "loom/error.h"
#include "loom/expr.h"
#include "loom/hwspec.h"
#include "loom/jit.h"
#include "loom/memory.h"
#include "loom/operator.h"
#include "loom/ops.h"
#include "loom/reference.h"
#include "loom/te.h"
#include "loom/timing.h"
#include "loom/tune.h"
#include "loom/workloads.h"
