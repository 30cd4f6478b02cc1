import { expect } from 'chai';
import { closestName, editDistance } from '../../src/http/validation.js';

describe('validation: the closest known field', () => {
  it('edit distance', () => {
    expect(editDistance('', 'abc')).to.equal(3);
    expect(editDistance('colour', 'color')).to.equal(1);
    expect(editDistance('hostnmae', 'hostname')).to.equal(2);
  });

  it('guesses a prefix, a suffix or a typo, and nothing far away', () => {
    const known = ['name', 'network_id', 'hostname', 'hidden', 'tags', 'ip_addresses', 'mac_address'];
    expect(closestName('network', known)).to.equal('network_id');
    expect(closestName('Hostname', known)).to.equal('hostname');
    expect(closestName('hostnmae', known)).to.equal('hostname');
    expect(closestName('mac', known)).to.equal('mac_address');
    expect(closestName('tag', known)).to.equal('tags');
    expect(closestName('addresses', known)).to.equal('ip_addresses');
    expect(closestName('zzzzzz', known)).to.equal(undefined);
    expect(closestName('colour', [])).to.equal(undefined);
  });
});
