/*
 * The front door (relay.h): accepting clients, their first packets, the connect to the replica
 * JavaScript chose, the replica's first answer, and the authentication exchange's hooks. Every
 * step that needs a decision is told to JavaScript and waits for its command; none of them waits
 * on the common path (an answer that is not an error goes straight on).
 */
#include "relay.h"

#include <netinet/tcp.h>

#define SSL_REQUEST 80877103u
#define GSSENC_REQUEST 80877104u

static void no_delay(int fd) {
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

/* Says `bytes` (none: not a word) to a client that is not a session (over the limit, stopping, a
 * first packet no client sends), then its FIN. */
static void refuse_now(Worker *w, Pair *p, const uint8_t *bytes, size_t n) {
  set_deadline(w, p, 0);
  p->phase = PH_RELAY;
  p->closed[BACKEND] = 1;
  p->rd_eof[BACKEND] = 2;
  p->d[CLIENT].len = p->d[CLIENT].fwd = p->d[CLIENT].wr = 0;
  Dir *d = &p->d[BACKEND];
  if (n > 0 && !grow(d, d->len + n)) return relay_fault(w, p, F_MEMORY, ENOMEM);
  if (n > 0) {
    memcpy(d->buf + d->len, bytes, n);
    d->len += n;
    d->fwd = d->len;
  }
  /* Its bytes are read and dropped until it closes (else its unread data would reset the error). */
  p->shut[CLIENT] = 1;
  linger_from_now(w, p);
  flush(w, p, BACKEND);
}

/* Fewer pairs than every other thread (or as few): this thread takes another client now. */
static int least_loaded(Worker *w) {
  int mine = atomic_load(&w->live);
  for (int i = 0; i < w->relay->n; i++)
    if (&w->relay->workers[i] != w && atomic_load(&w->relay->workers[i].live) < mine) return 0;
  return 1;
}

/*
 * Takes clients off the listener while this thread is the least loaded (at least one a wake, at most
 * 64): a client stays on the thread that accepted it, and every thread polls the listener, so the
 * others take the rest (a burst of sessions opened at once is shared out, not left on one core).
 */
void front_accept(Worker *w, Listener *l) {
  Front *f = l->front;
  if (atomic_load(&l->stopping)) return; /* reported before this thread's stop was read */
  for (int i = 0; i < 64 && (i == 0 || least_loaded(w)); i++) {
    int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if ((errno == EMFILE || errno == ENFILE) && w->spare_fd >= 0) {
        /* Out of descriptors: the spare one makes room to take the client off the queue (a reset). */
        close(w->spare_fd);
        int c = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
        if (c >= 0) close(c);
        w->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        continue;
      }
      return;
    }
    no_delay(fd);
    Pair *p = calloc(1, sizeof(Pair));
    if (p) {
      p->d[CLIENT].buf = malloc(STARTUP_CAP);
      p->fault_ev = calloc(1, sizeof(Event));
      p->close_ev = calloc(1, sizeof(Event));
    }
    if (!p || !p->d[CLIENT].buf || !p->fault_ev || !p->close_ev) {
      /* No session to tell: the client hears why, the relay counts it. */
      if (p) free(p->d[CLIENT].buf), free(p->fault_ev), free(p->close_ev);
      free(p);
      say_fatal(fd, F_MEMORY, ENOMEM);
      close(fd);
      relay_note(w->relay, F_MEMORY, ENOMEM);
      continue;
    }
    p->d[CLIENT].cap = STARTUP_CAP;
    p->id = w->next_id;
    w->next_id += w->relay->n;
    p->fd[CLIENT] = fd;
    p->fd[BACKEND] = -1;
    p->tag[CLIENT] = (Tag){p, CLIENT, NULL};
    p->tag[BACKEND] = (Tag){p, BACKEND, NULL};
    p->last_type = 'Z';
    p->cls = l->cls;
    p->worker = w;
    atomic_fetch_add(&w->live, 1);
    bucket_add(w, p);
    if (atomic_fetch_add(&f->open, 1) >= f->max[l->cls]) {
      /* Over --max-client-conn: never a session (not counted, JavaScript never hears of it), read
       * only as far as its first packet so that an SSLRequest gets 'N' before the prepared 53300. */
      atomic_fetch_sub(&f->open, 1);
      atomic_fetch_add(&f->over_limit, 1);
      p->over = f;
    } else {
      p->front = f;
    }
    p->phase = PH_STARTUP;
    set_deadline(w, p, now_ms() + f->startup_ms);
    watch(w, p, CLIENT);
  }
}

