/*
 * The relay's own Node-API glue (relay-js.h): start (the threads and the thread-safe function that
 * tells JavaScript the events, in order), ref, a session's commands (command, fault) and the
 * module's table. The front door's calls are front-js.c's, the argument helpers js-args.c's.
 * Every Node-API call's result and every allocation is checked: a failure throws.
 */
#include "relay-js.h"

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
  int flags = (e->at_boundary ? 1 : 0) | (e->terminated ? 2 : 0) | (e->peer6 ? 4 : 0) | (e->phase << 8);
  OK(napi_create_int32(env, flags, &args[4]));
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
