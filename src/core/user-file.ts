/**
 * The one reader of the files a user writes (fault plans, workload files, cluster files): read with
 * a size limit, parsed as YAML with line numbers, checked by a zod schema. Every error is one
 * PlbError whose message reads `<file>:<line>: <field> <what is wrong>`.
 */
import { readFileSync, statSync } from 'node:fs';
import { isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument } from 'yaml';
import type { Document, Node as YamlNode } from 'yaml';
import type { z } from 'zod';
import { PlbError, type PlbErrorCode } from './errors.js';
import { escapeControl } from './text.js';
import { reportFirstIssue, type IssueReporter } from './zod-issue.js';

export interface ReadUserFileOptions {
  code: PlbErrorCode;
  maxBytes: number;
  /** The flag that named the file: errors start `<flag>: <path>`. */
  flag?: string;
  /** What the file is, for "cannot read <noun>". */
  noun?: string;
  /** Shown when the file cannot be read. */
  hint?: string;
}

function sizeText(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${bytes / 1024 / 1024} MiB` : `${bytes / 1024} KiB`;
}

/** The text of a user's file: a regular file, at most maxBytes (checked before reading). */
export function readUserFile(path: string, o: ReadUserFileOptions): string {
  const where = o.flag !== undefined ? `${o.flag}: ${escapeControl(path)}` : escapeControl(path);
  const cannot = (why: string, cause: unknown) =>
    new PlbError(o.code, `${where}: cannot read${o.noun ? ` ${o.noun}` : ''} (${why})`, {
      ...(o.hint !== undefined ? { hint: o.hint } : {}),
      cause,
    });
  let size: number;
  try {
    const st = statSync(path);
    if (st.isDirectory()) throw cannot('is a directory', undefined);
    if (!st.isFile()) throw new PlbError(o.code, `${where}: not a regular file`);
    size = st.size;
  } catch (err) {
    if (err instanceof PlbError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    throw cannot(code === 'ENOENT' ? 'no such file' : String(code ?? err), err);
  }
  // A huge file is never read whole.
  if (size > o.maxBytes)
    throw new PlbError(
      o.code,
      `${where}: size: at most ${o.maxBytes} bytes (${sizeText(o.maxBytes)}), got ${size}`,
    );
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw cannot(String((err as NodeJS.ErrnoException).code ?? err), err);
  }
}

/** A parsed YAML file: its nodes, their lines, and errors naming the file and the line. */
export class YamlFile {
  readonly doc: Document.Parsed;
  private readonly lc = new LineCounter();

  constructor(
    text: string,
    readonly source: string,
    readonly code: PlbErrorCode,
  ) {
    this.doc = parseDocument(text, { lineCounter: this.lc, prettyErrors: false });
    const syntax = this.doc.errors[0];
    if (syntax) {
      const line = syntax.linePos?.[0].line ?? this.lc.linePos(syntax.pos[0]).line;
      // The yaml message may carry " at line X, column Y:" and a code frame; keep the first sentence.
      const msg = syntax.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
      throw this.fail(line, `yaml: ${msg}`);
    }
  }

  /** `<file>:<line>: <text>`. */
  fail(line: number, text: string, hint?: string): PlbError {
    return new PlbError(this.code, `${escapeControl(this.source)}:${line}: ${text}`, {
      ...(hint !== undefined ? { hint } : {}),
    });
  }

  get root(): YamlNode | undefined {
    return (this.doc.contents as YamlNode | null) ?? undefined;
  }

  /** 1-based line where a node starts (1 without one). */
  lineOf(node: YamlNode | undefined | null): number {
    const start = node?.range?.[0];
    return start === undefined ? 1 : this.lc.linePos(start).line;
  }

  /** The node an alias points to (an unknown alias is an error at its line). */
  resolve(node: YamlNode | undefined | null): YamlNode | undefined {
    if (node === undefined || node === null) return undefined;
    if (isAlias(node)) {
      const target = node.resolve(this.doc);
      if (!target) throw this.fail(this.lineOf(node), `yaml: unknown alias *${node.source}`);
      return target as YamlNode;
    }
    return node;
  }

  /** The plain value of a node (a scalar's value, or the JS form of a collection). */
  value(node: YamlNode | undefined): unknown {
    const n = this.resolve(node);
    if (n === undefined) return undefined;
    return isScalar(n) ? n.value : n.toJSON();
  }

  /** The whole document as plain JS, aliases resolved. */
  toJS(): unknown {
    try {
      return this.doc.toJS();
    } catch (err) {
      let bad: YamlNode | undefined;
      const walk = (n: unknown): void => {
        if (bad || n === null || typeof n !== 'object') return;
        if (isAlias(n)) {
          if (!n.resolve(this.doc)) bad = n;
        } else if (isMap(n)) n.items.forEach((p) => (walk(p.key), walk(p.value)));
        else if (isSeq(n)) n.items.forEach(walk);
      };
      walk(this.doc.contents);
      if (bad) this.resolve(bad);
      throw this.fail(1, `yaml: ${(err as Error).message}`);
    }
  }

  /**
   * The line of the field at `path`: of its value (`of: 'key'`: of its key), or, for a field that
   * is not there, of the nearest enclosing one that is.
   */
  lineAt(path: readonly PropertyKey[], of: 'key' | 'value' = 'value'): number {
    let node = this.resolve(this.root);
    let line = this.lineOf(node);
    for (const k of path) {
      if (isMap(node)) {
        const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === String(k));
        if (!pair) return line;
        const value = this.resolve(pair.value as YamlNode | null);
        const keyLine = this.lineOf(pair.key as YamlNode);
        line = of === 'key' || value === undefined ? keyLine : this.lineOf(value);
        node = value;
      } else if (isSeq(node) && typeof k === 'number') {
        const item = this.resolve(node.items[k] as YamlNode | undefined);
        if (item === undefined) return line;
        line = this.lineOf(item);
        node = item;
      } else return line;
    }
    return line;
  }

  /**
   * The first mapping key that is not a string (`1: x`, `true: y`), with the path of its mapping:
   * the JS form would turn it into a string, so a reader that wants to refuse it asks first.
   */
  nonStringKey(): { path: PropertyKey[]; key: unknown; line: number } | undefined {
    const walk = (node: unknown, path: PropertyKey[]): ReturnType<YamlFile['nonStringKey']> => {
      if (isMap(node)) {
        for (const pair of node.items) {
          const key = pair.key as YamlNode | null;
          const value: unknown = isScalar(key) ? key.value : key;
          if (typeof value !== 'string') return { path, key: value, line: this.lineOf(key ?? node) };
          const found = walk(pair.value, [...path, value]);
          if (found) return found;
        }
      } else if (isSeq(node)) {
        for (const [i, item] of node.items.entries()) {
          const found = walk(item, [...path, i]);
          if (found) return found;
        }
      }
      return undefined;
    };
    return walk(this.root, []);
  }

  /**
   * The document checked by `schema`; `report` says which issue is the error, in what words and at
   * which field's line (by default the first issue, at its field; an unknown field: at its key).
   */
  check<S extends z.ZodType>(
    schema: S,
    hint?: string,
    report: IssueReporter = reportFirstIssue,
  ): z.output<S> {
    const value = this.toJS();
    const r = schema.safeParse(value);
    if (r.success) return r.data;
    const at = report(r.error, value);
    throw this.fail(this.lineAt(at.path, at.of), at.text, at.hint ?? hint);
  }
}
