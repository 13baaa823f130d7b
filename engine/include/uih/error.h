/* uihstore — error codes and error messages.
 *
 * Every fallible function returns an int: UIH_OK (0) or one of the codes
 * below. The numbers are part of the ABI and never change; new codes are
 * appended. Functions that can explain a failure also take an optional
 * `uih_error *` (NULL is fine) that receives a message a user can act on,
 * e.g. "schema.json: groups[0].traits[2].type: expected one of ...".
 */
#ifndef UIH_ERROR_H
#define UIH_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

enum {
  UIH_OK = 0,
  UIH_ERR_INVALID_ARGUMENT = 1, /* the caller passed something unusable */
  UIH_ERR_NO_MEMORY = 2,        /* an allocation failed */
  UIH_ERR_IO = 3,               /* a system call failed (message has errno text) */
  UIH_ERR_CORRUPTION = 4,       /* stored bytes fail validation */
  UIH_ERR_SCHEMA = 5,           /* a schema file is well-formed JSON but invalid */
  UIH_ERR_PARSE = 6,            /* an input file is malformed (JSON, CSV, number) */
  UIH_ERR_NOT_FOUND = 7,        /* a named or numbered thing does not exist */
  UIH_ERR_NOT_SUPPORTED = 8,    /* valid, but not supported (e.g. a newer format version) */
  UIH_ERR_TYPE_MISMATCH = 9,    /* a trait was used as the wrong type */
  UIH_ERR_OUT_OF_RANGE = 10,    /* a value or count exceeds a limit */
  UIH_ERR_INCOMPATIBLE = 11,    /* a schema change breaks the evolution rules */
  UIH_ERR_INTERNAL = 12,        /* a failure inside a library that is neither the caller's nor
                                   the data's (e.g. an unexpected C++ exception); the message
                                   says what */
};
#define UIH_ERR_LAST_ UIH_ERR_INTERNAL

/* Static description of a code ("corruption"); never NULL, unknown codes
 * give "unknown error". */
const char *uih_strerror(int code);

#define UIH_ERROR_MSG_MAX 512

/* A code with a message. Plain data: put it on the stack, no cleanup. */
typedef struct uih_error {
  int code;
  char msg[UIH_ERROR_MSG_MAX]; /* NUL-terminated; truncated with "..." if too long */
} uih_error;

/* Sets `e` (if not NULL) to `code` with a printf-style message and returns
 * `code`, so that `return uih_error_set(e, UIH_ERR_PARSE, "...")` reads well. */
int uih_error_set(uih_error *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepends printf-style context to the message already in `e` ("file.csv:
 * " + "line 3: ..."). Returns e->code (UIH_OK if `e` is NULL). */
int uih_error_prefix(uih_error *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The message of `e`, or uih_strerror(e->code) when none was set. The
 * pointer is into `e` (or static); valid while `e` is. */
const char *uih_error_message(const uih_error *e);

/* Resets `e` to UIH_OK with an empty message. */
void uih_error_clear(uih_error *e);

#ifdef __cplusplus
}
#endif
#endif /* UIH_ERROR_H */
