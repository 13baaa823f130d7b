/* A main() for fuzz targets built without libFuzzer: feeds every file named
 * on the command line (directories: every regular file inside, sorted) to
 * LLVMFuzzerTestOneInput once. A target reports a bug by aborting, so a
 * clean exit means the whole corpus passed. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "replay: cannot open %s\n", path);
    return 1;
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
  if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
    fprintf(stderr, "replay: cannot read %s\n", path);
    fclose(f);
    free(buf);
    return 1;
  }
  fclose(f);
  LLVMFuzzerTestOneInput(buf, (size_t)n);
  free(buf);
  return 0;
}

static int run_path(const char *path, int *count) {
  struct stat st;
  if (stat(path, &st) != 0) {
    fprintf(stderr, "replay: %s does not exist\n", path);
    return 1;
  }
  if (!S_ISDIR(st.st_mode)) {
    (*count)++;
    return run_file(path);
  }
  struct dirent **names;
  int n = scandir(path, &names, NULL, alphasort);
  if (n < 0) {
    fprintf(stderr, "replay: cannot list %s\n", path);
    return 1;
  }
  int rc = 0;
  for (int i = 0; i < n; i++) {
    if (names[i]->d_name[0] != '.') {
      char full[4096];
      snprintf(full, sizeof full, "%s/%s", path, names[i]->d_name);
      struct stat fst;
      if (stat(full, &fst) == 0 && S_ISREG(fst.st_mode)) {
        (*count)++;
        rc |= run_file(full);
      }
    }
    free(names[i]);
  }
  free(names);
  return rc;
}

int main(int argc, char **argv) {
  int rc = 0, count = 0;
  for (int i = 1; i < argc; i++) rc |= run_path(argv[i], &count);
  if (count == 0) {
    fprintf(stderr, "replay: no inputs\n");
    return 1;
  }
  printf("replayed %d inputs\n", count);
  return rc;
}
