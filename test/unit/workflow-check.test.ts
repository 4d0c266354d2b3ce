import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

// scripts/check-workflows.ts runs under tsx (the parser's JSON import needs it), so the cases go
// through it as files, in one process.
const job = (steps: string) =>
  `on: push\npermissions: {}\njobs:\n  a:\n    runs-on: ubuntu-24.04\n    steps:\n${steps}`;
const cases: Record<string, string> = {
  unclosed: job('      - run: echo ${{ github.sha\n      - nme: x\n        run: y\n'),
  noOn: 'permissions: {}\njobs:\n  a:\n    runs-on: x\n    steps:\n      - run: x\n',
  noRunsOn: 'on: push\npermissions: {}\njobs:\n  a:\n    steps:\n      - run: x\n',
  cron: 'on:\n  schedule:\n    - cron: "99 * * *"\npermissions: {}\njobs:\n  a:\n    runs-on: x\n    steps:\n      - run: x\n',
  context: job('      - run: echo ${{ nosuch.x }}\n'),
  noPermissions: 'on: push\njobs:\n  a:\n    runs-on: x\n    steps:\n      - run: x\n',
  noSteps: 'on: push\npermissions: {}\njobs:\n  a:\n    runs-on: x\n',
  noVersion: job('      - uses: actions/checkout\n'),
  worldSocket: job('      - run: sudo chmod 666 /var/run/docker.sock\n'),
  groupSocket: job('      - run: sudo chmod 660 /var/run/docker.sock\n'),
  localAction: job('      - uses: ./.github/actions/x\n      - uses: actions/checkout@v6\n'),
};
const dir = mkdtempSync(join(tmpdir(), 'plb-wf-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const files = Object.keys(cases).map((k) => {
  writeFileSync(join(dir, `${k}.yml`), cases[k]!);
  return join(dir, `${k}.yml`);
});
const tsx = join('node_modules', '.bin', 'tsx');
const run = (args: string[]) => spawnSync(tsx, ['scripts/check-workflows.ts', ...args], { encoding: 'utf8' });
const all = run(files);
const problems = (k: string) =>
  all.stderr
    .split('\n')
    .filter((l) => l.startsWith(join(dir, `${k}.yml`)))
    .map((l) => l.slice(join(dir, `${k}.yml`).length));

describe('workflow check (npm run lint)', () => {
  it('passes ci.yml and nightly.yml', () => {
    const r = run([]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain('2 workflow(s) checked by @actions/workflow-parser, 0 problem(s)');
    expect(r.status).toBe(0);
  });

  it('fails with every problem, each with its file', () => {
    expect(all.status).toBe(1);
    expect(all.stdout).toContain(
      `${files.length} workflow(s) checked by @actions/workflow-parser, 10 problem(s)`,
    );
  });

  it('reports the parser errors with line and column', () => {
    expect(problems('unclosed')).toEqual([
      expect.stringMatching(/^ \(Line: 7, Col: \d+\): The expression is not closed/),
      expect.stringMatching(/^ \(Line: 8, Col: \d+\): Unexpected value 'nme'/),
    ]);
    expect(problems('noOn')).toEqual([expect.stringContaining('Required property is missing: on')]);
    expect(problems('noRunsOn')).toEqual([expect.stringContaining('Required property is missing: runs-on')]);
    expect(problems('cron')).toEqual([expect.stringContaining('Invalid cron expression')]);
    expect(problems('context')).toEqual([expect.stringContaining("Unrecognized named-value: 'nosuch'")]);
  });

  it('keeps the project rules the schema allows', () => {
    expect(problems('noPermissions')).toEqual([
      ': no top-level `permissions:` (the default token is too wide)',
    ]);
    expect(problems('noSteps')).toEqual([': job a: no steps']);
    expect(problems('noVersion')).toEqual([
      ': job a step actions/checkout: `actions/checkout` names no version',
    ]);
    expect(problems('worldSocket')).toEqual([
      ': job a step 1: opens the Docker socket to everyone; use the docker group',
    ]);
    expect(problems('groupSocket')).toEqual([]);
    expect(problems('localAction')).toEqual([]);
  });
});
