/* The events told to JavaScript: made from a session's state, queued in order, rung for (relay.h). */
#include "relay.h"

/* The waiting events go after the ready ones (ev_mu held). */
static void tell_lazy(Relay *r) {
  if (!r->lazy_head) return;
  if (r->ready_tail) r->ready_tail->next = r->lazy_head;
  else r->ready_head = r->lazy_head;
  r->ready_tail = r->lazy_tail;
  r->lazy_head = r->lazy_tail = NULL;
  atomic_store(&r->lazy_at, 0);
}

/* Whether JavaScript is to be called for what is ready: once until it takes them (ev_mu held). */
static bool to_ring(Relay *r) {
  if (r->rung || !r->ready_head) return false;
  return r->rung = true;
}

/* Outside ev_mu: the call only says there are events, so the lock is held for pointers alone. */
static void ring(Relay *r, bool now) {
  if (!now || napi_call_threadsafe_function(r->tsfn, NULL, napi_tsfn_nonblocking) == napi_ok) return;
  /* Not queued (Node is closing): rung again by the next event rather than never. */
  pthread_mutex_lock(&r->ev_mu);
  r->rung = false;
  pthread_mutex_unlock(&r->ev_mu);
}

/* A new event for p, with a copy of its bytes; NULL when either allocation failed. */
static Event *new_event(Pair *p, int kind, const uint8_t *bytes, size_t n) {
  if (kind == EV_CLOSED) {
    /* Set aside at accept: the close of a session JavaScript knows is always told. */
    Event *e = p->close_ev;
    p->close_ev = NULL;
    return e;
  }
  if (p->fail_alloc) {
    p->fail_alloc = 0;
    return NULL;
  }
  Event *e = calloc(1, sizeof(Event));
  if (!e || !bytes || n == 0) return e;
  e->bytes = malloc(n);
  if (!e->bytes) {
    free(e);
    return NULL;
  }
  memcpy(e->bytes, bytes, n);
  e->nbytes = n;
  return e;
}

void stamp_event(Event *e, const Pair *p, int kind, int side, int err) {
  e->id = p->id;
  e->kind = kind;
  e->side = side;
  e->err = err;
  e->at_boundary = p->passing == 0;
  e->last_type = p->last_type;
  e->terminated = p->terminated;
  e->phase = p->phase;
  e->front = p->front ? p->front->index : -1;
  e->peer6 = p->peer6;
}

void emit(Worker *w, Pair *p, int kind, int side, int err, const uint8_t *bytes, size_t n) {
  /* A client JavaScript never heard of (gone, or refused, before its first packet): nothing to tell. */
  if (!p->known) return;
  Event *e = new_event(p, kind, bytes, n);
  if (!e) {
    /* Not told is never an option: the session ends on a fault (its event set aside). A client's
     * first event lost: JavaScript never knew it, so the relay tells the client itself. */
    if (kind == EV_PACKET || kind == EV_TIMEOUT) p->known = 0;
    return relay_fault(w, p, F_MEMORY, ENOMEM);
  }
  stamp_event(e, p, kind, side, err);
  Relay *r = w->relay;
  if (kind == EV_READY || kind == EV_CLOSED) {
    pthread_mutex_lock(&r->ev_mu);
    if (r->lazy_tail) r->lazy_tail->next = e;
    else r->lazy_head = e, atomic_store(&r->lazy_at, now_ms() + LAZY_MS);
    r->lazy_tail = e;
    pthread_mutex_unlock(&r->ev_mu);
    return;
  }
  queue_event(r, e);
}

void queue_event(Relay *r, Event *e) {
  pthread_mutex_lock(&r->ev_mu);
  /* The waiting ones first: nothing another thread queues meanwhile can go before them. */
  tell_lazy(r);
  if (r->ready_tail) r->ready_tail->next = e;
  else r->ready_head = e;
  r->ready_tail = e;
  bool now = to_ring(r);
  pthread_mutex_unlock(&r->ev_mu);
  ring(r, now);
}

void emit_lazy(Relay *r) {
  pthread_mutex_lock(&r->ev_mu);
  tell_lazy(r);
  bool now = to_ring(r);
  pthread_mutex_unlock(&r->ev_mu);
  ring(r, now);
}

Event *take_events(Relay *r) {
  pthread_mutex_lock(&r->ev_mu);
  Event *e = r->ready_head;
  r->ready_head = r->ready_tail = NULL;
  r->rung = false;
  pthread_mutex_unlock(&r->ev_mu);
  return e;
}
