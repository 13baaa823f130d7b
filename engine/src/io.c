/* Batched reads through io_uring, with a pread fallback. See uih/io.h. */
#include "uih/io.h"

#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error_internal.h"

struct uih_io {
  struct io_uring ring;
  int uring; /* ring initialized */
  unsigned depth;
  uih_pread_fn pread_fn;
};

int uih_io_create(unsigned depth, int use_uring, uih_io **out, uih_error *err) {
  UIH_RETURN_IF(!out, err, UIH_ERR_INVALID_ARGUMENT, "io_create: NULL out");
  UIH_RETURN_IF(depth == 0 || depth > 4096, err, UIH_ERR_INVALID_ARGUMENT,
                "io_create: depth %u is outside [1, 4096]", depth);
  uih_io *io = calloc(1, sizeof *io);
  UIH_RETURN_IF(!io, err, UIH_ERR_NO_MEMORY, "io_create: out of memory");
  io->depth = depth;
  io->pread_fn = pread;
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

void uih_io_set_pread(uih_io *io, uih_pread_fn fn) { io->pread_fn = fn ? fn : pread; }

/* One request to the end with pread, continuing after short reads. */
static void read_with_pread(uih_io *io, uih_io_req *r) {
  size_t done = 0;
  while (done < r->len) {
    ssize_t got = io->pread_fn(r->fd, (char *)r->buf + done, r->len - done, (off_t)(r->offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      r->result = -errno;
      return;
    }
    if (got == 0) break; /* end of file */
    done += (size_t)got;
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
    for (size_t i = 0; i < n; i++) read_with_pread(io, &reqs[i]);
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
        int res = cqe->res;
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
  for (size_t i = 0; i < n; i++) read_with_pread(io, &reqs[i]);
  return uih_error_set(err, UIH_ERR_IO, "io_uring failed; the batch was read with pread");
}
