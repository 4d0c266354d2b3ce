/* The relay's JavaScript side (Node-API): start, front, listen, stop, dial, verdict, command, ref,
 * counts, fault, keepalive. Every Node-API call's result and every allocation is checked: a failure throws. */
#include "relay.h"

#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <stdio.h>

#define CHECK(call)                                                                                \
  do {                                                                                             \
    if ((call) != napi_ok) {                                                                       \
      napi_throw_error(env, NULL, "plb native relay: " #call " failed");                           \
      return NULL;                                                                                 \
    }                                                                                              \
  } while (0)

/* Node-API calls in a call from JavaScript: any failure is thrown (CHECK), never passed over. */
#define TRY(call)                                                                                  \
  do {                                                                                             \
    if ((call) != napi_ok) goto failed;                                                            \
  } while (0)

/* Tells one event: its fields, its bytes in the mailbox or a Buffer of their own. */
static napi_status tell_js(napi_env env, napi_value fn, Relay *r, Event *e) {
  napi_value args[8], undef;
  napi_status s;
#define OK(call)                                                                                   \
  if ((s = (call)) != napi_ok) return s
  OK(napi_create_double(env, e->id, &args[0]));
  OK(napi_create_int32(env, e->kind, &args[1]));
  OK(napi_create_int32(env, e->side, &args[2]));
  OK(napi_create_int32(env, e->err, &args[3]));
  OK(napi_create_int32(env, (e->at_boundary ? 1 : 0) | (e->terminated ? 2 : 0) | (e->phase << 8), &args[4]));
  OK(napi_create_int32(env, e->last_type, &args[5]));
  if (e->nbytes > 0 && e->nbytes <= r->mailbox_len) {
    memcpy(r->mailbox, e->bytes, e->nbytes);
    OK(napi_create_int32(env, (int32_t)e->nbytes, &args[6]));
  } else if (e->nbytes > 0) {
    void *copy;
    OK(napi_create_buffer_copy(env, e->nbytes, e->bytes, &copy, &args[6]));
  } else {
    OK(napi_get_undefined(env, &args[6]));
  }
  OK(napi_create_int32(env, e->front, &args[7]));
  OK(napi_get_undefined(env, &undef));
#undef OK
  return napi_call_function(env, undef, fn, 8, args, NULL);
}

/* Calls JavaScript with one event; what it throws (or a failed call) is the process's uncaught exception. */
static void tell_one(napi_env env, napi_value fn, Relay *r, Event *e) {
  napi_handle_scope scope;
  if (napi_open_handle_scope(env, &scope) != napi_ok) return (void)napi_fatal_error("plb native relay", NAPI_AUTO_LENGTH, "no handle scope", NAPI_AUTO_LENGTH);
  napi_status s = tell_js(env, fn, r, e);
  bool thrown = false;
  napi_is_exception_pending(env, &thrown);
  if (!thrown && s != napi_ok) napi_throw_error(env, "ERR_PLB_NATIVE", "plb native relay: an event could not be told");
  napi_is_exception_pending(env, &thrown);
  if (thrown) { /* as a call of its own would have: the process's uncaught exception */
    napi_value err;
    napi_get_and_clear_last_exception(env, &err);
    napi_fatal_exception(env, err);
  }
  napi_close_handle_scope(env, scope);
}

/* As Node's own thread-safe functions: at most this many events a turn of the loop, then I/O. */
#define EVENTS_A_TURN 1000

/* The events ready, oldest first, in one call of the thread-safe function (relay.h: ev_mu). */
static void call_js(napi_env env, napi_value fn, void *ctx, void *data) {
  (void)data;
  /* Closing (env NULL): the relay is freed already with its queues (relay_destroy). */
  if (env == NULL || fn == NULL) return;
  Relay *r = ctx;
  if (!r->untold) r->untold = take_events(r);
  int noted = atomic_exchange(&r->noted, 0);
  if (noted > 0) {
    /* Failures with no session (relay_note): told as id 0, how many in last_type. */
    Event e = {.id = 0, .kind = EV_FAULT, .side = atomic_load(&r->noted_what), .err = atomic_load(&r->noted_err),
               .last_type = noted, .front = -1};
    tell_one(env, fn, r, &e);
  }
  for (int n = 0; r->untold && n < EVENTS_A_TURN; n++) {
    Event *e = r->untold;
    r->untold = e->next;
    tell_one(env, fn, r, e);
    free(e->bytes);
    free(e);
  }
  if (r->untold && napi_call_threadsafe_function(r->tsfn, NULL, napi_tsfn_nonblocking) != napi_ok)
    napi_fatal_error("plb native relay", NAPI_AUTO_LENGTH, "events left untold", NAPI_AUTO_LENGTH);
}

static Relay *relay_of(napi_env env) {
  Relay *r = NULL;
  napi_get_instance_data(env, (void **)&r);
  return r;
}

/* An Error whose code is the errno's name (EADDRINUSE), as Node's own. */
static void throw_errno(napi_env env, const char *what, int err) {
  char msg[160];
  snprintf(msg, sizeof msg, "%s: %s", what, strerror(err));
  const char *code = strerrorname_np(err);
  napi_throw_error(env, code ? code : "ERR_PLB_NATIVE", msg);
}

/* The thread-safe function's finalizer: the relay's threads stop before it is gone (env teardown). */
static void relay_finalize(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  relay_destroy(data);
}

/* A relay's threads' resources; 0 with errno when one is missing (what there is, relay_destroy frees). */
static MUSTCHECK int worker_init(Relay *r, int i) {
  Worker *w = &r->workers[i];
  w->index = i;
  w->relay = r;
  w->next_id = i + 1; /* thread i's ids: i + 1, i + 1 + n, ... (a command finds its thread) */
  if ((w->ep = epoll_create1(EPOLL_CLOEXEC)) < 0) return 0;
  if ((w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) return 0;
  if ((w->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) return 0;
  return ep_ctl(w, EPOLL_CTL_ADD, w->efd, EPOLLIN, NULL) == 0;
}

/*
 * start(onEvent, threads, mailbox): the relay threads, once per environment. An event's bytes come
 * as their length in the mailbox (a Buffer kept referenced by the caller), or a Buffer when larger.
 * A step that fails undoes every one before it and throws.
 */
static napi_value js_start(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3], name, room;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (relay_of(env) != NULL) {
    napi_throw_error(env, NULL, "plb native relay: started already");
    return NULL;
  }
  int32_t n = 1;
  if (argc > 1) CHECK(napi_get_value_int32(env, argv[1], &n));
  if (n < 1) n = 1;
  if (n > 16) n = 16;
  Relay *r = calloc(1, sizeof(Relay));
  if (r) r->workers = calloc((size_t)n, sizeof(Worker));
  if (!r || !r->workers) {
    free(r);
    throw_errno(env, "plb native relay: start", ENOMEM);
    return NULL;
  }
  r->n = n;
  pthread_mutex_init(&r->ev_mu, NULL);
  for (int i = 0; i < n; i++) {
    r->workers[i].ep = r->workers[i].efd = r->workers[i].spare_fd = -1;
    pthread_mutex_init(&r->workers[i].mu, NULL);
  }
  int err = 0;
  const char *step = "a relay thread";
  if (argc > 2) {
    void *data;
    TRY(napi_get_buffer_info(env, argv[2], &data, &r->mailbox_len));
    r->mailbox = data;
  }
  for (int i = 0; i < n; i++)
    if (!worker_init(r, i)) {
      err = errno;
      goto failed;
    }
  TRY(napi_create_string_utf8(env, "plb-relay", NAPI_AUTO_LENGTH, &name));
  step = "its thread-safe function";
  TRY(napi_create_threadsafe_function(env, argv[0], NULL, name, 0, 1, r, relay_finalize, r, call_js, &r->tsfn));
  /* From here the function owns the relay: released, its finalizer frees it (and joins the threads). */
  step = "a relay thread";
  for (int i = 0; i < n; i++) {
    Worker *w = &r->workers[i];
    if ((err = pthread_create(&w->thread, NULL, relay_run, w)) != 0) goto released;
    w->started = 1;
  }
  step = "its instance data";
  if (napi_unref_threadsafe_function(env, r->tsfn) != napi_ok || napi_set_instance_data(env, r, NULL, NULL) != napi_ok ||
      napi_create_int32(env, MAX_FRONTS, &room) != napi_ok)
    goto released;
  return room; /* the front doors it has room for (one a proxy, never freed) */
released:
  napi_release_threadsafe_function(r->tsfn, napi_tsfn_abort);
  throw_errno(env, step, err ? err : EIO);
  return NULL;
failed:
  relay_destroy(r);
  {
    bool thrown = false;
    napi_is_exception_pending(env, &thrown);
    if (!thrown) throw_errno(env, "plb native relay: cannot start", err ? err : EIO);
  }
  return NULL;
}

/* A copy of a Buffer's bytes: 1, with none for an empty or absent one; 0 (thrown) out of memory. */
static MUSTCHECK int dup_bytes(napi_env env, napi_value v, uint8_t **out, size_t *n) {
  bool is;
  *out = NULL;
  *n = 0;
  void *data;
  size_t len;
  if (napi_is_buffer(env, v, &is) != napi_ok || !is) return 1;
  if (napi_get_buffer_info(env, v, &data, &len) != napi_ok || len == 0) return 1;
  uint8_t *b = malloc(len);
  if (!b) {
    throw_errno(env, "plb native relay", ENOMEM);
    return 0;
  }
  memcpy(b, data, len);
  *out = b;
  *n = len;
  return 1;
}

/* A call's arguments (argc in: how many at most) and this environment's relay (NULL before start). */
static Relay *call_args(napi_env env, napi_callback_info info, size_t *argc, napi_value *argv) {
  if (napi_get_cb_info(env, info, argc, argv, NULL, NULL) != napi_ok) return NULL;
  return relay_of(env);
}

static Worker *worker_of(Relay *r, double id) { return &r->workers[((uint64_t)id - 1) % (uint64_t)r->n]; }

/* A command for a thread, or NULL with an Error thrown: a session's command is never dropped quietly. */
static Cmd *new_cmd(napi_env env, int op) {
  Cmd *c = calloc(1, sizeof(Cmd));
  if (!c) throw_errno(env, "plb native relay: a command", ENOMEM);
  else c->op = op;
  return c;
}

/* front(maxPremium, maxFreemium, refusal, startupMs): a proxy's front door; its index. */
static napi_value js_front(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4], out;
  Relay *r = call_args(env, info, &argc, argv);
  if (r == NULL || argc < 4 || r->nfronts >= MAX_FRONTS) {
    napi_throw_error(env, NULL, "plb native relay: no room for another front door");
    return NULL;
  }
  int32_t max0, max1, startup_ms;
  CHECK(napi_get_value_int32(env, argv[0], &max0));
  CHECK(napi_get_value_int32(env, argv[1], &max1));
  CHECK(napi_get_value_int32(env, argv[3], &startup_ms));
  CHECK(napi_create_int32(env, r->nfronts, &out));
  Front *f = calloc(1, sizeof(Front));
  if (!f) {
    throw_errno(env, "plb native relay: front", ENOMEM);
    return NULL;
  }
  if (!dup_bytes(env, argv[2], &f->refusal, &f->nrefusal)) {
    free(f);
    return NULL;
  }
  f->max[0] = max0;
  f->max[1] = max1;
  f->startup_ms = startup_ms;
  f->index = r->nfronts;
  r->fronts[r->nfronts++] = f;
  return out;
}

static int parse_addr(napi_env env, napi_value host, int port, struct sockaddr_storage *ss, socklen_t *len) {
  char text[64];
  size_t n;
  if (napi_get_value_string_utf8(env, host, text, sizeof text, &n) != napi_ok) return 0;
  memset(ss, 0, sizeof *ss);
  struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
  struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
  if (inet_pton(AF_INET, text, &a4->sin_addr) == 1) {
    a4->sin_family = AF_INET;
    a4->sin_port = htons((uint16_t)port);
    *len = sizeof *a4;
    return 1;
  }
  if (inet_pton(AF_INET6, text, &a6->sin6_addr) == 1) {
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons((uint16_t)port);
    *len = sizeof *a6;
    return 1;
  }
  return 0;
}

/* listen(front, cls, host, port, backlog): every thread accepts its clients; [listener, port]. */
static napi_value js_listen(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5], out, v;
  Relay *r = call_args(env, info, &argc, argv);
  int32_t front, cls, port, backlog;
  if (r == NULL || argc < 5 || r->nlisteners >= MAX_LISTENERS) {
    napi_throw_error(env, NULL, "plb native relay: listen before start");
    return NULL;
  }
  CHECK(napi_get_value_int32(env, argv[0], &front));
  CHECK(napi_get_value_int32(env, argv[1], &cls));
  CHECK(napi_get_value_int32(env, argv[3], &port));
  CHECK(napi_get_value_int32(env, argv[4], &backlog));
  CHECK(napi_create_array_with_length(env, 2, &out));
  CHECK(napi_create_int32(env, r->nlisteners, &v));
  CHECK(napi_set_element(env, out, 0, v));
  struct sockaddr_storage ss;
  socklen_t len;
  if (front < 0 || front >= r->nfronts || cls < 0 || cls > 1 || !parse_addr(env, argv[2], port, &ss, &len)) {
    throw_errno(env, "listen", EINVAL);
    return NULL;
  }
  int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, backlog) != 0 ||
      getsockname(fd, (struct sockaddr *)&ss, &len) != 0) {
    int err = errno;
    if (fd >= 0) close(fd);
    throw_errno(env, "listen", err);
    return NULL;
  }
  int bound = ss.ss_family == AF_INET ? ntohs(((struct sockaddr_in *)&ss)->sin_port)
                                      : ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
  napi_value port_v;
  Listener *l = calloc(1, sizeof(Listener));
  if (!l || napi_create_int32(env, bound, &port_v) != napi_ok || napi_set_element(env, out, 1, port_v) != napi_ok) {
    free(l);
    close(fd);
    throw_errno(env, "listen", ENOMEM);
    return NULL;
  }
  l->fd = fd;
  l->cls = cls;
  l->front = r->fronts[front];
  l->tag = (Tag){NULL, -1, l};
  atomic_store(&l->refs, r->n);
  /* Every thread polls it (epoll sets take changes from any thread); EPOLLEXCLUSIVE wakes one of
   * them a connection. One that cannot: the others stop polling it again, and listen throws. */
  for (int i = 0; i < r->n; i++) {
    if (ep_ctl(&r->workers[i], EPOLL_CTL_ADD, fd, EPOLLIN | EPOLLEXCLUSIVE, &l->tag) == 0) continue;
    int err = errno;
    atomic_store(&l->stopping, 1);
    for (int j = 0; j < i; j++)
      if (ep_ctl(&r->workers[j], EPOLL_CTL_DEL, fd, 0, NULL) != 0) {
        /* Still polled by a thread: kept (never freed), it accepts nothing (stopping). */
        throw_errno(env, "listen: epoll_ctl", err);
        return NULL;
      }
    close(fd);
    free(l);
    throw_errno(env, "listen: epoll_ctl", err);
    return NULL;
  }
  r->listeners[r->nlisteners++] = l;
  return out;
}

