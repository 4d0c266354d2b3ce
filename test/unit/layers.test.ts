// The layer rules of .dependency-cruiser.cjs reject an upward import (what `npm run lint` runs).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');

function cruise(files: Record<string, string>): { status: number | null; out: string } {
  const dir = mkdtempSync(join(ROOT, '.layers-fixture-'));
  try {
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext' },
        include: ['src'],
      }),
    );
    for (const [name, text] of Object.entries(files)) {
      mkdirSync(join(dir, 'src', name, '..'), { recursive: true });
      writeFileSync(join(dir, 'src', name), text);
    }
    const r = spawnSync(
      process.execPath,
      [
        join(ROOT, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs'),
        'src',
        '--config',
        join(ROOT, '.dependency-cruiser.cjs'),
        '--output-type',
        'err',
      ],
      { cwd: dir, encoding: 'utf8' },
    );
    return { status: r.status, out: r.stdout + r.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('layers', () => {
  it('rejects an import from core up into the router', () => {
    const r = cruise({
      'core/word.ts': "import { x } from '../router/x.js';\nexport const y = x;\n",
      'router/x.ts': 'export const x = 1;\n',
    });
    expect(r.status).not.toBe(0);
    expect(r.out).toContain('layer-core');
  });

  it('accepts the same import pointing down', () => {
    const r = cruise({
      'router/x.ts': "import { y } from '../core/word.js';\nexport const x = y;\n",
      'core/word.ts': 'export const y = 1;\n',
    });
    expect(r.out).toContain('no dependency violations');
    expect(r.status).toBe(0);
  });
});
