// The agent's IPv4 helpers (agent/net/ip.ts) and the membership checks built on them.
import { expect } from 'chai';
import { inNetwork, ipv4ToNumber, numberToIPv4, parseIPv4, parseIPv4Cidr } from '../../agent/net/ip.js';
import { cidrContains } from '../../agent/runner.js';

describe('agent: IPv4 helpers', () => {
  it('reads a dotted quad only: no shorthand, no leading zero (octal to ping), no IPv6', () => {
    expect(parseIPv4('198.18.0.7')?.toString()).to.equal('198.18.0.7');
    for (const bad of ['127.1', '0x7f.0.0.1', '2130706433', '010.0.0.1', '256.0.0.1', '::ffff:10.0.0.1', '']) expect(parseIPv4(bad), bad).to.equal(undefined);
  });

  it('counts addresses as unsigned 32-bit numbers, both ends of the range included', () => {
    expect(ipv4ToNumber(parseIPv4('255.255.255.255')!)).to.equal(0xffffffff);
    expect(numberToIPv4(0xffffffff)).to.equal('255.255.255.255');
    expect(numberToIPv4(ipv4ToNumber(parseIPv4('198.18.0.255')!) + 1)).to.equal('198.18.1.0');
  });

  it('a CIDR is cleared to its network; membership is by prefix, /0 holds every IPv4 address', () => {
    expect(parseIPv4Cidr('198.18.17.5/20')?.map(String)).to.deep.equal(['198.18.16.0', '20']);
    expect(parseIPv4Cidr('198.18.0.0/33')).to.equal(undefined);
    expect(inNetwork('198.18.31.255', ...parseIPv4Cidr('198.18.16.0/20')!)).to.equal(true);
    expect(inNetwork('198.18.32.0', ...parseIPv4Cidr('198.18.16.0/20')!)).to.equal(false);
    expect(cidrContains('0.0.0.0/0', '203.0.113.9')).to.equal(true);
  });

  it('an IPv6 container address is in no IPv4 target (Docker networks may be dual-stack)', () => {
    expect(cidrContains('198.18.0.0/16', 'fd00::2')).to.equal(false);
    expect(cidrContains('fd00::/64', 'fd00::2')).to.equal(false);
  });
});
