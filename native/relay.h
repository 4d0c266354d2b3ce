/*
 * plb proxy's native relay: once a session is established (ReadyForQuery relayed), its two sockets
 * are handed here and their bytes are copied by relay threads (epoll, one per thread) instead of
 * Node's event loop. What the session needs of the stream is kept: the backend's messages are
 * followed by boundary (type byte + Int32 length) and only whole ones are forwarded, so an error
 * can still be said at a boundary; the last ErrorResponse is kept for the session's end; with
 * watch_params every ParameterStatus is reported (the late-class warning). The relay decides
 * nothing about a session's end: it reports each side's end (EOF or error) and carries out what
 * JavaScript answers (end a side, with a last message, or destroy it), then reports the close.
 */
#ifndef PLB_RELAY_H
#define PLB_RELAY_H
#define NAPI_VERSION 8
#include <node_api.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CLIENT 0
#define BACKEND 1
/* Each direction's buffer (HAProxy's default bufsize); the backend's grows for a message held whole. */
#define DIR_CAP 16384
/* A backend message up to this size is held until whole (the JavaScript framer's maxHeld). */
#define HELD_MAX (1 << 20)
#define LAST_ERROR_MAX 8192
#define LINGER_MS 5000
#define BUCKETS 4096

enum { EV_END = 1, EV_PARAM = 2, EV_CLOSED = 3 };
enum { C_END = 1, C_AT_BOUNDARY = 2, C_DESTROY = 4, B_END = 8, B_DESTROY = 16 };
enum { OP_ADD = 1, OP_COMMAND = 2 };

typedef struct Event {
  double id;
  int kind, side, err, at_boundary, last_type, terminated;
  uint8_t *bytes;
  size_t nbytes;
} Event;

/* Bytes read from one side, to be written to the other: [wr, fwd) may go out, [fwd, len) is held. */
typedef struct Dir {
  uint8_t *buf;
  size_t cap, len, fwd, wr;
} Dir;

struct Pair;
typedef struct Tag {
  struct Pair *p;
  int side;
} Tag;

typedef struct Pair {
  double id;
  int fd[2];
  Dir d[2]; /* d[k]: read from side k, written to side 1-k */
  Tag tag[2];
  uint32_t events[2];
  int rd_eof[2], shut[2], closed[2];
  size_t passing; /* bytes still to come of an oversize message passed through */
  int last_type, terminated, watch_params, dead;
  uint8_t *last_err;
  size_t last_err_len;
  int64_t linger_at;
  struct Pair *next_bucket, *next_dead;
} Pair;

typedef struct Cmd {
  int op, flags;
  double id;
  Pair *pair;
  uint8_t *bytes;
  size_t nbytes;
  struct Cmd *next;
} Cmd;

typedef struct Worker {
  pthread_t thread;
  int ep, efd;
  pthread_mutex_t mu;
  Cmd *head, *tail;
  Pair *buckets[BUCKETS];
  int lingering;
  napi_threadsafe_function tsfn;
} Worker;

typedef struct Relay {
  int n;
  Worker *workers;
  napi_threadsafe_function tsfn;
} Relay;

/* A relay thread's loop (relay.c). */
void *relay_run(void *arg);
/* Queues a command for a thread and wakes it (any thread). */
void relay_post(Worker *w, Cmd *c);
void relay_free_pair(Pair *p);

#endif

