/*
 * The Node-API calls' shared helpers (relay-js.h): a call's arguments and its relay, the thread a
 * session's command goes to, copies of Buffers, addresses and keepalive numbers parsed, and errors
 * thrown with the errno's code. One home for them: relay-js.c and front-js.c both use them.
 */
#include "relay-js.h"

#include <arpa/inet.h>
#include <stdio.h>

Relay *relay_of(napi_env env) {
  Relay *r = NULL;
  napi_get_instance_data(env, (void **)&r);
  return r;
}

/* An Error whose code is the errno's name (EADDRINUSE), as Node's own. */
void throw_errno(napi_env env, const char *what, int err) {
  char msg[160];
  snprintf(msg, sizeof msg, "%s: %s", what, strerror(err));
  const char *code = strerrorname_np(err);
  napi_throw_error(env, code ? code : "ERR_PLB_NATIVE", msg);
}

/* A copy of a Buffer's bytes: 1, with none for an empty or absent one; 0 (thrown) out of memory. */
int dup_bytes(napi_env env, napi_value v, uint8_t **out, size_t *n) {
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
Relay *call_args(napi_env env, napi_callback_info info, size_t *argc, napi_value *argv) {
  if (napi_get_cb_info(env, info, argc, argv, NULL, NULL) != napi_ok) return NULL;
  return relay_of(env);
}

Worker *worker_of(Relay *r, double id) { return &r->workers[((uint64_t)id - 1) % (uint64_t)r->n]; }

/* A command for a thread, or NULL with an Error thrown: a session's command is never dropped quietly. */
Cmd *new_cmd(napi_env env, int op) {
  Cmd *c = calloc(1, sizeof(Cmd));
  if (!c) throw_errno(env, "plb native relay: a command", ENOMEM);
  else c->op = op;
  return c;
}

int parse_addr(napi_env env, napi_value host, int port, struct sockaddr_storage *ss, socklen_t *len) {
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

/* A Keepalive from four numbers (userTimeoutMs, idleS, intvlS, cnt); 0 when one is not a number. */
int keepalive_args(napi_env env, napi_value *argv, Keepalive *k) {
  return napi_get_value_int32(env, argv[0], &k->user_timeout_ms) == napi_ok &&
         napi_get_value_int32(env, argv[1], &k->idle_s) == napi_ok &&
         napi_get_value_int32(env, argv[2], &k->intvl_s) == napi_ok &&
         napi_get_value_int32(env, argv[3], &k->cnt) == napi_ok;
}
