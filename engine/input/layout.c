/* Input layouts (layout.h): option strings parsed, delimiters detected,
 * plain CSV lines split, JSON Lines objects walked by json-c. */
#include "layout.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error_internal.h"

void uih_names_free(uih_names *names) {
  for (uint32_t i = 0; names && i < names->n; i++) free(names->v[i]);
  if (names) {
    free(names->v);
    names->v = NULL;
    names->n = 0;
  }
}

int uih_names_add(uih_names *names, const char *s, size_t len, uih_error *err) {
  char **v = realloc(names->v, (names->n + 1) * sizeof *v);
  UIH_RETURN_IF(v == NULL, err, UIH_ERR_NO_MEMORY, "input layout: out of memory");
  names->v = v;
  char *c = malloc(len + 1);
  UIH_RETURN_IF(c == NULL, err, UIH_ERR_NO_MEMORY, "input layout: out of memory");
  memcpy(c, s, len);
  c[len] = '\0';
  names->v[names->n++] = c;
  return UIH_OK;
}

/* Trims spaces at both ends of [*s, *s + *len). */
static void trim(const char **s, size_t *len) {
  while (*len && (**s == ' ' || **s == '\t')) (*s)++, (*len)--;
  while (*len && ((*s)[*len - 1] == ' ' || (*s)[*len - 1] == '\t')) (*len)--;
}

int uih_layout_columns(const char *list, const char *what, uih_names *out, uih_error *err) {
  out->v = NULL;
  out->n = 0;
  for (const char *p = list;;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    const char *s = p;
    trim(&s, &len);
    int rc = len ? UIH_OK : uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "%s '%s': name %u is empty", what, list, out->n + 1);
    for (uint32_t i = 0; rc == UIH_OK && i < out->n; i++)
      if (strlen(out->v[i]) == len && !memcmp(out->v[i], s, len))
        rc = uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "%s '%s': '%s' appears twice", what, list, out->v[i]);
    if (rc == UIH_OK) rc = uih_names_add(out, s, len, err);
    if (rc != UIH_OK) {
      uih_names_free(out);
      return rc;
    }
    if (!comma) return UIH_OK;
    p = comma + 1;
  }
}

int uih_layout_map(const char *map, const char *what, uih_names *ours, uih_names *theirs, uih_error *err) {
  ours->v = theirs->v = NULL;
  ours->n = theirs->n = 0;
  int rc = UIH_OK;
  for (const char *p = map; rc == UIH_OK;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    const char *eq = memchr(p, '=', len);
    if (!eq) {
      rc = uih_error_set(err, UIH_ERR_INVALID_ARGUMENT,
                         "%s '%s': entry %u '%.*s' is not name=column (e.g. user_id=userId,ts=timestamp)", what, map,
                         ours->n + 1, (int)len, p);
      break;
    }
    const char *a = p, *b = eq + 1;
    size_t la = (size_t)(eq - p), lb = len - la - 1;
    trim(&a, &la);
    trim(&b, &lb);
    if (!la || !lb)
      rc = uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "%s '%s': entry %u '%.*s' has an empty side", what, map,
                         ours->n + 1, (int)len, p);
    for (uint32_t i = 0; rc == UIH_OK && i < ours->n; i++) {
      if (strlen(ours->v[i]) == la && !memcmp(ours->v[i], a, la))
        rc = uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "%s '%s': '%s' is mapped twice", what, map, ours->v[i]);
      else if (strlen(theirs->v[i]) == lb && !memcmp(theirs->v[i], b, lb))
        rc = uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "%s '%s': column '%s' is given to '%s' and to '%.*s'",
                           what, map, theirs->v[i], ours->v[i], (int)la, a);
    }
    if (rc == UIH_OK) rc = uih_names_add(ours, a, la, err);
    if (rc == UIH_OK) rc = uih_names_add(theirs, b, lb, err);
    if (!comma) break;
    p = comma + 1;
  }
  if (rc != UIH_OK) {
    uih_names_free(ours);
    uih_names_free(theirs);
  }
  return rc;
}

static int ends_with(const char *s, size_t n, const char *suffix) {
  size_t k = strlen(suffix);
  return n >= k && !memcmp(s + n - k, suffix, k);
}

int uih_layout_is_jsonl(const char *name) {
  size_t n = strlen(name);
  if (ends_with(name, n, ".gz")) n -= 3;
  else if (ends_with(name, n, ".zst")) n -= 4;
  else if (ends_with(name, n, ".zstd")) n -= 5;
  return ends_with(name, n, ".jsonl") || ends_with(name, n, ".ndjson");
}

