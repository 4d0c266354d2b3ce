import type { ReplicaSnapshot } from '../router/types.js';
import type { ServiceClass } from '../core/service-class.js';

export interface ClassCounters {
  /** Sessions admitted to a replica and connected (since the start). */
  opened: number;
  /** Sessions that reached ReadyForQuery. */
  ready: number;
  /** Refused at startup: no replica may take the class (57P03). */
  refused: number;
  /** Failed before ReadyForQuery for another reason (the server's FATAL, unreachable replicas). */
  startupFailed: number;
  /** Lost mid-session: their replica went away. */
  lost: number;
  /** Ended (either side closed), whatever the reason. */
  closed: number;
}

export interface ReplicaCounters {
  /** Sessions connected to it. */
  opened: number;
  /** Sessions lost when it went away mid-session. */
  lost: number;
  /** Sessions that failed on it before ReadyForQuery (its FATAL, or it went away). */
  failed: number;
}

const zeroClass = (): ClassCounters => ({
  opened: 0,
  ready: 0,
  refused: 0,
  startupFailed: 0,
  lost: 0,
  closed: 0,
});

/** What `plb proxy` counts per class and replica (cumulative); live sessions come from the router. */
export class ProxyStats {
  readonly classes: Record<ServiceClass, ClassCounters> = { premium: zeroClass(), freemium: zeroClass() };
  readonly replicas = new Map<string, ReplicaCounters>();
  cancels = 0;
  /** Clients refused at once: over --max-client-conn (53300). */
  overLimit = 0;
  /**
   * Sessions that named another class in application_name only after they were routed (reported
   * by the server as ParameterStatus; with --class-from application_name).
   */
  lateClass = 0;
  /** Sessions the native front door took to ReadyForQuery (native-session.ts). */
  relayed = 0;
  /** Replica connections opened at a client's SSLRequest, and those never used (early-connect.ts). */
  earlyConnects = 0;
  earlyUnused = 0;
  /** Sessions that held a slot --startup-timeout long without authenticating (session-core.ts). */
  startupTimeouts = 0;
  /** Sessions cut before authenticating because another client host waited (--startup-yield). */
  startupYields = 0;

  constructor(ids: readonly string[]) {
    for (const id of ids) this.replicas.set(id, { opened: 0, lost: 0, failed: 0 });
  }

  /** A session its replica took away: lost when it was ready, else failed at startup. */
  countLoss(cls: ServiceClass, replica: string, wasReady: boolean): void {
    if (wasReady) {
      this.classes[cls].lost += 1;
      this.replica(replica).lost += 1;
    } else {
      this.classes[cls].startupFailed += 1;
      this.replica(replica).failed += 1;
    }
  }

  replica(id: string): ReplicaCounters {
    let r = this.replicas.get(id);
    if (!r) this.replicas.set(id, (r = { opened: 0, lost: 0, failed: 0 }));
    return r;
  }
}

/**
 * One line: per class live sessions and counters, per replica its role, health and live sessions
 * by class, e.g. `premium live 3 opened 40 lost 1 refused 0 | ... | r1 premium up 2/0 ...`.
 */
export function formatStatsLine(tS: number, stats: ProxyStats, snapshot: readonly ReplicaSnapshot[]): string {
  const live: Record<ServiceClass, number> = { premium: 0, freemium: 0 };
  for (const r of snapshot) {
    live.premium += r.sessions.premium;
    live.freemium += r.sessions.freemium;
  }
  const cls = (c: ServiceClass): string => {
    const s = stats.classes[c];
    return (
      `${c} live ${live[c]} opened ${s.opened} ready ${s.ready} lost ${s.lost} ` +
      `refused ${s.refused} failed ${s.startupFailed}`
    );
  };
  const reps = snapshot.map((r) => {
    const role = r.borrowedBy ? `${r.role}>${r.borrowedBy}` : r.role;
    const c = stats.replica(r.id);
    return (
      `${r.id} ${role} ${r.healthy ? 'up' : 'DOWN'} ${r.sessions.premium}p/${r.sessions.freemium}f` +
      (c.lost > 0 ? ` lost ${c.lost}` : '') +
      (c.failed > 0 ? ` failed ${c.failed}` : '')
    );
  });
  return `t=${tS.toFixed(0)}s ${cls('premium')} | ${cls('freemium')} | ${reps.join(' | ')}`;
}
