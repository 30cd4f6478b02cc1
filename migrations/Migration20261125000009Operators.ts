import { Migration } from '@mikro-orm/migrations';

/**
 * The users granted the operator surfaces (the queue dashboard shows every organization's jobs):
 * granted explicitly with `npm run operator -- grant <email>` (issue 10.7), never by being first.
 */
export class Migration20261125000009Operators extends Migration {
  override up(): void {
    this.addSql(`
create table operators (
  user_id uuid primary key references users(id) on delete cascade,
  granted_at timestamptz not null default now()
)`);
  }
}
