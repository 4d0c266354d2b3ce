/*
 * plb proxy's native front door and relay. Relay threads (epoll, one loop per thread) accept the
 * proxy's clients, read their first packets, connect to the replica JavaScript routed them to, pass
 * the authentication exchange through and then copy the session's bytes, all outside Node's event
 * loop. JavaScript keeps every decision: it is told of a client's startup packet (and routes it,
 * or refuses it), of the replica's first answer when that is an error (retry elsewhere, or pass it
 * on), of a failed connect, of ReadyForQuery (with the backend's cancel key) and of each side's
 * end, and answers with commands. What the session needs of the stream is kept: the backend's
 * messages are followed by boundary (type byte + Int32 length) and only whole ones are forwarded,
 * so an error can still be said at a boundary; BackendKeyData is swapped for the proxy's own key;
 * the last ErrorResponse is kept for the session's end; with watch_params every ParameterStatus is
 * reported (the late-class warning). A failure of the relay itself (an allocation, epoll_ctl) is
 * never dropped: the session's backend is closed and JavaScript is told (EV_FAULT), from an event
 * set aside when the client was accepted, so the telling cannot fail too.
 */
#ifndef PLB_RELAY_H
#define PLB_RELAY_H
#define _GNU_SOURCE /* accept4 */
#define NAPI_VERSION 8
#include <node_api.h>

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Internal calls whose failure must be handled (as pgbouncer's _MUSTCHECK): the build makes an
 * ignored result an error. */
#define MUSTCHECK __attribute__((warn_unused_result))

#define CLIENT 0
#define BACKEND 1
/* Each direction's buffer (HAProxy's default bufsize); the backend's grows for a message held whole. */
#define DIR_CAP 16384
/* What a client's first packets are read into at first (grown up to a whole startup packet). */
#define STARTUP_CAP 512
/* PostgreSQL's own cap on a startup packet (MAX_STARTUP_PACKET_LENGTH). */
#define MAX_STARTUP 10000
/* A backend message up to this size is held until whole (the JavaScript framer's maxHeld). */
#define HELD_MAX (1 << 20)
#define LAST_ERROR_MAX 8192
#define LINGER_MS 5000
#define BUCKETS 4096
#define MAX_FRONTS 64
#define MAX_LISTENERS 128
/*
 * How late ReadyForQuery and a session's close may be told to JavaScript. Neither needs an answer,
 * so they wait for the next event that does (a startup packet, say) and go before it, or for this
 * long: JavaScript is woken about once a connection instead of three times. Every event is still
 * told in the order it happened, whichever thread had it: a cancel finds the key bound at the
 * ReadyForQuery before it, and a new client is routed with every close before it counted.
 */
#define LAZY_MS 5

/*
 * A session's phase. RELAY is an established session (and any session once it is being ended);
 * the others are the front door's, in order: reading the first packets, waiting for JavaScript to
 * route, connecting, waiting for the server's first answer, that answer (an error) held for
 * JavaScript's verdict, the authentication exchange until ReadyForQuery.
 */
enum { PH_RELAY = 0, PH_STARTUP, PH_ROUTING, PH_DIAL, PH_FIRST, PH_HELD, PH_AUTH };

enum {
  EV_END = 1,
  EV_PARAM = 2,
  EV_CLOSED = 3,
  EV_PACKET = 4,
  EV_ANSWER = 5,
  EV_DIAL_FAILED = 6,
  EV_READY = 7,
  EV_TIMEOUT = 8,
  EV_FAULT = 9 /* side: what failed (F_*), err: its errno; id 0: no session (relay_note) */
};
/* What failed in a fault (native-relay.ts names them); F_SOCKOPT only as a note (no session ends). */
enum { F_EPOLL = 1, F_MEMORY = 2, F_SOCKOPT = 3 };
enum { C_END = 1, C_AT_BOUNDARY = 2, C_DESTROY = 4, B_END = 8, B_DESTROY = 16 };
/* OP_FAULT: a fault made on cue (the tests'); OP_QUIT: the thread returns (the relay's teardown). */
enum { OP_COMMAND = 1, OP_STOP, OP_DIAL, OP_VERDICT, OP_FAULT, OP_QUIT };

typedef struct Event {
  double id;
  int kind, side, err, at_boundary, last_type, terminated, phase, front, peer6;
  uint8_t *bytes;
  size_t nbytes;
  struct Event *next; /* the next lazy event */
} Event;

/* Bytes read from one side, to be written to the other: [wr, fwd) may go out, [fwd, len) is held. */
typedef struct Dir {
  uint8_t *buf;
  size_t cap, len, fwd, wr;
} Dir;

/* One proxy's front door: its client limit and what it tells clients (never freed: one a proxy). */
typedef struct Front {
  int index;
  atomic_int open;       /* clients in any phase */
  atomic_int over_limit; /* refused at accept: over the limit */
  int max[2];            /* per listener class (0 premium, 1 freemium) */
  int startup_ms;
  uint8_t *refusal;
  size_t nrefusal;
} Front;

struct Pair;
struct Listener;
typedef struct Tag {
  struct Pair *p;
  int side; /* CLIENT, BACKEND, or -1: a listener (lst) */
  struct Listener *lst;
} Tag;

typedef struct Listener {
  int fd, cls;
  Front *front;
  Tag tag;             /* what every thread's epoll reports it by */
  atomic_int refs;     /* threads still polling it */
  atomic_int stopping; /* stop() was called: an event already taken off epoll accepts nothing */
} Listener;

typedef struct Pair {
  double id;
  int fd[2];
  Dir d[2]; /* d[k]: read from side k, written to side 1-k */
  Tag tag[2];
  uint32_t events[2];
  int rd_eof[2], shut[2], closed[2];
  size_t passing; /* bytes still to come of an oversize message passed through */
  int last_type, terminated, watch_params, dead;
  int client_first; /* the client ended while the backend had not: the backend was ended here */
  int answered;     /* a replica's first answer went on (told with the close) */
  uint8_t *last_err;
  size_t last_err_len;
  int64_t linger_at;
  /* The front door's. */
  int phase, cls, known; /* known: JavaScript was told of it (it hears of the close) */
  /* The client's host, told with its first packet: an IPv4 address, or a hash of an IPv6 one (peer6). */
  uint32_t peer;
  int peer6;
  Front *front;
  Front *over; /* over the client limit: read only to say its refusal where a client reads it */
  uint8_t *pkt; /* the startup packet, kept for a connect to another replica */
  size_t npkt, pkt_sent;
  int32_t key_pid;
  uint8_t key_secret[4];
  uint8_t *bkey; /* the backend's BackendKeyData body (pid, secret) */
  size_t nbkey;
  int dial_ms;
  int64_t deadline;
  struct Worker *worker;
  struct Pair *next_bucket, *next_dead;
  /* Set aside at accept: its fault and its close are told even when nothing can be allocated. */
  Event *fault_ev, *close_ev;
  int faulted;    /* F_*: the relay failed on it (told once) */
  int fault_said; /* after a fault, JavaScript's first command is its last word: the rest ignored */
  int fail_alloc; /* the next event's allocation fails (OP_FAULT with F_MEMORY: the tests') */
  /* The client's messages followed (type byte + Int32 length) for Terminate: header bytes so far,
   * body bytes still to come, and whether the stream stopped making sense (then not followed). */
  uint8_t chdr[5];
  size_t chdr_len, cleft;
  int cunframed;
} Pair;

/*
 * A replica connection's keepalive and TCP_USER_TIMEOUT (--hang-timeout, native-relay.ts works the
 * values out): a replica that acknowledges nothing for user_timeout_ms, idle or not, has its
 * connection ended by the kernel (ETIMEDOUT), as a reset one would be. user_timeout_ms 0: none.
 */
typedef struct Keepalive {
  int user_timeout_ms, idle_s, intvl_s, cnt;
} Keepalive;

typedef struct Cmd {
  int op, flags;
  double id;
  uint8_t *bytes;
  size_t nbytes;
  /* OP_LISTEN: the listener. OP_DIAL: where, how long, the proxy's key, ParameterStatus wanted. */
  Listener *lst;
  struct sockaddr_storage addr;
  socklen_t addrlen;
  int timeout_ms, watch, err;
  Keepalive ka;
  int32_t key_pid;
  uint8_t key_secret[4];
  struct Cmd *next;
} Cmd;

struct Relay;
typedef struct Worker {
  pthread_t thread;
  int index, ep, efd;
  int spare_fd; /* held for the accept of a client when descriptors run out */
  int started; /* its thread runs (joined at teardown) */
  pthread_mutex_t mu;
  Cmd *head, *tail;
  Cmd quit; /* OP_QUIT, set aside: the teardown allocates nothing */
  Pair *buckets[BUCKETS];
  int lingering, waiting; /* pairs with a linger or a deadline */
  atomic_int live;        /* its pairs now (the other threads read it to share out accepting) */
  double next_id;
  struct Relay *relay;
} Worker;

typedef struct Relay {
  int n;
  Worker *workers;
  napi_threadsafe_function tsfn;
  Front *fronts[MAX_FRONTS];
  int nfronts;
  Listener *listeners[MAX_LISTENERS];
  int nlisteners;
  /*
   * Every thread's events, in order, under ev_mu: `ready` for JavaScript now, `lazy` waiting
   * (LAZY_MS; lazy_at: when the oldest must go, 0: none). One call of the thread-safe function
   * (rung until it runs) takes all of `ready`: a call per event made Node's thread wait on the
   * function's own lock while a relay thread held it.
   */
  pthread_mutex_t ev_mu;
  Event *ready_head, *ready_tail, *lazy_head, *lazy_tail;
  bool rung;
  _Atomic int64_t lazy_at;
  /* Node's thread: taken from the relay and not told yet. */
  Event *untold;
  /*
   * Where an event's bytes are copied for JavaScript (a Buffer it gave at start, read before the
   * call returns): a Buffer of their own per event made most of a connection's garbage.
   */
  uint8_t *mailbox;
  size_t mailbox_len;
  /* Failures with no session to tell (relay_note): how many since told, the last one's what and errno. */
  atomic_int noted, noted_what, noted_err;
} Relay;

/* loop.c: a relay thread's loop. */
void *relay_run(void *arg);
/* Queues a command for a thread and wakes it (any thread). */
void relay_post(Worker *w, Cmd *c);
void relay_free_pair(Pair *p);
/* The loop's teardown: every thread stopped and joined, everything freed (Node's thread). */
void relay_destroy(Relay *r);
/* events.c: what is told to JavaScript, in order. */
void emit(Worker *w, Pair *p, int kind, int side, int err, const uint8_t *bytes, size_t n);
/* An event's fields from its pair's state at the moment it is told (emit and relay_fault). */
void stamp_event(Event *e, const Pair *p, int kind, int side, int err);
/* Rings JavaScript for what is queued (ev_mu not held); the event itself goes on the ready queue. */
void queue_event(Relay *r, Event *e);
/* The waiting events are told now (a thread calls it once their time is up). */
void emit_lazy(Relay *r);
/* Node's thread: the events to tell now, oldest first (the caller frees them). */
Event *take_events(Relay *r);
/* relay.c: a session's stream, shared by the loop and the front door. */
int64_t now_ms(void);
uint32_t be32(const uint8_t *b);
/* fault.c: the relay failed on p (what: F_*): its backend closed, JavaScript told (never dropped). */
void relay_fault(Worker *w, Pair *p, int what, int err);
/* A failure with no session to tell: counted and told to JavaScript as id 0. */
void relay_note(Relay *r, int what, int err);
/* A FATAL said straight to a socket (no buffer: nothing allocated), best effort. */
void say_fatal(int fd, int what, int err);
/* epoll_ctl for a pair's side; 0, or -1 with errno. */
MUSTCHECK int ep_ctl(Worker *w, int op, int fd, uint32_t events, void *tag);
/* A pair's deadline (the front door's waits), 0: none; its linger (closed after LINGER_MS). */
void set_deadline(Worker *w, Pair *p, int64_t at);
void linger_from_now(Worker *w, Pair *p);
/* relay.c: watching, writing and ending the sides of a session. */
void watch(Worker *w, Pair *p, int k);
void flush(Worker *w, Pair *p, int k);
void close_side(Worker *w, Pair *p, int k);
void ended(Worker *w, Pair *p, int k, int err);
MUSTCHECK int grow(Dir *d, size_t need);
void bucket_add(Worker *w, Pair *p);
Pair *bucket_find(Worker *w, double id);
/* A pair whose both sides are closed is put on the dead list (freed at the end of the loop's turn). */
void finish_if_closed(Worker *w, Pair *p, Pair **dead);
void on_readable(Worker *w, Pair *p, int k);

/* front.c: the front door's client side, before a session is routed. */
void front_accept(Worker *w, Listener *l);
void front_startup_read(Worker *w, Pair *p);
void front_client_gone(Worker *w, Pair *p, uint32_t ev);
void front_expire(Worker *w, Pair *p);
void front_stop(Worker *w, Cmd *c);
/* What a pair's side is watched for (epoll events) in a front door phase. */
uint32_t front_wanted(Pair *p, int k);
/* front-dial.c: the front door's replica side, from the connect to ReadyForQuery. */
void front_dial(Worker *w, Pair *p, Cmd *c);
void front_dial_ready(Worker *w, Pair *p);
/* The connect failed (connected: after it was made) or timed out: dropped, JavaScript told. */
void front_dial_failed(Worker *w, Pair *p, int err, int connected);
void front_send_packet(Worker *w, Pair *p);
void front_first_read(Worker *w, Pair *p);
void front_verdict(Worker *w, Pair *p, int forward);
void front_retire(Worker *w, Pair *p);
/* TCP_NODELAY on a client's or a replica's socket. */
void set_nodelay(int fd);
/* Sets k on a TCP socket (SO_KEEPALIVE and its counts, TCP_USER_TIMEOUT): 0, or the errno. */
int set_keepalive(int fd, const Keepalive *k);
/* The AUTH phase's hooks on whole backend messages: BackendKeyData swapped, ReadyForQuery. */
MUSTCHECK int front_key(Worker *w, Pair *p, Dir *d, size_t pos, size_t *total);
void front_ready(Worker *w, Pair *p);
/* relay.c: the backend's bytes read before the session was relayed, passed on now. */
void relay_catch_up(Worker *w, Pair *p);

#endif