/* A packet for JavaScript (a startup packet, a CancelRequest, or one it will refuse). */
static void hand_over(Worker *w, Pair *p, size_t n) {
  Dir *d = &p->d[CLIENT];
  p->pkt = malloc(n);
  if (!p->pkt) return relay_fault(w, p, F_MEMORY, ENOMEM);
  memcpy(p->pkt, d->buf, n);
  p->npkt = n;
  /* What follows it (rare: a client waits for the server) goes to the server after it. */
  memmove(d->buf, d->buf + n, d->len - n);
  d->len -= n;
  d->fwd = d->wr = 0;
  set_deadline(w, p, 0);
  p->phase = PH_ROUTING;
  p->known = 1;
  emit(w, p, EV_PACKET, p->cls, 0, p->pkt, p->npkt);
}

/* An SSL or GSSENC request (the first 8 bytes) answered 'N'; 0: the client is gone or failed. */
static int answer_n(Worker *w, Pair *p) {
  Dir *d = &p->d[CLIENT], *out = &p->d[BACKEND];
  if (!grow(out, out->len + 1)) {
    /* Over the limit there is no session to fault: the client is closed without a word. */
    if (p->over) refuse_now(w, p, NULL, 0);
    else relay_fault(w, p, F_MEMORY, ENOMEM);
    return 0;
  }
  out->buf[out->len++] = 'N';
  out->fwd = out->len;
  flush(w, p, BACKEND);
  memmove(d->buf, d->buf + 8, d->len - 8);
  d->len -= 8;
  return p->fd[CLIENT] >= 0;
}

/*
 * Whole packets in the buffer: SSL and GSSENC requests answered 'N' here, the rest handed over. A
 * length no packet has (a Terminate, say: 'X' then 4) is closed without a word, as PostgreSQL does.
 * A client over the limit is told its refusal at its first other packet (once its code is in), as
 * a server without SSL would: libpq then prints the reason, not a failed SSL exchange.
 */
static void parse_startup(Worker *w, Pair *p) {
  Dir *d = &p->d[CLIENT];
  while (d->len >= 4) {
    uint32_t len = be32(d->buf);
    if (len < 8 || len > MAX_STARTUP) return refuse_now(w, p, NULL, 0);
    if (d->len < (p->over ? 8 : len)) return;
    uint32_t code = be32(d->buf + 4);
    if ((code == SSL_REQUEST || code == GSSENC_REQUEST) && len == 8) {
      if (!answer_n(w, p)) return;
      continue;
    }
    if (p->over) return refuse_now(w, p, p->over->refusal, p->over->nrefusal);
    return hand_over(w, p, len);
  }
}

void front_startup_read(Worker *w, Pair *p) {
  Dir *d = &p->d[CLIENT];
  size_t want = d->len >= 4 ? be32(d->buf) : 0;
  if (want > d->cap && want <= MAX_STARTUP && !grow(d, want)) return relay_fault(w, p, F_MEMORY, ENOMEM);
  if (d->len == d->cap) return hand_over(w, p, d->len); /* cannot grow: JavaScript refuses it */
  ssize_t n = read(p->fd[CLIENT], d->buf + d->len, d->cap - d->len);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) {
    /* Gone before its first packet: nobody was told of it, nobody is. */
    set_deadline(w, p, 0);
    close_side(w, p, CLIENT);
    p->closed[BACKEND] = 1;
    return;
  }
  d->len += (size_t)n;
  parse_startup(w, p);
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

static void dial_failed(Worker *w, Pair *p, int err, int connected) {
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
  if (fd < 0) return dial_failed(w, p, errno, 0);
  no_delay(fd);
  /* Before the connect: TCP_USER_TIMEOUT bounds an unanswered SYN too. Not set (a kernel without
   * it: JavaScript checked at start and said so): the session goes on, the failure is noted. */
  int ka_err = c->ka.user_timeout_ms > 0 ? set_keepalive(fd, &c->ka) : 0;
  if (ka_err) relay_note(w->relay, F_SOCKOPT, ka_err);
  p->fd[BACKEND] = fd;
  p->events[BACKEND] = 0;
  if (connect(fd, (struct sockaddr *)&c->addr, c->addrlen) == 0) return connected(w, p);
  if (errno != EINPROGRESS) return dial_failed(w, p, errno, 0);
  p->phase = PH_DIAL;
  set_deadline(w, p, now_ms() + p->dial_ms);
}

