// GitHub's own workflow parser (@actions/workflow-parser: the schema, expressions, cron, job graph),
// then the few rules this project keeps that the schema allows.
import { convertWorkflowTemplate, NoOperationTraceWriter, parseWorkflow } from '@actions/workflow-parser';
import { parse } from 'yaml';

type Mapping = Record<string, unknown>;
const isMapping = (v: unknown): v is Mapping => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Problems found in one workflow file, each `name: message` (the parser's carry the line and column). */
export async function checkWorkflow(name: string, content: string): Promise<string[]> {
  const result = parseWorkflow({ name, content }, new NoOperationTraceWriter());
  // The conversion checks what the schema alone cannot (job graph, needs, matrix, expressions).
  if (result.value) await convertWorkflowTemplate(result.context, result.value);
  const parsed = result.context.errors.getErrors().map((e) => e.message);
  if (parsed.length > 0) return parsed;
  return projectRules(name, parse(content) as unknown);
}

/** What the parser accepts but this project's CI does not. */
function projectRules(name: string, wf: unknown): string[] {
  const problems: string[] = [];
  const bad = (msg: string) => problems.push(`${name}: ${msg}`);
  if (!isMapping(wf)) return [`${name}: not a mapping`];
  if (wf.permissions === undefined) bad('no top-level `permissions:` (the default token is too wide)');
  for (const [id, job] of Object.entries(isMapping(wf.jobs) ? wf.jobs : {})) {
    if (!isMapping(job) || job.uses !== undefined) continue; // a reusable workflow call has no steps
    const steps = Array.isArray(job.steps) ? (job.steps as unknown[]) : [];
    if (steps.length === 0) bad(`job ${id}: no steps`);
    steps.forEach((step, i) => {
      if (!isMapping(step)) return;
      const where = `job ${id} step ${String(step.name ?? step.uses ?? i + 1)}`;
      const uses = step.uses;
      if (
        typeof uses === 'string' &&
        !uses.startsWith('./') &&
        !uses.startsWith('docker://') &&
        !/@[\w.-]+$/.test(uses)
      )
        bad(`${where}: \`${uses}\` names no version`);
      if (
        typeof step.run === 'string' &&
        /chmod\s+(?:[0-7]*[2367]|[ao]?\+r?wx?)\s+\S*docker\.sock/.test(step.run)
      )
        bad(`${where}: opens the Docker socket to everyone; use the docker group`);
    });
  }
  return problems;
}
