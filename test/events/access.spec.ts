// Who may read an entity's events is who may read the entity (src/modules/events/access.ts): each
// entry of the declaration must agree with the entity's own GET route, and every kind of entity
// the feed carries must have one.
import { expect } from 'chai';
import { routes } from '../../src/routes.js';
import { EVENT_READERS } from '../../src/modules/events/access.js';
import { startTestApp } from '../support/app.js';

describe('events/access: who reads an entity\'s events', () => {
  it('each kind of entity is read by its GET route\'s callers (role, session only, organization-wide)', () => {
    for (const [entityType, readers] of Object.entries(EVENT_READERS)) {
      const route = routes.find((r) => `${r.method.toUpperCase()} ${r.path}` === readers.route);
      expect(route, `${entityType}: ${readers.route} is a route`).to.not.equal(undefined);
      if (!route || route.auth === 'public' || route.auth === 'daemon') throw new Error(`${readers.route} is not a user route`);
      expect({ role: readers.role, sessionOnly: readers.sessionOnly === true, organizationWide: readers.organizationWide === true }, entityType)
        .to.deep.equal({ role: route.auth, sessionOnly: route.sessionOnly === true, organizationWide: route.organizationWide === true });
    }
  });

  it('covers every kind of entity whose writes make events (the outbox triggers), and the events recorded whole', async () => {
    const app = await startTestApp();
    try {
      const rows = await app.services.orm.em.fork().execute<Array<{ entity: string }>>(
        `select distinct rtrim(encode(tgargs, 'escape'), '\\000') as entity from pg_trigger where tgname = 'events_insert'`,
      );
      const triggered = rows.map((r) => r.entity);
      expect(triggered).to.include.members(['host', 'tag', 'daemon']);
      // recordEvent's callers: webhook.disabled (src/modules/webhooks/delivery.ts), daemon.version_status_changed.
      expect(Object.keys(EVENT_READERS)).to.have.members([...new Set([...triggered, 'webhook', 'daemon'])]);
    } finally {
      await app.close();
    }
  });
});
