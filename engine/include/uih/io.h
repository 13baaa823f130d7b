/* uihstore — batched file reads: io_uring where the kernel allows it,
 * pread otherwise.
 *
 * A uih_io submits many reads at once (one io_uring_enter for the batch)
 * and waits for all of them; short reads are resubmitted for the rest, so a
 * request ends with all its bytes, fewer only at end of file, or an error.
 * When io_uring cannot be set up (old kernel, seccomp, container policy) the
 * same calls use pread, one request after another.
 *
 * A uih_io is not thread-safe: use one per thread. Tests inject short
 * reads, interrupts and errors into both paths through one process-wide
 * hook (uih_io_set_fault).
 */
#ifndef UIH_IO_H
#define UIH_IO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "uih/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct uih_io uih_io;

typedef struct uih_io_req {
  int fd;
  uint64_t offset;
  size_t len;
  void *buf;      /* at least len bytes, owned by the caller */
  int64_t result; /* out: bytes read (< len only at end of file) or -errno */
} uih_io_req;

/* A reader for batches of up to `depth` requests in flight (1..4096).
 * `use_uring` 0 forces the pread path. */
int uih_io_create(unsigned depth, int use_uring, uih_io **out, uih_error *err);
void uih_io_free(uih_io *io); /* NULL is fine */

/* 1 if this reader uses io_uring, 0 if pread. */
int uih_io_uses_uring(const uih_io *io);

/* Reads every request; returns UIH_OK when all completed (each result says
 * how), or UIH_ERR_IO if the ring itself failed (then every request was
 * retried with pread). */
int uih_io_read(uih_io *io, uih_io_req *reqs, size_t n, uih_error *err);

/* Fault injection, for tests of uihstore and of programs embedding it.
 * Every read of every uih_io in the process, io_uring or pread, hands its
 * outcome to `fn` before the reader acts on it: the file, where this read
 * started, the bytes it delivered (`res` of them when res > 0) and `res`
 * itself (bytes read, 0 at end of file, or -errno). `fn` returns the outcome
 * the reader should see instead: `res` unchanged, a -errno (-EINTR is retried
 * like a real interrupt), or fewer bytes (a short read: the rest is read
 * again). `fn` may be called from any thread at once. NULL removes the hook.
 * Set it while no reads are in flight. */
typedef int64_t (*uih_io_fault_fn)(void *ctx, int fd, uint64_t offset, const void *bytes, int64_t res);
void uih_io_set_fault(uih_io_fault_fn fn, void *ctx);

#ifdef __cplusplus
}
#endif
#endif /* UIH_IO_H */
