/* Fuzz target: parsing untrusted value dictionaries (uih_value_dict_parse,
 * indexed as an encoder needs). Any input gives an error with a message
 * and no dictionary, or a dictionary whose serialized form is exactly the
 * input. Each input is parsed twice: as it is, and with its last 4 bytes
 * made the checksum of the rest, so that mutations reach the entries
 * behind the checksum. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "uih/stripe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void parse(const uint8_t *data, size_t size) {
  uih_value_dict *d = NULL;
  uih_error err;
  int rc = uih_value_dict_parse(data, size, UIH_VALUE_DICT_INDEX, &d, &err);
  if (rc != UIH_OK) {
    if (d != NULL || err.code != rc || err.msg[0] == '\0') abort();
    return;
  }
  const uint8_t *p;
  size_t len;
  uih_value_dict_bytes(d, &p, &len);
  if (len != size || memcmp(p, data, size) != 0) abort();
  uih_value_dict_free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  parse(data, size);
  if (size < 4) return 0;
  uint8_t *fixed = malloc(size);
  if (!fixed) return 0;
  memcpy(fixed, data, size);
  uint32_t sum = (uint32_t)XXH3_64bits(fixed, size - 4);
  memcpy(fixed + size - 4, &sum, 4); /* little-endian, as stored */
  parse(fixed, size);
  free(fixed);
  return 0;
}
