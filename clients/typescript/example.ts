// The README's example, compiled with the client (tsc --strict) so it cannot drift from the API.
import { createNetinventoryClient } from './index.js';

export async function example(baseUrl: string, apiKey: string): Promise<void> {
  const api = createNetinventoryClient(baseUrl, { apiKey });

  // Create a host with an address and a port; the body is checked against the API's schema.
  const networks = await api.GET('/api/v1/networks');
  const networkId = networks.data!.data[0]!.id;
  const subnet = await api.POST('/api/v1/subnets', { body: { network_id: networkId, cidr: '192.168.1.0/24', name: 'lan' } });
  const created = await api.POST('/api/v1/hosts', {
    body: {
      network_id: networkId,
      name: 'web-01',
      ip_addresses: [{ subnet_id: subnet.data!.data.id, ip_address: '192.168.1.10' }],
      ports: [{ number: 443, protocol: 'Tcp' }],
    },
  });
  if (created.error) throw new Error(`${created.error.code}: ${created.error.error}`);
  const host = created.data.data; // typed: components['schemas']['Host']

  // Lists take their filters as typed query parameters; `at` reads the past.
  const page = await api.GET('/api/v1/hosts', { params: { query: { network_id: networkId, q: 'web', limit: 10 } } });
  console.log(page.data?.meta.pagination.total_count, 'hosts match');

  // Replace it (PUT), then read it as it was before.
  const before = host.updated_at;
  await api.PUT('/api/v1/hosts/{id}', { params: { path: { id: host.id } }, body: { id: host.id, name: 'web-01', hidden: false, tags: [], description: 'front' } });
  const then = await api.GET('/api/v1/hosts/{id}', { params: { path: { id: host.id }, query: { at: before } } });
  console.log(then.data?.data.description); // null: as it was
}
