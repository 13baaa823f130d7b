/* Schema files: JSON text -> validated uih_schema.
 *
 * Every error names the input, the path of the offending field
 * ("groups[0].traits[2].type") and what was expected. json-c does the JSON
 * syntax; everything after that is checked here, field by field. */
#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error_internal.h"
#include "schema_internal.h"

#define JSON_MAX_DEPTH 32
#define SCHEMA_FILE_MAX (16u << 20)

typedef struct ctx {
  const char *origin;
  uih_error *err;
} ctx;

__attribute__((format(printf, 3, 4))) static int fail(const ctx *c, const char *path,
                                                      const char *fmt, ...) {
  char what[UIH_ERROR_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return uih_error_set(c->err, UIH_ERR_SCHEMA, "%s: %s%s%s", c->origin, path, *path ? ": " : "",
                       what);
}

static int nomem(const ctx *c) {
  return uih_error_set(c->err, UIH_ERR_NO_MEMORY, "%s: out of memory", c->origin);
}

static const char *json_kind(const json_object *v) {
  switch (json_object_get_type(v)) {
    case json_type_null: return "null";
    case json_type_boolean: return "a boolean";
    case json_type_double: return "a fractional number";
    case json_type_int: return "an integer";
    case json_type_object: return "an object";
    case json_type_array: return "an array";
    case json_type_string: return "a string";
  }
  return "an unknown JSON value";
}

/* Rejects fields not in `allowed` (NULL-terminated), so typos are errors. */
static int check_fields(const ctx *c, const char *path, json_object *obj,
                        const char *const *allowed) {
  json_object_object_foreach(obj, key, val) {
    (void)val;
    int ok = 0;
    for (const char *const *a = allowed; *a && !ok; a++) ok = strcmp(*a, key) == 0;
    if (!ok) {
      char list[256] = "";
      size_t n = 0;
      for (const char *const *a = allowed; *a; a++)
        n += (size_t)snprintf(list + n, n < sizeof list ? sizeof list - n : 0, "%s%s",
                              a == allowed ? "" : ", ", *a);
      return fail(c, path, "unknown field \"%.64s\" (expected one of: %s)", key, list);
    }
  }
  return UIH_OK;
}

/* Integer field in [lo, hi]; a missing field gives `dflt` if `optional`. */
static int get_int(const ctx *c, const char *path, json_object *obj, const char *key,
                   int optional, int64_t dflt, int64_t lo, int64_t hi, int64_t *out) {
  json_object *v;
  if (!json_object_object_get_ex(obj, key, &v)) {
    if (optional) {
      *out = dflt;
      return UIH_OK;
    }
    return fail(c, path, "missing field \"%s\" (an integer in [%lld, %lld])", key,
                (long long)lo, (long long)hi);
  }
  if (!json_object_is_type(v, json_type_int))
    return fail(c, path, "field \"%s\": expected an integer in [%lld, %lld], got %s", key,
                (long long)lo, (long long)hi, json_kind(v));
  int64_t x = json_object_get_int64(v);
  if (x < lo || x > hi) {
    /* json-c saturates literals beyond 64 bits (to INT64_MIN or UINT64_MAX),
     * and its text would show the saturated number instead of the user's. */
    if (x == INT64_MIN || json_object_get_uint64(v) == UINT64_MAX)
      return fail(c, path, "field \"%s\": the number does not fit in 64 bits (expected an integer "
                  "in [%lld, %lld])", key, (long long)lo, (long long)hi);
    return fail(c, path, "field \"%s\": %s is out of range [%lld, %lld]", key,
                json_object_get_string(v), (long long)lo, (long long)hi);
  }
  *out = x;
  return UIH_OK;
}

static int valid_identifier(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > UIH_NAME_MAX) return 0;
  for (size_t i = 0; i < n; i++) {
    char ch = s[i];
    int alpha = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
    if (!alpha && !(i > 0 && ch >= '0' && ch <= '9')) return 0;
  }
  return 1;
}

