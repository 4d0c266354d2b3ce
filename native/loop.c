/* A relay thread's loop: its events, JavaScript's commands, and the scan for lingering sessions. */
#include "relay.h"

#include <stdio.h>

/* How often a thread looks for lingering sessions and passed deadlines, at most. */
#define SCAN_MS 100

static void command(Worker *w, Pair *p, Cmd *c) {
  /* After a fault the first command says the session's last word; what follows (the route's
   * end, say) must not cut it off: the relay closes the rest itself. */
  if (p->faulted && p->fault_said++) return;
  linger_from_now(w, p);
  /* Not relayed yet: whatever is said ends the session there (no backend to keep). */
  if (p->phase != PH_RELAY && p->phase != PH_AUTH) front_retire(w, p);
  if (c->flags & (C_END | C_AT_BOUNDARY)) {
    if ((c->flags & C_AT_BOUNDARY) && p->passing > 0) {
      close_side(w, p, CLIENT);
    } else if (p->fd[CLIENT] >= 0 && p->shut[CLIENT] == 0) {
      Dir *d = &p->d[BACKEND];
      d->len = d->fwd; /* a held, unfinished message is dropped: the last message is said instead */
      if (c->nbytes > 0 && !grow(d, d->len + c->nbytes)) {
        relay_fault(w, p, F_MEMORY, ENOMEM); /* said to JavaScript; the client ends without it */
      } else if (c->nbytes > 0) {
        memcpy(d->buf + d->len, c->bytes, c->nbytes);
        d->len += c->nbytes;
        d->fwd = d->len;
      }
      p->shut[CLIENT] = 1;
      flush(w, p, BACKEND);
    }
  }
  if (c->flags & C_DESTROY) close_side(w, p, CLIENT);
  if ((c->flags & B_END) && p->fd[BACKEND] >= 0 && p->shut[BACKEND] == 0) {
    p->shut[BACKEND] = 1;
    flush(w, p, CLIENT);
  }
  if (c->flags & B_DESTROY) close_side(w, p, BACKEND);
}

void relay_free_pair(Pair *p) {
  if (p->front) atomic_fetch_sub(&p->front->open, 1);
  if (p->worker) atomic_fetch_sub(&p->worker->live, 1);
  free(p->d[0].buf);
  free(p->d[1].buf);
  free(p->last_err);
  free(p->pkt);
  free(p->bkey);
  free(p->fault_ev);
  free(p->close_ev);
  free(p);
}

/* JavaScript's commands, in order; 1 when the thread is to return (OP_QUIT). */
static int run_commands(Worker *w, Pair **dead) {
  uint64_t v;
  if (read(w->efd, &v, sizeof v) < 0) { /* nothing: the commands are in the queue */
  }
  pthread_mutex_lock(&w->mu);
  Cmd *c = w->head;
  w->head = w->tail = NULL;
  pthread_mutex_unlock(&w->mu);
  int quit = 0;
  while (c) {
    Cmd *next = c->next;
    if (c->op == OP_QUIT) {
      quit = 1;
    } else if (quit) {
      /* after the quit: nothing is done */
    } else if (c->op == OP_STOP) {
      front_stop(w, c);
    } else {
      Pair *p = bucket_find(w, c->id);
      if (p && !p->dead) {
        if (c->op == OP_DIAL) front_dial(w, p, c);
        else if (c->op == OP_VERDICT) front_verdict(w, p, c->flags);
        else if (c->op == OP_FAULT && c->flags == F_MEMORY) p->fail_alloc = 1;
        else if (c->op == OP_FAULT) relay_fault(w, p, c->flags, c->err);
        else command(w, p, c);
        finish_if_closed(w, p, dead);
        if (!p->dead) watch(w, p, CLIENT), watch(w, p, BACKEND);
      }
    }
    if (c != &w->quit) {
      free(c->bytes);
      free(c);
    }
    c = next;
  }
  return quit;
}

/* Lingering sessions past their time are closed; passed deadlines are the front door's to act on. */
static void scan(Worker *w, Pair **dead) {
  int64_t now = now_ms();
  for (size_t b = 0; b < BUCKETS; b++)
    for (Pair *p = w->buckets[b], *next; p; p = next) {
      next = p->next_bucket;
      if (p->dead) continue;
      if (p->deadline && p->deadline <= now) front_expire(w, p);
      if (p->linger_at && p->linger_at <= now) {
        close_side(w, p, CLIENT);
        close_side(w, p, BACKEND);
      }
      finish_if_closed(w, p, dead);
      if (!p->dead) watch(w, p, CLIENT), watch(w, p, BACKEND);
    }
}

