// The store's raw columns: one entry per query, session, sample or failure (ms since run start).
import { f32, f64, u16, u8, type Column } from './columns.js';

/** Everything one class did, one entry per query/session, in typed columns (ms since run start). */
export interface ClassLog {
  queryEnd: Column<Float64Array>;
  queryLatUs: Column<Float32Array>;
  queryReplica: Column<Uint16Array>;
  errorEnd: Column<Float64Array>;
  /** Per failed query: its replica (store index) and FAILURE_CODE of its cause (the hang path). */
  errorReplica: Column<Uint16Array>;
  errorCause: Column<Uint8Array>;
  openAt: Column<Float64Array>;
  openReplica: Column<Uint16Array>;
  openConnectUs: Column<Float32Array>;
  closeAt: Column<Float64Array>;
  closeLifetimeMs: Column<Float64Array>;
  /** The replica each closed session was on (store index). */
  closeReplica: Column<Uint16Array>;
  /** ENDING_CODE of each closed session. */
  closeEnding: Column<Uint8Array>;
  admissionAt: Column<Float64Array>;
  /** Admission queue: when sessions were admitted and how long they waited; when waits timed out. */
  queueAt: Column<Float64Array>;
  queueUs: Column<Float32Array>;
  queueTimeoutAt: Column<Float64Array>;
}

/** Classified failures per replica (only the COUNTED_CAUSES; index into that list). */
export interface FailureLog {
  at: Column<Float64Array>;
  replica: Column<Uint16Array>;
  cause: Column<Uint8Array>;
  /** VIA_CODE of who heard of it: the health checker, a connect, a session. */
  via: Column<Uint8Array>;
}

/** The client process: CPU one row per sample, event-loop delay one row per timer tick. */
export interface HarnessLog {
  cpuAt: Column<Float64Array>;
  cpu: Column<Float64Array>;
  loopAt: Column<Float64Array>;
  loopDelayUs: Column<Float32Array>;
  /** The host's busy and stolen CPU, fractions of all its cores (HostCpu). */
  hostAt: Column<Float64Array>;
  hostBusy: Column<Float64Array>;
  hostSteal: Column<Float64Array>;
}

/** CPU samples: one time column and one value column per replica (NaN = null, replica down). */
export interface CpuLog {
  at: Column<Float64Array>;
  values: Column<Float64Array>[];
}

/** An empty log for one class. */
export function newClassLog(): ClassLog {
  return {
    queryEnd: f64(),
    queryLatUs: f32(),
    queryReplica: u16(),
    errorEnd: f64(),
    errorReplica: u16(),
    errorCause: u8(),
    openAt: f64(),
    openReplica: u16(),
    openConnectUs: f32(),
    closeAt: f64(),
    closeLifetimeMs: f64(),
    closeReplica: u16(),
    closeEnding: u8(),
    admissionAt: f64(),
    queueAt: f64(),
    queueUs: f32(),
    queueTimeoutAt: f64(),
  };
}
