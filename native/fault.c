/*
 * The relay's own failures (relay.h): an allocation or an epoll_ctl that failed ends the session it
 * happened on, loudly. Nothing here allocates: the fault's event was set aside when the client was
 * accepted, and a failure with no session is counted in the relay and told as such.
 */
#include "relay.h"

#include <stdio.h>

int ep_ctl(Worker *w, int op, int fd, uint32_t events, void *tag) {
  struct epoll_event e = {.events = events, .data.ptr = tag};
  return epoll_ctl(w->ep, op, fd, &e);
}

void set_deadline(Worker *w, Pair *p, int64_t at) {
  if (!p->deadline && at) w->waiting++;
  else if (p->deadline && !at) w->waiting--;
  p->deadline = at;
}

void linger_from_now(Worker *w, Pair *p) {
  if (p->linger_at) return;
  p->linger_at = now_ms() + LINGER_MS;
  w->lingering++;
}

/* The FATAL's SQLSTATE and words for a fault (native-relay.ts says the same for a session's). */
static const char *fault_state(int what) { return what == F_MEMORY ? "53200" : "58000"; }
static const char *fault_words(int what) { return what == F_MEMORY ? "out of memory" : "epoll_ctl failed"; }

void say_fatal(int fd, int what, int err) {
  if (fd < 0) return;
  char text[160];
  int n = snprintf(text, sizeof text, "plb proxy: native relay failure: %s (%s)", fault_words(what),
                   strerrorname_np(err) ? strerrorname_np(err) : "?");
  if (n < 0) return;
  uint8_t m[256];
  size_t at = 5;
  const char *fields[] = {"SFATAL", "VFATAL", NULL, NULL};
  char code[8], msg[170];
  snprintf(code, sizeof code, "C%s", fault_state(what));
  snprintf(msg, sizeof msg, "M%s", text);
  fields[2] = code;
  fields[3] = msg;
  for (int i = 0; i < 4; i++) {
    size_t len = strlen(fields[i]) + 1;
    memcpy(m + at, fields[i], len);
    at += len;
  }
  m[at++] = 0;
  uint32_t total = (uint32_t)(at - 1);
  m[0] = 'E';
  m[1] = total >> 24, m[2] = total >> 16, m[3] = total >> 8, m[4] = total;
  /* Non-blocking and small: it fits the socket's buffer, or the client is gone anyway. */
  if (send(fd, m, at, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
  }
}

void relay_note(Relay *r, int what, int err) {
  atomic_store(&r->noted_what, what);
  atomic_store(&r->noted_err, err);
  atomic_fetch_add(&r->noted, 1);
  pthread_mutex_lock(&r->ev_mu);
  bool now = !r->rung;
  r->rung = true;
  pthread_mutex_unlock(&r->ev_mu);
  if (now && napi_call_threadsafe_function(r->tsfn, NULL, napi_tsfn_nonblocking) != napi_ok) {
    pthread_mutex_lock(&r->ev_mu);
    r->rung = false; /* closing: nobody is left to tell */
    pthread_mutex_unlock(&r->ev_mu);
  }
}

void relay_fault(Worker *w, Pair *p, int what, int err) {
  if (p->faulted) return;
  p->faulted = what;
  set_deadline(w, p, 0);
  linger_from_now(w, p); /* whatever JavaScript says, or if nothing can be watched: it ends */
  if (!p->known) {
    /* JavaScript never heard of it: the client is told here and closed; the relay counts it. */
    say_fatal(p->fd[CLIENT], what, err);
    p->phase = PH_RELAY;
    close_side(w, p, CLIENT);
    close_side(w, p, BACKEND);
    p->closed[BACKEND] = 1;
    p->rd_eof[BACKEND] = 2;
    relay_note(w->relay, what, err);
    return;
  }
  /* The session cannot go on: its backend is closed (no end of it reported), its client stays for
   * JavaScript's last word (a FATAL), then the close. */
  p->phase = PH_RELAY;
  close_side(w, p, BACKEND);
  p->closed[BACKEND] = 1;
  p->rd_eof[BACKEND] = 2;
  Event *e = p->fault_ev;
  p->fault_ev = NULL;
  if (!e) return; /* told already (a pair faults once) */
  stamp_event(e, p, EV_FAULT, what, err);
  queue_event(w->relay, e);
}
