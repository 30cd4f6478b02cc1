// `npm run secrets -- new-key | status | rotate`: the keys that seal stored credentials
// (src/core/secretBox.ts; the procedure in docs/secrets.md), on the database of DATABASE_URL (or the
// project's own, as `npm start` chooses it) with the keys of SECRETS_KEY / SECRETS_KEY_FILE.
import { loadConfig } from '../src/config.js';
import { Db, migrate } from '../src/core/db.js';
import { loadSecretKeys, newSecretKeyText, sealedStatus, sealStoredSecrets, useSecretKeys } from '../src/core/secretBox.js';
import { createOrm } from '../src/database.js';
import { ensureServices } from './services.js';

const [command] = process.argv.slice(2);
if (command === 'new-key') {
  console.log(newSecretKeyText());
  process.exit(0);
}
if (command !== 'status' && command !== 'rotate') {
  console.error('usage: npm run secrets -- new-key | status | rotate');
  process.exit(2);
}
const config = loadConfig({ databaseUrl: process.env.DATABASE_URL || (await ensureServices()).databaseUrl });
const keys = loadSecretKeys(config);
useSecretKeys(keys);
console.log(`keys: ${keys.map((k, i) => `${k.id}${i === 0 ? ' (seals)' : ''}`).join(', ')} from ${config.secretsKey ? 'SECRETS_KEY' : config.secretsKeyFile}`);
const orm = await createOrm(config.databaseUrl, 1);
try {
  await migrate(orm);
  const db = new Db(orm.em.fork());
  if (command === 'rotate') {
    const changed = await sealStoredSecrets(db, true);
    console.log(`re-sealed under ${keys[0]!.id}: ${Object.entries(changed).map(([c, n]) => `${c} ${n}`).join(', ')}`);
  }
  for (const [column, counts] of Object.entries(await sealedStatus(db))) {
    console.log(`${column}: ${Object.entries(counts).map(([k, n]) => `${n} ${k}`).join(', ') || 'none stored'}`);
  }
} finally {
  await orm.close(true);
}
