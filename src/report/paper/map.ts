// The map's evaluation: each cell's run directories loaded into groups as `plb report` does, the
// paper's claims judged there by paperFigures (95 % intervals, the paper-vs-measured rule), and
// the result as map.json and a terminal table. Nothing of the claims is re-implemented here.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { MapCell, MapClaimCell, MapJson } from '../../run-format/paper-map.js';
import type { RunGroup } from '../../run-format/report.js';
import { aggregateRuns } from '../aggregate.js';
import { attachEvidence } from '../evidence/evidence.js';
import { paperFigures, paperQuestionOf } from './figures.js';
import { placeboClaims } from './placebo.js';
import { REPRODUCE_RULE } from './published.js';
import { loadRuns } from '../run-dir.js';
import { renderTable, type TableModel } from '../tables/table-model.js';

/** The groups of a cell's runs (both series), with their evidence against rr, as `plb report` builds them. */
function cellGroups(dir: string): { groups: RunGroup[]; runs: number } {
  if (!existsSync(dir)) return { groups: [], runs: 0 };
  const runs = loadRuns([dir]);
  const groups = aggregateRuns(
    runs.map((r) => r.summary),
    { includeIncomplete: false, configs: new Map(runs.map((r) => [r.summary, r.config])) },
  );
  attachEvidence(groups, runs, 'rr');
  return { groups, runs: runs.length };
}

/** Median session lifetime (plb, RQ3, Premium, ref) over the length of down-1. */
function sessionPhaseRatio(groups: readonly RunGroup[]): number | null {
  const g = groups.find((x) => x.strategy === 'plb' && paperQuestionOf(x.plan) === 'rq3');
  const ref = g?.phases.find((p) => p.name === 'ref');
  const down = g?.phases.find((p) => p.name === 'down-1');
  const life = ref?.classes.premium.lifetimeP50Ms.median ?? null;
  const start = down?.startS.median ?? null;
  const end = down?.endS.median ?? null;
  if (life === null || start === null || end === null || !(end > start)) return null;
  return life / 1000 / (end - start);
}

/** A cell's claims: the published ones for its mix, each with its verdict. */
function cellClaims(cell: MapCell, groups: readonly RunGroup[]): MapClaimCell[] {
  const report = paperFigures(groups);
  if (!report) return [];
  return report.experiments
    .flatMap((e) => e.claims)
    .filter((c) => c.mix === cell.settings.mix)
    .map((c) => ({
      cell: cell.id,
      claim: c.id,
      phase: c.phase,
      mix: c.mix,
      published: c.published,
      measured: c.measured,
      interval: c.interval,
      verdict: c.verdict,
    }));
}

export interface MapInput {
  grid: string;
  plans: 'quick' | 'full';
  clients: number;
  seed: number;
  repeat: number;
  centre: string;
  cells: readonly MapCell[];
  /** The folder holding one folder per cell. */
  dir: string;
}

export function evaluateMap(input: MapInput): MapJson {
  const cells: MapJson['cells'] = [];
  const claims: MapClaimCell[] = [];
  for (const cell of input.cells) {
    const { groups, runs } = cellGroups(join(input.dir, cell.id));
    cells.push({ ...cell, runs, sessionPhaseRatio: sessionPhaseRatio(groups) });
    claims.push(...cellClaims(cell, groups), ...placeboClaims(cell.id, cell.settings.mix, groups));
  }
  return {
    kind: 'plb-paper-map',
    version: 1,
    grid: input.grid,
    plans: input.plans,
    clients: input.clients,
    seed: input.seed,
    repeat: input.repeat,
    rule: REPRODUCE_RULE,
    centre: input.centre,
    cells,
    claims,
  };
}

/** `fig6-premium-down-2@down-2` style key of a claim in one phase. */
export const claimKey = (c: Pick<MapClaimCell, 'claim' | 'phase'>): string =>
  c.claim.endsWith(c.phase) ? c.claim : `${c.claim} ${c.phase}`;

/** The claims of the map in the paper's order, each once. */
export function claimKeys(map: MapJson): string[] {
  return [...new Set(map.claims.map(claimKey))];
}

const LETTER: Record<MapClaimCell['verdict'], string> = {
  reproduced: 'R',
  contradicted: 'C',
  inconclusive: 'i',
  'no interval': '?',
  'not measured': '-',
};

/** A cell's settings in a few characters. */
export function cellLabel(cell: MapCell): string {
  const s = cell.settings;
  const where = `cpu ${Math.round(s.targetCpu * 100)}% q/s ${s.queriesPerSession} ${s.mix}`;
  return cell.kind === 'heatmap' ? where : `${cell.label} (${where})`;
}

