// The schemas of everything plb writes (run directory, cluster record, report JSON, fault plans).
export { CONFIG_SCHEMA_VERSION, configSchema, environmentSchema } from './config.js';
export type { RunConfig, RunEnvironment } from './config.js';
export { summarySchema, SUMMARY_SCHEMA_VERSION, SIGNAL_NAMES } from './summary.js';
export type {
  ClassPhaseStats,
  DetectionCounts,
  DetectionRecord,
  HarnessPhaseStats,
  PhaseSignals,
  PhaseSummary,
  ReplicaPhaseStats,
  RunSummary,
  SignalName,
} from './summary.js';
export { runEventSchema, type RunEventRecord } from './events.js';
export { clusterRecordSchema, clusterSpecSchema } from './cluster-record.js';
export { REPORT_SCHEMA_ID, reportJsonSchema, reportBaselineSchema } from './report.js';
export { clusterFileSchema, type ClusterFile } from './cluster-file.js';
export { faultPlanSchema, planFileSchema, type PlanFile } from './plan.js';
export { jsonSchemaText, PUBLISHED_SCHEMAS, type PublishedSchemaName } from './json-schema.js';
export { parseOrThrow } from '../core/zod-issue.js';
export { workloadFileSchema, type WorkloadFile } from './workload-file.js';
// The on-disk types: each is z.infer of its schema, the one definition the code uses.
export type { ClassWorkload, HealthOptions, QueryKind, WorkloadSpec } from './config.js';
export type { ClusterRecord, ClusterSpec } from './cluster-record.js';
export type { FaultEvent, FaultPlan } from './plan.js';
export type { FaultAction } from './fault-actions.js';
export type {
  AggregatedDetection,
  AggregatedPhase,
  AggregatedReplica,
  ClassMetric,
  Comparison,
  ComparisonRow,
  PaperReport,
  ReportJson,
  RunGroup,
  Stat,
  StrategyComparison,
} from './report.js';
