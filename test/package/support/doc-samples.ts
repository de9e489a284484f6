// The TypeScript samples of README.md and every docs/**/*.md, found by their fences, so a page
// another change adds is checked without anyone registering it. A block fenced ```ts (or
// ```typescript) is a sample; ```ts not-compiled opts one out (a signature shown for reading).
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

export interface DocSample {
  /** The page, relative to the repository (`docs/client.md`). */
  page: string;
  /** The page's line of the sample's first code line (1-based). */
  line: number;
  code: string;
}

function pages(root: string): string[] {
  const found = [join(root, 'README.md')];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      if (entry.isDirectory()) walk(join(dir, entry.name));
      else if (entry.name.endsWith('.md')) found.push(join(dir, entry.name));
    }
  };
  walk(join(root, 'docs'));
  return found;
}

/** A fenced block of a page, with its info string (`ts`, `js`, `ts not-compiled`...). */
export interface CodeBlock extends DocSample {
  info: string;
}

/** Every fenced block of one page. */
export function codeBlocks(root: string, page: string): CodeBlock[] {
  const blocks: CodeBlock[] = [];
  const lines = readFileSync(join(root, page), 'utf8').split('\n');
  let open: { line: number; body: string[]; info: string } | null = null;
  lines.forEach((text, index) => {
    const fence = /^\s*(?:`{3,}|~{3,})\s*(.*)$/.exec(text);
    if (!fence) {
      open?.body.push(text);
    } else if (!open) {
      open = { line: index + 2, body: [], info: fence[1]!.trim() };
    } else if (fence[1]!.trim() === '') {
      blocks.push({ page, line: open.line, code: open.body.join('\n'), info: open.info });
      open = null;
    } else {
      open.body.push(text);
    }
  });
  if (open)
    throw new Error(`${page}: a code fence opened at line ${(open as { line: number }).line - 1} is never closed.`);
  return blocks;
}

/** Every TypeScript sample of README.md and docs/, in page order. */
export function docSamples(root: string): DocSample[] {
  return pages(root)
    .flatMap((path) => codeBlocks(root, relative(root, path)))
    .filter((block) => /^(ts|typescript)\b/.test(block.info) && !/\bnot-compiled\b/.test(block.info))
    .map(({ page, line, code }) => ({ page, line, code }));
}

/** A file name for a sample: `docs-client-md-L42.ts`. */
export function sampleFile(sample: DocSample): string {
  return `${sample.page.replace(/[^\w]+/g, '-')}-L${sample.line}.ts`;
}
