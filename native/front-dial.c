/*
 * The front door's replica side (relay.h): the connect to the replica JavaScript chose, the
 * replica's first answer (an error is held for JavaScript's verdict, anything else goes straight
 * on), and the authentication exchange's hooks (BackendKeyData swapped, ReadyForQuery told). Apart
 * from front.c (the client's side before routing): each file is one stage of a session's start.
 */
#include "relay.h"

#include <netinet/tcp.h>

void set_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int set_keepalive(int fd, const Keepalive *k) {
  int one = 1;
  unsigned int ut = (unsigned int)k->user_timeout_ms;
  if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one) != 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &k->idle_s, sizeof k->idle_s) != 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &k->intvl_s, sizeof k->intvl_s) != 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &k->cnt, sizeof k->cnt) != 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, sizeof ut) != 0)
    return errno;
  return 0;
}

/* The replica connection (if any) closed without a word: a connect that failed or was dropped. */
static void drop_backend(Worker *w, Pair *p) {
  if (p->fd[BACKEND] < 0) return;
  int failed = p->events[BACKEND] && ep_ctl(w, EPOLL_CTL_DEL, p->fd[BACKEND], 0, NULL) != 0 ? errno : 0;
  p->events[BACKEND] = 0;
  close(p->fd[BACKEND]);
  p->fd[BACKEND] = -1;
  Dir *d = &p->d[BACKEND];
  d->len = d->fwd; /* its bytes (a first answer) are not passed on */
  if (failed) relay_fault(w, p, F_EPOLL, failed);
}

void front_dial_failed(Worker *w, Pair *p, int err, int connected) {
  drop_backend(w, p);
  set_deadline(w, p, 0);
  p->phase = PH_ROUTING;
  emit(w, p, EV_DIAL_FAILED, connected, err, NULL, 0);
}

static void connected(Worker *w, Pair *p) {
  p->phase = PH_FIRST;
  p->pkt_sent = 0;
  set_deadline(w, p, now_ms() + p->dial_ms);
  front_send_packet(w, p);
}

