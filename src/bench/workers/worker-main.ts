/**
 * A `--workers` worker process (forked by worker-pool.ts): it runs the routers and the sessions of
 * the application instances it owns (i mod W = its index), each with its own health checker, on
 * the plan's timeline the parent sent, and sends every recorder call and run event to the parent,
 * which records them. It keeps nothing: a worker that dies loses only what it had not yet sent.
 */
import { realClock, within, type Clock } from '../../clock/index.js';
import { pgConnector } from '../../cluster/connector.js';
import { errorText } from '../../core/errors.js';
import { Rng } from '../../core/rng.js';
import type { Recorder, RunEvent, RunWriter } from '../../metrics/types.js';
import { startClients } from '../../workload/arrivals.js';
import type { SessionContext } from '../../workload/session-loop.js';
import { routerFor } from '../options/router-settings.js';
import { RouterFleet } from '../router-fleet.js';
import { viewLine, ViewPoller } from '../view-poller.js';
import { pgSessionCounts } from '../../cluster/session-counts.js';
import { instanceParts } from '../run-parts.js';
import {
  epochNow,
  type ParentMessage,
  type RecordedCall,
  type StartMessage,
  type WorkerMessage,
} from './protocol.js';

/** How often recorded calls go to the parent (the parent flushes a second this much later). */
const SEND_EVERY_MS = 100;

const send = (m: WorkerMessage): void => {
  if (process.connected) process.send?.(m);
};

let stopping = false;
let started = false;

process.on('message', (m: ParentMessage) => {
  if (m.type === 'stop') stopping = true;
  else if (m.type === 'start' && !started) {
    started = true;
    run(m).then(
      () => finish(),
      (err: unknown) => finish(errorText(err)),
    );
  }
});
// The parent gone: nothing left to report to.
process.on('disconnect', () => process.exit(0));
send({ type: 'ready' });

function finish(error?: string): void {
  send({ type: 'done', ...(error !== undefined ? { error } : {}) });
  process.disconnect?.();
}

async function run(m: StartMessage): Promise<void> {
  const { config } = m;
  const real = realClock();
  const clock: Clock = { ...real, now: () => epochNow() - m.t0EpochMs };
  let calls: RecordedCall[] = [];
  // Sent even when empty: the time it carries lets the parent write the seconds before it.
  const flush = (): void => {
    send({ type: 'calls', calls, throughMs: clock.now() });
    calls = [];
  };
  const timer = setInterval(flush, SEND_EVERY_MS);
  const recorderOf = (instance: number): Recorder =>
    new Proxy({} as Recorder, {
      get:
        (_, method) =>
        (...args: unknown[]) =>
          calls.push([instance, String(method), ...args]),
    });
  const writer = eventsOnly((event) => {
    flush(); // a role or detection after the values before it
    send({ type: 'event', event });
  }, recorderOf(-1));
  const fleet = new RouterFleet(config, m.ids, routerFor(config), writer);
  const connector = pgConnector(m.endpoints, m.creds);
  const owned = (i: number): boolean => i % m.count === m.index;
  const instances = fleet.routers.map((router, i) =>
    owned(i)
      ? instanceParts(
          {
            config,
            ids: m.ids,
            connector,
            clock,
            writer,
            setHealth: (j, replica, state, via, cause) =>
              fleet.setHealth(j, replica, state, via, cause, clock.now()),
          },
          router,
          i,
        ).parts
      : undefined,
  );
  const contexts = instances.map(
    (p, i): SessionContext => ({
      ds: (p ?? instances[m.index])!.ds,
      recorder: recorderOf(i),
      spec: config.workload,
      clock,
      stopping: () => stopping,
    }),
  );
  for (const p of instances) p?.health.start();
  // The replica view: one poller for this process's routers (each keeps its own health view).
  const poller =
    config.routers?.view === 'replica'
      ? new ViewPoller(
          pgSessionCounts(
            m.endpoints.filter((e) => e.kind === 'replica'),
            m.creds,
            config.health.timeoutMs,
          ),
          m.ids,
          fleet.observers().filter((_, i) => owned(i)),
          clock,
          fleet.spec.viewIntervalMs,
        )
      : undefined;
  poller?.start();
  const clients = startClients(
    contexts,
    config.workload,
    { warmupS: config.plan.warmup, durationS: config.plan.duration },
    new Rng(config.seed),
    undefined,
    owned,
  );
  await until(() => stopping);
  for (const p of instances) p?.admission?.stop();
  await within(clock, config.workload.queryTimeoutMs + 2000, Promise.allSettled(clients.tasks));
  for (const p of instances) p?.health.stop();
  await poller?.stop();
  if (poller) send({ type: 'log', line: viewLine(poller) });
  clearInterval(timer);
  flush();
}

/** Resolves once `cond` holds (checked every 50 ms). */
function until(cond: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const t = setInterval(() => {
      if (cond()) {
        clearInterval(t);
        resolve();
      }
    }, 50);
  });
}

/** The writer a worker's routers and checkers see: events to the parent, nothing on disk. */
function eventsOnly(event: (e: RunEvent) => void, recorder: Recorder): RunWriter {
  const none = (what: string) => (): never => {
    throw new Error(`a worker has no ${what}`);
  };
  return {
    dir: '',
    recorder,
    writeConfig: none('config'),
    event,
    tick: () => undefined,
    progress: none('progress'),
    finish: none('summary'),
  };
}
