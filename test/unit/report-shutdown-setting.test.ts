// --shutdown-sessions is a setting: runs with it on are never repeats of runs without it, and runs
// of older plb (no such field) are repeats of runs with it off, which the header leaves unsaid.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { aggregateRuns, settingsDiff } from '../../src/report/aggregate.js';
import { differLine, sharedLine } from '../../src/report/settings.js';
import { loadRun } from '../../src/metrics/store/load-run.js';
import type { RunConfig } from '../../src/run-format/config.js';

const FIXTURES = join(import.meta.dirname, '../fixtures/runs/demo-cascade');
const loaded = readdirSync(FIXTURES)
  .sort()
  .map((d) => loadRun(join(FIXTURES, d)));

const withConfigs = (edit: (runId: string, cfg: RunConfig) => RunConfig) => {
  const summaries = loaded.map((r) => r.summary);
  return aggregateRuns(summaries, {
    configs: new Map(summaries.map((s, i) => [s, edit(s.runId, structuredClone(loaded[i]!.config))])),
  });
};

describe('shutdown sessions as a setting', () => {
  it('off and absent are one setting, unsaid', () => {
    const groups = withConfigs((id, c) => (id.endsWith('-1') ? { ...c, shutdownSessions: false } : c));
    expect(groups.map((g) => g.runIds.length)).toEqual([3, 3, 3]);
    expect(sharedLine(settingsDiff(groups))).not.toMatch(/shutdown/);
    expect(groups[0]?.settings['shutdown sessions']).toBe('off');
  });

  it('on splits the groups and names itself', () => {
    const groups = withConfigs((id, c) => (id.endsWith('-1') ? { ...c, shutdownSessions: true } : c));
    expect(groups.map((g) => [g.strategy, g.runIds.length, g.settingsLabel])).toEqual([
      ['plb', 2, 'shutdown sessions off'],
      ['rr', 2, 'shutdown sessions off'],
      ['static', 2, 'shutdown sessions off'],
      ['plb', 1, 'shutdown sessions on'],
      ['rr', 1, 'shutdown sessions on'],
      ['static', 1, 'shutdown sessions on'],
    ]);
    expect(differLine(settingsDiff(groups))).toBe('groups differ in: shutdown sessions (off vs on)');
  });
});
