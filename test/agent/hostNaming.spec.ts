// A discovered host's name from the best source (issue 38.4): the name it gives (PTR, mDNS, SNMP),
// then its certificate's DNS name, then a page title that names it; a service's name only when
// nothing else does; else its address. Pure: no network.
import { expect } from 'chai';
import { namedBy } from '../../agent/protocol/entities.js';
import type { FoundHost, FoundService } from '../../agent/scan/types.js';

const svc = (name: string, port: number, facts: Record<string, string> = {}, confidence: FoundService['confidence'] = 'High'): FoundService =>
  ({ rule: `r-${port}`, name, definition: name, port, protocol: 'Tcp', confidence, reason: 'x', facts });
const host = (services: FoundService[], hostname: string | null = null): FoundHost =>
  ({ ip: '198.18.30.7', mac: null, hostname, evidence: [], openPorts: [], services, target: { cidr: '198.18.30.0/24' } as any });

describe('agent: a host\'s name from the best source', () => {
  it('its own name first (PTR, mDNS, SNMP sysName), whatever its services say', () => {
    expect(namedBy(host([svc('Redis', 6379)], 'cache.lan'), 'BestService')).to.deep.equal({ name: 'cache.lan', source: 'hostname' });
  });

  it('then a certificate\'s DNS name (SAN before CN), never an address, a wildcard or a stock name', () => {
    expect(namedBy(host([svc('HTTPS', 443, { san: 'DNS:nas.office.example, IP Address:198.18.30.7', subject: 'synology' })]), 'BestService'))
      .to.deep.equal({ name: 'nas.office.example', source: 'certificate' });
    expect(namedBy(host([svc('HTTPS', 443, { san: 'IP Address:198.18.30.7', subject: '*.example.net' }), svc('Redis', 6379)]), 'BestService'))
      .to.deep.equal({ name: 'HTTPS', source: 'service' });
    expect(namedBy(host([svc('HTTPS', 443, { subject: 'localhost' })]), 'BestService').source).to.equal('service');
  });

  it('then a page title that names the machine, not a product\'s own page', () => {
    expect(namedBy(host([svc('nginx', 80, { title: 'Smith Family Photos' }), svc('SSH', 22)]), 'BestService')).to.deep.equal({ name: 'Smith Family Photos', source: 'title' });
    expect(namedBy(host([svc('nginx', 80, { title: 'Welcome to nginx!' })]), 'BestService')).to.deep.equal({ name: 'nginx', source: 'service' });
    expect(namedBy(host([svc('Grafana', 3000, { title: 'Grafana' })]), 'BestService').source).to.equal('service');
  });

  it('a service\'s name only when nothing else names it, and only a confident one; the address with host_naming_fallback Ip', () => {
    expect(namedBy(host([svc('Redis', 6379), svc('SSH', 22)]), 'BestService')).to.deep.equal({ name: 'SSH', source: 'service' });
    expect(namedBy(host([svc('Redis', 6379, {}, 'Low')]), 'BestService')).to.deep.equal({ name: '198.18.30.7', source: 'address' });
    expect(namedBy(host([svc('Redis', 6379)]), 'Ip')).to.deep.equal({ name: '198.18.30.7', source: 'address' });
  });
});