/* stop(listener, message): it accepts no more; its clients before their first packet are told message. */
static napi_value js_stop(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  Relay *r = call_args(env, info, &argc, argv);
  int32_t index;
  if (r == NULL || argc < 2 || napi_get_value_int32(env, argv[0], &index) != napi_ok || index < 0 ||
      index >= r->nlisteners)
    return NULL;
  /* Every thread's command made before any is posted: a stop is all the threads' or none. */
  Cmd *cmds[16] = {NULL};
  for (int i = 0; i < r->n; i++) {
    if ((cmds[i] = new_cmd(env, OP_STOP)) && dup_bytes(env, argv[1], &cmds[i]->bytes, &cmds[i]->nbytes)) {
      cmds[i]->lst = r->listeners[index];
      continue;
    }
    for (int j = 0; j <= i; j++)
      if (cmds[j]) free(cmds[j]->bytes), free(cmds[j]);
    return NULL;
  }
  atomic_store(&r->listeners[index]->stopping, 1);
  for (int i = 0; i < r->n; i++) relay_post(&r->workers[i], cmds[i]);
  return NULL;
}

/* A Keepalive from four numbers (userTimeoutMs, idleS, intvlS, cnt); 0 when one is not a number. */
static int keepalive_args(napi_env env, napi_value *argv, Keepalive *k) {
  return napi_get_value_int32(env, argv[0], &k->user_timeout_ms) == napi_ok &&
         napi_get_value_int32(env, argv[1], &k->idle_s) == napi_ok &&
         napi_get_value_int32(env, argv[2], &k->intvl_s) == napi_ok &&
         napi_get_value_int32(env, argv[3], &k->cnt) == napi_ok;
}