/* Required identifier field; *out is a new copy. */
static int get_name(const ctx *c, const char *path, json_object *obj, char **out) {
  json_object *v;
  if (!json_object_object_get_ex(obj, "name", &v))
    return fail(c, path, "missing field \"name\" (an identifier)");
  if (!json_object_is_type(v, json_type_string))
    return fail(c, path, "field \"name\": expected a string, got %s", json_kind(v));
  const char *s = json_object_get_string(v);
  if (!valid_identifier(s) || strlen(s) != (size_t)json_object_get_string_len(v))
    return fail(c, path,
                "field \"name\": \"%.80s\" is not an identifier ([A-Za-z_][A-Za-z0-9_]*, "
                "1 to %d characters)", s, UIH_NAME_MAX);
  *out = strdup(s);
  return *out ? UIH_OK : nomem(c);
}

static int get_array(const ctx *c, const char *path, json_object *obj, const char *key,
                     int optional, size_t max, json_object **out) {
  json_object *v;
  *out = NULL;
  if (!json_object_object_get_ex(obj, key, &v)) {
    if (optional) return UIH_OK;
    return fail(c, path, "missing field \"%s\" (a non-empty array)", key);
  }
  if (!json_object_is_type(v, json_type_array))
    return fail(c, path, "field \"%s\": expected an array, got %s", key, json_kind(v));
  size_t n = json_object_array_length(v);
  if (n == 0 || n > max)
    return fail(c, path, "field \"%s\": expected 1 to %zu entries, got %zu", key, max, n);
  *out = v;
  return UIH_OK;
}

/* Optional string field, one of `names` (NULL-terminated): *out its index,
 * or `dflt` when the field is absent. */
static int get_choice(const ctx *c, const char *path, json_object *obj, const char *key,
                      const char *const *names, int dflt, int *out) {
  json_object *v;
  *out = dflt;
  if (!json_object_object_get_ex(obj, key, &v)) return UIH_OK;
  char list[128] = "";
  size_t n = 0;
  for (const char *const *a = names; *a; a++)
    n += (size_t)snprintf(list + n, n < sizeof list ? sizeof list - n : 0, "%s\"%s\"", a == names ? "" : ", ", *a);
  if (!json_object_is_type(v, json_type_string))
    return fail(c, path, "field \"%s\": expected one of %s, got %s", key, list, json_kind(v));
  const char *str = json_object_get_string(v);
  for (int i = 0; names[i]; i++)
    if (strcmp(names[i], str) == 0) {
      *out = i;
      return UIH_OK;
    }
  return fail(c, path, "field \"%s\": expected one of %s, got \"%.64s\"", key, list, str);
}

/* "unit" and "input": what a timestamp's stored values count and how
 * inputs spell them; how inputs spell an id. */
static int parse_input(const ctx *c, const char *path, json_object *obj, uih_trait *t) {
  static const char *const units[] = {"s", "ms", "us", NULL};
  static const char *const id_inputs[] = {"integer", "string", NULL};
  static const char *const ts_inputs[] = {"s", "ms", "us", "rfc3339", NULL};
  json_object *v;
  int have_unit = json_object_object_get_ex(obj, "unit", &v);
  int have_input = json_object_object_get_ex(obj, "input", &v);
  int k;
  t->input = UIH_INPUT_NATIVE;
  t->unit = UIH_UNIT_NONE;
  if (t->type == UIH_TYPE_ID) {
    if (have_unit) return fail(c, path, "field \"unit\": only a timestamp has a unit");
    UIH_FORWARD(get_choice(c, path, obj, "input", id_inputs, 0, &k));
    t->input = k == 1 ? UIH_INPUT_STRING : UIH_INPUT_NATIVE;
    return UIH_OK;
  }
  if (t->type != UIH_TYPE_TIMESTAMP) {
    if (have_unit) return fail(c, path, "field \"unit\": only a timestamp has a unit");
    if (have_input)
      return fail(c, path, "field \"input\": only id traits (\"integer\" or \"string\") and timestamps "
                  "(\"s\", \"ms\", \"us\" or \"rfc3339\") say how inputs spell them");
    return UIH_OK;
  }
  UIH_FORWARD(get_choice(c, path, obj, "unit", units, -1, &k));
  t->unit = k < 0 ? UIH_UNIT_NONE : (uih_time_unit)(UIH_UNIT_SECONDS + k);
  UIH_FORWARD(get_choice(c, path, obj, "input", ts_inputs, -1, &k));
  if (k >= 0 && t->unit == UIH_UNIT_NONE)
    return fail(c, path, "field \"input\": a timestamp read as \"%s\" needs a \"unit\" to store "
                "it in (\"s\", \"ms\" or \"us\")", ts_inputs[k]);
  t->input = k < 0 ? UIH_INPUT_NATIVE : (uih_input)(UIH_INPUT_SECONDS + k);
  return UIH_OK;
}

