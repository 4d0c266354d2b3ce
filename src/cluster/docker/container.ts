// What a server's container is: its name and labels (ownership), its settings and limits, and the
// files copied in before it starts (the entry script and the password, never in argv or env).
import { cpus as hostCpus } from 'node:os';
import type Docker from 'dockerode';
import { serverSettings } from '../base-driver.js';
import type { ClusterSpec } from '../../run-format/cluster-record.js';
import type { ServerId } from '../../core/replica-ids.js';
import { packageVersion } from '../../core/package-info.js';
import { poolParent } from './cpu-pool.js';
import { makeTar } from './tar.js';

export const LABEL_CLUSTER = 'plb.cluster';
export const LABEL_SERVER = 'plb.server';
const LABEL_VERSION = 'plb.version';
/** The cluster instance's unique id (its record's id): down removes only what carries it. */
export const LABEL_ID = 'plb.id';

export function containerName(cluster: string, id: ServerId): string {
  return `plb-${cluster}-${id}`;
}

/** Containers have their own memory limit: shared_buffers may take more of it than a local server's. */
const SHARED_BUFFERS_MAX_MB = 128;

function labels(spec: ClusterSpec, id: ServerId): Record<string, string> {
  return {
    [LABEL_CLUSTER]: spec.name,
    [LABEL_SERVER]: id,
    [LABEL_VERSION]: packageVersion(),
    ...(spec.id !== undefined ? { [LABEL_ID]: spec.id } : {}),
  };
}

/** The container of server `id`, listening on 127.0.0.1:port of the host network. */
export function containerOptions(
  spec: ClusterSpec,
  id: ServerId,
  image: string,
  port: number,
): Docker.ContainerCreateOptions {
  const primary = id === 'primary';
  // initdb and pg_basebackup run with the whole host (faster up); up() then sets the quota.
  const cpus = hostCpus().length;
  const memory = spec.memoryMb * 1024 * 1024;
  const conf = serverSettings(spec, SHARED_BUFFERS_MAX_MB);
  const pool = primary ? undefined : poolParent(spec);
  const env = [
    `PLB_ROLE=${primary ? 'primary' : 'standby'}`,
    `PLB_ID=${id}`,
    `PLB_PORT=${port}`,
    `PLB_PRIMARY_PORT=${spec.basePort}`,
    `PLB_SLOT=${id}`,
    // The entry script also makes max_replication_slots this (more than the slots needed).
    `PLB_MAX_SENDERS=${conf.maxWalSenders}`,
    `PLB_SHARED_BUFFERS=${conf.sharedBuffersMb}MB`,
    `PLB_MAX_CONNECTIONS=${conf.maxConnections}`,
    'PLB_PASSWORD_FILE=/plb/secret',
  ];
  return {
    name: containerName(spec.name, id),
    Image: image,
    User: 'postgres',
    Entrypoint: ['/bin/sh', '/plb/entry.sh'],
    Cmd: [],
    Env: env,
    Labels: labels(spec, id),
    // Fast shutdown on docker stop, as the official image does.
    StopSignal: 'SIGINT',
    StopTimeout: 10,
    HostConfig: {
      NetworkMode: 'host',
      // --cpu-pool: the replicas share the pool's quota (cpu-pool.ts) and have none of their own
      // (0: none; under cgroup v1 a child's quota may not exceed its parent's).
      NanoCpus: pool !== undefined ? 0 : Math.round(cpus * 1e9),
      ...(pool !== undefined ? { CgroupParent: pool } : {}),
      Memory: memory,
      MemorySwap: memory,
      RestartPolicy: { Name: 'no' },
    },
  };
}

/** The archive copied to / before start: the entry script and the password file. */
export function serverFiles(script: string, password: string): Promise<Buffer> {
  return makeTar([
    { name: 'plb/', mode: 0o755 },
    { name: 'plb/entry.sh', mode: 0o555, content: script },
    // Readable by the postgres user inside this container only; the host copy stays 0600.
    { name: 'plb/secret', mode: 0o444, content: password },
  ]);
}
