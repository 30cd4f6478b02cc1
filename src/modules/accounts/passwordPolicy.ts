// Which passwords are refused, after NIST SP 800-63B §3.1.1.2: long enough (10 characters, decisions
// §2, above NIST's minimum of 8), not on a list of passwords known from breaches (zxcvbn-ts's common
// list, about 49,000 of them), not trivial (one character repeated, a plain run such as
// "1234567890" or "abcdefghij"), and not the account's own email or its name part. No composition
// rules (NIST advises against them), at most 200 characters, any characters.
import { createRequire } from 'node:module';

let common: Set<string> | undefined;
/** Loaded at the first check, not at startup: decompressing the list takes ~70 ms. */
function commonPasswords(): Set<string> {
  if (!common) {
    const { dictionary } = createRequire(import.meta.url)('@zxcvbn-ts/language-common') as { dictionary: Record<string, string[]> };
    common = new Set(dictionary['passwords-common']!.map((p) => p.toLowerCase()));
  }
  return common;
}

const SEQUENCES = ['0123456789', '9876543210', 'abcdefghijklmnopqrstuvwxyz', 'zyxwvutsrqponmlkjihgfedcba', 'qwertyuiopasdfghjklzxcvbnm'];

export type PasswordProblem = 'common' | 'trivial' | 'contains_email';

/** Why a password is refused, or undefined when it is acceptable (length is checked by the schema). */
export function passwordProblem(password: string, email?: string): PasswordProblem | undefined {
  const p = password.toLowerCase();
  if (new Set(p).size === 1) return 'trivial';
  if (SEQUENCES.some((s) => (s + s).includes(p))) return 'trivial';
  if (commonPasswords().has(p)) return 'common';
  if (email) {
    const address = email.trim().toLowerCase();
    const name = address.split('@')[0]!.replace(/[^a-z0-9]/g, '');
    // The name part counts when it is long enough to be the bulk of a 10-character password.
    if (p.includes(address) || (name.length >= 4 && p.replace(/[^a-z0-9]/g, '').includes(name))) return 'contains_email';
  }
  return undefined;
}

export const PASSWORD_MESSAGES: Record<PasswordProblem, string> = {
  common: 'is one of the most common passwords: choose another',
  trivial: 'is a repeated character or a plain sequence: choose another',
  contains_email: 'contains your email address or its name: choose another',
};
