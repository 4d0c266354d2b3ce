// The HTTP side of `--metrics-port`: GET /metrics on 127.0.0.1 answers the live registry's text.
import { createServer, type Server } from 'node:http';
import { PlbError } from '../core/errors.js';

export interface MetricsServer {
  readonly port: number;
  close(): Promise<void>;
}

/** The content type of Prometheus text exposition format 0.0.4 (what prom-client writes). */
const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/**
 * Listens on 127.0.0.1:`port` (0: any free port) and answers GET /metrics with `text()`.
 * A port in use (or not ours to bind) is one BAD_INPUT line naming the flag.
 */
export async function startMetricsServer(
  port: number,
  text: () => Promise<string>,
  flag = '--metrics-port',
): Promise<MetricsServer> {
  const server: Server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: GET /metrics\n');
      return;
    }
    text().then(
      (body) => res.writeHead(200, { 'content-type': PROMETHEUS_CONTENT_TYPE }).end(body),
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
