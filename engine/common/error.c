#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "error_internal.h"

static const char *const kMessages[] = {
    [UIH_OK] = "ok",
    [UIH_ERR_INVALID_ARGUMENT] = "invalid argument",
    [UIH_ERR_NO_MEMORY] = "out of memory",
    [UIH_ERR_IO] = "I/O error",
    [UIH_ERR_CORRUPTION] = "corruption",
    [UIH_ERR_SCHEMA] = "invalid schema",
    [UIH_ERR_PARSE] = "parse error",
    [UIH_ERR_NOT_FOUND] = "not found",
    [UIH_ERR_NOT_SUPPORTED] = "not supported",
    [UIH_ERR_TYPE_MISMATCH] = "type mismatch",
    [UIH_ERR_OUT_OF_RANGE] = "out of range",
    [UIH_ERR_INCOMPATIBLE] = "incompatible schema change",
    [UIH_ERR_INTERNAL] = "internal error",
};

const char *uih_strerror(int code) {
  if (code < 0 || code > UIH_ERR_LAST_) return "unknown error";
  return kMessages[code];
}

/* Marks a message cut short by the fixed buffer. */
static void mark_truncated(uih_error *e, int wanted) {
  if (wanted >= (int)sizeof e->msg) memcpy(e->msg + sizeof e->msg - 4, "...", 4);
}

__attribute__((format(printf, 3, 0))) static int error_vset(uih_error *e, int code,
                                                           const char *fmt, va_list ap) {
  if (e == NULL) return code;
  e->code = code;
  int n = vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  if (n < 0) e->msg[0] = '\0';
  mark_truncated(e, n);
  return code;
}

int uih_error_set(uih_error *e, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  error_vset(e, code, fmt, ap);
  va_end(ap);
  return code;
}

int uih_corruption(uih_error *e, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  error_vset(e, UIH_ERR_CORRUPTION, fmt, ap);
  va_end(ap);
  return UIH_ERR_CORRUPTION;
}

int uih_error_prefix(uih_error *e, const char *fmt, ...) {
  if (e == NULL) return UIH_OK;
  char old[sizeof e->msg];
  memcpy(old, e->msg, sizeof old);
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  va_end(ap);
  if (n < 0) n = 0;
  if ((size_t)n < sizeof e->msg) {
    int m = snprintf(e->msg + n, sizeof e->msg - (size_t)n, "%s", old);
    mark_truncated(e, n + m);
  } else {
    mark_truncated(e, n);
  }
  return e->code;
}

const char *uih_error_message(const uih_error *e) {
  if (e == NULL) return "ok";
  return e->msg[0] ? e->msg : uih_strerror(e->code);
}

void uih_error_clear(uih_error *e) {
  if (e == NULL) return;
  e->code = UIH_OK;
  e->msg[0] = '\0';
}
