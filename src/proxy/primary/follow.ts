/**
 * Which server the primary listener sends sessions to, from every server's last answer to
 * `pg_is_in_recovery()`. Pure: answers and the time in, a choice out (primary-follower.ts keeps
 * the answers and acts on a change).
 *
 * - Exactly one server answers "not in recovery": that one (after a switchover or failover the
 *   promoted server, once the old primary is down or in recovery).
 * - Two or more do (split brain): none; new sessions are refused until one remains.
 * - None does: the current primary stays while its last answer is not "in recovery" (it may be
 *   down a moment, or not answered yet: its health checks refuse sessions while it is down);
 *   otherwise none.
 * An answer older than staleMs (a server that stopped answering) counts as no answer.
 */

export type RecoveryAnswer = 'writable' | 'recovery' | 'down';

export interface ServerAnswer {
  answer: RecoveryAnswer;
  atMs: number;
}

export type PrimaryChoice =
  | { kind: 'primary'; id: string }
  | { kind: 'split-brain'; writable: readonly string[] }
  | { kind: 'none' };

export function choosePrimary(
  answers: ReadonlyMap<string, ServerAnswer>,
  current: string | undefined,
  nowMs: number,
  staleMs: number,
): PrimaryChoice {
  const fresh = (id: string): RecoveryAnswer | undefined => {
    const a = answers.get(id);
    return a !== undefined && nowMs - a.atMs <= staleMs ? a.answer : undefined;
  };
  const writable = [...answers.keys()].filter((id) => fresh(id) === 'writable').sort();
  if (writable.length > 1) return { kind: 'split-brain', writable };
  const only = writable[0];
  if (only !== undefined) return { kind: 'primary', id: only };
  if (current !== undefined && fresh(current) !== 'recovery') return { kind: 'primary', id: current };
  return { kind: 'none' };
}

/** The primary chosen, or undefined (none, or split brain). */
export function primaryOf(c: PrimaryChoice): string | undefined {
  return c.kind === 'primary' ? c.id : undefined;
}

export function sameChoice(a: PrimaryChoice, b: PrimaryChoice): boolean {
  if (a.kind !== b.kind) return false;
  if (a.kind === 'primary' && b.kind === 'primary') return a.id === b.id;
  if (a.kind === 'split-brain' && b.kind === 'split-brain') return a.writable.join() === b.writable.join();
  return true;
}

/** Why a primary session is refused now (the 57P03 its client is told), or undefined. */
export function refusalOf(c: PrimaryChoice): string | undefined {
  if (c.kind === 'split-brain')
    return `no primary: ${c.writable.join(', ')} accept writes (split brain); new primary sessions are refused until one remains`;
  if (c.kind === 'none') return 'no primary: no server accepts writes (every one is down or in recovery)';
  return undefined;
}