void uih_layout_detect_delimiter(const char *line, size_t n, char out[5]) {
  size_t count[4] = {0, 0, 0, 0}; /* , \t ; :: */
  int quoted = 0;
  for (size_t i = 0; i < n; i++) {
    const char c = line[i];
    if (c == '"') quoted = !quoted;
    if (quoted) continue;
    if (c == ',') count[0]++;
    else if (c == '\t') count[1]++;
    else if (c == ';') count[2]++;
    else if (c == ':' && i + 1 < n && line[i + 1] == ':') count[3]++, i++;
  }
  static const char *const delims[] = {",", "\t", ";", "::"};
  int best = 0;
  for (int k = 1; k < 4; k++)
    if (count[k] > count[best]) best = k;
  snprintf(out, 5, "%s", delims[best]);
}

/* The value at `path` (dotted) in `obj`, or NULL. */
static json_object *at_path(json_object *obj, const char *path) {
  char key[256];
  for (const char *p = path;;) {
    const char *dot = strchr(p, '.');
    size_t len = dot ? (size_t)(dot - p) : strlen(p);
    if (len >= sizeof key || !json_object_is_type(obj, json_type_object)) return NULL;
    memcpy(key, p, len);
    key[len] = '\0';
    json_object *v;
    if (!json_object_object_get_ex(obj, key, &v)) {
      /* a key that holds dots itself: the whole rest of the path */
      return dot && json_object_object_get_ex(obj, p, &v) ? v : NULL;
    }
    if (!dot) return v;
    obj = v;
    p = dot + 1;
  }
}

int uih_jsonl_fields(json_tokener *tok, const char *line, size_t len, char *const *paths, uint32_t npaths,
                     void (*put)(void *arg, const char *text, size_t len), void *arg, char *why, size_t cap) {
  json_tokener_reset(tok);
  json_object *obj = json_tokener_parse_ex(tok, line, (int)len);
  enum json_tokener_error jerr = json_tokener_get_error(tok);
  int rc = UIH_OK;
  if (jerr != json_tokener_success || !obj) {
    snprintf(why, cap, "not JSON: %s", jerr == json_tokener_continue ? "the object does not end on its line"
                                                                      : json_tokener_error_desc(jerr));
    rc = UIH_ERR_PARSE;
  } else if ((size_t)json_tokener_get_parse_end(tok) < len &&
             strspn(line + json_tokener_get_parse_end(tok), " \t\r\n") != len - json_tokener_get_parse_end(tok)) {
    snprintf(why, cap, "more than one JSON value on the line");
    rc = UIH_ERR_PARSE;
  } else if (!json_object_is_type(obj, json_type_object)) {
    snprintf(why, cap, "expected a JSON object, got %s", json_type_to_name(json_object_get_type(obj)));
    rc = UIH_ERR_PARSE;
  }
  for (uint32_t i = 0; rc == UIH_OK && i < npaths; i++) {
    json_object *v = at_path(obj, paths[i]);
    switch (v ? json_object_get_type(v) : json_type_null) {
      case json_type_null: put(arg, "", 0); break;
      case json_type_boolean: put(arg, json_object_get_boolean(v) ? "true" : "false", json_object_get_boolean(v) ? 4 : 5); break;
      case json_type_string: put(arg, json_object_get_string(v), (size_t)json_object_get_string_len(v)); break;
      case json_type_int:
        /* json-c reads a number past 64 bits as the limit it passed: refused, limits included */
        if (json_object_get_int64(v) == INT64_MIN || json_object_get_uint64(v) == UINT64_MAX) {
          snprintf(why, cap, "field '%s': a number at or past the 64-bit limits, which JSON readers cannot hold "
                   "exactly (write such an id as a string)", paths[i]);
          rc = UIH_ERR_PARSE;
          break;
        }
        /* fall through */
      case json_type_double: {
        const char *t = json_object_get_string(v); /* as written: json-c keeps a number's text */
        put(arg, t, strlen(t));
        break;
      }
      default:
        snprintf(why, cap, "field '%s': expected a value, got %s", paths[i], json_type_to_name(json_object_get_type(v)));
        rc = UIH_ERR_PARSE;
    }
  }
  json_object_put(obj);
  return rc;
}

static int is_blank(char c) { return c == ' ' || c == '\t'; }

int uih_layout_split_plain(const char *line, size_t n, char delim, void (*put)(void *arg, const char *text, size_t len),
                           void *arg) {
  if (n == 0 || line[n - 1] != '\n' || is_blank(delim) || delim == '"' || delim == '\r' || delim == '\n') return 0;
  size_t end = n - 1;
  if (end > 0 && line[end - 1] == '\r') end--;
  if (memchr(line, '"', end) || memchr(line, '\r', end)) return 0;
  size_t k = 0;
  while (k < end && is_blank(line[k])) k++;
  if (k == end) return 0; /* blank: no record, as libcsv's state says */
  for (size_t start = 0;;) {
    const char *d = memchr(line + start, delim, end - start);
    const size_t stop = d ? (size_t)(d - line) : end;
    size_t a = start, b = stop;
    while (a < b && is_blank(line[a])) a++;
    while (b > a && is_blank(line[b - 1])) b--;
    put(arg, line + a, b - a);
    if (!d) return 1;
    start = stop + 1;
  }
}