/*
 * dial(id, host, port, timeoutMs, keyPid, keySecret, watchParams[, userTimeoutMs, idleS, intvlS,
 * cnt]): connect the session to a replica (with keepalive and TCP_USER_TIMEOUT when userTimeoutMs > 0).
 */
static napi_value js_dial(napi_env env, napi_callback_info info) {
  size_t argc = 11;
  napi_value argv[11];
  Relay *r = call_args(env, info, &argc, argv);
  if (r == NULL || argc < 7) return NULL;
  Cmd c = {.op = OP_DIAL};
  int32_t port;
  bool watch;
  void *secret;
  size_t nsecret;
  CHECK(napi_get_value_double(env, argv[0], &c.id));
  CHECK(napi_get_value_int32(env, argv[2], &port));
  CHECK(napi_get_value_int32(env, argv[3], &c.timeout_ms));
  CHECK(napi_get_value_int32(env, argv[4], &c.key_pid));
  CHECK(napi_get_buffer_info(env, argv[5], &secret, &nsecret));
  CHECK(napi_get_value_bool(env, argv[6], &watch));
  if (nsecret != 4 || !parse_addr(env, argv[1], port, &c.addr, &c.addrlen)) {
    throw_errno(env, "dial", EINVAL);
    return NULL;
  }
  if (argc >= 11 && !keepalive_args(env, argv + 7, &c.ka)) {
    throw_errno(env, "dial: keepalive", EINVAL);
    return NULL;
  }
  memcpy(c.key_secret, secret, 4);
  c.watch = watch;
  Cmd *posted = new_cmd(env, OP_DIAL);
  if (!posted) return NULL;
  *posted = c;
  relay_post(worker_of(r, c.id), posted);
  return NULL;
}

