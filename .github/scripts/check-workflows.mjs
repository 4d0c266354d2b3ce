// Parses every workflow and checks the rules this project's CI keeps. Not actionlint (that needs a
// download); it catches YAML mistakes and the regressions the nightly was rewritten to remove.
// Usage: node .github/scripts/check-workflows.mjs [file.yml ...]
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseDocument } from 'yaml';

const dir = join(import.meta.dirname, '..', 'workflows');
const files =
  process.argv.length > 2
    ? process.argv.slice(2)
    : readdirSync(dir)
        .filter((f) => /\.ya?ml$/.test(f))
        .map((f) => join(dir, f));

const problems = [];
for (const file of files) {
  const text = readFileSync(file, 'utf8');
  const doc = parseDocument(text, { uniqueKeys: true });
  for (const e of doc.errors) problems.push(`${file}: ${e.message.split('\n')[0]}`);
  if (doc.errors.length > 0) continue;
  const wf = doc.toJS();
  const bad = (msg) => problems.push(`${file}: ${msg}`);
  if (!wf || typeof wf !== 'object') {
    bad('not a mapping');
    continue;
  }
  if (!wf.on) bad('no `on:` triggers');
  if (!wf.permissions) bad('no top-level `permissions:` (the default token is too wide)');
  if (!wf.jobs || Object.keys(wf.jobs).length === 0) bad('no jobs');
  for (const [id, job] of Object.entries(wf.jobs ?? {})) {
    if (job.uses) continue; // a reusable workflow call has no steps of its own
    if (!job['runs-on']) bad(`job ${id}: no runs-on`);
    if (!Array.isArray(job.steps) || job.steps.length === 0) bad(`job ${id}: no steps`);
    for (const [i, step] of (job.steps ?? []).entries()) {
      const where = `job ${id} step ${step.name ?? step.uses ?? i + 1}`;
      if ((step.run === undefined) === (step.uses === undefined)) bad(`${where}: needs exactly one of run, uses`);
      if (typeof step.uses === 'string' && !step.uses.startsWith('./') && !/@[\w.-]+$/.test(step.uses))
        bad(`${where}: \`${step.uses}\` names no version`);
      if (typeof step.run === 'string' && /chmod\s+[0-7]*6[0-7]*\s+\S*docker\.sock/.test(step.run))
        bad(`${where}: opens the Docker socket to everyone; use the docker group`);
      for (const [k, v] of Object.entries(step))
        if (typeof v === 'string' && v.replace(/\$\{\{[^]*?\}\}/g, '').includes('${{'))
          bad(`${where}: unclosed \${{ in ${k}`);
    }
  }
}
for (const p of problems) console.error(p);
console.log(`${files.length} workflow(s) checked, ${problems.length} problem(s)`);
process.exitCode = problems.length > 0 ? 1 : 0;