static int parse_type(const ctx *c, const char *path, json_object *obj, uih_type *out) {
  json_object *v;
  const char *expected = "timestamp, id, int64, uint32, float32, category, flag";
  if (!json_object_object_get_ex(obj, "type", &v))
    return fail(c, path, "missing field \"type\" (one of %s)", expected);
  if (!json_object_is_type(v, json_type_string))
    return fail(c, path, "field \"type\": expected one of %s, got %s", expected, json_kind(v));
  const char *s = json_object_get_string(v);
  for (int t = UIH_TYPE_TIMESTAMP; t <= UIH_TYPE_FLAG; t++)
    if (strcmp(s, uih_type_name((uih_type)t)) == 0) {
      *out = (uih_type)t;
      return UIH_OK;
    }
  return fail(c, path, "field \"type\": expected one of %s, got \"%.64s\"", expected, s);
}

static int parse_encodings(const ctx *c, const char *path, json_object *obj, uih_trait *t) {
  uint32_t allowed = uih_encodings_for_type(t->type);
  json_object *arr;
  UIH_FORWARD(get_array(c, path, obj, "encodings", 1, UIH_ENC_COUNT, &arr));
  if (arr == NULL) {
    t->encodings = allowed;
    return UIH_OK;
  }
  char list[128] = "";
  size_t n = 0;
  for (uint32_t e = 1; e < (1u << UIH_ENC_COUNT); e <<= 1)
    if (allowed & e)
      n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "", uih_encoding_name(e));
  t->encodings = 0;
  for (size_t i = 0; i < json_object_array_length(arr); i++) {
    json_object *v = json_object_array_get_idx(arr, i);
    const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
    uint32_t bit = 0;
    for (uint32_t e = 1; s && e < (1u << UIH_ENC_COUNT) && !bit; e <<= 1)
      if (strcmp(s, uih_encoding_name(e)) == 0) bit = e;
    if (!(bit & allowed)) {
      char where[64];
      snprintf(where, sizeof where, "\"%.40s\"", s ? s : "");
      return fail(c, path, "encodings[%zu]: expected one of %s (the encodings for %s), got %s", i,
                  list, uih_type_name(t->type), s ? where : json_kind(v));
    }
    t->encodings |= bit;
  }
  /* Shared and coded columns need a dictionary; a stripe encoded without one needs another way. */
  if ((t->encodings & ~UIH_ENC_DICTIONARY) == 0)
    return fail(c, path, "encodings: \"shared\" and \"coded\" need another encoding beside them, for "
                "stripes encoded without a value dictionary");
  return UIH_OK;
}

static int parse_compression(const ctx *c, const char *path, json_object *obj, uih_trait *t) {
  static const char *const names[] = {"auto", "none", "lz4", "zstd"};
  json_object *v;
  t->compression = UIH_COMPRESS_AUTO;
  if (!json_object_object_get_ex(obj, "compression", &v)) return UIH_OK;
  const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
  for (int i = 0; s && i < 4; i++)
    if (strcmp(s, names[i]) == 0) {
      t->compression = (uih_compression)i;
      return UIH_OK;
    }
  return fail(c, path, "field \"compression\": expected one of auto, none, lz4, zstd, got %s%.40s%s",
              s ? "\"" : json_kind(v), s ? s : "", s ? "\"" : "");
}

