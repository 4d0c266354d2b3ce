/* The relay's JavaScript side (Node-API): start, front, listen, stop, dial, verdict, command, ref, counts. */
#include "relay.h"

#include <arpa/inet.h>
#include <stdio.h>

#define CHECK(call)                                                                                \
  do {                                                                                             \
    if ((call) != napi_ok) {                                                                       \
      napi_throw_error(env, NULL, "plb native relay: " #call " failed");                           \
      return NULL;                                                                                 \
    }                                                                                              \
  } while (0)

/*
 * Where an event's bytes are copied for JavaScript (a Buffer it gave at start, read before the
 * call returns): a Buffer of their own per event made most of a connection's garbage.
 */
static uint8_t *mailbox;
static size_t mailbox_len;

static void tell_js(napi_env env, napi_value fn, Event *e) {
  napi_value args[8], undef;
  napi_create_double(env, e->id, &args[0]);
  napi_create_int32(env, e->kind, &args[1]);
  napi_create_int32(env, e->side, &args[2]);
  napi_create_int32(env, e->err, &args[3]);
  napi_create_int32(env, (e->at_boundary ? 1 : 0) | (e->terminated ? 2 : 0) | (e->phase << 8), &args[4]);
  napi_create_int32(env, e->last_type, &args[5]);
  if (e->nbytes > 0 && e->nbytes <= mailbox_len) {
    memcpy(mailbox, e->bytes, e->nbytes);
    napi_create_int32(env, (int32_t)e->nbytes, &args[6]);
  } else if (e->nbytes > 0) {
    void *copy;
    napi_create_buffer_copy(env, e->nbytes, e->bytes, &copy, &args[6]);
  } else {
    napi_get_undefined(env, &args[6]);
  }
  napi_create_int32(env, e->front, &args[7]);
  napi_get_undefined(env, &undef);
  napi_call_function(env, undef, fn, 8, args, NULL);
}

/* As Node's own thread-safe functions: at most this many events a turn of the loop, then I/O. */
#define EVENTS_A_TURN 1000

/* Taken from the relay and not told yet (Node's thread only). */
static Event *untold;

/* The events ready, oldest first, in one call of the thread-safe function (relay.h: ev_mu). */
static void call_js(napi_env env, napi_value fn, void *ctx, void *data) {
  (void)ctx;
  (void)data;
  Relay *r = NULL;
  if (env != NULL) napi_get_instance_data(env, (void **)&r);
  if (r == NULL) return;
  if (!untold) untold = take_events(r);
  for (int n = 0; untold && n < EVENTS_A_TURN; n++) {
    Event *e = untold;
    untold = e->next;
    if (fn != NULL) {
      napi_handle_scope scope;
      napi_open_handle_scope(env, &scope);
      tell_js(env, fn, e);
      bool thrown = false;
      napi_is_exception_pending(env, &thrown);
      if (thrown) { /* as a call of its own would have: the process's uncaught exception */
        napi_value err;
        napi_get_and_clear_last_exception(env, &err);
        napi_fatal_exception(env, err);
      }
      napi_close_handle_scope(env, scope);
    }
    free(e->bytes);
    free(e);
  }
  if (untold) napi_call_threadsafe_function(r->tsfn, NULL, napi_tsfn_nonblocking);
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
  const char *code = err == EADDRINUSE ? "EADDRINUSE" : err == EACCES ? "EACCES" : err == EADDRNOTAVAIL ? "EADDRNOTAVAIL" : err == EINVAL ? "EINVAL" : "ERR_PLB_NATIVE";
  napi_throw_error(env, code, msg);
}

/*
 * start(onEvent, threads, mailbox): the relay threads, once per environment. An event's bytes come
 * as their length in the mailbox (a Buffer kept referenced by the caller), or a Buffer when larger.
 */
static napi_value js_start(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3], name;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (relay_of(env) != NULL) return NULL;
  if (argc > 2) {
    void *data;
    if (napi_get_buffer_info(env, argv[2], &data, &mailbox_len) != napi_ok) mailbox_len = 0;
    mailbox = data;
  }
  int32_t n = 1;
  if (argc > 1) napi_get_value_int32(env, argv[1], &n);
  if (n < 1) n = 1;
  if (n > 16) n = 16;
  Relay *r = calloc(1, sizeof(Relay));
  r->n = n;
  r->workers = calloc((size_t)n, sizeof(Worker));
  pthread_mutex_init(&r->ev_mu, NULL);
  CHECK(napi_create_string_utf8(env, "plb-relay", NAPI_AUTO_LENGTH, &name));
  CHECK(napi_create_threadsafe_function(env, argv[0], NULL, name, 0, 1, NULL, NULL, NULL, call_js,
                                        &r->tsfn));
  CHECK(napi_unref_threadsafe_function(env, r->tsfn));
  for (int i = 0; i < n; i++) {
    Worker *w = &r->workers[i];
    w->index = i;
    w->relay = r;
    w->next_id = i + 1; /* thread i's ids: i + 1, i + 1 + n, ... (a command finds its thread) */
    w->ep = epoll_create1(EPOLL_CLOEXEC);
    w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    w->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    pthread_mutex_init(&w->mu, NULL);
    struct epoll_event e = {.events = EPOLLIN, .data.ptr = NULL};
    if (w->ep < 0 || w->efd < 0 || epoll_ctl(w->ep, EPOLL_CTL_ADD, w->efd, &e) != 0 ||
        pthread_create(&w->thread, NULL, relay_run, w) != 0) {
      napi_throw_error(env, NULL, "plb native relay: cannot start a relay thread");
      return NULL;
    }
    pthread_detach(w->thread);
  }
  CHECK(napi_set_instance_data(env, r, NULL, NULL));
  napi_value room;
  CHECK(napi_create_int32(env, MAX_FRONTS, &room));
  return room; /* the front doors it has room for (one a proxy, never freed) */
}

