/**
 * Follows the primary through switchovers and failovers (Patroni, CloudNativePG): the primary
 * listener's health checks ask every server `pg_is_in_recovery()` instead of `SELECT 1` (probing()
 * wraps their connector), and each answer, or a failed check, is kept here; follow.ts decides
 * from them which server takes new primary sessions, and onChange hears when that changes.
 */
import type { Clock } from '../../clock/index.js';
import type { Connector, DbConnection } from '../../cluster/connector.js';
import {
  choosePrimary,
  primaryOf,
  refusalOf,
  sameChoice,
  type PrimaryChoice,
  type RecoveryAnswer,
  type ServerAnswer,
} from './follow.js';

/** One row when the server accepts writes, none when it is in recovery (a standby). */
export const RECOVERY_SQL = 'SELECT 1 WHERE NOT pg_is_in_recovery()';

export class PrimaryFollower {
  private readonly answers = new Map<string, ServerAnswer>();
  private choice: PrimaryChoice;
  /** Told of every change of choice (after it is made). */
  onChange: (prev: PrimaryChoice, next: PrimaryChoice) => void = () => undefined;

  constructor(
    /** The primary as configured: chosen until the servers' answers say otherwise. */
    initial: string,
    private readonly clock: Clock,
    /** An answer older than this counts as none (a server that stopped answering). */
    private readonly staleMs: number,
  ) {
    this.choice = { kind: 'primary', id: initial };
  }

  get current(): PrimaryChoice {
    return this.choice;
  }

  /** The server taking new primary sessions (undefined: none, or split brain). */
  primary(): string | undefined {
    return primaryOf(this.choice);
  }

  /** Why a new primary session is refused when the router has no server for it. */
  refusal(): string {
    return refusalOf(this.choice) ?? `no primary: ${this.primary() ?? '?'} is down (health checks)`;
  }

  observe(server: string, answer: RecoveryAnswer): void {
    this.answers.set(server, { answer, atMs: this.clock.now() });
    const next = choosePrimary(this.answers, this.primary(), this.clock.now(), this.staleMs);
    if (sameChoice(next, this.choice)) return;
    const prev = this.choice;
    this.choice = next;
    this.onChange(prev, next);
  }

  /** inner's connections, every statement on them replaced by the recovery query and its answer kept. */
  probing(inner: Connector): Connector {
    return {
      open: async (server, opts) => {
        let conn: DbConnection;
        try {
          conn = await inner.open(server, opts);
        } catch (err) {
          this.observe(server, 'down');
          throw err;
        }
        return {
          query: async () => {
            try {
              const rows = await conn.query(RECOVERY_SQL);
              this.observe(server, rows === 1 ? 'writable' : 'recovery');
              return rows;
            } catch (err) {
              this.observe(server, 'down');
              throw err;
            }
          },
          end: (waitMs) => conn.end(waitMs),
        };
      },
    };
  }

  /** Asks every server once, on a connection of its own (before the listener opens). */
  async readAll(servers: readonly string[], inner: Connector, timeoutMs: number): Promise<void> {
    const probing = this.probing(inner);
    await Promise.all(
      servers.map(async (id) => {
        const conn = await probing
          .open(id, {
            connectTimeoutMs: timeoutMs,
            queryTimeoutMs: timeoutMs,
            applicationName: 'plb-health',
            onError: () => undefined,
          })
          .catch(() => undefined);
        await conn?.query(RECOVERY_SQL).catch(() => undefined);
        await conn?.end(0);
      }),
    );
  }
}

/** One line for the log: the choice and, on a change, what it was. */
export function describeChoice(c: PrimaryChoice): string {
  return c.kind === 'primary' ? `${c.id} (accepts writes)` : (refusalOf(c) ?? c.kind);
}
