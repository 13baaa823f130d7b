/* Fuzz target: a block of a loader's sort run as it is decompressed
 * (loader/run_block.h), with the least record length taken from the first
 * byte. It reads or fails cleanly as corruption; a block that reads holds
 * records whose lengths fill it, and laying them out again gives the same
 * bytes (the layout is the records' only one). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "run_block.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const uint32_t min_len = data[0] % 8;
  const uint8_t *in = data + 1;
  const size_t len = size - 1;
  uint8_t *raw = malloc(len ? len : 1), *again = malloc(len ? len : 1);
  if (!raw || !again) abort();
  ld_run_block_scratch sc = {0};
  uih_error err;
  const int rc = ld_run_block_decode(in, len, min_len, raw, &sc, &err);
  if (rc != UIH_OK && rc != UIH_ERR_CORRUPTION) abort();
  if (rc == UIH_OK) {
    size_t at = 0;
    while (at < len - 4) { /* whole records, each at least min_len */
      uint32_t l;
      if (len - 4 - at < 4) abort();
      memcpy(&l, raw + at, 4);
      if (l < min_len || l > len - 4 - at - 4) abort();
      at += 4u + l;
    }
    if (at != len - 4) abort();
    if (ld_run_block_encode(raw, len - 4, again, &sc, &err) != UIH_OK || memcmp(again, in, len) != 0) abort();
  }
  ld_run_block_scratch_free(&sc);
  free(raw);
  free(again);
  return 0;
}
