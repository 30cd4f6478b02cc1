// Where the agent's OUI table comes from. Here (the sources run through tsx): the oui-data package
// in node_modules, made compact on first use. The built agent has no node_modules: scripts/build.ts
// replaces this module with one that holds the compact table, compressed, in the bundle itself.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { compactOui, readCompactOui, type OuiTable } from './ouiTable.js';

/**
 * Read and parsed directly (70 ms and ~70 MB, where importing it as a module through tsx took 1.2 s
 * and 350 MB), then put through the compact form, so that development and the built agent see the
 * same table.
 */
export async function loadOuiTable(): Promise<OuiTable> {
  const registry = JSON.parse(await readFile(createRequire(import.meta.url).resolve('oui-data'), 'utf8')) as Record<string, string>;
  return readCompactOui(compactOui(registry));
}
