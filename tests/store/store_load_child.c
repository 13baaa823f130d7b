/* A load on the public API, for store_test's crash test: loads FILE... into
 * STORE (opened to load, as `uih load` opens it) with the given through, memory and threads, and, when PHASE is not
 * "-", kills itself (SIGKILL) at the AT-th progress report of that phase
 * ("read", "merge" or "publish"). Exit 0 when the load completed, 1 on an
 * error (printed).
 *   store_load_child STORE THROUGH MEMORY THREADS PHASE AT FILE...
 * With UIH_TEST_FILE_LIMIT=N in the environment, no file it writes may
 * grow past N bytes (RLIMIT_FSIZE; writes beyond fail with EFBIG, as they
 * would with ENOSPC on a full disk). */
#include <signal.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uih/loader.h"
#include "uih/store.h"

typedef struct kill_at {
  const char *phase;
  long at, seen;
} kill_at;

static void on_progress(const uih_load_progress *p, void *arg) {
  kill_at *k = arg;
  if (strcmp(p->phase, k->phase) == 0 && ++k->seen == k->at) raise(SIGKILL);
}

int main(int argc, char **argv) {
  if (argc < 8) {
    fprintf(stderr, "usage: %s STORE THROUGH MEMORY THREADS PHASE AT FILE...\n", argv[0]);
    return 2;
  }
  const char *limit = getenv("UIH_TEST_FILE_LIMIT");
  if (limit) {
    struct rlimit r = {(rlim_t)strtoull(limit, NULL, 10), (rlim_t)strtoull(limit, NULL, 10)};
    signal(SIGXFSZ, SIG_IGN); /* a failed write, not a killed process */
    if (setrlimit(RLIMIT_FSIZE, &r) != 0) {
      perror("setrlimit");
      return 2;
    }
  }
  kill_at k = {argv[5], atol(argv[6]), 0};
  uih_load_opts o = UIH_LOAD_OPTS_DEFAULT;
  o.through = strtoll(argv[2], NULL, 10);
  o.memory = strtoull(argv[3], NULL, 10);
  o.threads = (uint32_t)atoi(argv[4]);
  if (strcmp(k.phase, "-") != 0) {
    o.progress = on_progress;
    o.progress_arg = &k;
  }
  uih_error err = {0};
  uih_store *s = NULL;
  uih_store_opts so = UIH_STORE_OPTS_DEFAULT;
  so.role = UIH_STORE_ROLE_LOAD; /* as `uih load`: a serving store may own the mutable tiers */
  int rc = uih_store_open(argv[1], &so, &s, &err);
  if (rc == UIH_OK) rc = uih_load(s, (const char *const *)argv + 7, (size_t)argc - 7, &o, NULL, &err);
  uih_store_close(s);
  if (rc != UIH_OK) {
    fprintf(stderr, "%s\n", uih_error_message(&err));
    return 1;
  }
  return 0;
}
