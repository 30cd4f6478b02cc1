// Operators: the users who may see what spans organizations (the queue dashboard). Granted
// explicitly: a row of `operators` (`npm run operator -- grant <email>`), an email of
// OPERATOR_EMAILS, or an Owner or Admin of OPERATOR_ORGANIZATION_ID. Nobody by default, in
// particular not whoever registered first.
import type { AppConfig } from '../config.js';
import type { Db } from './db.js';
import { hasRole, type Scope } from './scope.js';

type OperatorConfig = Pick<AppConfig, 'operatorEmails' | 'operatorOrganizationId'>;

/** Whether anybody at all is granted (else the operator surfaces do not exist: 404). */
export async function anyOperator(db: Db, config: OperatorConfig): Promise<boolean> {
  if (config.operatorEmails.length || config.operatorOrganizationId) return true;
  return !!(await db.one(`select 1 from operators limit 1`));
}

export async function isOperator(db: Db, config: OperatorConfig, scope: Scope): Promise<boolean> {
  if (scope.kind !== 'session') return false;
  if (config.operatorOrganizationId === scope.organizationId && hasRole(scope, 'Admin')) return true;
  const row = await db.one<{ email: string; granted: boolean }>(
    `select u.email, exists (select 1 from operators o where o.user_id = u.id) as granted from users u where u.id = ?`, [scope.userId],
  );
  return !!row && (row.granted || config.operatorEmails.includes(row.email.toLowerCase()));
}

/** `npm run operator -- grant|revoke <email>`: false when no user has that email. */
export async function setOperator(db: Db, email: string, granted: boolean): Promise<boolean> {
  const user = await db.one<{ id: string }>(`select id from users where email = ?`, [email.trim().toLowerCase()]);
  if (!user) return false;
  await db.query(granted
    ? `insert into operators (user_id) values (?) on conflict do nothing`
    : `delete from operators where user_id = ?`, [user.id]);
  return true;
}

export async function listOperators(db: Db): Promise<Array<{ email: string; granted_at: string }>> {
  return db.query(`select u.email, o.granted_at::text from operators o join users u on u.id = o.user_id order by o.granted_at`);
}
