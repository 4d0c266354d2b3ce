/**
 * Running one hook: its argv without a shell, bounded by its timeout (SIGTERM, then SIGKILL), with
 * its exit code, duration and the start and end of its output kept for events.jsonl.
 */
import { spawn } from 'node:child_process';

/** Output kept per stream: the start and the end, so both the command's echo and its verdict stay. */
export const OUTPUT_KEEP_BYTES = 2048;
/** After the timeout's SIGTERM, this long before SIGKILL. */
const KILL_GRACE_MS = 2000;

export interface HookResult {
  argv: string[];
  /** null when it did not exit by itself (killed by a signal or the timeout) or never started. */
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  durationMs: number;
  stdout: string;
  stderr: string;
  /** Why it could not start (ENOENT...), if so. */
  spawnError?: string;
}

/** Keeps the first and last `keep` bytes of a stream, marking what was cut. */
class Tail {
  private head = '';
  private tail = '';
  private total = 0;

  constructor(private readonly keep: number) {}

  push(chunk: string): void {
    this.total += chunk.length;
    if (this.head.length < this.keep) {
      const take = chunk.slice(0, this.keep - this.head.length);
      this.head += take;
      chunk = chunk.slice(take.length);
    }
    if (chunk.length > 0) this.tail = (this.tail + chunk).slice(-this.keep);
  }

  text(): string {
    const cut = this.total - this.head.length - this.tail.length;
    return cut > 0 ? `${this.head}\n[... ${cut} characters cut ...]\n${this.tail}` : this.head + this.tail;
  }
}

/** Runs argv (no shell); never rejects: a failure to start is a result too. */
export function runHook(
  argv: readonly string[],
  timeoutMs: number,
  env: Readonly<Record<string, string>> = {},
): Promise<HookResult> {
  const t0 = performance.now();
  const [cmd, ...args] = argv;
  return new Promise((resolve) => {
    const out = new Tail(OUTPUT_KEEP_BYTES);
    const err = new Tail(OUTPUT_KEEP_BYTES);
    let timedOut = false;
    let spawnError: string | undefined;
    const child = spawn(cmd ?? '', args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
      shell: false,
    });
    child.stdout.setEncoding('utf8').on('data', (c: string) => out.push(c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => err.push(c));
    let killer: NodeJS.Timeout | undefined;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGTERM');
      killer = setTimeout(() => child.kill('SIGKILL'), KILL_GRACE_MS);
    }, timeoutMs);
    child.on('error', (e: NodeJS.ErrnoException) => {
      spawnError = e.code ?? e.message;
    });
    // 'close': the process exited and its output is read to the end (or it never started).
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (killer) clearTimeout(killer);
      resolve({
        argv: [...argv],
        // Node reports a spawn failure's errno as the code: it never ran, so it has none.
        exitCode: spawnError === undefined ? code : null,
        signal,
        timedOut,
        durationMs: Math.round(performance.now() - t0),
        stdout: out.text(),
        stderr: err.text(),
        ...(spawnError !== undefined ? { spawnError } : {}),
      });
    });
  });
}

/** Why a hook failed, one line; undefined when it succeeded (exit code 0). */
export function hookFailure(r: HookResult): string | undefined {
  if (r.spawnError !== undefined) return `could not start ${r.argv[0] ?? ''} (${r.spawnError})`;
  if (r.timedOut) return `timed out after ${r.durationMs} ms`;
  if (r.exitCode === 0) return undefined;
  const last = r.stderr.trim().split('\n').pop() ?? '';
  const how = r.exitCode === null ? `killed by ${r.signal ?? 'a signal'}` : `exit code ${r.exitCode}`;
  return `${how}${last ? `: ${last.slice(0, 200)}` : ''}`;
}
