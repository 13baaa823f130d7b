/* One input field's text -> the bits an event batch stores for it, by its
 * trait's type and how the schema says inputs spell it (uih/schema.h:
 * uih_input, uih_time_unit): numbers, category names, flags, string ids
 * (hashed), times in s/ms/us or RFC 3339 (converted exactly to the trait's
 * unit). The readers of every input format share it. */
#ifndef UIH_INPUT_VALUES_H
#define UIH_INPUT_VALUES_H

#include <stdint.h>

#include "uih/schema.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The value of `s` (NUL-terminated, not empty) for trait `t`, as
 * uih_column_set_bits takes it: NULL, or what was expected instead ("an
 * unsigned 64-bit integer", "a time in whole milliseconds (the trait's
 * unit)", ...), to follow "expected ". */
const char *uih_input_value(const uih_trait *t, const char *s, uint64_t *bits);

/* `s` (NUL-terminated) as a whole unsigned decimal 64-bit number: 1, or 0
 * when it is not one (a sign, another character, too large). */
int uih_input_u64(const char *s, uint64_t *v);

/* A user id spelled `s` (NUL-terminated) by the schema's `spelling`
 * (uih_schema_user_ids): NULL, or what was expected instead. */
const char *uih_input_user(uih_input spelling, const char *s, uint64_t *user);

/* Parses an RFC 3339 date-time ("2024-01-05T10:00:00.250+01:00"; 't' or a
 * space for 'T', 'z' for 'Z') into *out in `unit` since 1970-01-01T00:00:00Z,
 * exactly: NULL, or what was expected instead (a leap second, a fraction
 * finer than the unit, a time out of range each say so). */
const char *uih_input_rfc3339(const char *s, uih_time_unit unit, int64_t *out);

#ifdef __cplusplus
}
#endif

#endif /* UIH_INPUT_VALUES_H */