static uint8_t *dup_bytes(napi_env env, napi_value v, size_t *n) {
  bool is;
  *n = 0;
  if (napi_is_buffer(env, v, &is) != napi_ok || !is) return NULL;
  void *data;
  size_t len;
  if (napi_get_buffer_info(env, v, &data, &len) != napi_ok || len == 0) return NULL;
  uint8_t *b = malloc(len);
  if (!b) return NULL;
  memcpy(b, data, len);
  *n = len;
  return b;
}

/* A call's arguments (argc in: how many at most) and this environment's relay (NULL before start). */
static Relay *call_args(napi_env env, napi_callback_info info, size_t *argc, napi_value *argv) {
  if (napi_get_cb_info(env, info, argc, argv, NULL, NULL) != napi_ok) return NULL;
  return relay_of(env);
}

static Worker *worker_of(Relay *r, double id) { return &r->workers[((uint64_t)id - 1) % (uint64_t)r->n]; }

/* front(maxPremium, maxFreemium, refusal, startupMs): a proxy's front door; its index. */
static napi_value js_front(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4], out;
  Relay *r = call_args(env, info, &argc, argv);
  if (r == NULL || argc < 4 || r->nfronts >= MAX_FRONTS) {
    napi_throw_error(env, NULL, "plb native relay: no room for another front door");
    return NULL;
  }
  Front *f = calloc(1, sizeof(Front));
  if (!f) return NULL;
  CHECK(napi_get_value_int32(env, argv[0], &f->max[0]));
  CHECK(napi_get_value_int32(env, argv[1], &f->max[1]));
  f->refusal = dup_bytes(env, argv[2], &f->nrefusal);
  CHECK(napi_get_value_int32(env, argv[3], &f->startup_ms));
  f->index = r->nfronts;
  r->fronts[r->nfronts++] = f;
  CHECK(napi_create_int32(env, f->index, &out));
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
  Listener *l = calloc(1, sizeof(Listener));
  l->fd = fd;
  l->cls = cls;
  l->front = r->fronts[front];
  l->tag = (Tag){NULL, -1, l};
  atomic_store(&l->refs, r->n);
  int index = r->nlisteners;
  r->listeners[r->nlisteners++] = l;
  for (int i = 0; i < r->n; i++) {
    Cmd *c = calloc(1, sizeof(Cmd));
    c->op = OP_LISTEN;
    c->lst = l;
    relay_post(&r->workers[i], c);
  }
  int bound = ss.ss_family == AF_INET ? ntohs(((struct sockaddr_in *)&ss)->sin_port)
                                      : ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
  CHECK(napi_create_array_with_length(env, 2, &out));
  CHECK(napi_create_int32(env, index, &v));
  CHECK(napi_set_element(env, out, 0, v));
  CHECK(napi_create_int32(env, bound, &v));
  CHECK(napi_set_element(env, out, 1, v));
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
  for (int i = 0; i < r->n; i++) {
    Cmd *c = calloc(1, sizeof(Cmd));
    c->op = OP_STOP;
    c->lst = r->listeners[index];
    c->bytes = dup_bytes(env, argv[1], &c->nbytes);
    relay_post(&r->workers[i], c);
  }
  return NULL;
}

