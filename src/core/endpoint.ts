import type { ServerId } from './replica-ids.js';

/** Where a server listens, and how plb logs in to it. */
export interface Endpoint {
  id: ServerId;
  kind: 'primary' | 'replica';
  /** 127.0.0.1 for the clusters plb makes; any host for an external one. */
  host: string;
  port: number;
}

export interface Credentials {
  user: string;
  password: string;
  database: string;
}

export interface HostPort {
  host: string;
  port: number;
}

/** host:port, with an IPv6 host in brackets. */
export function formatHostPort(e: HostPort): string {
  return e.host.includes(':') ? `[${e.host}]:${e.port}` : `${e.host}:${e.port}`;
}
