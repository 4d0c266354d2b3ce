import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  files: string[];
  engines: { node: string };
  exports: Record<string, string | { types: string; import: string }>;
  bin: Record<string, string>;
  scripts: Record<string, string>;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  oclif: { plugins?: string[] };
};

/** The files src/router/index.ts reaches through its static imports (type-only ones too), and the package specifiers. */
function routerGraph(): { files: string[]; packages: string[] } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string): void => {
    if (files.has(file)) return;
    files.add(file);
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    for (const { fileName: spec } of importedFiles) {
      if (!spec.startsWith('.')) packages.add(spec);
      else visit(resolve(dirname(file), spec.replace(/\.js$/, '.ts')));
    }
  };
  visit(join(ROOT, 'src/router/index.ts'));
  return { files: [...files].map((f) => relative(ROOT, f)).sort(), packages: [...packages] };
}

/**
 * The URLs a fresh node process resolves while importing `entry`: a resolve hook (registered
 * before the import) reports every one on stderr.
 */
function resolvedUrls(entry: string, withTsx: boolean): string[] {
  const hook =
    'export async function resolve(s, c, next) { const r = await next(s, c); ' +
    'process.stderr.write("RESOLVED " + r.url + "\\n"); return r; }';
  const register =
    "import { register } from 'node:module'; " +
    `register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hook)}`)});`;
  const args = [
    ...(withTsx ? ['--import', 'tsx'] : []),
    '--import',
    `data:text/javascript,${encodeURIComponent(register)}`,
    '--input-type=module',
    '-e',
    `await import(${JSON.stringify(entry)});`,
  ];
  const r = spawnSync(process.execPath, args, { cwd: ROOT, encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  return r.stderr
    .split('\n')
    .filter((l) => l.startsWith('RESOLVED '))
    .map((l) => l.slice('RESOLVED '.length));
}

describe('plb/router', () => {
  it('reaches no package: only src/router and the error type', () => {
    const g = routerGraph();
    expect(g.packages).toEqual([]);
    const outside = g.files.filter((f) => !f.startsWith('src/router/'));
    // PlbError (and the escaping its messages use) is the one error type of the library; the
    // service classes are core's shared words (the strategy registry is the router's own).
    expect(outside.sort()).toEqual(['src/core/errors.ts', 'src/core/service-class.ts', 'src/core/text.ts']);
  });

  it('loads nothing from node_modules in a fresh process (so neither pg, dockerode nor vega)', () => {
    const urls = resolvedUrls('./src/router/index.ts', true);
    expect(urls.some((u) => u.endsWith('/src/router/index.ts'))).toBe(true);
    expect(urls.filter((u) => u.includes('/node_modules/') || !u.startsWith('file:'))).toEqual([]);
  });

  it('is exported as a subpath mirroring src/router/index.ts', () => {
    expect(pkg.exports['./router']).toEqual({
      types: './dist/router/index.d.ts',
      import: './dist/router/index.js',
    });
  });

  // After `npm run build` (CI builds before the tests): the package resolves itself by name.
  it.runIf(existsSync(join(ROOT, 'dist/router/index.js')))(
    'plb/router resolves to dist and loads no package',
    () => {
      const urls = resolvedUrls('plb/router', false);
      expect(urls[0]).toBe(`file://${join(ROOT, 'dist/router/index.js')}`);
      expect(urls.filter((u) => !u.startsWith(`file://${join(ROOT, 'dist')}/`))).toEqual([]);
    },
  );
});

describe('the npm package', () => {
  it('ships the entry point, not the development runner', () => {
    expect(pkg.bin).toEqual({ plb: './bin/run.js' });
    expect(pkg.files).toContain('bin/run.js');
    expect(pkg.files).not.toContain('bin');
    expect(pkg.files.some((f) => f.includes('dev'))).toBe(false);
  });

  it('ships no source maps pointing at sources it does not ship', () => {
    const build = ts.readConfigFile(join(ROOT, 'tsconfig.build.json'), ts.sys.readFile).config as {
      compilerOptions: Record<string, unknown>;
    };
    expect(build.compilerOptions.sourceMap).toBe(false);
    expect(build.compilerOptions.declarationMap ?? false).toBe(false);
    expect(pkg.files).not.toContain('src');
  });

  it('admits Node 20, 22 and 24 and has a license file', () => {
    expect(pkg.engines.node).toBe('>=20.10 <25');
    expect(readFileSync(join(ROOT, 'LICENSE'), 'utf8')).toMatch(
      /^MIT License\n\nCopyright \(c\) \d{4} the plb authors\n/,
    );
  });
});

describe('oclif', () => {
  it('loads its plugins from dependencies pinned to exact versions', () => {
    expect(pkg.oclif.plugins).toEqual([
      '@oclif/plugin-help',
      '@oclif/plugin-autocomplete',
      '@oclif/plugin-not-found',
    ]);
    for (const p of pkg.oclif.plugins ?? []) expect(pkg.dependencies[p]).toMatch(/^\d+\.\d+\.\d+$/);
    expect(pkg.devDependencies.oclif).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('packs a manifest and a command reference (docs/commands.md) made at prepack, and no stale manifest', () => {
    expect(pkg.scripts.prepack).toBe(
      'npm run build 1>&2 && oclif manifest 1>&2 && npm run docs:commands 1>&2',
    );
    expect(pkg.scripts['docs:commands']).toBe('oclif readme --readme-path docs/commands.md --no-aliases');
    expect(pkg.scripts.postpack).toContain('oclif.manifest.json');
    expect(pkg.files).toContain('oclif.manifest.json');
    // A manifest left in the tree would shadow the commands as built.
    expect(existsSync(join(ROOT, 'oclif.manifest.json'))).toBe(false);
    const readme = readFileSync(join(ROOT, 'docs', 'commands.md'), 'utf8');
    expect(readme.indexOf('<!-- commands -->')).toBeGreaterThan(0);
    expect(readme.indexOf('<!-- commandsstop -->')).toBeGreaterThan(readme.indexOf('<!-- commands -->'));
  });
});
