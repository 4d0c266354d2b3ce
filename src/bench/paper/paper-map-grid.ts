// The grid of `plb paper map`: read from YAML (errors are `<file>:<line>: <field> <what>`), every
// value checked the way the bench checks its flag, then expanded into cells: the heatmap (reference
// load x queries per session, faceted by mix), one-factor sweeps from the centre, and ablations.
import { isMap } from 'yaml';
import { readUserFile, YamlFile } from '../../core/user-file.js';
import { fieldPath } from '../../core/zod-issue.js';
import { mapGridSchema, type MapCell, type MapGrid, type MapSettings } from '../../run-format/paper-map.js';
import { checkBenchValue } from '../options/checks.js';

const MAX_BYTES = 64 * 1024;

/** The bench flag each setting is passed as (and checked by). */
const SETTING_FLAGS: Readonly<Record<keyof MapSettings, string>> = {
  targetCpu: 'target-cpu',
  queriesPerSession: 'queries-per-session',
  mix: 'mix',
  reference: 'reference',
  readings: 'readings',
  model: 'model',
  rate: 'rate',
  borrow: 'borrow',
  clients: 'clients',
  onFailure: 'on-failure',
  simCpu: 'sim-cpu',
};

/** Parses a grid's text; `source` names it in errors. */
export function parseMapGrid(text: string, source: string): MapGrid {
  const file = new YamlFile(text, source, 'BAD_INPUT');
  const fail = (line: number, msg: string) => file.fail(line, msg);
  const lineAt = (path: readonly PropertyKey[]): number => file.lineAt(path);
  if (!isMap(file.root))
    throw fail(file.lineOf(file.root), 'must be a mapping (name, clients, centre, heatmap)');
  const grid = file.check(mapGridSchema);
  // Each value as the bench would check its flag, named by its place in the file.
  const check = (path: (string | number)[], key: keyof MapSettings, v: string | number): void => {
    try {
      checkBenchValue(SETTING_FLAGS[key], v);
    } catch (err) {
      const msg = err instanceof Error ? err.message.replace(/^--?[a-z-]+:\s*/, '') : String(err);
      throw fail(lineAt(path), `${fieldPath(path)} ${msg}`);
    }
  };
  const checkSettings = (base: (string | number)[], s: Partial<MapSettings>): void => {
    for (const [k, v] of Object.entries(s) as [keyof MapSettings, unknown][])
      if (k in SETTING_FLAGS && (typeof v === 'string' || typeof v === 'number'))
        check([...base, k], k, k === 'targetCpu' ? String(v) : v);
  };
  checkSettings(['centre'], grid.centre);
  grid.heatmap.targetCpu.forEach((v, i) => check(['heatmap', 'targetCpu', i], 'targetCpu', String(v)));
  grid.heatmap.queriesPerSession.forEach((v, i) =>
    check(['heatmap', 'queriesPerSession', i], 'queriesPerSession', String(v)),
  );
  grid.heatmap.mix.forEach((v, i) => check(['heatmap', 'mix', i], 'mix', v));
  for (const key of ['reference', 'readings', 'borrow', 'clients'] as const)
    grid.sweeps[key]?.forEach((v, i) => check(['sweeps', key, i], key, v));
  grid.ablations.forEach((a, i) => checkSettings(['ablations', i], a));
  // The open model needs sessions per second: the cell's own, or the centre's.
  const open = (s: Partial<MapSettings>): boolean => s.model === 'open';
  const noRate = ' is missing (the open model needs sessions per second)';
  if (grid.centre.rate === undefined) {
    if (open(grid.centre) || grid.sweeps.model?.includes('open'))
      throw fail(lineAt(['centre']), `centre.rate${noRate}`);
    grid.ablations.forEach((a, i) => {
      if (open(a) && a.rate === undefined)
        throw fail(lineAt(['ablations', i]), `ablations[${i}].rate${noRate}`);
    });
  }
  const names = new Set<string>();
  grid.ablations.forEach((a, i) => {
    if (names.has(a.name))
      throw fail(lineAt(['ablations', i, 'name']), `ablations[${i}].name "${a.name}" is used twice`);
    names.add(a.name);
  });
  return grid;
}

