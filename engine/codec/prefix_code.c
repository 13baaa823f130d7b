/* Prefix codes: lengths from frequencies, canonical codes from lengths
 * (prefix_code.h). */
#include "prefix_code.h"

#include <stdlib.h>

/* Huffman's lengths for n symbols: the two lightest nodes merge until one
 * is left (a linear scan each time: alphabets here are a few hundred
 * symbols, built once per dictionary). Ties go to the lower node index,
 * leaves before merged nodes, so the result is deterministic. Returns the
 * longest length. */
static unsigned huffman(const uint64_t *freq, size_t n, uint8_t *len, uint64_t *w, uint32_t *parent,
                        uint8_t *alive) {
  size_t nodes = n;
  for (size_t i = 0; i < n; i++) w[i] = freq[i];
  memset(alive, 0, 2 * n);
  for (size_t i = 0; i < n; i++) alive[i] = 1;
  for (size_t merges = 0; merges + 1 < n; merges++) {
    size_t a = SIZE_MAX, b = SIZE_MAX;
    for (size_t i = 0; i < nodes; i++) {
      if (!alive[i]) continue;
      if (a == SIZE_MAX || w[i] < w[a]) {
        b = a;
        a = i;
      } else if (b == SIZE_MAX || w[i] < w[b]) {
        b = i;
      }
    }
    w[nodes] = w[a] + w[b];
    parent[a] = parent[b] = (uint32_t)nodes;
    alive[a] = alive[b] = 0;
    alive[nodes++] = 1;
  }
  /* A node's depth is its parent's + 1; parents come after children. */
  uint8_t *depth = (uint8_t *)(w + 2 * n); /* 2n bytes past the weights */
  depth[nodes - 1] = 0;
  unsigned longest = 0;
  for (size_t i = nodes - 1; i-- > 0;) {
    unsigned d = depth[parent[i]] + 1u;
    depth[i] = (uint8_t)(d > 255 ? 255 : d);
  }
  for (size_t i = 0; i < n; i++) {
    len[i] = depth[i];
    longest = len[i] > longest ? len[i] : longest;
  }
  return longest;
}

int pc_lengths(const uint64_t *freq, size_t n, uint8_t *len) {
  if (n < 2 || n > PC_MAX_SYMBOLS) return -1;
  for (size_t i = 0; i < n; i++)
    if (freq[i] == 0) return -1;
  /* weights of 2n nodes, then 2n bytes of depths; parents of 2n nodes;
   * which of 2n nodes are unmerged */
  uint64_t *w = malloc(2 * n * sizeof *w + 2 * n), *f = malloc(n * sizeof *f);
  uint32_t *parent = malloc(2 * n * sizeof *parent);
  uint8_t *alive = malloc(2 * n);
  int rc = -1;
  if (w && f && parent && alive) {
    for (size_t i = 0; i < n; i++) f[i] = freq[i];
    for (;;) {
      if (huffman(f, n, len, w, parent, alive) <= PC_MAX_LEN) {
        rc = 0;
        break;
      }
      /* Flatten: halve every frequency (keeping it >= 1); the rare
       * symbols' codes get shorter, the common ones' a little longer. */
      for (size_t i = 0; i < n; i++) f[i] = f[i] / 2 + 1;
    }
  }
  free(w), free(f), free(parent), free(alive);
  return rc;
}

int pc_codes(const uint8_t *len, size_t n, uint16_t *code) {
  unsigned count[PC_MAX_LEN + 1] = {0};
  for (size_t i = 0; i < n; i++) {
    if (len[i] < 1 || len[i] > PC_MAX_LEN) return -1;
    count[len[i]]++;
  }
  /* Complete: the codes fill the 2^PC_MAX_LEN leaves exactly. */
  uint64_t kraft = 0;
  for (unsigned l = 1; l <= PC_MAX_LEN; l++) kraft += (uint64_t)count[l] << (PC_MAX_LEN - l);
  if (kraft != PC_TABLE_SIZE) return -1;
  unsigned next[PC_MAX_LEN + 2] = {0};
  for (unsigned l = 1, c = 0; l <= PC_MAX_LEN; l++) {
    c = (c + count[l - 1]) << 1;
    next[l] = c;
  }
  for (size_t i = 0; i < n; i++) {
    unsigned l = len[i], c = next[l]++, r = 0;
    for (unsigned b = 0; b < l; b++) r |= ((c >> b) & 1u) << (l - 1 - b);
    code[i] = (uint16_t)r;
  }
  return 0;
}