static int parse_categories(const ctx *c, const char *path, json_object *obj, uih_trait *t) {
  json_object *arr;
  UIH_FORWARD(get_array(c, path, obj, "categories", 1, 1u << 20, &arr));
  if (arr == NULL) return UIH_OK;
  if (t->type != UIH_TYPE_CATEGORY)
    return fail(c, path, "field \"categories\" is only allowed on category traits, not %s",
                uih_type_name(t->type));
  size_t n = json_object_array_length(arr);
  char **cats = calloc(n, sizeof *cats);
  if (!cats) return nomem(c);
  t->categories = (const char *const *)cats;
  for (size_t i = 0; i < n; i++) {
    json_object *v = json_object_array_get_idx(arr, i);
    if (!json_object_is_type(v, json_type_string) || json_object_get_string_len(v) == 0)
      return fail(c, path, "categories[%zu]: expected a non-empty string, got %s", i,
                  json_object_is_type(v, json_type_string) ? "\"\"" : json_kind(v));
    const char *s = json_object_get_string(v);
    for (size_t j = 0; j < i; j++)
      if (strcmp(cats[j], s) == 0)
        return fail(c, path, "categories[%zu]: \"%.64s\" repeats categories[%zu]", i, s, j);
    if (!(cats[i] = strdup(s))) return nomem(c);
    t->ncategories = (uint32_t)(i + 1);
  }
  return UIH_OK;
}

static int parse_trait(const ctx *c, const char *path, json_object *obj, uint32_t version,
                       uih_trait *t) {
  static const char *const fields[] = {"name", "id", "type", "encodings", "compression",
                                       "categories", "added_in", "dropped_in", "unit", "input", NULL};
  if (!json_object_is_type(obj, json_type_object))
    return fail(c, path, "expected an object, got %s", json_kind(obj));
  UIH_FORWARD(check_fields(c, path, obj, fields));
  int64_t v;
  UIH_FORWARD(get_name(c, path, obj, (char **)&t->name));
  UIH_FORWARD(get_int(c, path, obj, "id", 0, 0, 1, UIH_TRAIT_ARRIVAL - 1, &v));
  t->id = (uint16_t)v;
  UIH_FORWARD(parse_type(c, path, obj, &t->type));
  UIH_FORWARD(parse_encodings(c, path, obj, t));
  UIH_FORWARD(parse_compression(c, path, obj, t));
  UIH_FORWARD(parse_categories(c, path, obj, t));
  UIH_FORWARD(parse_input(c, path, obj, t));
  UIH_FORWARD(get_int(c, path, obj, "added_in", 1, 1, 1, version, &v));
  t->added_in = (uint32_t)v;
  UIH_FORWARD(get_int(c, path, obj, "dropped_in", 1, 0, 0, version, &v));
  t->dropped_in = (uint32_t)v;
  if (t->dropped_in != 0 && t->dropped_in <= t->added_in)
    return fail(c, path, "dropped_in (%u) must be after added_in (%u)", t->dropped_in,
                t->added_in);
  if (t->type != UIH_TYPE_TIMESTAMP && uih_trait_active(t) &&
      (!strcmp(t->name, "user_id") || !strcmp(t->name, "group") || !strcmp(t->name, "ts")))
    return fail(c, path, "name \"%s\" is reserved for an input column", t->name);
  if (!strcmp(t->name, UIH_TRAIT_ARRIVAL_NAME))
    return fail(c, path, "name \"%s\" is reserved for the system trait (the arrival generation)", t->name);
  return UIH_OK;
}

