/*
 * plb-delayer: holds the packets of one NFQUEUE queue for a while, then lets them go (NF_ACCEPT).
 * plb's network fault `delay` on a kernel without netem (src/cluster/net/delayer.ts starts it, its
 * iptables rules send a replica port's packets here with --queue-bypass, so a delayer that is gone
 * lets packets through undelayed instead of cutting the link).
 *
 *   plb-delayer --queue N --ms M [--jitter J] [--seed S] [--tag TEXT]
 *   plb-delayer --version
 *
 * Each packet is held M ms plus a uniform draw in [-J, +J] ms (clamped at 0). Packets of one flow
 * (the same addresses and ports, so one direction of one connection) leave in the order they came:
 * a packet is never let go before an earlier one of its flow, so jitter does not reorder a TCP stream
 * (it delays the later packet instead). Flows are hashed into a fixed table: two flows sharing a slot
 * are ordered together, which only ever holds a packet longer. --tag is not read: it names the
 * owner in /proc/<pid>/cmdline, where plb checks it before it signals a recorded pid.
 *
 * It prints "ready" on stdout once the queue is bound. SIGTERM, SIGINT or SIGHUP: every packet held
 * is let go at once, the queue is unbound, exit 0. Exit 2: bad arguments; 3: the queue could not be
 * bound (not root, or another program holds it).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <libnfnetlink/libnfnetlink.h>
#include <linux/netfilter.h>
#include <linux/netlink.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define DELAYER_VERSION "1"
#define MAX_HELD 65536u   /* the kernel's queue length is set to this too */
#define FLOW_SLOTS 4096u  /* power of two */
#define MAX_MS 60000L

typedef struct {
  uint64_t at; /* CLOCK_MONOTONIC ns when it goes */
  uint64_t seq;
  uint32_t id;
} Held;

typedef struct {
  struct nfq_q_handle *qh;
  Held heap[MAX_HELD];
  uint32_t n;
  uint64_t seq;
  uint64_t flow_last[FLOW_SLOTS];
  int64_t delay_ns, jitter_ns;
  uint64_t rng;
  uint64_t dropped_full;
} State;

