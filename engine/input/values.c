/* Input field text -> stored bits (values.h). */
#include "values.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "uih/key.h"

/* A run of 1..`most` digits that ends the string, as its value: 1, or 0
 * for anything else (left to strtoull and strtoll, which say the same of
 * these and also judge the rest). Most fields of a day's file are ids
 * and times of 19 digits or fewer. */
static int short_digits(const char *s, int most, uint64_t *v) {
  uint64_t x = 0;
  int n = 0;
  for (; s[n] >= '0' && s[n] <= '9'; n++) {
    if (n == most) return 0;
    x = x * 10 + (uint64_t)(s[n] - '0');
  }
  if (n == 0 || s[n] != '\0') return 0;
  *v = x;
  return 1;
}

int uih_input_u64(const char *s, uint64_t *v) {
  if (*s < '0' || *s > '9') return 0;
  if (short_digits(s, 19, v)) return 1; /* below 10^19 < 2^64 */
  char *end;
  errno = 0;
  unsigned long long x = strtoull(s, &end, 10);
  if (errno || *end) return 0;
  *v = x;
  return 1;
}

static int parse_i64(const char *s, int64_t *v) {
  if (!((*s >= '0' && *s <= '9') || ((*s == '-' || *s == '+') && s[1] >= '0' && s[1] <= '9')))
    return 0;
  uint64_t u;
  if (short_digits(s + (*s == '-' || *s == '+'), 18, &u)) { /* below 10^18 < 2^63 */
    *v = *s == '-' ? -(int64_t)u : (int64_t)u;
    return 1;
  }
  char *end;
  errno = 0;
  long long x = strtoll(s, &end, 10);
  if (errno || *end) return 0;
  *v = x;
  return 1;
}

/* ---- times ----------------------------------------------------------------- */

static const char *const within[] = {"", "a time within the 64-bit range of seconds since 1970",
                                     "a time within the 64-bit range of milliseconds since 1970",
                                     "a time within the 64-bit range of microseconds since 1970"};
static const char *const whole[] = {"", "a time in whole seconds (the trait's unit)",
                                    "a time in whole milliseconds (the trait's unit)",
                                    "a time in whole microseconds (the trait's unit)"};

/* 10^(3k) */
static int64_t thousands(int k) {
  int64_t f = 1;
  while (k-- > 0) f *= 1000;
  return f;
}

/* `v` counted in `from` as a count of `to`, exactly: NULL or what was expected. */
static const char *convert(int64_t v, uih_time_unit from, uih_time_unit to, int64_t *out) {
  if (to >= from) {
    const int64_t f = thousands((int)to - (int)from);
    if (v > INT64_MAX / f || v < INT64_MIN / f) return within[to];
    *out = v * f;
    return NULL;
  }
  const int64_t f = thousands((int)from - (int)to);
  if (v % f != 0) return whole[to];
  *out = v / f;
  return NULL;
}

/* Days from 1970-01-01 to y-m-d of the proleptic Gregorian calendar
 * (H. Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

static int leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

/* n decimal digits at *p into *v; advances *p. */
static int digits(const char **p, int n, int64_t *v) {
  int64_t x = 0;
  for (int i = 0; i < n; i++) {
    const char c = (*p)[i];
    if (c < '0' || c > '9') return 0;
    x = x * 10 + (c - '0');
  }
  *p += n;
  *v = x;
  return 1;
}

const char *uih_input_rfc3339(const char *s, uih_time_unit unit, int64_t *out) {
  static const char *const form = "an RFC 3339 date-time such as 2024-01-05T10:00:00Z or 2024-01-05T10:00:00.25+01:00";
  static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (unit < UIH_UNIT_SECONDS || unit > UIH_UNIT_MICROS) unit = UIH_UNIT_SECONDS;
  const char *p = s;
  int64_t y, mo, d, h, mi, sec;
  if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) || *p++ != '-' || !digits(&p, 2, &d))
    return form;
  if (*p != 'T' && *p != 't' && *p != ' ') return form;
  p++;
  if (!digits(&p, 2, &h) || *p++ != ':' || !digits(&p, 2, &mi) || *p++ != ':' || !digits(&p, 2, &sec))
    return form;
  if (mo < 1 || mo > 12) return "an RFC 3339 date-time with a month 01..12";
  if (d < 1 || d > mdays[mo - 1] + (mo == 2 && leap(y)))
    return "an RFC 3339 date-time with a day that month has";
  if (h > 23 || mi > 59) return "an RFC 3339 date-time with hours 00..23 and minutes 00..59";
  if (sec == 60) return "a time without a leap second (:60 has no time since 1970 of its own)";
  if (sec > 59) return "an RFC 3339 date-time with seconds 00..59";
  /* The fraction, exact in the unit: digits past it must be zeros. */
  int64_t frac = 0;
  const int places = 3 * ((int)unit - (int)UIH_UNIT_SECONDS);
  int taken = 0;
  if (*p == '.') {
    p++;
    if (*p < '0' || *p > '9') return form;
    for (; *p >= '0' && *p <= '9'; p++) {
      if (taken < places) frac = frac * 10 + (*p - '0'), taken++;
      else if (*p != '0') return whole[unit];
    }
  }
  for (; taken < places; taken++) frac *= 10;
  int64_t off = 0;
  if (*p == 'Z' || *p == 'z') {
    p++;
  } else if (*p == '+' || *p == '-') {
    const int neg = *p++ == '-';
    int64_t oh, om;
    if (!digits(&p, 2, &oh) || *p++ != ':' || !digits(&p, 2, &om)) return form;
    if (oh > 23 || om > 59) return "an RFC 3339 offset with hours 00..23 and minutes 00..59";
    off = (oh * 60 + om) * 60 * (neg ? -1 : 1);
  } else {
    return "an RFC 3339 date-time ending in Z or an offset such as +01:00";
  }
  if (*p) return form;
  const int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - off;
  int64_t v = 0;
  const char *why = convert(secs, UIH_UNIT_SECONDS, unit, &v);
  if (why) return why;
  *out = v + frac;
  return NULL;
}

