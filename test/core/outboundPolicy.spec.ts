import { expect } from 'chai';
import { OutboundPolicy, OutboundRefused, parseAllowedNetworks } from '../../src/core/outboundPolicy.js';

const refusal = (policy: OutboundPolicy, url: string) => {
  try {
    policy.parse(url);
    return 'allowed';
  } catch (err) {
    if (!(err instanceof OutboundRefused)) throw err;
    return err.reason;
  }
};

describe('core: outbound address policy', () => {
  const policy = new OutboundPolicy();

  const table: Array<[string, string]> = [
    // loopback in every spelling
    ['http://127.0.0.1:60073', 'address'], ['http://2130706433/', 'address'], ['http://0177.0.0.1/', 'address'],
    ['http://0x7f.1/', 'address'], ['http://0x7f000001/', 'address'], ['http://127.1/', 'address'], ['http://127.255.255.254/', 'address'],
    ['http://[::1]:60073', 'address'], ['http://[::ffff:127.0.0.1]/', 'address'], ['http://[::ffff:7f00:1]/', 'address'],
    ['http://[0:0:0:0:0:0:0:1]/', 'address'], ['http://[64:ff9b::127.0.0.1]/', 'address'],
    // link-local and cloud metadata
    ['http://169.254.169.254/latest/meta-data', 'address'], ['http://2852039166/', 'address'], ['http://[fd00:ec2::254]/', 'address'],
    ['http://[fe80::1]/', 'address'], ['http://[::ffff:169.254.169.254]/', 'address'],
    // unspecified, multicast, broadcast
    ['http://0.0.0.0:60073', 'address'], ['http://0/', 'address'], ['http://[::]/', 'address'], ['http://224.0.0.1/', 'address'],
    ['http://[ff02::1]/', 'address'], ['http://255.255.255.255/', 'address'],
    // the URL's form
    ['ftp://10.0.0.5/', 'scheme'], ['file:///etc/passwd', 'scheme'], ['http://user:pw@10.0.0.5/', 'userinfo'],
    ['http://10.0.0.5/?x=1', 'query_or_fragment'], ['http://10.0.0.5/#frag', 'query_or_fragment'], ['http://10.0.0.5/?', 'query_or_fragment'],
    ['not a url', 'invalid_url'],
    // allowed: private ranges and public addresses, a path prefix
    ['http://10.0.0.5:60073', 'allowed'], ['http://192.168.1.20:60073/daemon', 'allowed'], ['https://172.16.0.1/', 'allowed'],
    ['http://[fd12:3456::1]:60073', 'allowed'], ['http://100.64.0.1/', 'allowed'], ['http://8.8.8.8/', 'allowed'],
    ['http://daemon.lan:60073', 'allowed'],
  ];
  for (const [url, expected] of table) {
    it(`${url} → ${expected}`, () => expect(refusal(policy, url)).to.equal(expected));
  }

  // IPv6 spellings that carry an IPv4 address: judged by that address (issue 22, finding 6).
  const webhooks = new OutboundPolicy([], { denyPrivate: true });
  const embedded: Array<[string, string]> = [
    ['http://[::7f00:1]/', 'address'], ['http://[::127.0.0.1]/', 'address'], ['http://[::ffff:0:7f00:1]/', 'address'],
    ['http://[::ffff:0:127.0.0.1]/', 'address'], ['http://[::ffff:127.0.0.1]/', 'address'], ['http://[::ffff:7f00:1]/', 'address'],
    ['http://[0:0:0:0:0:ffff:7f00:1]/', 'address'], ['http://[64:ff9b::7f00:1]/', 'address'], ['http://[2002:7f00:1::]/', 'address'],
    ['http://[::a9fe:a9fe]/', 'address'], ['http://[2002:a9fe:a9fe::1]/', 'address'], ['http://[64:ff9b:1::7f00:1]/', 'address'],
    ['http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/', 'address'], // Teredo: the IPv4 address inside is obfuscated
    // private ranges inside, for webhooks
    ['http://[::a00:5]/', 'address'], ['http://[::ffff:0:c0a8:114]/', 'address'], ['http://[64:ff9b::10.0.0.5]/', 'address'], ['http://[2002:c0a8:114::]/', 'address'],
    // a public address inside stays allowed, and so do ordinary global addresses
    ['http://[64:ff9b::808:808]/', 'allowed'], ['http://[2002:808:808::1]/', 'allowed'], ['http://[2606:4700::1111]/', 'allowed'],
  ];
  for (const [url, expected] of embedded) {
    it(`webhook ${url} → ${expected}`, () => expect(refusal(webhooks, url)).to.equal(expected));
  }

  it('WEBHOOK_ALLOWED_NETWORKS=127.0.0.0/8 (tests) allows loopback in its IPv6 spellings too, and nothing else', () => {
    const local = new OutboundPolicy(['127.0.0.0/8'], { denyPrivate: true });
    for (const url of ['http://127.0.0.1:60073/hook', 'http://[::ffff:127.0.0.1]/', 'http://[::7f00:1]/', 'http://[2002:7f00:1::]/']) expect(refusal(local, url), url).to.equal('allowed');
    for (const url of ['http://[::1]/', 'http://[::a9fe:a9fe]/', 'http://10.0.0.5/']) expect(refusal(local, url), url).to.equal('address');
  });

  it('DAEMON_ALLOWED_NETWORKS opens a refused range, and only that one', () => {
    const local = new OutboundPolicy(parseAllowedNetworks('127.0.0.0/8, ::1/128'));
    expect(refusal(local, 'http://127.0.0.1:60073')).to.equal('allowed');
    expect(refusal(local, 'http://2130706433/')).to.equal('allowed');
    expect(refusal(local, 'http://[::1]/')).to.equal('allowed');
    expect(refusal(local, 'http://169.254.169.254/')).to.equal('address');
    expect(() => parseAllowedNetworks('127.0.0.0/33')).to.throw(/DAEMON_ALLOWED_NETWORKS: '127.0.0.0\/33'/);
  });

  it('a name is judged by every address it resolves to, when saved and when connecting', async () => {
    try {
      await policy.check('http://localhost:60073');
      expect.fail('localhost resolves to loopback');
    } catch (err) {
      expect(err).to.be.instanceOf(OutboundRefused);
      expect((err as OutboundRefused).detail).to.match(/^localhost resolves to (127\.0\.0\.1|::1)$/);
    }
    const error = await new Promise<Error | null>((resolve) => policy.lookup('localhost', {}, (err) => resolve(err)));
    expect(error).to.be.instanceOf(OutboundRefused);
  });
});
