// The map's `?focus=` and the web API's paths (issue 22, finding 6): a value from the address bar
// never turns a request into one for another resource. Pure: no browser.
import { expect } from 'chai';
import { apiPath, isPlainPath } from '../../web/src/api.js';
import { focusedHost } from '../../web/src/mapFocus.js';

describe('web: map focus and API paths (pure)', () => {
  const host = '0b6f1b9e-8d4a-4c1e-9f3a-2d5e6f7a8b9c';
  const ip = '5f0c2a11-3b4d-4e5f-8a6b-7c8d9e0f1a2b';
  const hosts = [{ hostId: host, name: 'db', ips: ['10.1.0.20'], nodeIds: [`ip_address:${ip}`] }];

  it('focus takes a host id, or a node id through the host drawn there; anything else is ignored', () => {
    expect(focusedHost(host, hosts)).to.equal(host);
    expect(focusedHost(`ip_address:${ip}`, hosts)).to.equal(host);
    expect(focusedHost(`host:${host}`, [])).to.equal(host);
    expect(focusedHost(`subnet:${ip}`, hosts)).to.equal(undefined);
    for (const hostile of ['../auth/keys', `${host}/../../auth/keys`, `../auth/keys?${host}`, `host:${host}/..`, `host:../${host}`, `${host}\n`, 'x'.repeat(36), '', null]) {
      expect(focusedHost(hostile, hosts), String(hostile)).to.equal(undefined);
    }
  });

  it('apiPath encodes each value as one segment; a path the browser would resolve elsewhere is not plain', () => {
    expect(apiPath`/api/v1/hosts/${'../auth/keys'}/history`).to.equal('/api/v1/hosts/..%2Fauth%2Fkeys/history');
    expect(apiPath`/api/v1/hosts/${host}`).to.equal(`/api/v1/hosts/${host}`);
    for (const plain of [`/api/v1/hosts/${host}`, '/api/v1/hosts/..%2Fauth%2Fkeys/history', '/api/v1/topology?network_id=x&tag_ids=a,b&at=../x']) {
      expect(isPlainPath(plain), plain).to.equal(true);
    }
    for (const rewritten of ['/api/v1/hosts/../auth/keys', '/api/v1/hosts/%2e%2e/auth/keys', '/api/v1/hosts/.%2E/auth/keys', '/api/v1/hosts/./x', '/api/v1/hosts/a\\..\\..\\auth\\keys', '//evil.example/x', 'https://evil.example/x', 'api/v1/hosts']) {
      expect(isPlainPath(rewritten), rewritten).to.equal(false);
    }
  });
});
