// The schemas of everything plb writes (run directory, cluster record, report JSON, fault plans).
export { CONFIG_SCHEMA_VERSION, configSchema, environmentSchema } from './config.js';
export type { RunConfig, RunEnvironment } from './config.js';
export { summarySchema } from './summary.js';
export { runEventSchema, type RunEventRecord } from './events.js';
export { clusterRecordSchema, clusterSpecSchema } from './cluster-record.js';
export { REPORT_SCHEMA_ID, reportJsonSchema, reportBaselineSchema } from './report.js';
export { clusterFileSchema, type ClusterFile } from './cluster-file.js';
export { faultPlanSchema, planFileSchema, type PlanFile } from './plan.js';
export { jsonSchemaText, PUBLISHED_SCHEMAS, type PublishedSchemaName } from './json-schema.js';
export { parseOrThrow } from './parse.js';
export { workloadFileSchema, type WorkloadFile } from './workload-file.js';
