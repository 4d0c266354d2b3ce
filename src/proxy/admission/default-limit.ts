/**
 * The per-replica admission limit `plb proxy` takes when no number is given (`--admission-limit
 * auto`, the default): the replica's own max_connections, less the slots PostgreSQL keeps for
 * superusers and reserved roles, less a reserve for the connections that are not sessions.
 * Pure: settings in, a limit out.
 */
import type { ConnectionSettings } from '../../cluster/server-limits.js';

/**
 * The default reserve: this proxy's health check, its replica-view reader and the short
 * connection that reads these settings (3), and 3 for operators (psql, monitoring). With P proxies
 * in front of one replica, give every proxy `--admission-reserve 3 + 3P`.
 */
export const DEFAULT_ADMISSION_RESERVE = 6;

/**
 * The share of every freemium replica's limit premium may not take (--admission-freemium-reserve):
 * the proxy's floor for freemium, as --admission-premium-reserve is premium's, so a premium flood
 * that overflows onto freemium's replicas still leaves a freemium client a slot at once. The
 * proxy's default only: the bench's plb-admit keeps its own (the guard's min share).
 */
export const DEFAULT_FREEMIUM_RESERVE = 0.1;

/** A replica's limit before its settings are read (PostgreSQL's default max_connections, 100). */
export const UNREAD_SETTINGS: ConnectionSettings = {
  maxConnections: 100,
  superuserReserved: 3,
  reserved: 0,
};

/** max_connections - superuser_reserved - reserved - reserve, at least 1. */
export function defaultAdmissionLimit(s: ConnectionSettings, reserve: number): number {
  return Math.max(1, s.maxConnections - s.superuserReserved - s.reserved - reserve);
}

/**
 * With the replica view: how many of this proxy's sessions on a replica may be unseen by its last
 * read (admitted since, or not yet authenticated then) at once. Several proxies then exceed a
 * replica's limit by at most (P - 1) x this between two reads (docs/proxy.md).
 */
export function unseenCap(limit: number): number {
  return Math.max(1, Math.ceil(limit / 10));
}