/** Per claim: how many cells reproduce, contradict, cannot tell. */
export function summaryTable(map: MapJson): TableModel {
  const rows = claimKeys(map).map((k) => {
    const of = map.claims.filter((c) => claimKey(c) === k);
    const n = (v: MapClaimCell['verdict']) => String(of.filter((c) => c.verdict === v).length);
    const where = of
      .filter((c) => c.verdict === 'reproduced')
      .map((c) => map.cells.find((x) => x.id === c.cell))
      .filter((x) => x !== undefined)
      .map(cellLabel)
      .slice(0, 3)
      .join('; ');
    return [
      k,
      of[0]?.published ?? '',
      n('reproduced'),
      n('contradicted'),
      n('inconclusive'),
      n('no interval'),
      n('not measured'),
      where || '-',
    ];
  });
  return {
    title: `Paper map ${map.grid}: verdicts per claim over ${map.cells.length} cells (T=${map.clients}, ${map.plans} plans, seed ${map.seed}, ${map.repeat} repeat(s))`,
    head: [
      'claim',
      'paper',
      'reproduced',
      'contradicted',
      'inconclusive',
      'no interval',
      'not measured',
      'reproduced at (first 3)',
    ],
    rows,
  };
}

/** One row per cell, one letter per claim: R reproduced, C contradicted, i inconclusive, ? no interval, - not measured. */
export function cellTable(map: MapJson): TableModel {
  const keys = claimKeys(map);
  const rows = map.cells.map((cell) => {
    const of = map.claims.filter((c) => c.cell === cell.id);
    const ratio = cell.sessionPhaseRatio === null ? '-' : cell.sessionPhaseRatio.toFixed(2);
    return [
      cellLabel(cell),
      ratio,
      ...keys.map((k) => {
        const c = of.find((x) => claimKey(x) === k);
        return c ? LETTER[c.verdict] : ' ';
      }),
    ];
  });
  return {
    title:
      'Per cell (R reproduced, C contradicted, i inconclusive, ? no interval, - not measured, blank: not published for the mix); session/phase = median session lifetime over the phase length',
    head: ['cell', 'session/phase', ...keys.map((_, i) => `c${i + 1}`)],
    rows,
  };
}

/** The terminal rendering: the summary, the per-cell letters and the claim legend. */
export function renderMapText(map: MapJson): string {
  const legend = claimKeys(map).map((k, i) => `c${i + 1} = ${k}`);
  const abl = ablationTable(map);
  return [
    renderTable(summaryTable(map)),
    renderTable(cellTable(map)),
    ...(abl ? [renderTable(abl)] : []),
    legend.join('; '),
    `rule: ${map.rule}`,
  ].join('\n\n');
}

/** `+157.7% [-22.3..+399.2] i`: a claim's measured value, interval and verdict letter. */
function valueText(c: MapClaimCell | undefined): string {
  if (!c) return ' ';
  const unit = c.published.endsWith('pp') ? 'pp' : c.published.endsWith('x') ? 'x' : '%';
  const f = (v: number) => (unit === 'x' ? v.toFixed(2) : `${v > 0 ? '+' : ''}${v.toFixed(1)}`);
  const v = c.measured === null ? '-' : `${f(c.measured)}${unit}`;
  const iv = c.interval ? ` [${f(c.interval.lo)}..${f(c.interval.hi)}]` : '';
  return `${v}${iv} ${LETTER[c.verdict]}`;
}

/**
 * The centre, the sweeps and the ablations with their measured values, and which claims' verdicts
 * differ from the centre's: what a mechanism changes.
 */
export function ablationTable(map: MapJson, keys: readonly string[] = claimKeys(map)): TableModel | null {
  const cells = map.cells.filter((c) => c.kind !== 'heatmap' || c.id === map.centre);
  if (cells.length <= 1) return null;
  const verdictOf = (cell: string, k: string) => map.claims.find((c) => c.cell === cell && claimKey(c) === k);
  const rows = cells.map((cell) => {
    const flips = keys.filter((k) => {
      const a = verdictOf(cell.id, k)?.verdict;
      const b = verdictOf(map.centre, k)?.verdict;
      return cell.id !== map.centre && a !== undefined && b !== undefined && a !== b;
    });
    return [
      cell.id === map.centre ? 'centre' : cell.label,
      ...keys.map((k) => valueText(verdictOf(cell.id, k))),
      cell.id === map.centre ? '' : flips.map((k) => `c${claimKeys(map).indexOf(k) + 1}`).join(' ') || 'none',
    ];
  });
  return {
    title:
      'Centre, sweeps and ablations: measured value [95 % interval] and verdict; verdicts that differ from the centre',
    head: ['cell', ...keys.map((k) => `c${claimKeys(map).indexOf(k) + 1}`), 'differs'],
    rows,
  };
}
