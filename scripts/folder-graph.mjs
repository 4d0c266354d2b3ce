// Prints the folder-level import graph of src/ (type-only imports included) and its cycles.
// Usage: node scripts/folder-graph.mjs [--files]  (--files: list each cross-folder import)
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const root = resolve('src');
const showFiles = process.argv.includes('--files');

function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? walk(p) : p.endsWith('.ts') ? [p] : [];
  });
}

const folderOf = (file) => {
  const rel = relative(root, file).split('/');
  return rel.length === 1 ? '(top)' : rel[0];
};

const edges = new Map();
const detail = [];
for (const file of walk(root)) {
  const text = readFileSync(file, 'utf8');
  for (const m of text.matchAll(/(?:import|export)[^'";]*?from\s+'(\.[^']+)'|import\(\s*'(\.[^']+)'\s*\)/g)) {
    const spec = m[1] ?? m[2];
    const target = resolve(dirname(file), spec);
    if (!target.startsWith(root)) continue;
    const a = folderOf(file);
    const b = folderOf(target.replace(/\.js$/, '.ts'));
    if (a === b) continue;
    if (!edges.has(a)) edges.set(a, new Set());
    edges.get(a).add(b);
    detail.push(`${relative(root, file)} -> ${relative(root, target)}`);
  }
}

const folders = [...new Set([...edges.keys(), ...[...edges.values()].flatMap((s) => [...s])])].sort();
for (const f of folders) console.log(`${f.padEnd(10)} -> ${[...(edges.get(f) ?? [])].sort().join(', ')}`);

// Strongly connected components (Tarjan) = folders on a common cycle.
let index = 0;
const idx = new Map();
const low = new Map();
const stack = [];
const on = new Set();
const sccs = [];
function strong(v) {
  idx.set(v, index);
  low.set(v, index++);
  stack.push(v);
  on.add(v);
  for (const w of edges.get(v) ?? []) {
    if (!idx.has(w)) {
      strong(w);
      low.set(v, Math.min(low.get(v), low.get(w)));
    } else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
  }
  if (low.get(v) === idx.get(v)) {
    const c = [];
    let w;
    do {
      w = stack.pop();
      on.delete(w);
      c.push(w);
    } while (w !== v);
    if (c.length > 1) sccs.push(c.sort());
  }
}
for (const f of folders) if (!idx.has(f)) strong(f);
console.log(sccs.length === 0 ? 'cycles: none' : sccs.map((c) => `cycle (${c.length} folders): ${c.join(', ')}`).join('\n'));
if (showFiles) for (const d of detail.sort()) console.log(d);
