/* Counts the process's heap allocations (uih_test_allocations()).
 *
 * Sanitizer builds: ASan owns malloc, so its allocator hook counts
 * (__sanitizer_install_malloc_and_free_hooks, called for every allocation,
 * realloc included). Other builds: this file replaces glibc's malloc family
 * for the whole test program, each function counting and forwarding to
 * glibc's own (__libc_malloc ...), which glibc documents as the way to
 * interpose an allocator. Functions not replaced here (valloc, pvalloc)
 * still allocate from the same heap, uncounted. */
#include "engine/alloc_count.h"

#include <errno.h>
#include <malloc.h>
#include <stddef.h>
#include <stdlib.h>

#if defined(__SANITIZE_ADDRESS__)
#define UIH_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UIH_TEST_ASAN 1
#endif
#endif

static uint64_t allocations;

static void count(void) { __atomic_fetch_add(&allocations, 1, __ATOMIC_RELAXED); }

#ifdef UIH_TEST_ASAN

int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void *, size_t),
                                              void (*free_hook)(const volatile void *));

static void on_malloc(const volatile void *p, size_t n) {
  (void)p, (void)n;
  count();
}
static void on_free(const volatile void *p) { (void)p; }

int64_t uih_test_allocations(void) {
  static int installed = -1; /* (the sanitizer wants both hooks) */
  if (installed < 0) installed = __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free) != 0;
  return installed ? (int64_t)__atomic_load_n(&allocations, __ATOMIC_RELAXED) : -1;
}

#elif defined(__GLIBC__)

void *__libc_malloc(size_t n);
void *__libc_calloc(size_t k, size_t n);
void *__libc_realloc(void *p, size_t n);
void *__libc_memalign(size_t align, size_t n);
void __libc_free(void *p);

void *malloc(size_t n) {
  count();
  return __libc_malloc(n);
}
void *calloc(size_t k, size_t n) {
  count();
  return __libc_calloc(k, n);
}
void *realloc(void *p, size_t n) {
  count();
  return __libc_realloc(p, n);
}
void free(void *p) { __libc_free(p); }
void *aligned_alloc(size_t align, size_t n) {
  count();
  return __libc_memalign(align, n);
}
void *memalign(size_t align, size_t n) {
  count();
  return __libc_memalign(align, n);
}
int posix_memalign(void **out, size_t align, size_t n) {
  if (align < sizeof(void *) || (align & (align - 1)) != 0) return EINVAL;
  count();
  void *p = __libc_memalign(align, n);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}

int64_t uih_test_allocations(void) { return (int64_t)__atomic_load_n(&allocations, __ATOMIC_RELAXED); }

#else

int64_t uih_test_allocations(void) { return -1; }

#endif
