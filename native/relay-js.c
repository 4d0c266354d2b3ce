/* The relay's JavaScript side (Node-API): start, add, command, ref; events back by a threadsafe function. */
#include "relay.h"


#define CHECK(call)                                                                                \
  do {                                                                                             \
    if ((call) != napi_ok) {                                                                       \
      napi_throw_error(env, NULL, "plb native relay: " #call " failed");                           \
      return NULL;                                                                                 \
    }                                                                                              \
  } while (0)

static void call_js(napi_env env, napi_value fn, void *ctx, void *data) {
  (void)ctx;
  Event *e = data;
  if (env != NULL && fn != NULL) {
    napi_value args[7], undef;
    napi_create_double(env, e->id, &args[0]);
    napi_create_int32(env, e->kind, &args[1]);
    napi_create_int32(env, e->side, &args[2]);
    napi_create_int32(env, e->err, &args[3]);
    napi_create_int32(env, (e->at_boundary ? 1 : 0) | (e->terminated ? 2 : 0), &args[4]);
    napi_create_int32(env, e->last_type, &args[5]);
    if (e->nbytes > 0) {
      void *copy;
      napi_create_buffer_copy(env, e->nbytes, e->bytes, &copy, &args[6]);
    } else {
      napi_get_undefined(env, &args[6]);
    }
    napi_get_undefined(env, &undef);
    napi_call_function(env, undef, fn, 7, args, NULL);
  }
  free(e->bytes);
  free(e);
}

static Relay *relay_of(napi_env env) {
  Relay *r = NULL;
  napi_get_instance_data(env, (void **)&r);
  return r;
}

/* start(onEvent, threads): the relay threads, once per environment. */
static napi_value js_start(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2], name;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (relay_of(env) != NULL) return NULL;
  int32_t n = 1;
  if (argc > 1) napi_get_value_int32(env, argv[1], &n);
  if (n < 1) n = 1;
  if (n > 16) n = 16;
  Relay *r = calloc(1, sizeof(Relay));
  r->n = n;
  r->workers = calloc((size_t)n, sizeof(Worker));
  CHECK(napi_create_string_utf8(env, "plb-relay", NAPI_AUTO_LENGTH, &name));
  CHECK(napi_create_threadsafe_function(env, argv[0], NULL, name, 0, 1, NULL, NULL, NULL, call_js,
                                        &r->tsfn));
  CHECK(napi_unref_threadsafe_function(env, r->tsfn));
  for (int i = 0; i < n; i++) {
    Worker *w = &r->workers[i];
    w->tsfn = r->tsfn;
    w->ep = epoll_create1(EPOLL_CLOEXEC);
    w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
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
  return NULL;
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

/* add(id, clientFd, backendFd, watchParams): the descriptors are duplicated; the caller closes its own. */
static napi_value js_add(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  Relay *r = call_args(env, info, &argc, argv);
  if (r == NULL || argc < 4) {
    napi_throw_error(env, NULL, "plb native relay: add before start");
    return NULL;
  }
  double id;
  int32_t cfd, bfd;
  bool params;
  CHECK(napi_get_value_double(env, argv[0], &id));
  CHECK(napi_get_value_int32(env, argv[1], &cfd));
  CHECK(napi_get_value_int32(env, argv[2], &bfd));
  CHECK(napi_get_value_bool(env, argv[3], &params));
  Pair *p = calloc(1, sizeof(Pair));
  Cmd *c = calloc(1, sizeof(Cmd));
  if (p) {
    p->d[0].buf = malloc(DIR_CAP);
    p->d[1].buf = malloc(DIR_CAP);
  }
  if (!p || !c || !p->d[0].buf || !p->d[1].buf) {
    if (p) relay_free_pair(p);
    free(c);
    napi_throw_error(env, NULL, "plb native relay: out of memory");
    return NULL;
  }
  p->fd[CLIENT] = fcntl(cfd, F_DUPFD_CLOEXEC, 0);
  p->fd[BACKEND] = p->fd[CLIENT] < 0 ? -1 : fcntl(bfd, F_DUPFD_CLOEXEC, 0);
  if (p->fd[BACKEND] < 0) {
    if (p->fd[CLIENT] >= 0) close(p->fd[CLIENT]);
    relay_free_pair(p);
    free(c);
    napi_throw_error(env, NULL, "plb native relay: cannot take the session's descriptors");
    return NULL;
  }
  p->id = id;
  p->d[0].cap = p->d[1].cap = DIR_CAP;
  p->tag[0] = (Tag){p, CLIENT};
  p->tag[1] = (Tag){p, BACKEND};
  p->last_type = 'Z';
  p->watch_params = params;
  c->op = OP_ADD;
  c->id = id;
  c->pair = p;
  relay_post(&r->workers[(uint64_t)id % (uint64_t)r->n], c);
  return NULL;
}

/* command(id, flags, lastBytes?): end or destroy a side of a relayed session (C_* and B_* flags). */
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
  relay_post(&r->workers[(uint64_t)c->id % (uint64_t)r->n], c);
  return NULL;
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
      {"add", NULL, js_add, NULL, NULL, NULL, napi_default, NULL},
      {"command", NULL, js_command, NULL, NULL, NULL, napi_default, NULL},
      {"ref", NULL, js_ref, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}

