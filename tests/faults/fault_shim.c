// LD_PRELOAD fault injection for the shell tests of tests/faults: stops a
// process at an exact point of its file I/O, which a signal sent from
// outside cannot hit reliably. Inert unless its variables are set.
//   FASTNN_FAULT_KILL_AFTER_RENAME=N  SIGKILL right after the N-th successful
//                                     rename() (1 = the first)
//   FASTNN_FAULT_RENAME_SUFFIX=S      ... counting only renames onto names
//                                     ending in S
//   FASTNN_FAULT_STALL_OPEN=S         open() of a path ending in S first
//                                     sleeps FASTNN_FAULT_STALL_SECS (60),
//                                     as on a hung network file system,
//   FASTNN_FAULT_STALL_MARKER=PATH    ... after creating the file PATH
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int ends_with(const char* s, const char* suffix) {
  const size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

int rename(const char* from, const char* to) {
  static int (*real)(const char*, const char*);
  static int renames;
  if (!real) real = (int (*)(const char*, const char*))dlsym(RTLD_NEXT, "rename");
  const int rc = real(from, to);
  const char* n = getenv("FASTNN_FAULT_KILL_AFTER_RENAME");
  const char* suffix = getenv("FASTNN_FAULT_RENAME_SUFFIX");
  if (rc == 0 && n && (!suffix || ends_with(to, suffix)) &&
      __atomic_add_fetch(&renames, 1, __ATOMIC_SEQ_CST) == atoi(n)) {
    raise(SIGKILL);
  }
  return rc;
}

static void stall(const char* path) {
  const char* suffix = getenv("FASTNN_FAULT_STALL_OPEN");
  if (!suffix || !ends_with(path, suffix)) return;
  const char* marker = getenv("FASTNN_FAULT_STALL_MARKER");
  if (marker) {
    static int (*real_creat)(const char*, mode_t);
    if (!real_creat) real_creat = (int (*)(const char*, mode_t))dlsym(RTLD_NEXT, "creat");
    const int fd = real_creat(marker, 0644);
    if (fd >= 0) close(fd);
  }
  const char* secs = getenv("FASTNN_FAULT_STALL_SECS");
  sleep(secs ? (unsigned)atoi(secs) : 60u);
}

#define FASTNN_OPEN(name)                                                 \
  int name(const char* path, int flags, ...) {                            \
    static int (*real)(const char*, int, ...);                            \
    if (!real) real = (int (*)(const char*, int, ...))dlsym(RTLD_NEXT, #name); \
    mode_t mode = 0;                                                      \
    if (flags & (O_CREAT | O_TMPFILE)) {                                  \
      va_list ap;                                                         \
      va_start(ap, flags);                                                \
      mode = va_arg(ap, mode_t);                                          \
      va_end(ap);                                                         \
    }                                                                     \
    stall(path);                                                          \
    return real(path, flags, mode);                                       \
  }
FASTNN_OPEN(open)
FASTNN_OPEN(open64)