/* verdict(id, forward): the held first answer goes on to the client, or the connection is dropped. */
static napi_value js_verdict(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  Relay *r = call_args(env, info, &argc, argv);
  if (r == NULL || argc < 2) return NULL;
  double id;
  bool forward;
  CHECK(napi_get_value_double(env, argv[0], &id));
  CHECK(napi_get_value_bool(env, argv[1], &forward));
  Cmd *c = new_cmd(env, OP_VERDICT);
  if (!c) return NULL;
  c->id = id;
  c->flags = forward;
  relay_post(worker_of(r, id), c);
  return NULL;
}

/* command(id, flags, lastBytes?): end or destroy a side of a session (C_* and B_* flags). */
static napi_value js_command(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  Relay *r = call_args(env, info, &argc, argv);
  if (r == NULL || argc < 2) return NULL;
  double id;
  int32_t flags;
  CHECK(napi_get_value_double(env, argv[0], &id));
  CHECK(napi_get_value_int32(env, argv[1], &flags));
  Cmd *c = new_cmd(env, OP_COMMAND);
  if (!c) return NULL;
  if (argc > 2 && !dup_bytes(env, argv[2], &c->bytes, &c->nbytes)) {
    free(c);
    return NULL;
  }
  c->id = id;
  c->flags = flags;
  relay_post(worker_of(r, id), c);
  return NULL;
}