static int parse_group(const ctx *c, const char *path, json_object *obj, uint32_t version,
                       uih_group *g) {
  static const char *const fields[] = {"name", "id", "stripe_events", "traits", NULL};
  if (!json_object_is_type(obj, json_type_object))
    return fail(c, path, "expected an object, got %s", json_kind(obj));
  UIH_FORWARD(check_fields(c, path, obj, fields));
  int64_t v;
  UIH_FORWARD(get_name(c, path, obj, (char **)&g->name));
  UIH_FORWARD(get_int(c, path, obj, "id", 0, 0, 0, UINT16_MAX, &v));
  g->id = (uint16_t)v;
  UIH_FORWARD(get_int(c, path, obj, "stripe_events", 1, UIH_STRIPE_EVENTS_DEFAULT, 1,
                      UIH_STRIPE_EVENTS_MAX, &v));
  g->stripe_events = (uint32_t)v;
  g->schema_version = version;

  json_object *arr;
  UIH_FORWARD(get_array(c, path, obj, "traits", 0, UIH_TRAITS_MAX, &arr));
  size_t n = json_object_array_length(arr);
  uih_trait *traits = calloc(n, sizeof *traits);
  if (!traits) return nomem(c);
  g->traits = traits;
  const uih_trait *ts = NULL;
  for (size_t i = 0; i < n; i++) {
    char sub[128];
    snprintf(sub, sizeof sub, "%s.traits[%zu]", path, i);
    g->ntraits = (uint32_t)(i + 1);
    uih_trait *t = &traits[i];
    UIH_FORWARD(parse_trait(c, sub, json_object_array_get_idx(arr, i), version, t));
    for (size_t j = 0; j < i; j++) {
      if (traits[j].id == t->id)
        return fail(c, sub, "id %u is already used by traits[%zu] (\"%s\"); trait ids are "
                    "never reused, even after a drop", t->id, j, traits[j].name);
      if (uih_trait_active(t) && uih_trait_active(&traits[j]) &&
          strcmp(traits[j].name, t->name) == 0)
        return fail(c, sub, "name \"%s\" is already used by traits[%zu]", t->name, j);
    }
    if (t->type == UIH_TYPE_TIMESTAMP && uih_trait_active(t)) {
      if (ts) return fail(c, sub, "second active timestamp trait (\"%s\" is the event time already); "
                          "use int64 for other times", ts->name);
      ts = t;
    }
    /* Every stored stripe of the group has the event time's column, so
     * readers can reject one without it: the event time never changes. */
    if (t->type == UIH_TYPE_TIMESTAMP && !uih_trait_active(t))
      return fail(c, sub, "the timestamp trait cannot be dropped: it is the event time every "
                  "stripe of the group stores");
  }
  if (!ts)
    return fail(c, path, "no active trait of type \"timestamp\"; every group needs one (the event time)");
  for (size_t i = 0; i < n; i++)
    if (traits[i].added_in < ts->added_in)
      return fail(c, path, "timestamp trait \"%s\" has added_in %u, after trait \"%s\" (added_in %u); "
                  "the event time exists from the group's first version", ts->name, ts->added_in,
                  traits[i].name, traits[i].added_in);
  return UIH_OK;
}

static int parse_root(const ctx *c, json_object *root, uih_schema *s) {
  static const char *const fields[] = {"name", "version", "user_ids", "groups", NULL};
  static const char *const user_ids[] = {"integer", "string", NULL};
  if (!json_object_is_type(root, json_type_object))
    return fail(c, "", "expected a JSON object at the top level, got %s", json_kind(root));
  UIH_FORWARD(check_fields(c, "", root, fields));
  UIH_FORWARD(get_name(c, "", root, &s->name));
  int64_t v;
  UIH_FORWARD(get_int(c, "", root, "version", 0, 0, 1, INT32_MAX, &v));
  s->version = (uint32_t)v;
  int k;
  UIH_FORWARD(get_choice(c, "", root, "user_ids", user_ids, 0, &k));
  s->user_ids = k == 1 ? UIH_INPUT_STRING : UIH_INPUT_NATIVE;

  json_object *arr;
  UIH_FORWARD(get_array(c, "", root, "groups", 0, UINT16_MAX + 1u, &arr));
  size_t n = json_object_array_length(arr);
  s->groups = calloc(n, sizeof *s->groups);
  if (!s->groups) return nomem(c);
  for (size_t i = 0; i < n; i++) {
    char path[32];
    snprintf(path, sizeof path, "groups[%zu]", i);
    s->ngroups = (uint32_t)(i + 1);
    uih_group *g = &s->groups[i];
    UIH_FORWARD(parse_group(c, path, json_object_array_get_idx(arr, i), s->version, g));
    for (size_t j = 0; j < i; j++) {
      if (s->groups[j].id == g->id)
        return fail(c, path, "id %u is already used by groups[%zu] (\"%s\")", g->id, j,
                    s->groups[j].name);
      if (strcmp(s->groups[j].name, g->name) == 0)
        return fail(c, path, "name \"%s\" is already used by groups[%zu]", g->name, j);
    }
  }
  return UIH_OK;
}

