/**
 * `plb proxy` as a user runs it: a child process (bin/dev.js) with its output collected. The proxy
 * integration tests' one way to start the command and wait for a line of its log.
 */
import { spawn, type ChildProcess } from 'node:child_process';

export interface ProxyCommand {
  child: ChildProcess;
  /** stdout (the --json summary), stderr (the log), and both in the order they came. */
  readonly out: string;
  readonly err: string;
  readonly all: string;
  exited: Promise<number | null>;
  /**
   * Resolves with everything said so far once it says `what`; rejects with that output when the
   * process ends first or `deadlineMs` passes (generous: a start beside a busy job is slow).
   */
  logged(what: string | RegExp, deadlineMs?: number): Promise<string>;
}

/** Starts `plb proxy --name <name> <args>` against the cluster records in `stateDir`. */
export function spawnProxy(name: string, stateDir: string, args: readonly string[]): ProxyCommand {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bin/dev.js', 'proxy', '--name', name, ...args], {
    env: { ...process.env, PLB_STATE_DIR: stateDir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const said = { out: '', err: '', all: '' };
  child.stdout.on('data', (d: Buffer) => {
    said.out += d.toString();
    said.all += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    said.err += d.toString();
    said.all += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const says = (what: string | RegExp): boolean =>
    typeof what === 'string' ? said.all.includes(what) : what.test(said.all);
  return {
    child,
    get out() {
      return said.out;
    },
    get err() {
      return said.err;
    },
    get all() {
      return said.all;
    },
    exited,
    async logged(what, deadlineMs = 60_000) {
      const t0 = Date.now();
      while (!says(what)) {
        if (child.exitCode !== null || Date.now() - t0 > deadlineMs)
          throw new Error(`plb proxy never said ${String(what)}:\n${said.all}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      return said.all;
    },
  };
}
