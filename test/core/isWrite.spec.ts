// Which statements Db treats as writes (src/core/db.ts isWrite): a write outside a transaction is
// run in one that carries the actor, and a committed write wakes the event sequencer.
import { expect } from 'chai';
import { ACROSS_ORGANIZATIONS, isWrite } from '../../src/core/db.js';

describe('core/db isWrite', () => {
  it('knows writes, with or without a leading comment (the ACROSS_ORGANIZATIONS marker)', () => {
    for (const sql of ['insert into hosts (id) values (?)', ' update hosts set name = ?', 'delete from ports where id = ?',
      'with x as (select 1) update webhooks w set enabled = false', `${ACROSS_ORGANIZATIONS} update webhook_deliveries set x = 1`,
      `/* a */ /* b */\n delete from hosts where id = ?`]) expect(isWrite(sql), sql).to.equal(true);
  });
  it('and reads, commented or not', () => {
    for (const sql of ['select 1', 'with x as (select 1) select * from x', `${ACROSS_ORGANIZATIONS} select id from daemons where id = ?`,
      '/* update hosts set */ select 1']) expect(isWrite(sql), sql).to.equal(false);
  });
});
