// The CSV import's pure parts, without a database: the RFC 4180 reader and the planner
// (src/modules/hosts/csvParse.ts, csvImport.ts).
import { expect } from 'chai';
import { CsvSyntaxError, parseCsv } from '../../src/modules/hosts/csvParse.js';
import { CsvHeaderError, normalizeMac, parsePort, planImport, rowsOf, type ExistingHost, type ImportState } from '../../src/modules/hosts/csvImport.js';

const SUBNET = { id: '00000000-0000-4000-8000-000000000001', cidr: '10.0.1.0/24' };
const WIDE = { id: '00000000-0000-4000-8000-000000000002', cidr: '10.0.0.0/16' };
const V6 = { id: '00000000-0000-4000-8000-000000000003', cidr: '2001:db8::/64' };
const TAG = { id: '00000000-0000-4000-8000-0000000000a1', name: 'Production' };
const existing = (over: Partial<ExistingHost> = {}): ExistingHost => ({
  id: '00000000-0000-4000-8000-0000000000b1', name: 'db-01', hostname: 'db-01.lan', description: null, tags: [], updated_at: '2026-11-25T10:00:00.000000Z',
  ip_addresses: [{ id: '00000000-0000-4000-8000-0000000000c1', ip_address: '10.0.1.5', subnet_id: SUBNET.id, mac_address: null }],
  ports: [{ number: 5432, protocol: 'Tcp' }], services: [{ name: 'postgres' }], ...over,
});
const state = (over: Partial<ImportState> = {}): ImportState => ({ hosts: [], subnets: [SUBNET, WIDE, V6], tags: [TAG], addresses: [], ...over });
const plan = (csv: string, s: ImportState = state()) => planImport(rowsOf(parseCsv(csv)).rows, s);

