// `npm run operator -- grant <email>` | `revoke <email>` | `list`: who may see the operator
// surfaces (the queue dashboard at /admin/queues), on the database of DATABASE_URL (or the
// project's own, as `npm start` chooses it). See "Operators" in the README.
import { Db, migrate } from '../src/core/db.js';
import { createOrm } from '../src/database.js';
import { listOperators, setOperator } from '../src/core/operators.js';
import { ensureServices } from './services.js';

const [command, email] = process.argv.slice(2);
if (!(command === 'list' || ((command === 'grant' || command === 'revoke') && email))) {
  console.error('usage: npm run operator -- grant <email> | revoke <email> | list');
  process.exit(2);
}
const databaseUrl = process.env.DATABASE_URL || (await ensureServices()).databaseUrl;
const orm = await createOrm(databaseUrl, 1);
try {
  await migrate(orm); // a first command on a new database finds its tables
  const db = new Db(orm.em.fork());
  if (command === 'list') {
    const operators = await listOperators(db);
    console.log(operators.length ? operators.map((o) => `${o.email}\t${o.granted_at}`).join('\n') : 'no operator granted (OPERATOR_EMAILS and OPERATOR_ORGANIZATION_ID may still grant some)');
  } else if (await setOperator(db, email!, command === 'grant')) {
    console.log(`${email} ${command === 'grant' ? 'is an operator' : 'is no longer an operator'}`);
  } else {
    console.error(`no user with the email ${email}`);
    process.exitCode = 1;
  }
} finally {
  await orm.close(true);
}