/*
 * fault(id, what, errno): the relay fails on a session as it would on an allocation (F_MEMORY: the
 * session's next event cannot be allocated) or an epoll_ctl (F_EPOLL, with errno): the tests'.
 */
static napi_value js_fault(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  Relay *r = call_args(env, info, &argc, argv);
  if (r == NULL || argc < 3) return NULL;
  double id;
  int32_t what, err;
  CHECK(napi_get_value_double(env, argv[0], &id));
  CHECK(napi_get_value_int32(env, argv[1], &what));
  CHECK(napi_get_value_int32(env, argv[2], &err));
  Cmd *c = new_cmd(env, OP_FAULT);
  if (!c) return NULL;
  c->id = id;
  c->flags = what;
  c->err = err;
  relay_post(worker_of(r, id), c);
  return NULL;
}

/*
 * keepalive(fd, userTimeoutMs, idleS, intvlS, cnt): the same options on a socket of Node's (a replica
 * connection of the front door on Node's sockets); what the kernel then reports, read back:
 * [userTimeoutMs, idleS, intvlS, cnt]. Throws an Error with the errno's code when it refuses one.
 * Needs no relay (it works before or without start).
 */
static napi_value js_keepalive(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5], out, v;
  int32_t fd;
  Keepalive k;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 5 || napi_get_value_int32(env, argv[0], &fd) != napi_ok || fd < 0 || !keepalive_args(env, argv + 1, &k)) {
    throw_errno(env, "keepalive", EINVAL);
    return NULL;
  }
  int err = set_keepalive(fd, &k);
  if (err) {
    throw_errno(env, "keepalive", err);
    return NULL;
  }
  unsigned int ut = 0;
  int got[4] = {0, 0, 0, 0};
  socklen_t len = sizeof ut;
  int opts[3] = {TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT};
  if (getsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, &len) != 0) err = errno;
  got[0] = (int)ut;
  for (int i = 0; i < 3 && !err; i++) {
    len = sizeof got[i + 1];
    if (getsockopt(fd, IPPROTO_TCP, opts[i], &got[i + 1], &len) != 0) err = errno;
  }
  if (err) {
    throw_errno(env, "keepalive: getsockopt", err);
    return NULL;
  }
  CHECK(napi_create_array_with_length(env, 4, &out));
  for (uint32_t i = 0; i < 4; i++) {
    CHECK(napi_create_int32(env, got[i], &v));
    CHECK(napi_set_element(env, out, i, v));
  }
  return out;
}

