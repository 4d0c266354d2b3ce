/*
 * The front door's client side (relay.h): accepting clients, their first packets (SSL and GSSENC
 * requests answered 'N', the startup packet handed to JavaScript), a client's end before it is a
 * session, the front door's deadlines, a listener's stop and what each phase watches for. The
 * replica's side (the connect, its first answer, the authentication exchange's hooks) is
 * front-dial.c's: kept apart, each file is one stage of a session's start. Every step that needs a
 * decision is told to JavaScript and waits for its command.
 */
#include "relay.h"

#define SSL_REQUEST 80877103u
#define GSSENC_REQUEST 80877104u

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

/* The client's host as one number (relay.h peer): IPv4 (also IPv4-mapped IPv6) as it is, else
 * FNV-1a over the IPv6 address. */
static void set_peer(Pair *p, const struct sockaddr_storage *ss) {
  if (ss->ss_family == AF_INET) {
    p->peer = ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr);
    return;
  }
  if (ss->ss_family != AF_INET6) return;
  const uint8_t *a = ((const struct sockaddr_in6 *)ss)->sin6_addr.s6_addr;
  static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (memcmp(a, mapped, 12) == 0) {
    p->peer = be32(a + 12);
    return;
  }
  uint32_t h = 2166136261u;
  for (int i = 0; i < 16; i++) h = (h ^ a[i]) * 16777619u;
  p->peer = h;
  p->peer6 = 1;
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
    struct sockaddr_storage ss;
    socklen_t sslen = sizeof ss;
    int fd = accept4(l->fd, (struct sockaddr *)&ss, &sslen, SOCK_NONBLOCK | SOCK_CLOEXEC);
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
    set_nodelay(fd);
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
    set_peer(p, &ss);
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
  /* err: the client's host (relay.h peer), not an error. */
  emit(w, p, EV_PACKET, p->cls, (int)p->peer, p->pkt, p->npkt);
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
    front_dial_failed(w, p, ETIMEDOUT, 0);
  } else if (phase == PH_FIRST) {
    front_dial_failed(w, p, ETIMEDOUT, 1);
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
