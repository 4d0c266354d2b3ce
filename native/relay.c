/* The relay threads: epoll loops copying sessions' bytes (relay.h says what and why). */
#include "relay.h"

#include <linux/sockios.h> /* SIOCOUTQ */
#include <sys/ioctl.h>

int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint32_t be32(const uint8_t *b) {
  return ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3];
}

static size_t bucket_of(double id) { return (size_t)((uint64_t)id % BUCKETS); }

void bucket_add(Worker *w, Pair *p) {
  size_t b = bucket_of(p->id);
  p->next_bucket = w->buckets[b];
  w->buckets[b] = p;
}

Pair *bucket_find(Worker *w, double id) {
  Pair *p = w->buckets[bucket_of(id)];
  while (p && p->id != id) p = p->next_bucket;
  return p;
}

void watch(Worker *w, Pair *p, int k) {
  if (p->fd[k] < 0) return;
  uint32_t ev;
  if (p->phase != PH_RELAY && p->phase != PH_AUTH) {
    ev = front_wanted(p, k);
  } else {
    Dir *in = &p->d[k], *out = &p->d[1 - k];
    ev = 0;
    /* Read a side only while what was read from it is out (backpressure) and there is room. */
    if (!p->rd_eof[k] && in->wr == in->fwd && in->len < in->cap) ev |= EPOLLIN;
    if (out->wr < out->fwd) ev |= EPOLLOUT;
  }
  if (ev == p->events[k]) return;
  /* Nothing wanted: out of the set, or a hangup (always reported) would wake the thread in a loop. */
  int op = ev == 0 ? EPOLL_CTL_DEL : p->events[k] == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
  /* Not watched as it should be, the session would wait for nothing: it ends (the linger closes it). */
  if (ep_ctl(w, op, p->fd[k], ev, &p->tag[k]) != 0) return relay_fault(w, p, F_EPOLL, errno);
  p->events[k] = ev;
}

void close_side(Worker *w, Pair *p, int k) {
  if (p->fd[k] < 0) return;
  /* Out of the set before the close: a copy of the descriptor (a fork) would keep it reported. */
  int failed = p->events[k] != 0 && ep_ctl(w, EPOLL_CTL_DEL, p->fd[k], 0, NULL) != 0 ? errno : 0;
  p->events[k] = 0;
  close(p->fd[k]);
  p->fd[k] = -1;
  p->closed[k] = 1;
  if (p->rd_eof[k] == 0) p->rd_eof[k] = 1; /* 2: its end was reported already, not again */
  if (failed) relay_fault(w, p, F_EPOLL, failed);
}

void finish_if_closed(Worker *w, Pair *p, Pair **dead) {
  for (int k = 0; k < 2; k++)
    if (p->fd[k] >= 0 && p->rd_eof[k] && p->shut[k] == 2) close_side(w, p, k);
  if (p->dead || !p->closed[CLIENT] || !p->closed[BACKEND]) return;
  p->dead = 1;
  if (p->linger_at) w->lingering--;
  if (p->deadline) w->waiting--;
  Pair **at = &w->buckets[bucket_of(p->id)];
  while (*at && *at != p) at = &(*at)->next_bucket;
  if (*at) *at = p->next_bucket;
  emit(w, p, EV_CLOSED, p->answered, 0, NULL, 0);
  p->next_dead = *dead;
  *dead = p;
}

