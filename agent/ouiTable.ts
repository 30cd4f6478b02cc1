// The OUI registry as the agent uses it: hex prefix (6, 7 or 9 digits) → organisation name. The
// oui-data package holds whole postal entries (5.6 MB of JSON); the agent only ever shows the first
// line, so the built agent carries this compact form instead (scripts/build.ts embeds it, brotli'd).
//
// The compact text: one line per organisation, its name, a tab, then its prefixes separated by
// spaces. Each name is written once (30,665 names for 53,730 prefixes): 1.1 MB before compression.

/** Prefix (upper-case hex) → organisation name. */
export type OuiTable = Record<string, string>;

/** The organisation: the first line of a registry entry, clipped as the server stores it (200). */
export const organisation = (entry: string): string => entry.split('\n')[0]!.trim().slice(0, 200);

/** The oui-data registry (prefix → postal entry) as compact text. */
export function compactOui(registry: Record<string, string>): string {
  const prefixesOf = new Map<string, string[]>();
  for (const prefix of Object.keys(registry).sort()) {
    const name = organisation(registry[prefix]!);
    // A tab or line break in a name would break the format; none has one (names are first lines, trimmed).
    if (!name || name.includes('\t')) continue;
    const list = prefixesOf.get(name);
    if (list) list.push(prefix);
    else prefixesOf.set(name, [prefix]);
  }
  return [...prefixesOf].map(([name, prefixes]) => `${name}\t${prefixes.join(' ')}`).join('\n');
}

/** The compact text back as a table (~25 ms for the whole registry). */
export function readCompactOui(text: string): OuiTable {
  const table: OuiTable = {};
  for (const line of text.split('\n')) {
    const tab = line.indexOf('\t');
    const name = line.slice(0, tab);
    for (const prefix of line.slice(tab + 1).split(' ')) table[prefix] = name;
  }
  return table;
}