static void on_event(Worker *w, Pair *p, int side, uint32_t ev) {
  if (p->phase == PH_RELAY || p->phase == PH_AUTH) {
    if (ev & EPOLLOUT) flush(w, p, 1 - side);
    if ((ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) && p->fd[side] >= 0) on_readable(w, p, side);
    return;
  }
  if (side == CLIENT) {
    if (ev & EPOLLOUT) flush(w, p, BACKEND);
    if (p->phase == PH_STARTUP && (ev & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP)))
      front_startup_read(w, p);
    else if (p->phase != PH_STARTUP && (ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) && !p->rd_eof[CLIENT])
      front_client_gone(w, p, ev);
    return;
  }
  if (p->phase == PH_DIAL) return front_dial_ready(w, p);
  if (p->phase == PH_FIRST) {
    if (ev & EPOLLOUT) front_send_packet(w, p);
    if (p->phase == PH_FIRST && (ev & (EPOLLIN | EPOLLHUP | EPOLLERR))) front_first_read(w, p);
  }
}

void *relay_run(void *arg) {
  Worker *w = arg;
  char name[16]; /* what top -H and /proc/<pid>/task/<tid>/comm show */
  snprintf(name, sizeof name, "plb-relay-%d", w->index);
  pthread_setname_np(pthread_self(), name);
  struct epoll_event evs[256];
  int64_t next_scan = 0;
  for (;;) {
    int busy = w->lingering > 0 || w->waiting > 0;
    int timeout = busy ? SCAN_MS : -1;
    /* Awake when waiting events must be told (any thread may tell them: the first awake does). */
    int64_t lazy_at = atomic_load(&w->relay->lazy_at);
    if (lazy_at != 0) {
      int64_t left = lazy_at - now_ms();
      if (left < 0) left = 0;
      if (timeout < 0 || left < timeout) timeout = (int)left;
    }
    int n = epoll_wait(w->ep, evs, 256, timeout);
    Pair *dead = NULL;
    int quit = 0;
    for (int i = 0; i < n && !quit; i++) {
      Tag *t = evs[i].data.ptr;
      if (t == NULL) {
        quit = run_commands(w, &dead);
        continue;
      }
      if (t->side < 0) {
        front_accept(w, t->lst);
        continue;
      }
      Pair *p = t->p;
      if (p->dead || p->fd[t->side] < 0) continue;
      on_event(w, p, t->side, evs[i].events);
      finish_if_closed(w, p, &dead);
      if (!p->dead) watch(w, p, CLIENT), watch(w, p, BACKEND);
    }
    if (w->lingering > 0 || w->waiting > 0) {
      int64_t now = now_ms();
      if (now >= next_scan) {
        next_scan = now + SCAN_MS;
        scan(w, &dead);
      }
    }
    lazy_at = atomic_load(&w->relay->lazy_at);
    if (lazy_at != 0 && now_ms() >= lazy_at) emit_lazy(w->relay);
    while (dead) {
      Pair *next = dead->next_dead;
      relay_free_pair(dead);
      dead = next;
    }
    if (quit) return NULL;
  }
}

void relay_post(Worker *w, Cmd *c) {
  pthread_mutex_lock(&w->mu);
  if (w->tail) w->tail->next = c;
  else w->head = c;
  w->tail = c;
  pthread_mutex_unlock(&w->mu);
  uint64_t one = 1;
  if (write(w->efd, &one, sizeof one) < 0) { /* the counter is full: a wakeup is pending anyway */
  }
}

void relay_destroy(Relay *r) {
  for (int i = 0; i < r->n; i++) {
    Worker *w = &r->workers[i];
    if (!w->started) continue;
    w->quit = (Cmd){.op = OP_QUIT};
    relay_post(w, &w->quit);
    pthread_join(w->thread, NULL);
  }
  for (int i = 0; i < r->n; i++) {
    Worker *w = &r->workers[i];
    for (size_t b = 0; b < BUCKETS; b++)
      for (Pair *p = w->buckets[b], *next; p; p = next) {
        next = p->next_bucket;
        for (int k = 0; k < 2; k++)
          if (p->fd[k] >= 0) close(p->fd[k]);
        relay_free_pair(p);
      }
    for (Cmd *c = w->head, *next; c; c = next) {
      next = c->next;
      if (c != &w->quit) free(c->bytes), free(c);
    }
    if (w->ep >= 0) close(w->ep);
    if (w->efd >= 0) close(w->efd);
    if (w->spare_fd >= 0) close(w->spare_fd);
    pthread_mutex_destroy(&w->mu);
  }
  for (int i = 0; i < r->nlisteners; i++) {
    if (r->listeners[i]->fd >= 0) close(r->listeners[i]->fd);
    free(r->listeners[i]);
  }
  for (int i = 0; i < r->nfronts; i++) {
    free(r->fronts[i]->refusal);
    free(r->fronts[i]);
  }
  Event *queues[] = {r->untold, r->ready_head, r->lazy_head};
  for (int q = 0; q < 3; q++)
    for (Event *e = queues[q], *next; e; e = next) {
      next = e->next;
      free(e->bytes);
      free(e);
    }
  pthread_mutex_destroy(&r->ev_mu);
  free(r->workers);
  free(r);
}
