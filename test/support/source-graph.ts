// Reads the import graph of src/ and checks the architecture's rules against it. The checks are
// plain functions over a `SourceFile[]`, so the architecture test can also show each of them
// failing on a small broken graph.
import { readdirSync, readFileSync } from 'node:fs';
import { join, posix, relative, sep } from 'node:path';
import ts from 'typescript';

/** One file under src/, with paths relative to src/ in POSIX form (`engine/saga.ts`). */
export interface SourceFile {
  path: string;
  lines: number;
  /** The src files it imports, re-exports or loads (type-only imports included). */
  imports: string[];
  /** Packages it imports (`@nestjs/common`, `node:crypto`...). */
  packages: string[];
  /** Names it imports, by the src file they come from. */
  names: Map<string, string[]>;
  /** Calls `<something named *store>.<method>(...)`: `[receiver, method]`. */
  storeCalls: Array<[string, string]>;
}

/** Parses every `.ts` file under `root`. `storeMethods` are the names calls are looked for. */
export function readSources(root: string, storeMethods: ReadonlySet<string>): SourceFile[] {
  const paths = walk(root).map((file) => relative(root, file).split(sep).join('/'));
  const known = new Set(paths);
  return paths.map((path) => parseSource(path, readFileSync(join(root, path), 'utf8'), known, storeMethods));
}

/** Parses one file's text; `known` are the paths relative specifiers may resolve to. */
export function parseSource(
  path: string,
  text: string,
  known: ReadonlySet<string>,
  storeMethods: ReadonlySet<string> = new Set(),
): SourceFile {
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const file: SourceFile = {
    path,
    lines: text.split('\n').length - (text.endsWith('\n') ? 1 : 0),
    imports: [],
    packages: [],
    names: new Map(),
    storeCalls: [],
  };
  const add = (specifier: string, names: string[] = []) => {
    if (!specifier.startsWith('.')) {
      file.packages.push(specifier);
      return;
    }
    const target = resolveSpecifier(path, specifier, known);
    if (!target) throw new Error(`${path}: cannot resolve "${specifier}" to a file under src/.`);
    if (!file.imports.includes(target)) file.imports.push(target);
    file.names.set(target, [...(file.names.get(target) ?? []), ...names]);
  };
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      add(node.moduleSpecifier.text, importedNames(node));
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [arg] = node.arguments;
      if (arg && ts.isStringLiteral(arg)) add(arg.text);
    } else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    ) {
      add(node.argument.literal.text);
    } else if (
      ts.isCallExpression(node) &&
      ts.isPropertyAccessExpression(node.expression) &&
      storeMethods.has(node.expression.name.text)
    ) {
      const receiver = node.expression.expression.getText(source);
      if (/store\??$/i.test(receiver)) file.storeCalls.push([receiver, node.expression.name.text]);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return file;
}

