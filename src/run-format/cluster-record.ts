// <state>/<cluster>/cluster.json: which driver made the cluster, with which spec (cluster/state.ts).
import { z } from 'zod';
import type { ClusterSpec } from '../cluster/driver.js';
import type { ClusterRecord } from '../cluster/state.js';
import type { SameType } from './type-check.js';

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

const _spec: SameType<z.infer<typeof clusterSpecSchema>, ClusterSpec> = true;
const _record: SameType<z.infer<typeof clusterRecordSchema>, ClusterRecord> = true;
