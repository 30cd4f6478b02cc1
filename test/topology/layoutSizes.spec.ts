// Sizes the layout gives (issue 23, the map at Fit): a subnet is at least as wide as its title, a
// summary or ghost node as wide as its whole label, so neither is cut short on the map.
import { expect } from 'chai';
import { layoutWithElk } from '../../src/modules/topology/layout.js';
import type { GraphNode } from '../../src/modules/topology/graph.js';

const node = (n: Partial<GraphNode> & { id: string; kind: string; label: string }) => ({ parent_id: null, ...n }) as GraphNode;

describe('topology layout sizes', () => {
  it('a subnet with one small host is as wide as "name · CIDR · N hosts"; a summary and a ghost as wide as their label', async () => {
    const title = 'dmz · 10.10.3.0/24 · 1 host';
    const summaryLabel = '2 hosts · 10.10.1.0/24';
    const nodes = [
      node({ id: 'subnet:d', kind: 'subnet', label: 'dmz', cidr: '10.10.3.0/24' }),
      node({ id: 'ip_address:1', kind: 'ip_address', label: 'mx-01', host_id: 'h1', parent_id: 'subnet:d' }),
      node({ id: 'subnet:o', kind: 'subnet', label: 'office', cidr: '10.10.1.0/24' }),
      node({ id: 'summary:o', kind: 'summary', label: summaryLabel, parent_id: 'subnet:o', hosts: [{ id: 'h2', name: 'a', ip_address: '10.10.3.2' }, { id: 'h3', name: 'b', ip_address: '10.10.3.3' }] as GraphNode['hosts'] }),
      node({ id: 'ghost:x', kind: 'ghost', label: 'unbound · dns-01 (hidden)' }),
    ];
    const positions = await layoutWithElk(nodes, []);
    // At Fit a character takes ~9 graph units (text is drawn at a constant size on screen).
    expect(positions['subnet:d']!.width).to.be.at.least(9 * title.length);
    expect(positions['summary:o']!.width).to.be.at.least(9 * summaryLabel.length);
    expect(positions['ghost:x']!.width).to.be.at.least(9 * 'unbound · dns-01 (hidden)'.length);
  });

  it('the addresses of one host in one subnet are packed, not laid in a row (same_host links them in a chain)', async () => {
    const nodes = [
      node({ id: 'subnet:a', kind: 'subnet', label: 'docker app-net', cidr: '172.18.0.0/24' }),
      ...Array.from({ length: 7 }, (_, i) => node({ id: `ip_address:${i}`, kind: 'ip_address', label: `172.18.0.${10 + i}`, host_id: 'h1', host_name: 'docker-01', parent_id: 'subnet:a' } as Partial<GraphNode> & { id: string; kind: string; label: string })),
    ];
    const edges = Array.from({ length: 6 }, (_, i) => ({ id: `same_host:${i}:${i + 1}`, kind: 'same_host', source: `ip_address:${i}`, target: `ip_address:${i + 1}`, host_id: 'h1' })) as Parameters<typeof layoutWithElk>[1];
    const box = (await layoutWithElk(nodes, edges))['subnet:a']!;
    // In a row it was 1,461 × 124; packed it is at most about twice as wide as tall.
    expect(box.width / box.height).to.be.below(3);
  });
});
