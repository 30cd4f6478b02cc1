// The server's IP reading and printing (src/core/ip.ts): IPv6 in its spellings, IPv4 as PostgreSQL reads it.
import { expect } from 'chai';
import { canonicalIp, isNetworkCidr, networkOf, parseIp } from '../../src/core/ip.js';

describe('core: IP addresses', () => {
  it('prints IPv6 in the shortest form, whatever the spelling', () => {
    for (const [written, canonical] of [
      ['2001:0DB8:0000:0000:0000:0000:0000:0001', '2001:db8::1'],
      ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'], // the first of two equal runs of zeros
      ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1'], // one zero group stays a 0
      ['0:0:0:0:0:0:0:0', '::'],
      ['::ffff:10.0.0.1', '::ffff:a00:1'],
      ['FE80::1', 'fe80::1'],
    ]) expect(canonicalIp(written!), written).to.equal(canonical);
    expect(canonicalIp('198.18.0.7')).to.equal('198.18.0.7');
  });

  it('clears the host bits of IPv6 networks written with a dotted tail or in capitals', () => {
    expect(networkOf('::ffff:10.1.2.3/120')).to.equal('::ffff:a01:200/120');
    expect(networkOf('2001:DB8:0:0:8000::1/65')).to.equal('2001:db8:0:0:8000::/65');
    expect(networkOf('2001:db8::1/0')).to.equal('::/0');
    expect(networkOf('2001:db8::1/128')).to.equal('2001:db8::1/128');
  });

  it('an IPv6 network is one in any spelling; an IPv4 one as written', () => {
    expect(isNetworkCidr('2001:0DB8:0000::/48')).to.equal(true);
    expect(isNetworkCidr('2001:db8:0:0:0:0:0:0/32')).to.equal(true);
    expect(isNetworkCidr('2001:db8::1/64')).to.equal(false);
    expect(isNetworkCidr('10.1.2.0/24')).to.equal(true);
    // A leading zero is decimal to PostgreSQL: refused with the network it means.
    expect(isNetworkCidr('010.1.2.0/24')).to.equal(false);
    expect(networkOf('010.1.2.0/24')).to.equal('10.1.2.0/24');
  });

  it('reads no IPv4 shorthand, and refuses what is not an address', () => {
    expect(parseIp('010.0.0.1').toString()).to.equal('10.0.0.1');
    for (const bad of ['127.1', '0x7f.0.0.1', '2130706433', '256.0.0.1', '1.2.3.4.5', '2001:db8::1::2', 'host']) expect(() => parseIp(bad), bad).to.throw();
  });
});
