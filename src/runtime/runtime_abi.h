// The C functions generated code calls back into. Their addresses are given
// to the JIT explicitly, so the executable need not export them.
#pragma once

#include <cstdint>

extern "C" {
// Runs task(closure, begin, end) over chunks covering [0, n) on the current
// thread pool, and returns when all chunks are done.
void loom_parallel_for(void (*task)(void*, int64_t, int64_t), void* closure, int64_t n);
// Scratch memory for intermediate buffers: 64-byte aligned. Null when it
// cannot be had (generated code then skips the work that needed it).
void* loom_alloc(int64_t bytes);
void loom_free(void* ptr);
// The size of the last scratch allocation that failed, 0 if none; clears it.
int64_t loom_take_alloc_failure();
}
