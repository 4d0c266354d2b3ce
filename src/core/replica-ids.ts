/** Server and replica ids: 'primary' and 'r1'..'rK' in plans, reports and the router. */
export type ServerId = string;

/** Replica ids of a cluster of K standbys: 'r1'..'rK' (plans, reports and the router use them). */
export function replicaIds(replicas: number): ServerId[] {
  return Array.from({ length: replicas }, (_, i) => `r${i + 1}`);
}

/** 'primary', then 'r1'..'rK'. */
export function serverIds(replicas: number): ServerId[] {
  return ['primary', ...replicaIds(replicas)];
}

const naturalOrder = new Intl.Collator('en', { numeric: true });

/** Natural order of server ids: r2 before r10 (a plain sort puts r10 first). */
export function compareReplicaIds(a: string, b: string): number {
  return naturalOrder.compare(a, b);
}

/** A simulated cluster (`--driver sim`) takes plans this large. */
export const MAX_SIM_REPLICAS = 1000;