/* dial(id, host, port, timeoutMs, keyPid, keySecret, watchParams): connect the session to a replica. */
static napi_value js_dial(napi_env env, napi_callback_info info) {
  size_t argc = 7;
  napi_value argv[7];
  Relay *r = call_args(env, info, &argc, argv);
  if (r == NULL || argc < 7) return NULL;
  Cmd *c = calloc(1, sizeof(Cmd));
  if (!c) return NULL;
  int32_t port;
  bool watch;
  void *secret;
  size_t nsecret;
  c->op = OP_DIAL;
  CHECK(napi_get_value_double(env, argv[0], &c->id));
  CHECK(napi_get_value_int32(env, argv[2], &port));
  CHECK(napi_get_value_int32(env, argv[3], &c->timeout_ms));
  CHECK(napi_get_value_int32(env, argv[4], &c->key_pid));
  CHECK(napi_get_buffer_info(env, argv[5], &secret, &nsecret));
  CHECK(napi_get_value_bool(env, argv[6], &watch));
  if (nsecret != 4 || !parse_addr(env, argv[1], port, &c->addr, &c->addrlen)) {
    free(c);
    throw_errno(env, "dial", EINVAL);
    return NULL;
  }
  memcpy(c->key_secret, secret, 4);
  c->watch = watch;
  relay_post(worker_of(r, c->id), c);
  return NULL;
}

/* verdict(id, forward): the held first answer goes on to the client, or the connection is dropped. */
static napi_value js_verdict(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  Relay *r = call_args(env, info, &argc, argv);
  if (r == NULL || argc < 2) return NULL;
  Cmd *c = calloc(1, sizeof(Cmd));
  if (!c) return NULL;
  bool forward;
  c->op = OP_VERDICT;
  CHECK(napi_get_value_double(env, argv[0], &c->id));
  CHECK(napi_get_value_bool(env, argv[1], &forward));
  c->flags = forward;
  relay_post(worker_of(r, c->id), c);
  return NULL;
}

/* command(id, flags, lastBytes?): end or destroy a side of a session (C_* and B_* flags). */
static napi_value js_command(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  Relay *r = call_args(env, info, &argc, argv);
  if (r == NULL || argc < 2) return NULL;
  Cmd *c = calloc(1, sizeof(Cmd));
  if (!c) return NULL;
  c->op = OP_COMMAND;
  CHECK(napi_get_value_double(env, argv[0], &c->id));
  CHECK(napi_get_value_int32(env, argv[1], &c->flags));
  if (argc > 2) c->bytes = dup_bytes(env, argv[2], &c->nbytes);
  relay_post(worker_of(r, c->id), c);
  return NULL;
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
  if (argc > 0) napi_get_value_bool(env, argv[0], &on);
  if (on) napi_ref_threadsafe_function(env, r->tsfn);
  else napi_unref_threadsafe_function(env, r->tsfn);
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
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}
