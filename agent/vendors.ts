// MAC vendors from the IEEE registries (the oui-data package: MA-L 24-bit, MA-M 28-bit and MA-S
// 36-bit blocks, as JSON keyed by hex prefix). Chosen over Debian's ieee-data: it ships with npm
// (the single-file agent carries it), holds all three block sizes in one file, and needs no apt.
// A locally administered MAC (bit 0x02 of the first octet: random, virtual) has no vendor.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { isRandomMac } from './scan/neighbours.js';

export type OuiTable = Record<string, string>;

let loaded: Promise<OuiTable> | null = null;

/**
 * The registry, read once on first use (5.6 MB: not at start-up, and not at all when no MAC is
 * seen). Read and parsed directly: 70 ms and ~70 MB here, where importing it as a module through
 * tsx took 1.2 s and 350 MB.
 */
export function ouiTable(): Promise<OuiTable> {
  loaded ??= readFile(createRequire(import.meta.url).resolve('oui-data'), 'utf8').then((text) => JSON.parse(text) as OuiTable);
  return loaded;
}

export interface MacFacts {
  vendor: string | null;
  random: boolean;
}

/** The organisation's name (first line of the registry's entry), longest block first; null when unknown or random. */
export function vendorOf(table: OuiTable, mac: string): MacFacts {
  const hex = mac.replace(/[^0-9a-f]/gi, '').toUpperCase();
  if (hex.length !== 12) return { vendor: null, random: false };
  if (isRandomMac(mac)) return { vendor: null, random: true };
  for (const len of [9, 7, 6]) {
    const entry = table[hex.slice(0, len)];
    if (entry) return { vendor: entry.split('\n')[0]!.trim().slice(0, 200) || null, random: false };
  }
  return { vendor: null, random: false };
}
