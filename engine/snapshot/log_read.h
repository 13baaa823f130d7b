/* Inside the snapshot module: the frame walk the streaming reader, the
 * in-memory index and the writer's repair share, and what the writer asks
 * of a reader. */
#ifndef UIH_SNAPSHOT_LOG_READ_H
#define UIH_SNAPSHOT_LOG_READ_H

#include "log_format.h"

/* Where a walk over a format-2 log's frames stands. */
typedef struct {
  uint64_t next;        /* the number the next record should have */
  uint64_t damage_from; /* where the damaged span under way began */
  int in_damage, sealed, done;
  int torn; /* it ended on bytes that stop inside a frame, after whole ones */
} frame_walk;

typedef enum {
  kEvRecord, /* number, rec and len; `used` bytes consumed */
  kEvEnd,
  kEvNeed,   /* call again with `need` bytes from here, or all there are */
  kEvAgain,  /* `used` bytes consumed; call again */
  kEvDamage, /* err says what and which records; `used` bytes consumed (0:
                the frame here is read by the next call) */
} frame_event_kind;

typedef struct {
  frame_event_kind kind;
  size_t used, need;
  uint64_t number;
  const uint8_t *rec;
  size_t len;
} frame_event;

void frame_walk_init(frame_walk *w);
/* The next event of the walk from byte `at` of the log, whose bytes from
 * there are p[0..avail) (all of them when eof). */
frame_event frame_walk_next(frame_walk *w, const char *name, uint64_t at, const uint8_t *p, size_t avail, int eof,
                            uih_error *err);

/* 2 for "UIHSLOG2", 1 for "UIHSLOG1", 0 for anything else (8 bytes). */
int log_magic_version(const uint8_t *magic);

/* The writer's questions of a reader that stopped: did it stop on a torn
 * tail, where is it, and which number comes next. */
int log_reader_torn(const uih_snapshot_log *l);
uint64_t log_reader_at(const uih_snapshot_log *l);
uint64_t log_reader_next_number(const uih_snapshot_log *l);

#endif
