// The library's public exports.
export * from './core/errors.js';
export * from './router/index.js';
// The router's options as written on a command line (the router itself takes them typed).
export {
  parseClientZones,
  parseLagWeights,
  parseMaxLag,
  parsePartition,
  parseReadings,
  parseRoleVector,
} from './cli/router-values.js';
export type * from './cluster/driver.js';
export type * from './core/replica-ids.js';
export type * from './core/endpoint.js';
export type * from './metrics/types.js';
export { loadPlan, parsePlan, planPhases } from './faults/plan.js';
export { DataSource, PinnedConnection, type DataSourceOptions } from './workload/data-source.js';
export { HealthChecker, HealthTracker, DEFAULT_HEALTH } from './cluster/health.js';
export { type BenchConfig, type HealthOptions } from './run-format/config.js';
export {
  bringUp,
  openCluster,
  downCluster,
  removeOwned,
  resolveDriver,
  clusterSpec,
  upCluster,
} from './cluster/select.js';
export { acquireClusterLock, withClusterLock, type ClusterLock } from './cluster/lock.js';
export { createRunWriter } from './metrics/store/run-writer.js';
export { loadRun } from './metrics/store/load-run.js';
export { computePhases } from './faults/actions.js';
export { runBench, type BenchResult } from './bench/run.js';
export { aggregateRuns } from './report/aggregate.js';
export { compareStrategies } from './report/compare.js';
export { renderComparison, renderReport } from './report/tables/render.js';
export { writeReports } from './report/report.js';
export * from './run-format/index.js';
export { startProxy, type ProxyHandle, type ProxyOptions } from './proxy/proxy-server.js';