void front_dial_ready(Worker *w, Pair *p) {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(p->fd[BACKEND], SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  if (err) return dial_failed(w, p, err, 0);
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
    return dial_failed(w, p, n < 0 ? errno : EPIPE, 1);
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
  if (n <= 0) return dial_failed(w, p, n == 0 ? ECONNRESET : errno, 1);
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

/*
 * The client's end before it is connected: reported (the route stops). Half-closed (its FIN: a
 * CancelRequest's client may wait for the proxy's close) it stays open for what JavaScript says;
 * reset or hung up, it is closed.
 */
void front_client_gone(Worker *w, Pair *p, uint32_t ev) {
  int err = 0;
  socklen_t len = sizeof err;
  getsockopt(p->fd[CLIENT], SOL_SOCKET, SO_ERROR, &err, &len);
  if (ev & (EPOLLHUP | EPOLLERR)) return close_side(w, p, CLIENT), ended(w, p, CLIENT, err);
  p->rd_eof[CLIENT] = 2; /* reported now; not read again, and no FIN of ours until told */
  emit(w, p, EV_END, CLIENT, err, NULL, 0);
}

void front_retire(Worker *w, Pair *p) {
  drop_backend(w, p);
  set_deadline(w, p, 0);
  p->closed[BACKEND] = 1;
  p->rd_eof[BACKEND] = 2; /* no backend: no end of its to report */
  p->d[CLIENT].len = p->d[CLIENT].fwd = p->d[CLIENT].wr = 0;
  p->phase = PH_RELAY;
}

void front_expire(Worker *w, Pair *p) {
  int phase = p->phase;
  set_deadline(w, p, 0);
  if (phase == PH_STARTUP && p->over) {
    refuse_now(w, p, p->over->refusal, p->over->nrefusal);
  } else if (phase == PH_STARTUP) {
    /* No first packet in time: JavaScript hears of the client only to refuse it. */
    p->phase = PH_ROUTING;
    p->known = 1;
    emit(w, p, EV_TIMEOUT, p->cls, ETIMEDOUT, NULL, 0);
  } else if (phase == PH_DIAL) {
    dial_failed(w, p, ETIMEDOUT, 0);
  } else if (phase == PH_FIRST) {
    dial_failed(w, p, ETIMEDOUT, 1);
  }
}

void front_stop(Worker *w, Cmd *c) {
  Listener *l = c->lst;
  /* Still polled here, a closed listener's number could be another's: said, and closed anyway. */
  if (ep_ctl(w, EPOLL_CTL_DEL, l->fd, 0, NULL) != 0) relay_note(w->relay, F_EPOLL, errno);
  if (atomic_fetch_sub(&l->refs, 1) == 1) {
    close(l->fd);
    l->fd = -1;
  }
  /* Clients still before their first packet are told (57P01) here: JavaScript never knew them. */
  for (size_t b = 0; b < BUCKETS; b++)
    for (Pair *p = w->buckets[b]; p; p = p->next_bucket)
      if (!p->dead && p->phase == PH_STARTUP && p->front == l->front && p->cls == l->cls) {
        refuse_now(w, p, c->bytes, c->nbytes);
        watch(w, p, CLIENT);
      }
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

uint32_t front_wanted(Pair *p, int k) {
  Dir *out = &p->d[BACKEND]; /* toward the client: 'N' answers */
  if (k == CLIENT) {
    uint32_t ev = out->wr < out->fwd ? EPOLLOUT : 0;
    if (p->rd_eof[CLIENT]) return ev; /* its end is told: nothing more to watch for */
    return p->phase == PH_STARTUP ? ev | EPOLLIN | EPOLLRDHUP : ev | EPOLLRDHUP;
  }
  if (p->phase == PH_DIAL) return EPOLLOUT;
  if (p->phase == PH_FIRST) return EPOLLIN | (p->pkt_sent < p->npkt ? EPOLLOUT : 0);
  return 0;
}
