// Hosts with children for tests, created through the API.
import { randomUUID } from 'node:crypto';
import { call, expectOk, type Credential } from '../support/client.js';

export async function createSubnet(url: string, auth: Credential, networkId: string, cidr = '10.0.0.0/24'): Promise<any> {
  return expectOk(await call(url, 'POST', '/api/v1/subnets', { auth, body: { name: `net ${cidr}`, cidr, network_id: networkId } }), 201);
}

/** A host with 2 IP addresses, 3 ports and 2 services (one bound to port 80, one to an address). */
export async function createHostWithChildren(url: string, auth: Credential, networkId: string, subnetId: string, name = 'web'): Promise<any> {
  const ip = [randomUUID(), randomUUID()];
  const port = [randomUUID(), randomUUID(), randomUUID()];
  // One address per subnet (issue 28.4): another host than 'web' gets its own pair of addresses.
  const last = name === 'web' ? 10 : 100 + (name.charCodeAt(0) % 50) * 2;
  const body = {
    name, network_id: networkId, hostname: `${name}.lan`,
    ip_addresses: [
      { id: ip[0], subnet_id: subnetId, ip_address: `10.0.0.${last}`, mac_address: 'AA:BB:CC:00:00:01' },
      { id: ip[1], subnet_id: subnetId, ip_address: `10.0.0.${last + 1}` },
    ],
    ports: [
      { id: port[0], number: 80, protocol: 'Tcp' },
      { id: port[1], number: 22, protocol: 'Tcp' },
      { id: port[2], number: 161, protocol: 'Udp' },
    ],
    services: [
      { id: randomUUID(), name: 'nginx', service_definition: 'Nginx', bindings: [{ id: randomUUID(), type: 'Port', port_id: port[0] }] },
      { id: randomUUID(), name: 'snmpd', service_definition: 'Snmp', bindings: [{ id: randomUUID(), type: 'IPAddress', ip_address_id: ip[1] }] },
    ],
  };
  return expectOk(await call(url, 'POST', '/api/v1/hosts', { auth, body }), 201);
}
