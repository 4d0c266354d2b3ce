/**
 * The native addon (native/*.c, built as native/build/relay.node): the relay's threads
 * (native-relay.ts) and socket options Node's net cannot set (socket-keepalive.ts). Loaded once
 * a process, and only when asked: PLB_NATIVE_RELAY names another build (the sanitizers',
 * docs/development.md), which must then load.
 */
import { createRequire } from 'node:module';

/** An event's bytes: their length in the mailbox, or a Buffer of their own when larger; none. */
export type EventBytes = number | Buffer | undefined;

export interface Addon {
  start(
    onEvent: (...a: [number, number, number, number, number, number, EventBytes, number]) => void,
    threads: number,
    mailbox: Buffer,
  ): number;
  front(maxPremium: number, maxFreemium: number, refusal: Buffer, startupMs: number): number;
  listen(front: number, cls: number, host: string, port: number, backlog: number): [number, number];
  stop(listener: number, message: Buffer): void;
  dial(
    id: number,
    host: string,
    port: number,
    ms: number,
    pid: number,
    secret: Buffer,
    watch: boolean,
    userTimeoutMs: number,
    idleS: number,
    intervalS: number,
    count: number,
  ): void;
  verdict(id: number, forward: boolean): void;
  command(id: number, flags: number, last?: Buffer): void;
  counts(front: number): [number, number];
  ref(on: boolean): void;
  fault(id: number, what: number, errno: number): void;
  /** Sets keepalive and TCP_USER_TIMEOUT on a descriptor; what the kernel reports back, in that order. */
  keepalive(
    fd: number,
    userTimeoutMs: number,
    idleS: number,
    intervalS: number,
    count: number,
  ): [number, number, number, number];
}

let loaded: Addon | string | undefined;

/** Where the addon is loaded from: PLB_NATIVE_RELAY, else native/build/relay.node (from src/ or dist/ alike). */
function addonPath(): string {
  return process.env.PLB_NATIVE_RELAY || '../../../native/build/relay.node';
}

/** The addon, or why there is none ("not built ..."); a build named by PLB_NATIVE_RELAY that does not load throws. */
export function loadAddon(): Addon | string {
  return (loaded ??= load());
}

function load(): Addon | string {
  try {
    return createRequire(import.meta.url)(addonPath()) as Addon;
  } catch (err) {
    // A build named on purpose (the sanitizers') that does not load is an error, not a fallback.
    const named = process.env.PLB_NATIVE_RELAY;
    if (named) throw new Error(`PLB_NATIVE_RELAY=${named}: ${String(err)}`, { cause: err });
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'MODULE_NOT_FOUND' ? 'not built (npm run build builds it)' : String(err);
  }
}
