// The fault plan's YAML nodes as the plan reader walks them: values, lines, durations and the
// keys of a mapping, each error `<file>:<line>: <field>: <what>`.
import { isScalar, Scalar } from 'yaml';
import type { Node as YamlNode, YAMLMap } from 'yaml';
import { PlbError } from '../core/errors.js';
import { parseDuration } from '../core/duration.js';
import type { YamlFile } from '../core/user-file.js';

/** Formats seconds for messages: 90 -> "90s", 0.5 -> "0.5s". */
export function fmtSeconds(s: number): string {
  return `${s}s`;
}

/** A value as a message shows it: nothing, a list, a mapping, "text", 42. */
export function describe(value: unknown): string {
  if (value === null || value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') return JSON.stringify(value);
  return String(value);
}

export class PlanNodes {
  constructor(readonly file: YamlFile) {}

  fail(line: number, field: string, msg: string): PlbError {
    // No hint: the message already says where and what; a hint would only lengthen the line.
    return this.file.fail(line, `${field}: ${msg}`);
  }

  lineOf(node: YamlNode | undefined | null): number {
    return this.file.lineOf(node);
  }

  resolve(node: YamlNode | undefined | null): YamlNode | undefined {
    return this.file.resolve(node);
  }

  value(node: YamlNode | undefined): unknown {
    return this.file.value(node);
  }

  /** Checks the keys of a mapping (strings, known) and returns key -> value node. */
  fields(map: YAMLMap, allowed: readonly string[], prefix: string): Map<string, YamlNode | undefined> {
    const out = new Map<string, YamlNode | undefined>();
    for (const pair of map.items) {
      const keyNode = pair.key as YamlNode | null;
      const key = isScalar(keyNode) ? keyNode.value : keyNode;
      if (typeof key !== 'string') {
        const line = keyNode ? this.file.lineOf(keyNode) : this.file.lineOf(map);
        throw this.fail(
          line,
          prefix ? prefix.slice(0, -1) : 'plan',
          `keys must be strings (got ${describe(key)})`,
        );
      }
      if (!allowed.includes(key)) {
        throw this.fail(
          this.file.lineOf(keyNode!),
          `${prefix}${key}`,
          `unknown field (allowed: ${allowed.join(', ')})`,
        );
      }
      // Flow `{at}` has no value node at all: stand in a null scalar at the key's position.
      let value = pair.value as YamlNode | null;
      if (!value) {
        const empty = new Scalar(null);
        empty.range = keyNode!.range;
        value = empty;
      }
      out.set(key, value);
    }
    return out;
  }
  duration(node: YamlNode | undefined, field: string, positive: boolean): number {
    const v = this.file.value(node);
    const d = parseDuration(v);
    if (d === undefined) {
      throw this.fail(
        this.file.lineOf(node),
        field,
        `must be a duration like 90, "90s", "2m", "1m30s" or "500ms" (got ${describe(v)})`,
      );
    }
    if (positive ? d <= 0 : d < 0) {
      throw this.fail(
        this.file.lineOf(node),
        field,
        `must be ${positive ? '> 0' : '>= 0'} (got ${describe(v)})`,
      );
    }
    return d;
  }
}
