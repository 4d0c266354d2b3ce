/*
 * The front door's Node-API calls (relay-js.h): front (a proxy's door and its client limit),
 * listen, stop, counts, and a session's way to its replica (dial, verdict), with keepalive for a
 * replica connection on Node's own sockets. Apart from relay-js.c (the relay's start, events and
 * session commands): these are what the front door adds. A failure throws.
 */
#include "relay-js.h"

#include <arpa/inet.h>
#include <netinet/tcp.h>

/* front(maxPremium, maxFreemium, refusal, startupMs): a proxy's front door; its index. */
napi_value js_front(napi_env env, napi_callback_info info) {
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

/* listen(front, cls, host, port, backlog): every thread accepts its clients; [listener, port]. */
napi_value js_listen(napi_env env, napi_callback_info info) {
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
napi_value js_stop(napi_env env, napi_callback_info info) {
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

/*
 * dial(id, host, port, timeoutMs, keyPid, keySecret, watchParams[, userTimeoutMs, idleS, intvlS,
 * cnt]): connect the session to a replica (with keepalive and TCP_USER_TIMEOUT when userTimeoutMs > 0).
 */
napi_value js_dial(napi_env env, napi_callback_info info) {
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
napi_value js_verdict(napi_env env, napi_callback_info info) {
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

/*
 * keepalive(fd, userTimeoutMs, idleS, intvlS, cnt): the same options on a socket of Node's (a replica
 * connection of the front door on Node's sockets); what the kernel then reports, read back:
 * [userTimeoutMs, idleS, intvlS, cnt]. Throws an Error with the errno's code when it refuses one.
 * Needs no relay (it works before or without start).
 */
napi_value js_keepalive(napi_env env, napi_callback_info info) {
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
napi_value js_counts(napi_env env, napi_callback_info info) {
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
