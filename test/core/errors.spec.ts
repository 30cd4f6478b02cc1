// How PostgreSQL's refusals that a concurrent write can cause become client errors (never a 500):
// real errors from the test database, mapped by the envelope's toAppError.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { Db } from '../../src/core/db.js';
import { toAppError } from '../../src/http/envelope.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { registerTenant } from '../support/world.js';
import { createDaemonKey, daemonClient, registerDaemon } from '../daemons/world.js';

describe('core/errors: foreign-key violations', () => {
  let app: TestApp;
  beforeEach(async () => {
    app = await startTestApp();
  });
  afterEach(() => app.close());

  const refusal = async (text: string, params: unknown[]) => {
    try {
      await new Db(app.services.orm.em.fork()).query(text, params);
    } catch (err) {
      return toAppError(err, 'req');
    }
    throw new Error('the statement succeeded');
  };

  it('deleting a row still referenced is 409 entity_in_use; referencing a row that is gone is 400 entity_reference_invalid', async () => {
    const t = await registerTenant(app.url);
    const d = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key);
    const daemon = await registerDaemon(d, t.defaultNetworkId);
    const inUse = await refusal(`delete from hosts where id = ?`, [daemon.host_id]);
    expect([inUse.code, inUse.status, inUse.params.used_by]).to.deep.equal(['entity_in_use', 409, 'daemons']);
    const missing = await refusal(`update daemons set host_id = ? where host_id = ?`, [randomUUID(), daemon.host_id]);
    expect([missing.code, missing.status]).to.deep.equal(['entity_reference_invalid', 400]);
  });
});