/* Writes d[k] to side 1-k; then, that side's end asked for and nothing left, its FIN. */
void flush(Worker *w, Pair *p, int k) {
  Dir *d = &p->d[k];
  int to = 1 - k;
  if (p->fd[to] < 0) {
    d->len = d->fwd = d->wr = 0;
    return;
  }
  while (d->wr < d->fwd) {
    ssize_t n = send(p->fd[to], d->buf + d->wr, d->fwd - d->wr, MSG_NOSIGNAL);
    if (n > 0) {
      d->wr += (size_t)n;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    /* The receiving side is broken: its end, as an error. */
    d->len = d->fwd = d->wr = 0;
    close_side(w, p, to);
    ended(w, p, to, n < 0 ? errno : EPIPE);
    return;
  }
  if (d->fwd > 0) {
    memmove(d->buf, d->buf + d->fwd, d->len - d->fwd);
    d->len -= d->fwd;
    d->fwd = d->wr = 0;
  }
  if (d->len == 0 && d->cap > DIR_CAP) {
    /* Grown for one large message: back to the usual size, so idle sessions stay small. */
    uint8_t *b = realloc(d->buf, DIR_CAP);
    if (b) {
      d->buf = b;
      d->cap = DIR_CAP;
    }
  }
  if (p->shut[to] == 1 && d->fwd == 0) {
    shutdown(p->fd[to], SHUT_WR);
    p->shut[to] = 2;
  }
}

/*
 * Side k ended (EOF: err 0). Reported once; an EOF ends its writing too (allowHalfOpen off). A
 * connected client's end is not reported: what JavaScript would answer is always the same (the
 * backend sees EOF and ends its session), so it is done here and said with the close (client_first).
 */
void ended(Worker *w, Pair *p, int k, int err) {
  if (!p->closed[k]) {
    if (p->rd_eof[k]) return;
    p->rd_eof[k] = 1;
    if (p->shut[k] == 0) p->shut[k] = 1;
    flush(w, p, 1 - k);
    if (p->rd_eof[k] == 2) return; /* the flush found the side broken and reported it */
  } else if (p->rd_eof[k] == 2) {
    return;
  }
  p->rd_eof[k] = 2; /* reported */
  if (k == BACKEND && (p->phase == PH_RELAY || p->phase == PH_AUTH) && (p->terminated || p->client_first)) {
    /* The client said Terminate, or left: the backend's end is expected; the client is ended too. */
    if (p->fd[CLIENT] >= 0 && p->shut[CLIENT] == 0) {
      p->shut[CLIENT] = 1;
      flush(w, p, BACKEND);
    }
    return;
  }
  if (k == CLIENT && (p->phase == PH_RELAY || p->phase == PH_AUTH)) {
    if (p->rd_eof[BACKEND] == 0) p->client_first = 1;
    if (!p->linger_at) {
      p->linger_at = now_ms() + LINGER_MS;
      w->lingering++;
    }
    if (p->fd[BACKEND] >= 0 && p->shut[BACKEND] == 0) {
      p->shut[BACKEND] = 1;
      flush(w, p, CLIENT);
    }
    return;
  }
  emit(w, p, EV_END, k, err, k == BACKEND ? p->last_err : NULL, k == BACKEND ? p->last_err_len : 0);
}

int grow(Dir *d, size_t need) {
  if (need <= d->cap) return 1;
  size_t cap = d->cap * 2 > need ? d->cap * 2 : need;
  if (cap > HELD_MAX && need <= HELD_MAX) cap = HELD_MAX;
  uint8_t *b = realloc(d->buf, cap);
  if (!b) return 0;
  d->buf = b;
  d->cap = cap;
  return 1;
}

/* Advances d[BACKEND].fwd over whole messages: 1, or -1 on a protocol error, 0 out of memory. */
static MUSTCHECK int frame(Worker *w, Pair *p) {
  Dir *d = &p->d[BACKEND];
  size_t pos = d->fwd;
  for (;;) {
    if (p->passing > 0) {
      size_t take = d->len - pos < p->passing ? d->len - pos : p->passing;
      pos += take;
      p->passing -= take;
      if (p->passing > 0) break;
      continue;
    }
    if (d->len - pos < 5) break;
    int type = d->buf[pos];
    uint32_t mlen = be32(d->buf + pos + 1);
    if (mlen < 4 || mlen > 0x7fffffff) return -1;
    size_t total = 1 + (size_t)mlen;
    if (d->len - pos >= total) {
      p->last_type = type;
      if (type == 'E' && !p->last_err && !(p->last_err = malloc(LAST_ERROR_MAX))) return 0;
      if (type == 'E') {
        size_t n = total < LAST_ERROR_MAX ? total : LAST_ERROR_MAX;
        memcpy(p->last_err, d->buf + pos, n);
        p->last_err_len = n;
      } else if (type == 'S' && p->watch_params) {
        emit(w, p, EV_PARAM, BACKEND, 0, d->buf + pos, total);
      } else if (type == 'K' && p->phase == PH_AUTH) {
        if (!front_key(w, p, d, pos, &total)) return 0;
      } else if (type == 'Z' && p->phase == PH_AUTH) {
        front_ready(w, p);
      }
      pos += total;
      continue;
    }
    if (total > HELD_MAX) {
      /* Oversize: what there is goes out, the rest as it comes (not at a boundary meanwhile). */
      p->last_type = type;
      p->passing = total - (d->len - pos);
      pos = d->len;
      break;
    }
    /* Held until whole: after the forwarded part is out it starts at 0, so cap >= total. */
    if (!grow(d, total)) return 0;
    break;
  }
  d->fwd = pos;
  return 1;
}

/* Follows the client's messages over new bytes: Terminate is a whole 'X' message, not a guess. */
static void frame_client(Pair *p, const uint8_t *b, size_t n) {
  size_t i = 0;
  while (i < n && !p->cunframed) {
    if (p->cleft > 0) {
      size_t take = n - i < p->cleft ? n - i : p->cleft;
      i += take;
      p->cleft -= take;
      continue;
    }
    size_t take = 5 - p->chdr_len < n - i ? 5 - p->chdr_len : n - i;
    memcpy(p->chdr + p->chdr_len, b + i, take);
    p->chdr_len += take;
    i += take;
    if (p->chdr_len < 5) break;
    p->chdr_len = 0;
    uint32_t len = be32(p->chdr + 1);
    /* Not the protocol (PostgreSQL will say so and close): no Terminate is read into it. */
    if (len < 4 || len > 0x7fffffff) p->cunframed = 1;
    else if (p->chdr[0] == 'X' && len == 4) p->terminated = 1;
    else p->cleft = len - 4;
  }
}

/* The backend's stream could not be framed: not PostgreSQL (EPROTO), or out of memory (a fault). */
static void unframed(Worker *w, Pair *p, int framed) {
  if (framed == 0) return relay_fault(w, p, F_MEMORY, ENOMEM);
  /* Not PostgreSQL on the other end: nothing sensible can be relayed. */
  close_side(w, p, CLIENT);
  close_side(w, p, BACKEND);
  ended(w, p, BACKEND, EPROTO);
}

/*
 * The backend sent to a client that has gone: it is closed, as the client's own kernel would answer
 * it (its next write fails and it ends), instead of streaming into the proxy until the linger runs
 * out with its replica slot held. Only once the client's bytes are all out and acknowledged and what
 * is readable is read: a close with either pending resets the connection, and the server could lose
 * the client's last messages (a Terminate, a COMMIT) that the half-close is there to deliver. A
 * backend that sends nothing keeps the half-close and the linger: it reads the end and goes.
 */
static void sent_to_gone_client(Worker *w, Pair *p) {
  int queued = 0;
  if (p->shut[BACKEND] != 2 || p->d[CLIENT].wr < p->d[CLIENT].fwd) return;
  if (ioctl(p->fd[BACKEND], SIOCOUTQ, &queued) != 0 || queued > 0) return;
  uint8_t scratch[4096];
  for (int i = 0; i < 16 && read(p->fd[BACKEND], scratch, sizeof scratch) > 0; i++) {
  }
  close_side(w, p, BACKEND);
  ended(w, p, BACKEND, 0);
}

void on_readable(Worker *w, Pair *p, int k) {
  Dir *d = &p->d[k];
  if (p->rd_eof[k] || d->wr < d->fwd) return;
  /* The other side is closed or its end asked for: what comes now is read and dropped. */
  int drop = p->fd[1 - k] < 0 || p->shut[1 - k] != 0;
  uint8_t scratch[4096];
  ssize_t n = drop ? read(p->fd[k], scratch, sizeof scratch) : read(p->fd[k], d->buf + d->len, d->cap - d->len);
  if (n == 0) return ended(w, p, k, 0);
  if (n < 0) {
    if (errno == EAGAIN || errno == EINTR) return;
    int err = errno;
    close_side(w, p, k);
    return ended(w, p, k, err);
  }
  if (drop) {
    if (k == BACKEND && p->client_first) sent_to_gone_client(w, p);
    return;
  }
  size_t start = d->len;
  d->len += (size_t)n;
  if (k == CLIENT) {
    /* Terminate: the backend's close that follows is expected. */
    frame_client(p, d->buf + start, d->len - start);
    d->fwd = d->len;
  } else {
    int framed = frame(w, p);
    if (framed != 1) return unframed(w, p, framed);
  }
  flush(w, p, k);
}

/* The backend's bytes read before the session was relayed (its first answer, passed on now). */
void relay_catch_up(Worker *w, Pair *p) {
  int framed = frame(w, p);
  if (framed != 1) return unframed(w, p, framed);
  flush(w, p, BACKEND);
  /* What the client sent meanwhile goes on too (its messages followed from here). */
  Dir *c = &p->d[CLIENT];
  frame_client(p, c->buf + c->fwd, c->len - c->fwd);
  c->fwd = c->len;
  flush(w, p, CLIENT);
}
