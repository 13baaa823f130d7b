/* Fuzz target: parsing untrusted value dictionaries (uih_value_dict_parse,
 * indexed as an encoder needs). Any input gives an error with a message
 * and no dictionary, or a dictionary whose serialized form is exactly the
 * input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "uih/stripe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uih_value_dict *d = NULL;
  uih_error err;
  int rc = uih_value_dict_parse(data, size, UIH_VALUE_DICT_INDEX, &d, &err);
  if (rc != UIH_OK) {
    if (d != NULL || err.code != rc || err.msg[0] == '\0') abort();
    return 0;
  }
  const uint8_t *p;
  size_t len;
  uih_value_dict_bytes(d, &p, &len);
  if (len != size || memcmp(p, data, size) != 0) abort();
  uih_value_dict_free(d);
  return 0;
}
