// MAC vendors from the IEEE registries (the oui-data package: MA-L 24-bit, MA-M 28-bit and MA-S
// 36-bit blocks, keyed by hex prefix). Chosen over Debian's ieee-data: it ships with npm (the built
// agent carries it, see ./ouiSource.ts), holds all three block sizes in one file, and needs no apt.
// A locally administered MAC (bit 0x02 of the first octet: random, virtual) has no vendor.
import { loadOuiTable } from './ouiSource.js';
import type { OuiTable } from './ouiTable.js';
import { isRandomMac } from './scan/neighbours.js';

export type { OuiTable } from './ouiTable.js';

let loaded: Promise<OuiTable> | null = null;

/** The registry, loaded once on first use: not at start-up, and not at all when no MAC is seen. */
export function ouiTable(): Promise<OuiTable> {
  loaded ??= loadOuiTable();
  return loaded;
}

export interface MacFacts {
  vendor: string | null;
  random: boolean;
}

/** The organisation's name, longest block first; null when unknown or random. */
export function vendorOf(table: OuiTable, mac: string): MacFacts {
  const hex = mac.replace(/[^0-9a-f]/gi, '').toUpperCase();
  if (hex.length !== 12) return { vendor: null, random: false };
  if (isRandomMac(mac)) return { vendor: null, random: true };
  for (const len of [9, 7, 6]) {
    const name = table[hex.slice(0, len)];
    if (name) return { vendor: name, random: false };
  }
  return { vendor: null, random: false };
}