static volatile sig_atomic_t stopping = 0;
static void on_signal(int sig) {
  (void)sig;
  stopping = 1;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* splitmix64: small, seedable, good enough for a uniform delay. */
static uint64_t next_rand(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static int earlier(const Held *a, const Held *b) { return a->at < b->at || (a->at == b->at && a->seq < b->seq); }

static void heap_push(State *s, Held h) {
  uint32_t i = s->n++;
  while (i > 0) {
    uint32_t p = (i - 1) / 2;
    if (!earlier(&h, &s->heap[p])) break;
    s->heap[i] = s->heap[p];
    i = p;
  }
  s->heap[i] = h;
}

static Held heap_pop(State *s) {
  Held top = s->heap[0];
  Held last = s->heap[--s->n];
  uint32_t i = 0;
  for (;;) {
    uint32_t c = 2 * i + 1;
    if (c >= s->n) break;
    if (c + 1 < s->n && earlier(&s->heap[c + 1], &s->heap[c])) c++;
    if (!earlier(&s->heap[c], &last)) break;
    s->heap[i] = s->heap[c];
    i = c;
  }
  if (s->n > 0) s->heap[i] = last;
  return top;
}

/* The slot of a packet's flow: IPv4 addresses and, for TCP/UDP, ports (one direction of a flow). */
static uint32_t flow_slot(const unsigned char *p, int len) {
  uint64_t key = 0;
  if (len >= 20 && (p[0] >> 4) == 4) {
    int ihl = (p[0] & 0x0f) * 4;
    uint32_t src, dst;
    memcpy(&src, p + 12, 4);
    memcpy(&dst, p + 16, 4);
    key = ((uint64_t)src << 32) ^ dst ^ ((uint64_t)p[9] << 56);
    if ((p[9] == 6 || p[9] == 17) && len >= ihl + 4) {
      uint32_t ports;
      memcpy(&ports, p + ihl, 4);
      key ^= (uint64_t)ports * 0x9e3779b97f4a7c15ull;
    }
  }
  uint64_t h = key;
  return (uint32_t)(next_rand(&h) & (FLOW_SLOTS - 1));
}

static int verdict(State *s, uint32_t id) {
  return nfq_set_verdict(s->qh, id, NF_ACCEPT, 0, NULL);
}

static int on_packet(struct nfq_q_handle *qh, struct nfgenmsg *msg, struct nfq_data *nfa, void *data) {
  (void)qh;
  (void)msg;
  State *s = data;
  struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(nfa);
  if (!ph) return 0;
  uint32_t id = ntohl(ph->packet_id);
  if (s->n >= MAX_HELD) {
    /* Cannot happen while the kernel's queue length is MAX_HELD; let it go rather than lose it. */
    s->dropped_full++;
    return verdict(s, id);
  }
  unsigned char *payload = NULL;
  int len = nfq_get_payload(nfa, &payload);
  uint64_t now = now_ns();
  int64_t d = s->delay_ns;
  if (s->jitter_ns > 0) {
    uint64_t span = 2 * (uint64_t)s->jitter_ns + 1;
    d += (int64_t)(next_rand(&s->rng) % span) - s->jitter_ns;
  }
  if (d < 0) d = 0;
  uint64_t at = now + (uint64_t)d;
  uint32_t slot = len > 0 ? flow_slot(payload, len) : 0;
  if (at < s->flow_last[slot]) at = s->flow_last[slot];
  s->flow_last[slot] = at;
  heap_push(s, (Held){.at = at, .seq = s->seq++, .id = id});
  return 0;
}

/* Lets go every packet due by `until` (all of them with UINT64_MAX); -1 when a verdict failed. */
static int release(State *s, uint64_t until) {
  while (s->n > 0 && s->heap[0].at <= until) {
    Held h = heap_pop(s);
    if (verdict(s, h.id) < 0) return -1;
  }
  return 0;
}

static int parse_ms(const char *flag, const char *v, int64_t *out) {
  char *end = NULL;
  errno = 0;
  double x = strtod(v, &end);
  /* !(x >= 0) also refuses NaN */
  if (errno || !end || *end || end == v || !(x >= 0) || x > MAX_MS) {
    fprintf(stderr, "plb-delayer: %s: a number of ms from 0 to %ld, got \"%s\"\n", flag, MAX_MS, v);
    return -1;
  }
  *out = (int64_t)(x * 1e6 + 0.5);
  return 0;
}

static void usage(void) {
  fprintf(stderr, "usage: plb-delayer --queue N --ms M [--jitter J] [--seed S] [--tag TEXT] | --version\n");
}

static State state;

int main(int argc, char **argv) {
  long queue = -1;
  int have_ms = 0;
  uint64_t seed = 0;
  int have_seed = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--version")) {
      printf("plb-delayer %s\n", DELAYER_VERSION);
      return 0;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "plb-delayer: %s: needs a value\n", a);
      usage();
      return 2;
    }
    const char *v = argv[++i];
    if (!strcmp(a, "--queue")) {
      char *end = NULL;
      errno = 0;
      queue = strtol(v, &end, 10);
      if (errno || !end || *end || end == v || queue < 0 || queue > 65535) {
        fprintf(stderr, "plb-delayer: --queue: an integer from 0 to 65535, got \"%s\"\n", v);
        return 2;
      }
    } else if (!strcmp(a, "--ms")) {
      if (parse_ms(a, v, &state.delay_ns) < 0) return 2;
      have_ms = 1;
    } else if (!strcmp(a, "--jitter")) {
      if (parse_ms(a, v, &state.jitter_ns) < 0) return 2;
    } else if (!strcmp(a, "--seed")) {
      char *end = NULL;
      errno = 0;
      seed = strtoull(v, &end, 10);
      if (errno || !end || *end || end == v || v[0] == '-') {
        fprintf(stderr, "plb-delayer: --seed: a non-negative integer, got \"%s\"\n", v);
        return 2;
      }
      have_seed = 1;
    } else if (!strcmp(a, "--tag")) {
      /* read by plb in /proc/<pid>/cmdline only */
    } else {
      fprintf(stderr, "plb-delayer: unknown argument %s\n", a);
      usage();
      return 2;
    }
  }
  if (queue < 0 || !have_ms) {
    fprintf(stderr, "plb-delayer: --queue and --ms are required\n");
    usage();
    return 2;
  }
  state.rng = have_seed ? seed : (now_ns() ^ ((uint64_t)getpid() << 32));

  struct sigaction sa = {.sa_handler = on_signal};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);

  struct nfq_handle *h = nfq_open();
  if (!h) {
    fprintf(stderr, "plb-delayer: nfq_open: %s (needs root or CAP_NET_ADMIN)\n", strerror(errno));
    return 3;
  }
  state.qh = nfq_create_queue(h, (uint16_t)queue, on_packet, &state);
  if (!state.qh) {
    fprintf(stderr, "plb-delayer: cannot bind queue %ld: %s (another program holds it, or not root)\n", queue,
            strerror(errno));
    nfq_close(h);
    return 3;
  }
  /* 128 bytes: the IPv4 and TCP headers (the flow); GSO packets whole (nothing is rewritten). */
  if (nfq_set_mode(state.qh, NFQNL_COPY_PACKET, 128) < 0 || nfq_set_queue_maxlen(state.qh, MAX_HELD) < 0) {
    fprintf(stderr, "plb-delayer: cannot configure queue %ld: %s\n", queue, strerror(errno));
    nfq_destroy_queue(state.qh);
    nfq_close(h);
    return 3;
  }
  if (nfq_set_queue_flags(state.qh, NFQA_CFG_F_GSO, NFQA_CFG_F_GSO) < 0) {
    /* an old kernel: it segments GSO packets before queueing them, which is slower but the same */
  }
  int fd = nfq_fd(h);
  nfnl_rcvbufsiz(nfq_nfnlh(h), 16u << 20);
  int one = 1;
  /* A full socket buffer must not lose notices silently: packets would stay queued. */
  setsockopt(fd, SOL_NETLINK, NETLINK_NO_ENOBUFS, &one, sizeof one);

  printf("ready\n");
  fflush(stdout);

  static char buf[1 << 17];
  int status = 0;
  while (!stopping) {
    struct timespec wait, *waitp = NULL;
    if (state.n > 0) {
      uint64_t now = now_ns();
      uint64_t at = state.heap[0].at;
      uint64_t d = at > now ? at - now : 0;
      wait.tv_sec = (time_t)(d / 1000000000ull);
      wait.tv_nsec = (long)(d % 1000000000ull);
      waitp = &wait;
    }
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int r = ppoll(&p, 1, waitp, NULL);
    if (r < 0 && errno != EINTR) {
      fprintf(stderr, "plb-delayer: ppoll: %s\n", strerror(errno));
      status = 1;
      break;
    }
    if (r > 0 && (p.revents & POLLIN)) {
      for (;;) {
        ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n < 0) {
          if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
          if (errno == ENOBUFS) continue;
          fprintf(stderr, "plb-delayer: recv: %s\n", strerror(errno));
          status = 1;
          stopping = 1;
          break;
        }
        nfq_handle_packet(h, buf, (int)n);
      }
    }
    if (release(&state, now_ns()) < 0) {
      fprintf(stderr, "plb-delayer: verdict: %s\n", strerror(errno));
      status = 1;
      break;
    }
  }
  /* Ending: what is held goes now (in its order), so ending a delay never loses a packet. */
  if (release(&state, UINT64_MAX) < 0) status = 1;
  if (state.dropped_full > 0)
    fprintf(stderr, "plb-delayer: %llu packets let go undelayed (more than %u held)\n",
            (unsigned long long)state.dropped_full, MAX_HELD);
  nfq_destroy_queue(state.qh);
  nfq_close(h);
  return status;
}
