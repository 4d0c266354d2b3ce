/**
 * The proxy's routes on --metrics-port beside GET /metrics: GET /admin (the admin view, JSON,
 * admin-view.ts; ?clients=N lists up to N clients, 0..100000) and POST /drain (drain.ts). The port
 * is bound to 127.0.0.1 only; a drain asked from any other address is refused all the same.
 */
import type { HttpAnswer, HttpRoute } from '../../metrics/metrics-server.js';
import { adminView, DEFAULT_CLIENTS_LISTED, type AdminSource } from './admin-view.js';
import type { ProxyDrain } from './drain.js';

const JSON_TYPE = 'application/json; charset=utf-8';
const MAX_CLIENTS_LISTED = 100_000;

const json = (status: number, body: unknown): HttpAnswer => ({
  status,
  type: JSON_TYPE,
  body: `${JSON.stringify(body, null, 1)}\n`,
});

function isLoopback(peer: string): boolean {
  return peer === '127.0.0.1' || peer === '::1' || peer === '::ffff:127.0.0.1';
}

/** The routes, once the proxy listens (`source()` undefined before: 503). */
export function adminRoutes(
  source: () => { view: AdminSource; drain: ProxyDrain } | undefined,
): Record<string, HttpRoute> {
  return {
    'GET /admin': (query) => {
      const s = source();
      if (!s) return json(503, { error: 'the proxy is starting' });
      const n = query.get('clients');
      const limit = n === null ? DEFAULT_CLIENTS_LISTED : Number(n);
      if (!Number.isInteger(limit) || limit < 0 || limit > MAX_CLIENTS_LISTED)
        return json(400, {
          error: `clients: must be a whole number from 0 to ${MAX_CLIENTS_LISTED} (got "${n}")`,
        });
      return json(200, adminView(s.view, limit));
    },
    'POST /drain': (_query, peer) => {
      if (!isLoopback(peer)) return json(403, { error: 'POST /drain: from this host only' });
      const s = source();
      if (!s) return json(503, { error: 'the proxy is starting' });
      const started = s.drain.start('POST /drain');
      return json(202, { state: 'draining', started, sessions: s.view.proxy.clients.size });
    },
  };
}
