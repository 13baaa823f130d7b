// Heap allocations of the whole process, counted, for tests that assert a
// code path allocates nothing (see alloc_count.c for how).
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// malloc, calloc, realloc and aligned allocations so far, every thread; -1
// if this build cannot count them.
int64_t uih_test_allocations(void);

#ifdef __cplusplus
}
#endif
