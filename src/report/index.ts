// What other modules (bench matrix, the library) import from the report.
export { aggregateRuns, mixLabel, groupKey } from './aggregate.js';
export { CLASS_METRICS } from '../run-format/report.js';
export type { RunGroup, AggregatedPhase, AggregatedDetection, ClassMetric } from '../run-format/report.js';
export { compareStrategies, p95Change, goodputChange } from './compare.js';
export type { Comparison, StrategyComparison, ComparisonRow } from '../run-format/report.js';
export { renderComparison, renderReport, phaseTable, replicaTable, comparisonTable } from './tables/render.js';
export type { ReportFormat } from './tables/render.js';
export type { TableModel } from './tables/table-model.js';
export type { ReportJson } from '../run-format/report.js';
export { renderRunHtml, renderComparisonHtml } from './html.js';
export { quantile, QUANTILE_METHOD } from '../metrics/math.js';
export { stat } from './stats.js';
export type { Stat } from '../run-format/report.js';
// Run directories are read by metrics' loadRun (exported from src/index.ts); only the search is here.
export { findRunDirs } from './run-dir.js';
export {
  parseTolerance,
  checkTolerance,
  loadBaseline,
  DEFAULT_TOLERANCE,
  TOLERANCE_FIELDS,
} from './gate/tolerance.js';
export { TOLERANCE_EXIT_CODE } from '../core/fail.js';
export type { Tolerance, ToleranceResult, Moved } from './gate/tolerance.js';
export { writeReports } from './report.js';
export type { ReportOptions, ReportOutcome } from './report.js';
