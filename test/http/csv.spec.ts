// RFC 4180 fields (unit): quoting, and how nested values flatten.
import { expect } from 'chai';
import { csvField, csvLine } from '../../src/http/csv.js';

describe('csv fields', () => {
  it('quotes a field only when it holds a comma, a quote or a line break, doubling quotes', () => {
    expect(csvField('plain')).to.equal('plain');
    expect(csvField('a,b')).to.equal('"a,b"');
    expect(csvField('say "hi"')).to.equal('"say ""hi"""');
    expect(csvField('two\nlines')).to.equal('"two\nlines"');
    expect(csvField('cr\r')).to.equal('"cr\r"');
  });

  it('writes text that a spreadsheet would run as a formula behind a quote mark; numbers stay numbers', () => {
    expect(csvField('=HYPERLINK("http://evil.example","x")')).to.equal('"\'=HYPERLINK(""http://evil.example"",""x"")"');
    for (const start of ['+', '-', '@', '\t']) expect(csvField(`${start}cmd`)).to.equal(`'${start}cmd`);
    expect(csvField('\rcmd')).to.equal('"\'\rcmd"');
    expect(csvField(-5)).to.equal('-5');
    expect(csvField('web-1')).to.equal('web-1');
  });

  it('guards a formula whatever the cell is made from: a list of values or of entities, an object', () => {
    expect(csvField(['=HYPERLINK("http://evil.example","x")', 'b'])).to.equal('"\'=HYPERLINK(""http://evil.example"",""x"");b"');
    expect(csvField([{ id: '=1+1' }, { id: 'c2' }])).to.equal("'=1+1;c2"); // credential_assignments[].id
    expect(csvField([{ x: 1 }, '@SUM(A1)'])).to.equal('"{""x"":1};@SUM(A1)"'); // the cell starts with '{': no formula
    expect(csvField(['+cmd'])).to.equal("'+cmd");
    expect(csvField([-1, 2])).to.equal("'-1;2");
    expect(csvField(-5)).to.equal('-5');
  });

  it('writes null as empty, lists as ;-joined ids, other objects as JSON', () => {
    expect(csvField(null)).to.equal('');
    expect(csvField(undefined)).to.equal('');
    expect(csvField(false)).to.equal('false');
    expect(csvField(['a', 'b'])).to.equal('a;b');
    expect(csvField([{ id: 'p1', number: 22 }, { id: 'p2' }])).to.equal('p1;p2');
    expect(csvField({ type: 'Manual' })).to.equal('"{""type"":""Manual""}"');
    expect(csvLine(['a', 1, null])).to.equal('a,1,\r\n');
  });
});
