// The verdict gate printed: a row per headline cell (baseline verdict, tonight's, PASS/FAIL, the
// absolute trend), a summary line, the markdown for a GitHub step summary and the annotations.
import { changeText } from '../evidence/verdicts.js';
import type { Change } from '../../run-format/evidence.js';
import { alignedText, annotation, appendStepSummary } from './gate.js';
import type { CellStatus, VerdictCell, VerdictGateResult } from './verdict-gate.js';

function verdictCellText(c: Change | null): string {
  if (c === null) return '-';
  const v = c.verdict === 'no difference detected' ? 'no diff.' : c.verdict;
  return c.delta === null ? v : `${v} ${changeText(c)}`;
}

const unit = (m: VerdictCell['metric']): string => (m === 'p95' ? 'ms' : 'q/s');

function num(x: number): string {
  const a = Math.abs(x);
  return a >= 100 ? x.toFixed(0) : a >= 10 ? x.toFixed(1) : x.toFixed(2);
}

/** `386 -> 412 ms (+7%)`: the strategy's own figure, baseline then now; never gated. */
export function trendText(c: Pick<VerdictCell, 'baselineValue' | 'currentValue' | 'metric'>): string {
  const b = c.baselineValue;
  const n = c.currentValue;
  if (b === null && n === null) return '-';
  if (b === null || n === null)
    return `${b === null ? '-' : num(b)} -> ${n === null ? '-' : num(n)} ${unit(c.metric)}`;
  const pct = b !== 0 ? ` (${n >= b ? '+' : ''}${(((n - b) / b) * 100).toFixed(0)}%)` : '';
  return `${num(b)} -> ${num(n)} ${unit(c.metric)}${pct}`;
}

const HEADER = [
  'result',
  'group',
  'phase',
  'class',
  'metric',
  'baseline vs rr',
  'now vs rr',
  'why',
  'trend (not gated)',
];

const statusText = (s: CellStatus): string =>
  s === 'fail' || s === 'missing' ? 'FAIL' : s === 'pass' ? 'PASS' : s;

function rows(cells: readonly VerdictCell[]): string[][] {
  return cells.map((c) => [
    statusText(c.status),
    c.group,
    c.phase,
    c.cls,
    c.metric,
    verdictCellText(c.baseline),
    verdictCellText(c.current),
    c.why,
    trendText(c),
  ]);
}

/** Every cell as aligned plain text (CI logs, terminals). */
export function verdictGateTable(r: VerdictGateResult): string {
  return alignedText([HEADER, ...rows(r.cells)]);
}

/** One line: PASS or FAIL with counts. */
function verdictGateSummary(r: VerdictGateResult): string {
  const n = (s: CellStatus): number => r.cells.filter((c) => c.status === s).length;
  const flipped = r.cells.filter((c) => c.status === 'fail' && c.why.startsWith('flipped')).length;
  return `gate ${r.failed.length > 0 ? 'FAIL' : 'PASS'}: ${flipped} flipped, ${n('fail') - flipped} premium worse, ${n('missing')} missing, ${n('pass')} held, ${n('not gated')} not gated, ${n('new')} new (${r.cells.length} headline cells: each strategy against rr within its run, tonight and in the baseline; absolute figures are a trend, not gated)`;
}

const mdCell = (v: string): string => v.replace(/\|/g, '\\|').replace(/[\r\n]+/g, ' ');

function mdTable(cells: readonly VerdictCell[]): string {
  const lines = [HEADER, HEADER.map(() => '---'), ...rows(cells)];
  return lines.map((row) => `| ${row.map(mdCell).join(' | ')} |`).join('\n') + '\n';
}

/** The verdict for a GitHub step summary: headline, failing cells, every cell. */
function verdictGateMarkdown(r: VerdictGateResult, images: readonly string[] = []): string {
  const out = [
    `## plb nightly gate: ${r.failed.length > 0 ? '❌ FAIL' : '✅ PASS'}`,
    '',
    verdictGateSummary(r),
    '',
  ];
  if (images.length > 0) out.push(`PostgreSQL image: ${images.map((i) => `\`${i}\``).join(', ')}`, '');
  if (r.failed.length > 0) out.push('### Failing cells', '', mdTable(r.failed));
  if (r.notes.length > 0) out.push('### Notes', '', ...r.notes.map((n) => `- ${mdCell(n)}`), '');
  out.push('### Every headline cell', '', mdTable(r.cells));
  return out.join('\n');
}

/** `::error::` per failing cell and `::warning::` per note. */
function verdictGateAnnotations(r: VerdictGateResult): string[] {
  const fails = r.failed.map((c) =>
    annotation(
      'error',
      'plb gate',
      `${c.group} ${c.phase} ${c.cls} ${c.metric}: ${c.why} (baseline ${verdictCellText(c.baseline)}; now ${verdictCellText(c.current)})`,
    ),
  );
  return [...fails, ...r.notes.map((n) => annotation('warning', 'plb gate', n))];
}

/**
 * Prints the verdict (notes, images, table, summary line) through `log`; with `github` also the
 * annotations and the markdown appended to $GITHUB_STEP_SUMMARY. Returns true when it failed.
 */
export function reportVerdictGate(
  r: VerdictGateResult,
  opts: {
    log: (line: string) => void;
    github?: boolean;
    env?: NodeJS.ProcessEnv;
    images?: readonly string[];
  },
): boolean {
  for (const n of r.notes) opts.log(`note: ${n}`);
  if (opts.images && opts.images.length > 0) opts.log(`image: ${opts.images.join(', ')}`);
  opts.log(verdictGateTable(r).trimEnd());
  if (opts.github) {
    for (const a of verdictGateAnnotations(r)) opts.log(a);
    appendStepSummary(verdictGateMarkdown(r, opts.images), opts);
  }
  opts.log(verdictGateSummary(r));
  return r.failed.length > 0;
}
