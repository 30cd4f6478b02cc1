// SNMP values as the agent stores them: texts, MACs "AA:BB:CC:DD:EE:FF", addresses, numbers.

export function macFrom(value: unknown): string | null {
  if (!Buffer.isBuffer(value) || value.length !== 6 || value.every((b) => b === 0)) return null;
  return [...value].map((b) => b.toString(16).padStart(2, '0').toUpperCase()).join(':');
}

export function macFromIndex(parts: number[]): string | null {
  return parts.length === 6 && parts.every((p) => p >= 0 && p <= 255) ? macFrom(Buffer.from(parts)) : null;
}

/** An OctetString as text when printable, else hex pairs; null when empty. Trailing NULs dropped. */
export function textFrom(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (!Buffer.isBuffer(value)) return String(value);
  const trimmed = value.subarray(0, value.length - [...value].reverse().findIndex((b) => b !== 0));
  if (!trimmed.length || value.every((b) => b === 0)) return null;
  const printable = trimmed.every((b) => (b >= 0x20 && b < 0x7f) || b === 0x0a || b === 0x0d || b === 0x09);
  return printable ? trimmed.toString('utf8') : [...trimmed].map((b) => b.toString(16).padStart(2, '0')).join(':');
}

export function numberFrom(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

/**
 * An LLDP chassis or port id by its subtype: a MAC (chassis 4, port 3) as a MAC, a network address
 * (chassis 5, port 4: family octet then the address) as dotted IPv4, the rest as text.
 */
export function lldpId(subtype: number | null, value: unknown, macSubtype: number, addrSubtype: number): string | null {
  if (subtype === macSubtype) return macFrom(value) ?? textFrom(value);
  if (subtype === addrSubtype && Buffer.isBuffer(value) && value.length === 5 && value[0] === 1) return [...value.subarray(1)].join('.');
  return textFrom(value);
}

export const ADMIN = { 1: 'Up', 2: 'Down', 3: 'Testing' } as const;
export const OPER = { 1: 'Up', 2: 'Down', 3: 'Testing', 4: 'Unknown', 5: 'Dormant', 6: 'NotPresent', 7: 'LowerLayerDown' } as const;
