// <state>/<cluster>/cluster.json: which driver made the cluster, with which spec (cluster/state.ts).
import { z } from 'zod';

export const clusterSpecSchema = z.object({
  name: z.string(),
  replicas: z.number(),
  basePort: z.number(),
  cpus: z.number(),
  primaryCpus: z.number(),
  memoryMb: z.number(),
  maxConnections: z.number(),
  image: z.string().optional(),
  stateDir: z.string(),
  id: z.string().optional(),
  /** --cpu-pool (docker): the replicas share one quota of replicas x cpus (cluster/docker/cpu-pool.ts). */
  cpuPool: z.boolean().optional(),
});

export const clusterRecordSchema = z
  .object({
    version: z.literal(1),
    name: z.string(),
    // The id format of cluster/state.ts (newClusterId); a record without one is refused by name.
    id: z.string().regex(/^[0-9a-f]{12}$/),
    driver: z.enum(['docker', 'local']),
    spec: clusterSpecSchema,
    createdAt: z.string(),
    cpus: z.record(z.string(), z.number()).optional(),
    extra: z.record(z.string(), z.unknown()).optional(),
  })
  .meta({ title: 'plb cluster record', description: '<state dir>/<cluster>/cluster.json' });

/**
 * The contract between plb and a cluster. Implementations: docker/ (dockerode), local/ (postgres
 * processes), sim/ (simulated replicas in virtual time) and external/ (a cluster plb did not make,
 * driven by the user's hooks). Server ids (core/replica-ids.ts) are 'primary' and 'r1'..'rK'.
 */
export type ClusterSpec = z.infer<typeof clusterSpecSchema>;
/** What `cluster status/down` and `bench run` need to find an existing cluster. */
export type ClusterRecord = z.infer<typeof clusterRecordSchema>;
