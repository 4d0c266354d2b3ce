// Reading the command lines out of markdown: fenced blocks, their lines, and the `plb` invocations
// in a shell line. Used by test/unit/docs-commands.test.ts.

export interface DocLine {
  /** 1-based line in the file (the first line of a `\`-continued command). */
  line: number;
  text: string;
}

export interface DocBlock {
  /** The info string's first word: sh, console, text, yaml, ... ('' for none). */
  tag: string;
  line: number;
  lines: DocLine[];
}

/** Every fenced code block of a markdown text. */
export function fencedBlocks(markdown: string): DocBlock[] {
  const blocks: DocBlock[] = [];
  let open: { fence: string; block: DocBlock } | undefined;
  markdown.split('\n').forEach((raw, i) => {
    const m = /^ {0,3}(`{3,}|~{3,})\s*([\w-]*)/.exec(raw);
    if (open) {
      if (m && m[1]!.startsWith(open.fence) && raw.trim() === m[1]) {
        blocks.push(open.block);
        open = undefined;
      } else open.block.lines.push({ line: i + 1, text: raw });
    } else if (m) open = { fence: m[1]!, block: { tag: m[2] ?? '', line: i + 1, lines: [] } };
  });
  return blocks;
}

/** The commands of a shell block: `\` continuations joined, blanks and comment lines dropped. */
export function commandLines(block: DocBlock, prompt: boolean): DocLine[] {
  const out: DocLine[] = [];
  let pending: DocLine | undefined;
  for (const l of block.lines) {
    let text = pending ? l.text.trim() : l.text.trim();
    if (!pending && prompt) text = text.replace(/^\$ /, '');
    const cont = text.endsWith('\\');
    if (cont) text = text.slice(0, -1);
    pending = pending ? { line: pending.line, text: `${pending.text} ${text}` } : { line: l.line, text };
    if (cont) continue;
    if (pending.text !== '' && !pending.text.startsWith('#')) out.push(pending);
    pending = undefined;
  }
  if (pending && pending.text !== '') out.push(pending);
  return out;
}

const OPERATORS = ['&&', '||', '>>', '2>', ';', '|', '&', '>', '<', '$(', '(', ')'];

/**
 * Shell words of a line, quotes removed, split into the simple commands between operators
 * (&&, ||, ;, |, &, redirections, command substitution). A word inside quotes is never split.
 * A `#` starting a word ends the line.
 */
export function simpleCommands(line: string): string[][] {
  const commands: string[][] = [[]];
  let word: string | undefined;
  const end = () => {
    if (word !== undefined) commands[commands.length - 1]!.push(word);
    word = undefined;
  };
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === "'" || c === '"') {
      const close = line.indexOf(c, i + 1);
      const stop = close < 0 ? line.length : close;
      word = (word ?? '') + line.slice(i + 1, stop);
      i = stop;
      continue;
    }
    if (c === '\\' && i + 1 < line.length) {
      word = (word ?? '') + line[++i];
      continue;
    }
    if (/\s/.test(c)) {
      end();
      continue;
    }
    if (c === '#' && word === undefined) break;
    const op = OPERATORS.find((o) => line.startsWith(o, i));
    if (op) {
      end();
      commands.push([]);
      i += op.length - 1;
      continue;
    }
    word = (word ?? '') + c;
  }
  end();
  return commands.filter((c) => c.length > 0);
}

/** The arguments of every `plb ...` (or `node bin/run.js ...`) in a shell line. */
export function plbInvocations(line: string): string[][] {
  const out: string[][] = [];
  for (const words of simpleCommands(line)) {
    let i = 0;
    while (i < words.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[i]!)) i++; // VAR=value
    if (words[i] === 'plb') out.push(words.slice(i + 1));
    else if (words[i] === 'node' && words[i + 1] === 'bin/run.js') out.push(words.slice(i + 2));
  }
  return out;
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
export function headingSlug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of a markdown text's headings (outside code blocks), duplicates numbered as GitHub does. */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let inFence = false;
  for (const l of markdown.split('\n')) {
    if (/^ {0,3}(`{3,}|~{3,})/.test(l)) inFence = !inFence;
    const m = inFence ? null : /^#{1,6}\s+(.*)$/.exec(l);
    if (!m) continue;
    const base = headingSlug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** Relative links of a markdown text (outside code blocks and inline code), with their lines. */
export function relativeLinks(markdown: string): { line: number; target: string }[] {
  const out: { line: number; target: string }[] = [];
  let inFence = false;
  markdown.split('\n').forEach((l, i) => {
    if (/^ {0,3}(`{3,}|~{3,})/.test(l)) inFence = !inFence;
    if (inFence) return;
    for (const m of l.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1]!;
      if (!/^[a-z]+:/i.test(target)) out.push({ line: i + 1, target });
    }
  });
  return out;
}
