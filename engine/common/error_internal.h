/* Internal helpers for returning errors: checks stay one line each. */
#ifndef UIH_ERROR_INTERNAL_H
#define UIH_ERROR_INTERNAL_H

#include "uih/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define UIH_LIKELY(x) __builtin_expect(!!(x), 1)
#define UIH_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* if (cond) return uih_error_set(err, code, fmt, ...) */
#define UIH_RETURN_IF(cond, err, code, ...)                    \
  do {                                                         \
    if (UIH_UNLIKELY(cond)) return uih_error_set((err), (code), __VA_ARGS__); \
  } while (0)

/* Evaluates a call returning a code; returns it if it is not UIH_OK. */
#define UIH_FORWARD(expr)                                      \
  do {                                                         \
    int uih_rc_ = (expr);                                      \
    if (UIH_UNLIKELY(uih_rc_ != UIH_OK)) return uih_rc_;       \
  } while (0)

/* Prefixes the message of the error `rc` that `err` holds (uih_error_prefix)
 * and evaluates to rc, which uih_error_prefix cannot return when `err` is
 * NULL:  return UIH_PREFIXED(rc, err, "store %s: ", path);  */
#define UIH_PREFIXED(rc, err, ...) (uih_error_prefix((err), __VA_ARGS__), (rc))

/* Every corruption of stored bytes is reported through this one function, so
 * a debugger can stop on `break uih_corruption`. */
int uih_corruption(uih_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif
#endif /* UIH_ERROR_INTERNAL_H */
