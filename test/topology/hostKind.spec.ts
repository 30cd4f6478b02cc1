// A host's kind (src/modules/topology/hostKind.ts): one pure function from its services, interfaces
// and virtualization; and the graph's host and address nodes carry it.
import { expect } from 'chai';
import { hostKind, hostKindIn, kindOfDeviceType } from '../../src/modules/topology/hostKind.js';
import { buildGraph, type Snapshot } from '../../src/modules/topology/graph.js';

const svc = (service_definition: string, extra: Record<string, unknown> = {}) => ({ id: `s-${service_definition}`, service_definition, ...extra });
const ifaces = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `i${i}` }));

describe('host kind (pure)', () => {
  it('names the device from its services, its interfaces and its virtualization, most specific first', () => {
    expect(hostKind({}, [svc('OPNsense'), svc('SSH')], [])).to.equal('firewall');
    expect(hostKind({}, [svc('BGP'), svc('SNMP')], [])).to.equal('router');
    expect(hostKind({}, [svc('SNMP'), svc('SSH')], ifaces(36))).to.equal('switch');
    // Two ports only, but its forwarding table learned MACs on them: a bridge (an SNMP walk's fdb_macs).
    expect(hostKind({}, [], [{ if_index: 1, fdb_macs: ['00:1B:21:00:00:02'] }, { if_index: 2, fdb_macs: [] }])).to.equal('switch');
    expect(hostKind({}, [], [{ if_index: 1, fdb_macs: [] }, { if_index: 2 }])).to.equal('workstation');
    expect(hostKind({}, [svc('SSH')], ifaces(2))).to.equal('server');
    expect(hostKind({}, [svc('UniFi Access Point')], [])).to.equal('access_point');
    expect(hostKind({}, [svc('IPP')], [])).to.equal('printer');
    expect(hostKind({}, [svc('RTSP')], [])).to.equal('camera');
    expect(hostKind({}, [svc('Proxmox VE'), svc('SSH')], [])).to.equal('hypervisor');
    expect(hostKind({}, [svc('Docker')], [])).to.equal('container_host');
    // Containers reported under one of its services, whatever that service is called.
    expect(hostKind({}, [{ id: 'rt', service_definition: 'Custom runtime' }, { id: 'c', service_definition: 'Grafana', virtualization: { details: { service_id: 'rt' } } }], [])).to.equal('container_host');
    expect(hostKind({ virtualization: { type: 'Proxmox', details: { service_id: 'x' } } }, [svc('Nginx')], [])).to.equal('virtual_machine');
    // A VM that runs Docker is drawn as what it does.
    expect(hostKind({ virtualization: { type: 'Proxmox' } }, [svc('Docker')], [])).to.equal('container_host');
    expect(hostKind({}, [svc('Nginx')], [])).to.equal('server');
    expect(hostKind({}, [], [])).to.equal('workstation');
    // Not from its name.
    expect(hostKind({ name: 'core-sw-01' }, [svc('SSH')], [])).to.equal('server');
  });

  it('takes the device type discovery\'s evidence named (issue 38.3) over every guess from services, interfaces and virtualization', () => {
    // Nothing else says what these are: the device type alone decides.
    expect(hostKind({ device_type: 'Printer' }, [], [])).to.equal('printer');
    expect(hostKind({ device_type: 'NAS' }, [], [])).to.equal('nas');
    expect(hostKind({ device_type: 'Router' }, [], [])).to.equal('router');
    expect(hostKind({ device_type: 'Camera' }, [], [])).to.equal('camera');
    expect(hostKind({ device_type: 'IP Camera' }, [svc('HTTP')], [])).to.equal('camera');
    expect(hostKind({ device_type: 'WAP' }, [], [])).to.equal('access_point');
    expect(hostKind({ device_type: 'Switch' }, [svc('SSH')], [])).to.equal('switch');
    expect(hostKind({ device_type: 'Firewall' }, [svc('SSH')], [])).to.equal('firewall');
    expect(hostKind({ device_type: 'Multifunction Device' }, [], [])).to.equal('printer');
    expect(hostKind({ device_type: 'VoIP' }, [], [])).to.equal('phone');
    expect(hostKind({ device_type: 'Hypervisor' }, [svc('SSH')], [])).to.equal('hypervisor');
    // The evidence wins over the guess: a NAS running Docker, a router with 24 ports, a printer with SSH,
    // a camera in a VM, a NAS whose web page looks like a router's.
    expect(hostKind({ device_type: 'NAS' }, [svc('Docker'), svc('SSH')], [])).to.equal('nas');
    expect(hostKind({ device_type: 'Router' }, [svc('SNMP')], ifaces(24))).to.equal('router');
    expect(hostKind({ device_type: 'Printer' }, [svc('SSH')], ifaces(1))).to.equal('printer');
    expect(hostKind({ device_type: 'Camera', virtualization: { type: 'Proxmox' } }, [svc('Nginx')], [])).to.equal('camera');
    expect(hostKind({ device_type: 'nas' }, [svc('RouterOS')], [])).to.equal('nas');
    // Case and spacing as the evidence writes them.
    expect(hostKind({ device_type: '  broadband   ROUTER ' }, [], [])).to.equal('router');
    // A device type that names nothing we draw, or none: the guess stands.
    expect(hostKind({ device_type: 'General' }, [svc('IPP')], [])).to.equal('printer');
    expect(hostKind({ device_type: 'Power Device' }, [svc('SSH')], [])).to.equal('server');
    expect(hostKind({ device_type: null }, [svc('RTSP')], [])).to.equal('camera');
    expect(hostKind({ device_type: '' }, [], [])).to.equal('workstation');
    expect(kindOfDeviceType(undefined)).to.equal(undefined);
    expect(kindOfDeviceType('VoIP Gateway')).to.equal(undefined);
  });

  it('is on the host and address nodes of the views that draw hosts', () => {
    const s: Snapshot = {
      subnets: [{ id: 'sub', cidr: '10.0.0.0/24', name: 'lan' }],
      hosts: [{ id: 'h1', name: 'fw', tags: [] }, { id: 'h2', name: 'ws', tags: [] }, { id: 'h3', name: 'storage', tags: [], device_type: 'NAS' }],
      ipAddresses: [{ id: 'ip1', host_id: 'h1', subnet_id: 'sub', ip_address: '10.0.0.1' }],
      ports: [], bindings: [], dependencies: [], tags: [],
      services: [{ id: 's1', host_id: 'h1', name: 'opnsense', service_definition: 'OPNsense', tags: [] }],
      interfaces: [{ id: 'if1', host_id: 'h2', if_index: 1, if_name: 'eth0' }],
    };
    const l3 = buildGraph(s, 'l3', { maxNodes: 100 });
    expect(l3.nodes.find((n) => n.id === 'ip_address:ip1')).to.include({ host_kind: 'firewall' });
    expect(l3.nodes.find((n) => n.id === 'host:h2')).to.include({ host_kind: 'workstation' });
    expect(buildGraph(s, 'workloads', { maxNodes: 100 }).nodes.find((n) => n.id === 'host:h1')).to.include({ host_kind: 'firewall' });
    expect(buildGraph(s, 'l2', { maxNodes: 100 }).nodes.find((n) => n.id === 'host:h2')).to.include({ host_kind: 'workstation' });
    expect(buildGraph(s, 'l3', { maxNodes: 100 }).nodes.find((n) => n.id === 'host:h3')).to.include({ host_kind: 'nas' });
    expect(hostKindIn(s, 'h3')).to.equal('nas');
    expect(hostKindIn(s, 'nobody')).to.equal(undefined);
  });
});
