/* xxHash for the engine's checksums. On x86-64, Debian's libxxhash also
 * exports XXH3 entry points that pick SSE2 / AVX2 / AVX-512 at run time
 * (xxh_x86dispatch.h maps XXH3_64bits to them); the plain ones are fixed
 * to SSE2. The hashes are identical either way, so files do not change. */
#ifndef UIH_HASH_H
#define UIH_HASH_H

#include <xxhash.h>
#if defined(__x86_64__) && __has_include(<xxh_x86dispatch.h>)
#include <xxh_x86dispatch.h>
#endif

#endif