/** The member names of the interface `name` declared in `text`. */
export function interfaceMembers(text: string, name: string): Set<string> {
  const source = ts.createSourceFile('interface.ts', text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const members = new Set<string>();
  const visit = (node: ts.Node): void => {
    if (ts.isInterfaceDeclaration(node) && node.name.text === name) {
      for (const member of node.members) if (member.name && ts.isIdentifier(member.name)) members.add(member.name.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return members;
}

/** Every import cycle, each as the files on it in import order (Tarjan's strongly connected components). */
export function findCycles(files: readonly SourceFile[]): string[][] {
  const graph = new Map(files.map((f) => [f.path, f.imports]));
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  let counter = 0;
  const connect = (node: string): void => {
    index.set(node, counter);
    low.set(node, counter++);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        connect(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || (graph.get(node) ?? []).includes(node)) cycles.push(component.reverse());
  };
  for (const file of files) if (!index.has(file.path)) connect(file.path);
  return cycles;
}

/** The top-level folder of a path under src/ (`engine/saga.ts` -> `engine`); a file at the root is its own. */
export function topFolder(path: string): string {
  const slash = path.indexOf('/');
  return slash === -1 ? path : path.slice(0, slash);
}

/** Cycles between the top-level folders of src/: the file graph collapsed to one node per folder. */
export function findFolderCycles(files: readonly SourceFile[]): string[][] {
  const edges = new Map<string, Set<string>>();
  for (const file of files) {
    const from = topFolder(file.path);
    const targets = edges.get(from) ?? new Set<string>();
    for (const target of file.imports) if (topFolder(target) !== from) targets.add(topFolder(target));
    edges.set(from, targets);
  }
  return findCycles([...edges].map(([path, targets]) => ({ ...emptySource(path), imports: [...targets] })));
}

/** `from -> to` for every import of a file under folder `from` from a file under folder `to`. */
export function folderImports(files: readonly SourceFile[], from: string, to: string): string[] {
  return files.flatMap((f) =>
    f.path.startsWith(`${from}/`)
      ? f.imports.filter((i) => i.startsWith(`${to}/`)).map((i) => `${f.path} -> ${i}`)
      : [],
  );
}

/**
 * Files that must stay framework-free (`isCore`) and import `@nestjs/*`, directly or through any
 * src file they import: `file -> ... -> offender (package)`.
 */
export function frameworkLeaks(files: readonly SourceFile[], isCore: (path: string) => boolean): string[] {
  return packageLeaks(files, isCore, (name) => name.startsWith('@nestjs/'));
}

/**
 * Files `isFrom` selects that import a package `isBanned` names, directly or through any src file
 * they import: `file -> ... -> offender (package)`, the shortest such path for each file.
 */
export function packageLeaks(
  files: readonly SourceFile[],
  isFrom: (path: string) => boolean,
  isBanned: (name: string) => boolean,
): string[] {
  const byPath = new Map(files.map((f) => [f.path, f]));
  const leaks: string[] = [];
  for (const start of files.filter((f) => isFrom(f.path))) {
    const seen = new Map<string, string[]>([[start.path, [start.path]]]);
    const queue = [start.path];
    while (queue.length > 0) {
      const path = queue.shift()!;
      const file = byPath.get(path)!;
      const banned = file.packages.find(isBanned);
      if (banned) {
        leaks.push(`${seen.get(path)!.join(' -> ')} (${banned})`);
        break;
      }
      for (const next of file.imports) {
        if (seen.has(next)) continue;
        seen.set(next, [...seen.get(path)!, next]);
        queue.push(next);
      }
    }
  }
  return leaks;
}

/** `file (package)` for each import of a package `isBanned` names by a file `isFrom` selects. */
export function packageImports(
  files: readonly SourceFile[],
  isFrom: (path: string) => boolean,
  isBanned: (name: string) => boolean,
): string[] {
  return files
    .filter((f) => isFrom(f.path))
    .flatMap((f) => f.packages.filter(isBanned).map((name) => `${f.path} (${name})`));
}

export interface StoreAccessRules {
  /** Files that may use stores directly (the storage layer, the stores, the contract suite). */
  insider(path: string): boolean;
  /** A store class or an internal of one: what outsiders must not import. */
  storeInternal(path: string): boolean;
  /** Outsiders that may name the `WorkflowStore` interface (to take a store as an option, never to call it). */
  mayNameInterface(path: string): boolean;
}

/** Outsiders that import a store's class or internals, name the `WorkflowStore` interface, or call a store method. */
export function storeAccess(files: readonly SourceFile[], rules: StoreAccessRules): string[] {
  const found: string[] = [];
  for (const file of files) {
    if (rules.insider(file.path)) continue;
    for (const target of file.imports) if (rules.storeInternal(target)) found.push(`${file.path} imports ${target}`);
    if (!rules.mayNameInterface(file.path)) {
      for (const [target, names] of file.names)
        if (names.includes('WorkflowStore')) found.push(`${file.path} imports WorkflowStore from ${target}`);
    }
    for (const [receiver, method] of file.storeCalls) found.push(`${file.path} calls ${receiver}.${method}()`);
  }
  return found;
}

/** What the import graph knows of a path it has no text for. */
function emptySource(path: string): SourceFile {
  return { path, lines: 0, imports: [], packages: [], names: new Map(), storeCalls: [] };
}

function importedNames(node: ts.ImportDeclaration | ts.ExportDeclaration): string[] {
  if (ts.isExportDeclaration(node)) {
    return node.exportClause && ts.isNamedExports(node.exportClause)
      ? node.exportClause.elements.map((e) => (e.propertyName ?? e.name).text)
      : ['*'];
  }
  const clause = node.importClause;
  if (!clause) return [];
  const names: string[] = [];
  if (clause.name) names.push('default');
  if (clause.namedBindings && ts.isNamedImports(clause.namedBindings)) {
    for (const e of clause.namedBindings.elements) names.push((e.propertyName ?? e.name).text);
  } else if (clause.namedBindings) {
    names.push('*');
  }
  return names;
}

function resolveSpecifier(from: string, specifier: string, known: ReadonlySet<string>): string | null {
  const base = posix.normalize(posix.join(posix.dirname(from), specifier));
  const stem = base.replace(/\.(js|ts|mjs|cjs)$/, '');
  for (const candidate of [`${stem}.ts`, `${base}/index.ts`, `${stem}/index.ts`])
    if (known.has(candidate)) return candidate;
  return null;
}

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) return walk(full);
    return entry.isFile() && entry.name.endsWith('.ts') ? [full] : [];
  });
}