/* 1-based line and column of byte `off` in `text`. */
static void line_col(const char *text, size_t off, size_t *line, size_t *col) {
  *line = 1;
  *col = 1;
  for (size_t i = 0; i < off; i++) {
    if (text[i] == '\n') {
      (*line)++;
      *col = 1;
    } else {
      (*col)++;
    }
  }
}

int uih_schema_parse(const char *json, size_t len, const char *origin, uih_schema **out,
                     uih_error *err) {
  ctx c = {origin ? origin : "<schema>", err};
  UIH_RETURN_IF(json == NULL || out == NULL, err, UIH_ERR_INVALID_ARGUMENT,
                "%s: schema_parse: NULL argument", c.origin);
  *out = NULL;
  UIH_RETURN_IF(len > SCHEMA_FILE_MAX, err, UIH_ERR_SCHEMA,
                "%s: %zu bytes is larger than the %u-byte limit for schema files", c.origin, len,
                SCHEMA_FILE_MAX);
  UIH_RETURN_IF(memchr(json, '\0', len) != NULL, err, UIH_ERR_PARSE,
                "%s: byte %zu: NUL byte in JSON text", c.origin,
                (size_t)((const char *)memchr(json, '\0', len) - json));

  json_tokener *tok = json_tokener_new_ex(JSON_MAX_DEPTH);
  if (!tok) return nomem(&c);
  json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
  json_object *root = json_tokener_parse_ex(tok, json, (int)len);
  enum json_tokener_error jerr = json_tokener_get_error(tok);
  size_t end = json_tokener_get_parse_end(tok);
  json_tokener_free(tok);

  size_t line, col;
  if (root == NULL || jerr != json_tokener_success) {
    line_col(json, end, &line, &col);
    json_object_put(root);
    return uih_error_set(err, UIH_ERR_PARSE, "%s: line %zu, column %zu: invalid JSON: %s",
                         c.origin, line, col,
                         jerr == json_tokener_continue ? "unexpected end of input"
                                                       : json_tokener_error_desc(jerr));
  }
  while (end < len && (json[end] == ' ' || json[end] == '\t' || json[end] == '\n' ||
                       json[end] == '\r'))
    end++;
  if (end < len) {
    line_col(json, end, &line, &col);
    json_object_put(root);
    return uih_error_set(err, UIH_ERR_PARSE,
                         "%s: line %zu, column %zu: unexpected text after the JSON value",
                         c.origin, line, col);
  }

  uih_schema *s = calloc(1, sizeof *s);
  int rc = s ? parse_root(&c, root, s) : nomem(&c);
  json_object_put(root);
  if (rc != UIH_OK) {
    uih_schema_free(s);
    return rc;
  }
  uih_schema_finish(s);
  *out = s;
  return UIH_OK;
}

int uih_schema_load(const char *path, uih_schema **out, uih_error *err) {
  UIH_RETURN_IF(path == NULL || out == NULL, err, UIH_ERR_INVALID_ARGUMENT,
                "schema_load: NULL argument");
  *out = NULL;
  FILE *f = fopen(path, "rb");
  UIH_RETURN_IF(f == NULL, err, UIH_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  size_t cap = 1u << 16, len = 0;
  char *buf = malloc(cap);
  int rc = UIH_OK;
  while (buf) {
    len += fread(buf + len, 1, cap - len, f);
    if (ferror(f)) {
      rc = uih_error_set(err, UIH_ERR_IO, "%s: read failed: %s", path, strerror(errno));
      break;
    }
    if (len < cap) break; /* EOF */
    if (cap > SCHEMA_FILE_MAX) {
      rc = uih_error_set(err, UIH_ERR_SCHEMA, "%s: larger than the %u-byte limit for schema files",
                         path, SCHEMA_FILE_MAX);
      break;
    }
    char *grown = realloc(buf, cap * 2);
    if (!grown) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = grown;
    cap *= 2;
  }
  fclose(f);
  if (!buf) return uih_error_set(err, UIH_ERR_NO_MEMORY, "%s: out of memory", path);
  if (rc == UIH_OK) rc = uih_schema_parse(buf, len, path, out, err);
  free(buf);
  return rc;
}
