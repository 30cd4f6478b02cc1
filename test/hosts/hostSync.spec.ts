// Unit tests of the pure planning of a host's children sync.
import { expect } from 'chai';
import { AppError } from '../../src/core/errors.js';
import { assignPositions, planPorts, planServices } from '../../src/modules/hosts/hostSync.js';

const fails = (fn: () => unknown, code: string) => {
  try {
    fn();
  } catch (err) {
    expect(err).to.be.instanceOf(AppError);
    expect((err as AppError).code).to.equal(code);
    return err as AppError;
  }
  throw new Error(`expected ${code}`);
};

describe('hosts/hostSync (pure)', () => {
  it('positions: kept when they are exactly 0..n-1, otherwise the list order', () => {
    const positions = (items: Array<{ position?: number }>) => assignPositions(items).map((i) => i.position);
    expect(positions([{}, {}, {}])).to.deep.equal([0, 1, 2]);
    expect(positions([{ position: 1 }, { position: 0 }])).to.deep.equal([1, 0]);
    expect(positions([{ position: 0 }, {}])).to.deep.equal([0, 1]); // an echoed item and a new one
    expect(positions([{ position: 2 }, { position: 0 }])).to.deep.equal([0, 1]); // one was dropped
    expect(positions([{ position: 0 }, { position: 0 }])).to.deep.equal([0, 1]);
  });

  it('ports: type derived from number and protocol, new ones get ids, duplicates are 409', () => {
    const planned = planPorts([{ number: 80, protocol: 'Tcp' }, { number: 22, protocol: 'Tcp' }, { number: 80, protocol: 'Udp' }, { number: 40000, protocol: 'Tcp' }]);
    expect(planned.map((p) => p.type)).to.deep.equal(['Http', 'Ssh', 'Custom', 'Custom']);
    expect(new Set(planned.map((p) => p.id)).size).to.equal(4);
    const err = fails(() => planPorts([{ number: 443, protocol: 'Tcp' }, { number: 443, protocol: 'Tcp' }]), 'entity_already_exists');
    expect(err.params).to.include({ entity: 'Port', value: '443/Tcp' });
  });

  const svc = (name: string, bindings: any[]) => ({ name, service_definition: 'X', tags: [], virtualization: null, bindings });
  const port = (port_id: string, ip_address_id: string | null = null) => ({ type: 'Port' as const, port_id, ip_address_id });
  const ip = (ip_address_id: string) => ({ type: 'IPAddress' as const, port_id: null, ip_address_id });

  it('bindings: identical ones collapse; a port belongs to one service of the host', () => {
    const [a] = planServices([svc('a', [port('p1'), port('p1')])]);
    expect(a!.bindings).to.have.length(1);
    fails(() => planServices([svc('a', [port('p1')]), svc('b', [port('p1')])]), 'validation_failed');
    expect(planServices([svc('a', [port('p1')]), svc('b', [port('p2')])])).to.have.length(2);
  });

  it('bindings: an address binding conflicts with a port binding on that address or on all addresses', () => {
    fails(() => planServices([svc('a', [ip('i1'), port('p1')])]), 'validation_failed');
    fails(() => planServices([svc('a', [ip('i1'), port('p1', 'i1')])]), 'validation_failed');
    expect(planServices([svc('a', [ip('i1'), port('p1', 'i2')])])[0]!.bindings).to.have.length(2);
    expect(planServices([svc('a', [port('p1'), port('p2', 'i1')])])[0]!.bindings).to.have.length(2);
  });

  it('an id listed twice is refused', () => {
    fails(() => planPorts([{ id: 'x', number: 1, protocol: 'Tcp' }, { id: 'x', number: 2, protocol: 'Tcp' }]), 'validation_failed');
  });
});
