// Running the kernel's tools (iptables, tc, ss): never a shell, bounded in time, output kept for errors.
import { execFile, execFileSync } from 'node:child_process';

const TOOL_TIMEOUT_MS = 10_000;

export interface ToolResult {
  ok: boolean;
  /** stdout and stderr, or the error's message when there was none. */
  out: string;
}

export function run(cmd: string, args: readonly string[]): Promise<ToolResult> {
  return new Promise((resolve) => {
    execFile(cmd, [...args], { timeout: TOOL_TIMEOUT_MS }, (err, stdout, stderr) => {
      resolve({ ok: err === null, out: `${stdout}${stderr}`.trim() || (err?.message ?? '') });
    });
  });
}

/** The same, synchronously (the bench's resolution, before anything starts, is synchronous). */
export function runSync(cmd: string, args: readonly string[]): ToolResult {
  try {
    const out = execFileSync(cmd, [...args], {
      timeout: TOOL_TIMEOUT_MS,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return { ok: true, out: out.trim() };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    return { ok: false, out: `${e.stdout ?? ''}${e.stderr ?? ''}`.trim() || e.message };
  }
}
