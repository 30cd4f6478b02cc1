// Optimistic concurrency an audit found no test for on bindings (issue 22): a PUT with a stale
// `expected_updated_at` is 409 entity_modified and changes nothing.
import { expect } from 'chai';
import { expectError, expectOk } from '../support/client.js';
import { startInventory, type Inventory } from '../ipAddresses/inventory.js';

describe('bindings: what the audit slipped past', () => {
  let inv: Inventory;
  beforeEach(async () => {
    inv = await startInventory();
  });
  afterEach(() => inv.app.close());

  it('expected_updated_at: the current value writes, a stale one is 409 entity_modified and changes nothing', async () => {
    const created = expectOk(await inv.api.post('/api/v1/bindings', { service_id: inv.svc.snmpd.id, type: 'Port', port_id: inv.port.snmp.id, ip_address_id: inv.ip.a.id }), 201);
    const path = `/api/v1/bindings/${created.id}`;
    const moved = expectOk(await inv.api.put(path, { type: 'Port', port_id: inv.port.ssh.id, ip_address_id: inv.ip.a.id, expected_updated_at: created.updated_at }));
    expect(moved.updated_at).to.not.equal(created.updated_at);
    expectError(await inv.api.put(path, { type: 'Port', port_id: inv.port.snmp.id, ip_address_id: inv.ip.a.id, expected_updated_at: created.updated_at }), 409, 'entity_modified');
    expect(expectOk(await inv.api.get(path))).to.include({ port_id: inv.port.ssh.id, updated_at: moved.updated_at });
  });
});