void front_dial(Worker *w, Pair *p, Cmd *c) {
  if (p->phase != PH_ROUTING || !p->pkt) return;
  p->key_pid = c->key_pid;
  memcpy(p->key_secret, c->key_secret, 4);
  p->watch_params = c->watch;
  p->dial_ms = c->timeout_ms;
  /* Out of memory is the relay's failure, not the replica's: no other replica is tried. */
  if (!grow(&p->d[BACKEND], DIR_CAP)) return relay_fault(w, p, F_MEMORY, ENOMEM);
  int fd = socket(c->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return front_dial_failed(w, p, errno, 0);
  set_nodelay(fd);
  /* Before the connect: TCP_USER_TIMEOUT bounds an unanswered SYN too. Not set (a kernel without
   * it: JavaScript checked at start and said so): the session goes on, the failure is noted. */
  int ka_err = c->ka.user_timeout_ms > 0 ? set_keepalive(fd, &c->ka) : 0;
  if (ka_err) relay_note(w->relay, F_SOCKOPT, ka_err);
  p->fd[BACKEND] = fd;
  p->events[BACKEND] = 0;
  if (connect(fd, (struct sockaddr *)&c->addr, c->addrlen) == 0) return connected(w, p);
  if (errno != EINPROGRESS) return front_dial_failed(w, p, errno, 0);
  p->phase = PH_DIAL;
  set_deadline(w, p, now_ms() + p->dial_ms);
}

void front_dial_ready(Worker *w, Pair *p) {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(p->fd[BACKEND], SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  if (err) return front_dial_failed(w, p, err, 0);
  connected(w, p);
}

void front_send_packet(Worker *w, Pair *p) {
  while (p->pkt_sent < p->npkt) {
    ssize_t n = send(p->fd[BACKEND], p->pkt + p->pkt_sent, p->npkt - p->pkt_sent, MSG_NOSIGNAL);
    if (n > 0) {
      p->pkt_sent += (size_t)n;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    return front_dial_failed(w, p, n < 0 ? errno : EPIPE, 1);
  }
}

/*
 * The first answer goes on: the authentication exchange is relayed. JavaScript is not told: it
 * learns the session was answered from what comes next (ReadyForQuery, or an end).
 */
static void answered(Worker *w, Pair *p) {
  set_deadline(w, p, 0);
  p->phase = PH_AUTH;
  p->answered = 1;
  free(p->pkt);
  p->pkt = NULL;
  if (!grow(&p->d[CLIENT], DIR_CAP)) return relay_fault(w, p, F_MEMORY, ENOMEM);
  relay_catch_up(w, p);
}

void front_first_read(Worker *w, Pair *p) {
  Dir *d = &p->d[BACKEND];
  if (d->len == d->cap && !grow(d, d->cap * 2)) return relay_fault(w, p, F_MEMORY, ENOMEM);
  ssize_t n = read(p->fd[BACKEND], d->buf + d->len, d->cap - d->len);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) return front_dial_failed(w, p, n == 0 ? ECONNRESET : errno, 1);
  d->len += (size_t)n;
  const uint8_t *m = d->buf + d->fwd;
  size_t have = d->len - d->fwd;
  /* Not an error (an authentication request): nothing to decide, it goes straight on. */
  if (m[0] != 'E') return answered(w, p);
  if (have < 5) return;
  size_t total = 1 + (size_t)be32(m + 1);
  if (total < 5 || total > HELD_MAX) return answered(w, p); /* the relay's framer judges it */
  if (have < total) {
    if (!grow(d, d->fwd + total)) relay_fault(w, p, F_MEMORY, ENOMEM);
    return;
  }
  /* An error first: a server going away (retry elsewhere) or one that refuses (say it): JavaScript's call. */
  set_deadline(w, p, 0);
  p->phase = PH_HELD;
  emit(w, p, EV_ANSWER, BACKEND, 0, m, total);
}

void front_verdict(Worker *w, Pair *p, int forward) {
  if (p->phase != PH_HELD) return;
  if (forward) return answered(w, p);
  drop_backend(w, p);
  p->phase = PH_ROUTING;
}

void front_retire(Worker *w, Pair *p) {
  drop_backend(w, p);
  set_deadline(w, p, 0);
  p->closed[BACKEND] = 1;
  p->rd_eof[BACKEND] = 2; /* no backend: no end of its to report */
  p->d[CLIENT].len = p->d[CLIENT].fwd = p->d[CLIENT].wr = 0;
  p->phase = PH_RELAY;
}

int front_key(Worker *w, Pair *p, Dir *d, size_t pos, size_t *total) {
  size_t body = *total - 5;
  if (body < 8) return 1; /* not a key: passed on as it is */
  free(p->bkey);
  p->bkey = malloc(body);
  p->nbkey = p->bkey ? body : 0;
  if (!p->bkey) return 0; /* without it the client could not cancel: a fault */
  memcpy(p->bkey, d->buf + pos + 5, body);
  /* The proxy's key (pid, 4-byte secret) in its place: the client cancels through the proxy. */
  const size_t mine = 13;
  if (*total > mine) {
    memmove(d->buf + pos + mine, d->buf + pos + *total, d->len - pos - *total);
    d->len -= *total - mine;
  }
  uint8_t *m = d->buf + pos;
  uint32_t pid = (uint32_t)p->key_pid;
  m[0] = 'K';
  m[1] = 0, m[2] = 0, m[3] = 0, m[4] = 12;
  m[5] = pid >> 24, m[6] = pid >> 16, m[7] = pid >> 8, m[8] = pid;
  memcpy(m + 9, p->key_secret, 4);
  *total = mine;
  return 1;
}

void front_ready(Worker *w, Pair *p) {
  p->phase = PH_RELAY;
  emit(w, p, EV_READY, BACKEND, 0, p->bkey, p->nbkey);
}
