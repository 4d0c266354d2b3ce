// The files plb writes into a local server's data folder: plb.conf (included by postgresql.conf)
// and pg_hba.conf, and the replication slot names.
import { serverSettings } from '../base-driver.js';
import { type ClusterSpec } from '../../run-format/cluster-record.js';
import { type ServerId } from '../../core/replica-ids.js';

export function slotName(id: ServerId): string {
  return `plb_${id}`;
}

/** Local servers share the host's memory with no limit of their own: shared_buffers stays small. */
const SHARED_BUFFERS_MAX_MB = 32;

/**
 * postgresql.conf settings of every server: loopback only, small memory, room for K standbys.
 * cluster_name plb-<id> (as in the Docker image) lets a session that came through a balancer ask
 * which server it landed on (`--strategy via`).
 */
export function serverConf(spec: ClusterSpec, port: number, id: ServerId = 'primary'): string {
  const conf = serverSettings(spec, SHARED_BUFFERS_MAX_MB);
  return [
    '# written by plb',
    "listen_addresses = '127.0.0.1'",
    `port = ${port}`,
    `cluster_name = 'plb-${id}'`,
    // No unix socket: TCP on loopback only, and no dependence on /var/run/postgresql.
    "unix_socket_directories = ''",
    `shared_buffers = ${conf.sharedBuffersMb}MB`,
    'work_mem = 4MB',
    'maintenance_work_mem = 32MB',
    'effective_cache_size = 128MB',
    `max_connections = ${conf.maxConnections}`,
    // mmap keeps dynamic shared memory inside the data dir, so a SIGKILLed server leaves nothing in /dev/shm.
    'dynamic_shared_memory_type = mmap',
    'huge_pages = off',
    'wal_level = replica',
    'min_wal_size = 8MB',
    'max_wal_size = 256MB',
    `max_wal_senders = ${conf.maxWalSenders}`,
    `max_replication_slots = ${conf.maxReplicationSlots}`,
    'hot_standby = on',
    'wal_receiver_status_interval = 1s',
    "password_encryption = 'scram-sha-256'",
    'logging_collector = off',
    '',
  ].join('\n');
}

export const HBA = [
  '# written by plb: password (scram-sha-256) over loopback TCP only',
  'host all plb 127.0.0.1/32 scram-sha-256',
  'host replication plb 127.0.0.1/32 scram-sha-256',
  '',
].join('\n');
