/* Fuzz target: the store's metadata decoders (uih/generation.h). A
 * generation record decodes or fails cleanly, and one that decodes
 * re-encodes to the same bytes; so does a store descriptor, which parses
 * only in its one canonical form (format 2's as uih_store_descriptor_write
 * writes it, its check included). The first byte picks the decoder. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uih/generation.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  const uint8_t *p = data + 1;
  size_t n = size - 1;
  uih_error err;
  if (data[0] & 1) {
    uint32_t shards;
    uint64_t id;
    if (uih_store_descriptor_parse((const char *)p, n, &shards, &id, &err) != UIH_OK) return 0;
    char canon[96];
    size_t len;
    if (n > 10 && p[9] == '2') { /* format 2: written by uih_store_descriptor_write, and only so */
      if (id == 0) abort();
      len = uih_store_descriptor_write(shards, id, canon, sizeof canon);
    } else {
      len = (size_t)(id ? snprintf(canon, sizeof canon, "uihstore 1\nshards %u\nid %016llx\n", shards,
                                   (unsigned long long)id)
                        : snprintf(canon, sizeof canon, "uihstore 1\nshards %u\n", shards));
    }
    if (shards < 1 || shards > UIH_STORE_SHARDS_MAX || len != n || memcmp(canon, p, n) != 0) abort();
    return 0;
  }
  uih_generation g;
  if (uih_generation_decode(p, n, &g, &err) != UIH_OK) return 0;
  uint8_t again[UIH_GENERATION_SIZE];
  uih_generation_encode(&g, again);
  if (n != UIH_GENERATION_SIZE || memcmp(again, p, n) != 0) abort();
  return 0;
}
