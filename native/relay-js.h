/*
 * What the Node-API glue's files share (relay-js.c: the relay's start, events and session commands;
 * front-js.c: the front door's calls; js-args.c: the helpers both use). Only Node's thread runs them.
 */
#ifndef PLB_RELAY_JS_H
#define PLB_RELAY_JS_H
#include "relay.h"

/* A Node-API call in a call from JavaScript: its failure is thrown, never passed over. */
#define CHECK(call)                                                                                \
  do {                                                                                             \
    if ((call) != napi_ok) {                                                                       \
      napi_throw_error(env, NULL, "plb native relay: " #call " failed");                           \
      return NULL;                                                                                 \
    }                                                                                              \
  } while (0)

/* js-args.c: the helpers. This environment's relay (NULL before start). */
Relay *relay_of(napi_env env);
/* An Error whose code is the errno's name (EADDRINUSE), as Node's own. */
void throw_errno(napi_env env, const char *what, int err);
/* A copy of a Buffer's bytes: 1, with none for an empty or absent one; 0 (thrown) out of memory. */
MUSTCHECK int dup_bytes(napi_env env, napi_value v, uint8_t **out, size_t *n);
/* A call's arguments (argc in: how many at most) and this environment's relay (NULL before start). */
Relay *call_args(napi_env env, napi_callback_info info, size_t *argc, napi_value *argv);
/* The thread a session's id belongs to. */
Worker *worker_of(Relay *r, double id);
/* A command for a thread, or NULL with an Error thrown: a session's command is never dropped quietly. */
Cmd *new_cmd(napi_env env, int op);
/* A numeric IPv4 or IPv6 address and a port; 0 when host is neither. */
int parse_addr(napi_env env, napi_value host, int port, struct sockaddr_storage *ss, socklen_t *len);
/* A Keepalive from four numbers (userTimeoutMs, idleS, intvlS, cnt); 0 when one is not a number. */
int keepalive_args(napi_env env, napi_value *argv, Keepalive *k);

/* front-js.c: the front door's calls (the module's table is relay-js.c's). */
napi_value js_front(napi_env env, napi_callback_info info);
napi_value js_listen(napi_env env, napi_callback_info info);
napi_value js_stop(napi_env env, napi_callback_info info);
napi_value js_dial(napi_env env, napi_callback_info info);
napi_value js_verdict(napi_env env, napi_callback_info info);
napi_value js_keepalive(napi_env env, napi_callback_info info);
napi_value js_counts(napi_env env, napi_callback_info info);

#endif