/* ---- values ---------------------------------------------------------------- */

static const char *parse_time(const uih_trait *t, const char *s, uint64_t *bits) {
  int64_t i;
  switch (t->input) {
    case UIH_INPUT_RFC3339: {
      const char *why = uih_input_rfc3339(s, t->unit, &i);
      if (why) return why;
      *bits = (uint64_t)i;
      return NULL;
    }
    case UIH_INPUT_SECONDS:
    case UIH_INPUT_MILLIS:
    case UIH_INPUT_MICROS: {
      const uih_time_unit from = (uih_time_unit)(UIH_UNIT_SECONDS + (t->input - UIH_INPUT_SECONDS));
      if (!parse_i64(s, &i)) {
        static const char *const ints[] = {"", "an integer number of seconds", "an integer number of milliseconds",
                                           "an integer number of microseconds"};
        return ints[from];
      }
      int64_t v = 0;
      const char *why = convert(i, from, t->unit, &v);
      if (why) return why;
      *bits = (uint64_t)v;
      return NULL;
    }
    default:
      if (!parse_i64(s, &i)) return "a signed 64-bit integer";
      *bits = (uint64_t)i;
      return NULL;
  }
}

const char *uih_input_value(const uih_trait *t, const char *s, uint64_t *bits) {
  uint64_t u;
  int64_t i;
  switch (t->type) {
    case UIH_TYPE_TIMESTAMP:
      return parse_time(t, s, bits);
    case UIH_TYPE_INT64:
      if (!parse_i64(s, &i)) return "a signed 64-bit integer";
      *bits = (uint64_t)i;
      return NULL;
    case UIH_TYPE_ID:
      if (t->input == UIH_INPUT_STRING) {
        *bits = uih_hash_id(s, strlen(s));
        return NULL;
      }
      if (!uih_input_u64(s, &u)) return "an unsigned 64-bit integer";
      *bits = u;
      return NULL;
    case UIH_TYPE_UINT32:
      if (!uih_input_u64(s, &u) || u > UINT32_MAX) return "an unsigned 32-bit integer";
      *bits = u;
      return NULL;
    case UIH_TYPE_CATEGORY:
      for (uint32_t k = 0; k < t->ncategories; k++)
        if (!strcmp(t->categories[k], s)) {
          *bits = k;
          return NULL;
        }
      if (t->ncategories)
        return uih_input_u64(s, &u) && u < t->ncategories ? (*bits = u, NULL)
                                                      : "a category of the trait's vocabulary or its code";
      if (!uih_input_u64(s, &u) || u > UINT32_MAX) return "a numeric category code (unsigned 32-bit)";
      *bits = u;
      return NULL;
    case UIH_TYPE_FLAG:
      if (!strcmp(s, "0") || !strcmp(s, "false")) *bits = 0;
      else if (!strcmp(s, "1") || !strcmp(s, "true")) *bits = 1;
      else return "a flag: 0, 1, false or true";
      return NULL;
    case UIH_TYPE_FLOAT32: {
      char *end;
      errno = 0;
      float f = strtof(s, &end);
      if (end == s || *end) return "a float";
      if (errno == ERANGE && isinf(f)) return "a float within float32 range";
      uint32_t b;
      memcpy(&b, &f, sizeof b);
      *bits = b;
      return NULL;
    }
  }
  return "a value of a known type";
}

const char *uih_input_user(uih_input spelling, const char *s, uint64_t *user) {
  if (spelling == UIH_INPUT_STRING) {
    if (!*s) return "a user id (the schema's user ids are strings; this one is empty)";
    *user = uih_hash_id(s, strlen(s));
    return NULL;
  }
  return uih_input_u64(s, user) ? NULL : "an unsigned 64-bit integer";
}
