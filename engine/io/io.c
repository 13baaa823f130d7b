/* Batched reads through io_uring, with a pread fallback. See uih/io.h. */
#include "uih/io.h"

#include <errno.h>
#include <liburing.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error_internal.h"

struct uih_io {
  struct io_uring ring;
  int uring; /* ring initialized */
  unsigned depth;
};

/* The fault hook (uih_io_set_fault): one for the process, read on every
 * completion, so readers created before it was set see it too. */
static _Atomic(uih_io_fault_fn) fault_fn;
static void *_Atomic fault_ctx;

void uih_io_set_fault(uih_io_fault_fn fn, void *ctx) {
  atomic_store(&fault_ctx, ctx);
  atomic_store(&fault_fn, fn);
}

/* What a read that returned `res` into `bytes` should count as. */
static int64_t outcome(int fd, uint64_t offset, const void *bytes, int64_t res) {
  uih_io_fault_fn fn = atomic_load_explicit(&fault_fn, memory_order_acquire);
  return fn ? fn(atomic_load(&fault_ctx), fd, offset, bytes, res) : res;
}

int uih_io_create(unsigned depth, int use_uring, uih_io **out, uih_error *err) {
  UIH_RETURN_IF(!out, err, UIH_ERR_INVALID_ARGUMENT, "io_create: NULL out");
  UIH_RETURN_IF(depth == 0 || depth > 4096, err, UIH_ERR_INVALID_ARGUMENT,
                "io_create: depth %u is outside [1, 4096]", depth);
  uih_io *io = calloc(1, sizeof *io);
  UIH_RETURN_IF(!io, err, UIH_ERR_NO_MEMORY, "io_create: out of memory");
  io->depth = depth;
  /* A failure here is not an error: the pread path serves the same calls. */
  if (use_uring && io_uring_queue_init(depth, &io->ring, 0) == 0) io->uring = 1;
  *out = io;
  return UIH_OK;
}

void uih_io_free(uih_io *io) {
  if (!io) return;
  if (io->uring) io_uring_queue_exit(&io->ring);
  free(io);
}

int uih_io_uses_uring(const uih_io *io) { return io->uring; }

/* One request to the end with pread, continuing after short reads. */
static void read_with_pread(uih_io_req *r) {
  size_t done = 0;
  while (done < r->len) {
    char *at = (char *)r->buf + done;
    ssize_t got = pread(r->fd, at, r->len - done, (off_t)(r->offset + done));
    int64_t res = outcome(r->fd, r->offset + done, at, got < 0 ? -(int64_t)errno : (int64_t)got);
    if (res == -EINTR) continue;
    if (res < 0) {
      r->result = res;
      return;
    }
    if (res == 0) break; /* end of file */
    done += (size_t)res;
  }
  r->result = (int64_t)done;
}

/* Queues what is left of request `i` (done bytes already read). */
static int queue(uih_io *io, uih_io_req *r, size_t i, size_t done) {
  struct io_uring_sqe *sqe = io_uring_get_sqe(&io->ring);
  if (!sqe) return -1;
  io_uring_prep_read(sqe, r->fd, (char *)r->buf + done, (unsigned)(r->len - done), r->offset + done);
  io_uring_sqe_set_data64(sqe, i);
  return 0;
}

int uih_io_read(uih_io *io, uih_io_req *reqs, size_t n, uih_error *err) {
  for (size_t i = 0; i < n; i++) reqs[i].result = 0;
  if (!io->uring) {
    for (size_t i = 0; i < n; i++) read_with_pread(&reqs[i]);
    return UIH_OK;
  }
  /* Windows of `depth` requests: queue, submit once, reap, requeue short
   * reads until each request is complete. */
  for (size_t base = 0; base < n; base += io->depth) {
    size_t end = n - base < io->depth ? n : base + io->depth;
    size_t pending = 0;
    for (size_t i = base; i < end; i++) {
      if (reqs[i].len == 0) continue;
      if (queue(io, &reqs[i], i, 0) != 0) goto ring_failed;
      pending++;
    }
    while (pending > 0) {
      if (io_uring_submit_and_wait(&io->ring, 1) < 0) goto ring_failed;
      struct io_uring_cqe *cqe;
      unsigned head, seen = 0;
      io_uring_for_each_cqe(&io->ring, head, cqe) {
        seen++;
        uih_io_req *r = &reqs[io_uring_cqe_get_data64(cqe)];
        int64_t done = r->result;
        int64_t res = outcome(r->fd, r->offset + (uint64_t)done, (char *)r->buf + done, cqe->res);
        if (res == -EINTR || res == -EAGAIN) { /* retry the rest */
          if (queue(io, r, (size_t)(r - reqs), (size_t)r->result) != 0) goto ring_failed;
          continue;
        }
        pending--;
        if (res < 0) {
          r->result = res;
          continue;
        }
        r->result += res;
        if (res > 0 && (size_t)r->result < r->len) { /* short read: the rest */
          if (queue(io, r, (size_t)(r - reqs), (size_t)r->result) != 0) goto ring_failed;
          pending++;
        }
      }
      io_uring_cq_advance(&io->ring, seen);
    }
  }
  return UIH_OK;

ring_failed:
  /* Leave the ring for good and redo everything with pread. */
  io_uring_queue_exit(&io->ring);
  io->uring = 0;
  for (size_t i = 0; i < n; i++) read_with_pread(&reqs[i]);
  return uih_error_set(err, UIH_ERR_IO, "io_uring failed; the batch was read with pread");
}
