/**
 * What a session watches on its backend's stream (through the framer's hook, whole messages
 * only): during startup BackendKeyData, swapped for the proxy's own key (cancel-keys.ts), the
 * server's errors and ReadyForQuery; then only errors, and with --class-from application_name the
 * ParameterStatus of application_name, to see a class named after the session was routed.
 */
import type { ServiceClass } from '../../core/service-class.js';
import type { SessionHost } from './session-host.js';
import {
  decodeServerError,
  lateClassWarning,
  MSG_PARAMETER_STATUS,
  reportedClass,
  type ServerError,
} from '../protocol/server-messages.js';
import {
  backendKeyData,
  type BackendFramer,
  MSG_BACKEND_KEY,
  MSG_ERROR,
  MSG_READY,
} from '../protocol/wire.js';

const STARTUP_TYPES: ReadonlySet<number> = new Set([MSG_ERROR, MSG_BACKEND_KEY, MSG_READY]);
const SESSION_TYPES: ReadonlySet<number> = new Set([MSG_ERROR]);
// ParameterStatus is rare after startup (a SET of a reported setting): watching it costs nothing.
const STARTUP_TYPES_NAMED: ReadonlySet<number> = new Set([...STARTUP_TYPES, MSG_PARAMETER_STATUS]);
const SESSION_TYPES_NAMED: ReadonlySet<number> = new Set([MSG_ERROR, MSG_PARAMETER_STATUS]);

export class BackendWatch {
  /** The last ErrorResponse the server sent (how it ended a session). */
  lastServerError: ServerError | undefined;
  private key: { pid: number; secret: Buffer } | undefined;
  /** A late class was seen and warned about (once a session). */
  private warnedLate = false;
  private readonly named: boolean;

  constructor(
    private readonly host: SessionHost,
    private readonly framer: BackendFramer,
    private readonly session: { readonly cls: ServiceClass; readonly replica: string; readonly port: number },
    /** ReadyForQuery: the session is established. */
    private readonly onReady: () => void,
  ) {
    this.named = host.classFrom === 'application_name';
    framer.hook = {
      types: this.named ? STARTUP_TYPES_NAMED : STARTUP_TYPES,
      fn: (type, msg) => this.onStartupMessage(type, msg),
    };
  }

  /** The proxy's cancel key is void once the session ends. */
  forgetKey(): void {
    if (this.key) this.host.cancelKeys.forget(this.key.pid);
    this.key = undefined;
  }

  private onStartupMessage(type: number, msg: Buffer): Buffer | undefined {
    if (type === MSG_BACKEND_KEY) {
      if (msg.length < 13) return msg;
      const backend = {
        replica: this.session.replica,
        port: this.session.port,
        pid: msg.readInt32BE(5),
        secret: Buffer.from(msg.subarray(9)),
      };
      this.forgetKey();
      this.key = this.host.cancelKeys.issue(backend);
      return backendKeyData(this.key.pid, this.key.secret);
    }
    if (type !== MSG_READY) return this.onSessionMessage(type, msg);
    // From now on only errors (and names) are decoded.
    this.framer.hook = {
      types: this.named ? SESSION_TYPES_NAMED : SESSION_TYPES,
      fn: (t, m) => this.onSessionMessage(t, m),
    };
    this.onReady();
    return msg;
  }

  /** A whole message of a watched type after ReadyForQuery (also from the native relay). */
  onSessionMessage(type: number, msg: Buffer): Buffer {
    if (type === MSG_ERROR) this.lastServerError = decodeServerError(msg);
    else if (!this.warnedLate) this.checkLateClass(msg);
    return msg;
  }

  private checkLateClass(msg: Buffer): void {
    this.warnedLate = noteLateClass(this.host, this.session, msg);
  }
}

/**
 * A ParameterStatus that reports application_name as the other class than the session's: counted
 * and warned (true). A session warns once (its caller stops asking).
 */
export function noteLateClass(
  host: Pick<SessionHost, 'stats' | 'log'>,
  session: { readonly cls: ServiceClass; readonly replica: string },
  msg: Buffer,
): boolean {
  const named = reportedClass(msg);
  if (named === undefined || named.cls === session.cls) return false;
  host.stats.lateClass += 1;
  host.log(lateClassWarning(named.cls, session.cls, session.replica));
  return true;
}
