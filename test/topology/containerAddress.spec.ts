// An address of one container (a service run under another: virtualization.details.service_id) is
// named by that service in l3 (issue 23: docker-01's seven app-net addresses all read "docker-01").
import { expect } from 'chai';
import { buildGraph, type Snapshot } from '../../src/modules/topology/graph.js';

describe('l3 address of a container (pure)', () => {
  it('carries the name of the one container bound to it; an address of the host itself, or of two services, does not', () => {
    const s: Snapshot = {
      subnets: [{ id: 'net', cidr: '172.18.0.0/24', name: 'app-net' }],
      hosts: [{ id: 'h', name: 'docker-01', tags: [] }],
      ipAddresses: ['own', 'traefik', 'shared'].map((id, i) => ({ id, host_id: 'h', subnet_id: 'net', ip_address: `172.18.0.${i + 1}`, position: i })),
      ports: [{ id: 'p', host_id: 'h', number: 443, protocol: 'Tcp' }],
      services: [
        { id: 'docker', host_id: 'h', name: 'docker', service_definition: 'Docker', tags: [], position: 0 },
        { id: 'traefik', host_id: 'h', name: 'traefik', service_definition: 'Traefik', tags: [], position: 1, virtualization: { type: 'Docker', details: { service_id: 'docker' } } },
        { id: 'a', host_id: 'h', name: 'a', tags: [], position: 2, virtualization: { type: 'Docker', details: { service_id: 'docker' } } },
        { id: 'b', host_id: 'h', name: 'b', tags: [], position: 3, virtualization: { type: 'Docker', details: { service_id: 'docker' } } },
      ],
      bindings: [
        { id: 'b0', service_id: 'docker', type: 'IPAddress', ip_address_id: 'own' },
        { id: 'b1', service_id: 'traefik', type: 'Port', port_id: 'p', ip_address_id: 'traefik' },
        { id: 'b2', service_id: 'a', type: 'IPAddress', ip_address_id: 'shared' },
        { id: 'b3', service_id: 'b', type: 'IPAddress', ip_address_id: 'shared' },
      ],
      interfaces: [], dependencies: [], tags: [],
    };
    const nodes = new Map(buildGraph(s, 'l3', { maxNodes: 100 }).nodes.map((n) => [n.id, n]));
    expect(nodes.get('ip_address:traefik')).to.include({ workload: 'traefik', host_name: 'docker-01' });
    expect(nodes.get('ip_address:own')).to.not.have.property('workload'); // docker runs under nothing
    expect(nodes.get('ip_address:shared')).to.not.have.property('workload'); // two containers: neither names it
  });
});
