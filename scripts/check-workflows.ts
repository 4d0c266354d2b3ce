// Usage: tsx scripts/check-workflows.ts [file.yml ...] (default: every .github/workflows/*.yml).
// Run by `npm run lint`. tsx, not node: the parser imports its schema JSON without an import attribute.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { checkWorkflow } from './workflow-check.js';

const dir = join(import.meta.dirname, '..', '.github', 'workflows');
const files =
  process.argv.length > 2
    ? process.argv.slice(2)
    : readdirSync(dir)
        .filter((f) => /\.ya?ml$/.test(f))
        .map((f) => relative(process.cwd(), join(dir, f)));

let problems = 0;
for (const file of files) {
  for (const p of await checkWorkflow(file, readFileSync(file, 'utf8'))) {
    console.error(p);
    problems++;
  }
}
console.log(`${files.length} workflow(s) checked by @actions/workflow-parser, ${problems} problem(s)`);
process.exitCode = problems > 0 ? 1 : 0;
