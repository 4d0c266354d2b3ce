/**
 * The proxy's open client sessions (any phase past the first packet), each with the time it came
 * in: the set stop and drain wait on, and what the admin view lists (oldest first: insertion order).
 */
import type { ClientSession } from '../session/session-host.js';

export class ClientTable extends Set<ClientSession> {
  private readonly since = new Map<ClientSession, number>();
  private emptied: (() => void)[] = [];

  constructor(private readonly now: () => number) {
    super();
  }

  override add(s: ClientSession): this {
    if (!this.since.has(s)) this.since.set(s, this.now());
    return super.add(s);
  }

  override delete(s: ClientSession): boolean {
    this.since.delete(s);
    const had = super.delete(s);
    if (had && this.size === 0) for (const f of this.emptied.splice(0)) f();
    return had;
  }

  /** When s came in (clock ms), or undefined when it is gone. */
  sinceOf(s: ClientSession): number | undefined {
    return this.since.get(s);
  }

  /** Resolves when no session is open (at once when none is). */
  whenEmpty(): Promise<void> {
    if (this.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.emptied.push(resolve));
  }
}
