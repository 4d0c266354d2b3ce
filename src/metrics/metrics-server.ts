// The HTTP side of `--metrics-port`: GET /metrics on 127.0.0.1 answers the live registry's text;
// a caller may add routes of its own (the proxy's admin view and drain, proxy/admin/admin-routes.ts).
import { createServer, type Server } from 'node:http';
import { PlbError } from '../core/errors.js';

export interface MetricsServer {
  readonly port: number;
  close(): Promise<void>;
}

export interface HttpAnswer {
  status: number;
  type: string;
  body: string;
}

/** A route, keyed "METHOD /path": the query and the peer's address in, an answer out. */
export type HttpRoute = (query: URLSearchParams, peer: string) => HttpAnswer | Promise<HttpAnswer>;

/** The content type of Prometheus text exposition format 0.0.4 (what prom-client writes). */
const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/**
 * Listens on 127.0.0.1:`port` (0: any free port) and answers GET /metrics with `text()`, and
 * `routes`. A port in use (or not ours to bind) is one BAD_INPUT line naming the flag.
 */
export async function startMetricsServer(
  port: number,
  text: () => Promise<string>,
  flag = '--metrics-port',
  routes: Readonly<Record<string, HttpRoute>> = {},
): Promise<MetricsServer> {
  const all: Record<string, HttpRoute> = {
    'GET /metrics': async () => ({ status: 200, type: PROMETHEUS_CONTENT_TYPE, body: await text() }),
    ...routes,
  };
  const known = Object.keys(all).join(', ');
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const route = all[`${req.method ?? 'GET'} ${url.pathname}`];
    if (!route) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end(`not found: ${known}\n`);
      return;
    }
    // A request body (none is read) is drained so the connection can be reused.
    req.resume();
    Promise.resolve()
      .then(() => route(url.searchParams, req.socket.remoteAddress ?? ''))
      .then(
        (a) => res.writeHead(a.status, { 'content-type': a.type }).end(a.body),
        (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`${String(err)}\n`),
      );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      const why = err.code === 'EADDRINUSE' ? 'is in use' : `cannot be bound (${err.code ?? err.message})`;
      reject(new PlbError('BAD_INPUT', `${flag}: 127.0.0.1:${port} ${why}`, { cause: err }));
    });
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
