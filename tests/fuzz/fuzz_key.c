/* Fuzz target: the key codec. Any input must decode or fail cleanly; every
 * 18-byte input is a key and re-encodes to the same bytes; the order of two
 * decoded keys equals the memcmp order of their bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "uih/key.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int sign(int x) { return (x > 0) - (x < 0); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uih_key k;
  uih_error err;
  int rc = uih_key_decode(data, size, &k, &err);
  if ((rc == UIH_OK) != (size == UIH_KEY_SIZE)) abort();
  if (rc == UIH_OK) {
    uint8_t again[UIH_KEY_SIZE];
    uih_key_encode(&k, again);
    if (memcmp(again, data, UIH_KEY_SIZE) != 0) abort();
  }
  if (size >= 2 * UIH_KEY_SIZE) {
    uih_key a, b;
    if (uih_key_decode(data, UIH_KEY_SIZE, &a, NULL) != UIH_OK) abort();
    if (uih_key_decode(data + UIH_KEY_SIZE, UIH_KEY_SIZE, &b, NULL) != UIH_OK) abort();
    if (sign(uih_key_compare(&a, &b)) != sign(memcmp(data, data + UIH_KEY_SIZE, UIH_KEY_SIZE)))
      abort();
    uint8_t prefix[UIH_KEY_GROUP_PREFIX_SIZE];
    memcpy(prefix, data, sizeof prefix);
    if (uih_key_prefix_successor(prefix, sizeof prefix) &&
        memcmp(data, prefix, sizeof prefix) >= 0)
      abort();
  }
  return 0;
}
