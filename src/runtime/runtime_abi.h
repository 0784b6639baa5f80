// The C functions generated code calls back into. Their addresses are given
// to the JIT explicitly, so the executable need not export them.
#pragma once

#include <cstdint>

extern "C" {
// Runs task(closure, begin, end) over chunks covering [0, n) on the current
// thread pool, and returns when all chunks are done.
void loom_parallel_for(void (*task)(void*, int64_t, int64_t), void* closure, int64_t n);
// Scratch memory for intermediate buffers: 64-byte aligned.
void* loom_alloc(int64_t bytes);
void loom_free(void* ptr);
}