/* counts(front): [clients open in any phase, refused over the limit so far]. */
static napi_value js_counts(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], out, v;
  Relay *r = call_args(env, info, &argc, argv);
  int32_t front;
  if (r == NULL || argc < 1 || napi_get_value_int32(env, argv[0], &front) != napi_ok || front < 0 ||
      front >= r->nfronts)
    return NULL;
  Front *f = r->fronts[front];
  CHECK(napi_create_array_with_length(env, 2, &out));
  CHECK(napi_create_int32(env, atomic_load(&f->open), &v));
  CHECK(napi_set_element(env, out, 0, v));
  CHECK(napi_create_int32(env, atomic_load(&f->over_limit), &v));
  CHECK(napi_set_element(env, out, 1, v));
  return out;
}

/* ref(on): keep the process alive while sessions are relayed (the threads alone do not). */
static napi_value js_ref(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  bool on = false;
  Relay *r = call_args(env, info, &argc, argv);
  if (r == NULL) return NULL;
  if (argc > 0) CHECK(napi_get_value_bool(env, argv[0], &on));
  if ((on ? napi_ref_threadsafe_function(env, r->tsfn) : napi_unref_threadsafe_function(env, r->tsfn)) != napi_ok)
    napi_throw_error(env, NULL, "plb native relay: ref failed");
  return NULL;
}

NAPI_MODULE_INIT() {
  napi_property_descriptor props[] = {
      {"start", NULL, js_start, NULL, NULL, NULL, napi_default, NULL},
      {"front", NULL, js_front, NULL, NULL, NULL, napi_default, NULL},
      {"listen", NULL, js_listen, NULL, NULL, NULL, napi_default, NULL},
      {"stop", NULL, js_stop, NULL, NULL, NULL, napi_default, NULL},
      {"dial", NULL, js_dial, NULL, NULL, NULL, napi_default, NULL},
      {"verdict", NULL, js_verdict, NULL, NULL, NULL, napi_default, NULL},
      {"command", NULL, js_command, NULL, NULL, NULL, napi_default, NULL},
      {"counts", NULL, js_counts, NULL, NULL, NULL, napi_default, NULL},
      {"ref", NULL, js_ref, NULL, NULL, NULL, napi_default, NULL},
      {"fault", NULL, js_fault, NULL, NULL, NULL, napi_default, NULL},
      {"keepalive", NULL, js_keepalive, NULL, NULL, NULL, napi_default, NULL},
  };
  if (napi_define_properties(env, exports, sizeof props / sizeof props[0], props) != napi_ok) return NULL;
  return exports;
}