export function loadMapGrid(path: string): MapGrid {
  const text = readUserFile(path, {
    code: 'BAD_INPUT',
    maxBytes: MAX_BYTES,
    flag: '--grid',
    hint: 'pass a grid file, e.g. plans/paper/map/quick.yaml',
  });
  return parseMapGrid(text, path);
}

const slug = (s: string): string =>
  s
    .toLowerCase()
    .replace(/[^a-z0-9.]+/g, '-')
    .replace(/^-|-$/g, '');

/** A cell's folder name: every setting, readable, so a cell is found again when the map resumes. */
export function cellId(s: MapSettings): string {
  const parts = [
    `cpu${Math.round(s.targetCpu * 100)}`,
    `q${s.queriesPerSession}`,
    `m${s.mix.replace(':', '-')}`,
    `ref${s.reference.replace(/:/g, '')}`,
    slug(s.readings),
    s.model,
    ...(s.model === 'open' && s.rate !== undefined ? [`rate${s.rate}`] : []),
    ...(s.borrow !== undefined ? [`borrow-${slug(s.borrow)}`] : []),
    ...(s.clients !== undefined ? [`t${s.clients}`] : []),
    ...(s.onFailure === 'leave' ? ['leave'] : []),
    ...(s.simCpu === 'pooled' ? ['pooled'] : []),
  ];
  return parts.join('_');
}

/**
 * A cell's settings without what says the default (T the grid's, clients that retry, per-replica
 * quotas): such a cell is the same cell as without it, and keeps its folder name.
 */
function withoutDefaults(s: MapSettings, clients: number): MapSettings {
  const { clients: t, onFailure, simCpu, ...rest } = s;
  return {
    ...rest,
    ...(t !== undefined && t !== clients ? { clients: t } : {}),
    ...(onFailure === 'leave' ? { onFailure } : {}),
    ...(simCpu === 'pooled' ? { simCpu } : {}),
  };
}

/** Every cell of the grid, each once (the centre is usually a heatmap cell too), heatmap first. */
export function expandGrid(grid: MapGrid): { cells: MapCell[]; centre: string } {
  const cells = new Map<string, MapCell>();
  const add = (kind: MapCell['kind'], label: string, given: MapSettings): string => {
    const settings = withoutDefaults(given, grid.clients);
    const id = cellId(settings);
    if (!cells.has(id)) cells.set(id, { id, kind, label, settings });
    return id;
  };
  const c = grid.centre;
  for (const mix of grid.heatmap.mix)
    for (const qps of grid.heatmap.queriesPerSession)
      for (const cpu of grid.heatmap.targetCpu)
        add('heatmap', 'heatmap', { ...c, targetCpu: cpu, queriesPerSession: qps, mix });
  const centre = add('sweep', 'centre', c);
  for (const v of grid.sweeps.reference ?? []) add('sweep', `reference=${v}`, { ...c, reference: v });
  for (const v of grid.sweeps.readings ?? []) add('sweep', `readings=${v}`, { ...c, readings: v });
  for (const v of grid.sweeps.model ?? []) add('sweep', `model=${v}`, { ...c, model: v });
  for (const v of grid.sweeps.borrow ?? []) add('sweep', `borrow=${v}`, { ...c, borrow: v });
  for (const v of grid.sweeps.clients ?? []) add('sweep', `clients=${v}`, { ...c, clients: v });
  for (const v of grid.sweeps.onFailure ?? []) add('sweep', `onFailure=${v}`, { ...c, onFailure: v });
  for (const v of grid.sweeps.simCpu ?? []) add('sweep', `simCpu=${v}`, { ...c, simCpu: v });
  for (const { name, ...change } of grid.ablations) add('ablation', name, { ...c, ...change });
  return { cells: [...cells.values()], centre };
}