describe('hosts: CSV import planning (pure)', () => {
  describe('the RFC 4180 reader', () => {
    it('reads quoted fields with commas, line breaks and doubled quotes; CRLF or LF; skips blank lines and a BOM; numbers rows as a spreadsheet does', () => {
      const records = parseCsv('\uFEFFname,description\r\n"a,b","line 1\nline 2"\r\n\r\nc,"say ""hi"""\nd,\n""\n');
      expect(records).to.deep.equal([
        { row: 1, cells: ['name', 'description'] },
        { row: 2, cells: ['a,b', 'line 1\nline 2'] },
        { row: 4, cells: ['c', 'say "hi"'] },
        { row: 5, cells: ['d', ''] },
        { row: 6, cells: [''] },
      ]);
    });

    it('keeps formula-looking cells as text', () => {
      expect(parseCsv('name\n=1+2\n+x\n-y\n@z\n').map((r) => r.cells[0])).to.deep.equal(['name', '=1+2', '+x', '-y', '@z']);
    });

    it('refuses an unclosed quote, text after a closing quote, a bare quote, and more records than allowed, naming the row', () => {
      expect(() => parseCsv('name\n"open\n')).to.throw(CsvSyntaxError, 'row 2: a quoted field is not closed');
      expect(() => parseCsv('name\n"a"b\n')).to.throw(CsvSyntaxError, 'row 2: text after a closing quote');
      expect(() => parseCsv('name\nsay "hi"\n')).to.throw(CsvSyntaxError, 'row 2: a quote inside an unquoted field');
      expect(() => parseCsv('name\na\nb\nc\n', 3)).to.throw(CsvSyntaxError, 'more than 2 rows');
    });
  });

  describe('the header', () => {
    it('takes the columns in any order and any case; refuses unknown and repeated columns and a missing name', () => {
      expect(rowsOf(parseCsv('Tags,NAME\nProduction,web\n')).rows[0]!.cells).to.deep.equal({ tags: 'Production', name: 'web' });
      expect(() => rowsOf(parseCsv('name,colour\n'))).to.throw(CsvHeaderError, "unknown column 'colour'");
      expect(() => rowsOf(parseCsv('name,name\n'))).to.throw(CsvHeaderError, "column 'name' appears twice");
      expect(() => rowsOf(parseCsv('hostname\n'))).to.throw(CsvHeaderError, "no 'name' column");
      expect(() => rowsOf(parseCsv(''))).to.throw(CsvHeaderError, 'empty');
    });
  });

  describe('cells', () => {
    it('ports: 22/tcp, 53/UDP, a bare number is TCP; out of range or other protocols are not ports', () => {
      expect([parsePort('22/tcp'), parsePort('53/UDP'), parsePort('8080')]).to.deep.equal([{ number: 22, protocol: 'Tcp' }, { number: 53, protocol: 'Udp' }, { number: 8080, protocol: 'Tcp' }]);
      expect([parsePort('70000'), parsePort('22/sctp'), parsePort('ssh')]).to.deep.equal([null, null, null]);
    });

    it('MACs: colons, dashes, Cisco dots or bare hex become AA:BB:CC:DD:EE:FF', () => {
      for (const mac of ['aa:bb:cc:dd:ee:ff', 'AA-BB-CC-DD-EE-FF', 'aabb.ccdd.eeff', 'aabbccddeeff']) expect(normalizeMac(mac)).to.equal('AA:BB:CC:DD:EE:FF');
      expect(normalizeMac('aa:bb:cc:dd:ee')).to.equal(null);
      expect(normalizeMac('aa:bb-cc:dd:ee:ff')).to.equal(null);
    });
  });

  describe('planning', () => {
    it('rows of one name are one host: addresses in the smallest subnet holding them, ports, services and tags merged', () => {
      const p = plan('name,address,ports,services,tags\nweb,10.0.1.10,22/tcp;443/tcp,ssh,production\nweb,10.0.9.1,443/tcp;80,https;ssh,\n');
      expect(p.refused).to.deep.equal([]);
      expect(p.create).to.deep.equal([{
        name: 'web', rows: [2, 3], hostname: null, description: null, tags: [TAG],
        ip_addresses: [
          { ip_address: '10.0.1.10', subnet: SUBNET, mac_address: null }, // the /24, not the /16 around it
          { ip_address: '10.0.9.1', subnet: WIDE, mac_address: null },
        ],
        ports: [{ number: 22, protocol: 'Tcp' }, { number: 443, protocol: 'Tcp' }, { number: 80, protocol: 'Tcp' }],
        services: ['ssh', 'https'],
      }]);
    });

    it('a subnet column names an existing subnet or one to create, which other rows\' addresses may then fall in; IPv6 in canonical form', () => {
      const p = plan('name,address,subnet\na,192.168.5.1,192.168.5.0/24\nb,192.168.5.2,\nc,2001:DB8:0:0::10,\n');
      expect(p.refused).to.deep.equal([]);
      expect(p.subnets_to_create).to.deep.equal(['192.168.5.0/24']);
      expect(p.create.map((c) => [c.name, c.ip_addresses[0]!.ip_address, c.ip_addresses[0]!.subnet])).to.deep.equal([
        ['a', '192.168.5.1', { id: null, cidr: '192.168.5.0/24' }],
        ['b', '192.168.5.2', { id: null, cidr: '192.168.5.0/24' }],
        ['c', '2001:db8::10', V6],
      ]);
    });

    it('an existing host of the same name is changed by additions only; what it has already is no change', () => {
      const s = state({ hosts: [existing()], addresses: [{ ip_address: '10.0.1.5', subnet_id: SUBNET.id, host_id: existing().id, host_name: 'db-01' }] });
      const p = plan('name,hostname,address,mac,ports,services,tags\ndb-01,db-01.example,10.0.1.5,aa:bb:cc:00:00:05,5432/tcp;22/tcp,postgres;ssh,Production\ndb-01,,10.0.1.6,,,,\n', s);
      expect(p.refused).to.deep.equal([]);
      expect(p.create).to.deep.equal([]);
      expect(p.change).to.deep.equal([{
        id: existing().id, name: 'db-01', rows: [2, 3], updated_at: existing().updated_at,
        hostname: { from: 'db-01.lan', to: 'db-01.example' },
        add_ip_addresses: [{ ip_address: '10.0.1.6', subnet: SUBNET, mac_address: null }],
        mac_changes: [{ ip_address: '10.0.1.5', subnet: SUBNET, address_id: existing().ip_addresses[0]!.id, from: null, to: 'AA:BB:CC:00:00:05' }],
        add_ports: [{ number: 22, protocol: 'Tcp' }], add_services: ['ssh'], add_tags: [TAG],
      }]);
      const same = plan('name,hostname,address,ports,services\ndb-01,db-01.lan,10.0.1.5,5432/tcp,postgres\n', s);
      expect(same.change).to.deep.equal([]);
      expect(same.unchanged).to.deep.equal([{ id: existing().id, name: 'db-01', rows: [2] }]);
    });

    it('refuses rows with the row, column and reason; the other rows are still planned', () => {
      const s = state({ hosts: [existing(), existing({ id: '00000000-0000-4000-8000-0000000000b2', name: 'twin' }), existing({ id: '00000000-0000-4000-8000-0000000000b3', name: 'twin' })],
        addresses: [{ ip_address: '10.0.1.5', subnet_id: SUBNET.id, host_id: existing().id, host_name: 'db-01' }] });
      const p = plan([
        'name,hostname,address,subnet,mac,ports,tags',
        'ok,,10.0.1.20,,,,', // 2
        ',,10.0.1.21,,,,', // 3: no name
        'bad-ip,,10.0.1.300,,,,', // 4
        'outside,,10.0.1.22,10.0.2.0/24,,,', // 5: address outside its subnet
        'hostbits,,10.0.3.1,10.0.3.1/24,,,', // 6
        'nosubnet,,172.16.0.1,,,,', // 7: no subnet holds it
        'thief,,10.0.1.5,,,,', // 8: db-01 holds it
        'twice,,10.0.1.20,,,,', // 9: row 2 gave it to ok
        'badport,,,,,22/tcp;http,', // 10
        'badtag,,,,,,Nope', // 11
        'badmac,,10.0.1.30,,zz:zz,,', // 12
        'macalone,,,,aa:bb:cc:dd:ee:ff,,', // 13
        'twin,,,,,,', // 14: two hosts of that name
        'ok,other.lan,,,,,', // 15
        'ok,third.lan,,,,,', // 16: contradicts row 15
        'short,,', // 17: too few fields
      ].join('\n'), s);
      expect(p.refused.map((r) => [r.row, r.column])).to.deep.equal([
        [3, 'name'], [4, 'address'], [5, 'address'], [6, 'subnet'], [7, 'address'], [8, 'address'], [9, 'address'],
        [10, 'ports'], [11, 'tags'], [12, 'mac'], [13, 'mac'], [14, 'name'], [16, 'hostname'], [17, null],
      ]);
      const message = (row: number) => p.refused.find((r) => r.row === row)!.message;
      expect(message(5)).to.equal('10.0.1.22 is outside its subnet 10.0.2.0/24');
      expect(message(6)).to.contain('did you mean 10.0.3.0/24?');
      expect(message(7)).to.contain('no subnet of this network holds 172.16.0.1');
      expect(message(8)).to.contain("held by host 'db-01'");
      expect(message(9)).to.contain("given to host 'ok' on row 2");
      expect(message(10)).to.contain("'http' is not a port");
      expect(message(11)).to.contain("no tag is named 'Nope'");
      expect(message(14)).to.contain('2 hosts of this network are named');
      expect(message(16)).to.contain("row 15 gave this host the hostname 'other.lan'");
      expect(message(17)).to.contain('has 3 fields, the header has 7');
      expect(p.create.map((c) => [c.name, c.rows, c.hostname])).to.deep.equal([['ok', [2, 15], 'other.lan']]);
    });

    it('tags match by name ignoring case, unless two differ only in case', () => {
      expect(plan('name,tags\na,production\n').create[0]!.tags).to.deep.equal([TAG]);
      const twins = state({ tags: [TAG, { id: '00000000-0000-4000-8000-0000000000a2', name: 'production' }] });
      expect(plan('name,tags\na,production\n', twins).create[0]!.tags.map((t) => t.name)).to.deep.equal(['production']);
      expect(plan('name,tags\na,PRODUCTION\n', twins).refused[0]!.message).to.contain('differ only in case');
    });
  });
});
