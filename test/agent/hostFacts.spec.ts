// What a host is from all its evidence (issue 38.3): the device and the OS its findings name, the
// most confident of each; SNMP's sysDescr through Recog. Pure: no network.
import { expect } from 'chai';
import { hostFacts } from '../../agent/fingerprint/hostFacts.js';
import { recognise } from '../../agent/fingerprint/match.js';
import { parseHttp, type ProbeAnswer } from '../../agent/fingerprint/probes.js';

const http = (port: number, text: string): ProbeAnswer => {
  const bytes = Buffer.from(text, 'latin1');
  return { probe: 'http-get', port, bytes, http: parseHttp(bytes)! };
};

describe('agent: what a host is, from all its evidence', () => {
  it('a printer\'s web server names the device and its firmware; an SSH greeting the OS', () => {
    const web = recognise(80, [http(80, 'HTTP/1.1 200 OK\r\nServer: HP HTTP Server; HP Color LaserJet MFP M477fdw - CF379A; Serial Number: CNB8K1Q2RT; Built:Tue Mar 12, 2019 03:11:48PM {VE1CFN1911AR}\r\nContent-Length: 0\r\n\r\n')]).service!;
    const ssh = recognise(22, [{ probe: 'null', port: 22, bytes: Buffer.from('SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n', 'latin1') }]).service!;
    const printer = hostFacts({ services: [web] });
    expect(printer).to.deep.include({ deviceType: 'Printer', osConfidence: 'Medium' });
    expect(printer.deviceModel).to.match(/LaserJet/);
    expect(hostFacts({ services: [ssh] })).to.deep.include({ deviceType: null, osName: 'Debian', osConfidence: 'Medium' });
  });

  it('SNMP sysDescr read by Recog names the OS and its version; nothing known is all null', () => {
    const facts = hostFacts({ services: [], snmp: { system: { descr: 'Linux nas 4.4.302+ #72806 SMP Thu Sep 5 13:44:21 CST 2024 x86_64', name: null, objectId: null, location: null, contact: null, chassisId: null } } as any });
    expect(facts.osName).to.be.a('string');
    expect(hostFacts({ services: [] })).to.deep.equal({ deviceType: null, deviceModel: null, osName: null, osVersion: null, osConfidence: null });
  });
});
