// Recog's fingerprints in the agent (agent/fingerprint/recog.ts, scripts/recogCompile.ts): every
// <example> of every loaded fingerprint gives Recog's expected values, the Ruby → JavaScript
// translation keeps Ruby's meaning, and refused fingerprints are listed. (Hostile-input timings:
// MAX_INPUT in scripts/recogCompile.ts.)
import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { recogDatabases, recogMatch, recogMatchFingerprint } from '../../agent/fingerprint/recog.js';
import { compileRecog, ensureRecogCompiled, RECOG_REFUSED_MD, refusedMarkdown, translateRubyRegex, type RecogCompileResult } from '../../scripts/recogCompile.js';

const ruby = (pattern: string, flags = '') => { const t = translateRubyRegex(pattern, flags); return new RegExp(t.source, t.flags); };

describe('Recog fingerprints (agent/fingerprint/recog.ts)', function () {
  this.timeout(120_000);
  let result: RecogCompileResult;
  before(() => {
    ensureRecogCompiled(); // what the build does; recog.ts reads its output
    result = compileRecog();
  });

  it('runs every example of every loaded fingerprint: it matches that fingerprint, and the first match gives its expected values', () => {
    let examples = 0;
    let shadowed = 0;
    const failures: string[] = [];
    for (const [database, db] of Object.entries(result.databases)) {
      for (const { index, fingerprint, examples: list } of db.loaded) {
        for (const example of list) {
          examples++;
          const where = `${database} #${index + 1} "${fingerprint[2]}" on ${JSON.stringify(example.text.slice(0, 120))}`;
          // Recog's own check (Fingerprint#verify_tests): the fingerprint alone gives every value.
          const own = recogMatchFingerprint(database, index, example.text);
          if (!own) { failures.push(`${where}: does not match`); continue; }
          const wrong = Object.entries(example.expect).filter(([k, v]) => own.params[k] !== v);
          if (wrong.length) { failures.push(`${where}: ${wrong.map(([k, v]) => `${k} is ${JSON.stringify(own.params[k])}, expected ${JSON.stringify(v)}`).join('; ')}`); continue; }
          // What the agent gets (first match wins): that fingerprint, or an earlier one that gives the same expected values.
          const first = recogMatch(database, example.text)!;
          if (first.index !== index) {
            const differs = Object.entries(example.expect).filter(([k, v]) => first.params[k] !== v);
            if (differs.length) failures.push(`${where}: an earlier fingerprint, #${first.index + 1} "${first.description}", matches first and gives ${differs.map(([k]) => `${k}=${JSON.stringify(first.params[k])}`).join(', ')}`);
            else shadowed++;
          }
        }
      }
    }
    const loaded = Object.values(result.databases).reduce((n, db) => n + db.loaded.length, 0);
    console.log(`      ${Object.keys(result.databases).length} databases, ${loaded} fingerprints loaded, ${result.refused.length} refused; ${examples} examples, ${examples - failures.length} passing (${shadowed} of them matched first by an earlier fingerprint giving the same values)`);
    expect(failures, failures.slice(0, 40).join('\n')).to.deep.equal([]);
    expect(examples).to.be.greaterThan(5000);
  });

  it('loads the compiled databases lazily, once, with Recog\'s names', () => {
    const names = recogDatabases();
    for (const name of ['http_header.server', 'html_title', 'http_header.cookie', 'http_header.wwwauth', 'http_header.x-powered-by', 'favicon.md5', 'ssh.banner', 'ftp.banner', 'smtp.banner', 'pop3.banner', 'imap4.banner', 'telnet_banners', 'ntp.readvar', 'rtsp_header.server', 'sip_header.server', 'mysql.banners', 'mysql.error', 'x509.subject', 'x509.issuer', 'snmp.sys_description', 'snmp.sys_object_id', 'mdns.device-info.txt', 'smb.native_os', 'smb.native_lm', 'dns.versionbind', 'operating_system.name', 'architecture']) {
      expect(names).to.include(name);
    }
    expect(recogMatch('no.such.database', 'x')).to.equal(null);
    expect(recogMatch('ssh.banner', 'nothing like a banner \u0000')).to.equal(null);
    const m = recogMatch('ssh.banner', 'OpenSSH_8.9p1 Ubuntu-3ubuntu0.6')!;
    expect(m.params).to.include({ 'service.product': 'OpenSSH', 'service.version': '8.9p1', 'os.vendor': 'Ubuntu', 'service.protocol': 'ssh' });
    // {service.version} interpolated into the CPE, as Recog does.
    expect(m.params['service.cpe23']).to.equal('cpe:/a:openbsd:openssh:8.9p1');
  });

  it('keeps Ruby\'s meaning of ^, $, \\A, \\z, \\Z and . on two-line input', () => {
    const two = 'foo\nbar';
    // Ruby's ^ and $ are line anchors, always.
    expect(ruby('^bar').test(two)).to.equal(true);
    expect(ruby('foo$').test(two)).to.equal(true);
    expect(ruby('^foo$').test(two)).to.equal(true);
    // \A and \z: the text's start and end only.
    expect(ruby('\\Abar').test(two)).to.equal(false);
    expect(ruby('\\Afoo').test(two)).to.equal(true);
    expect(ruby('foo\\z').test(two)).to.equal(false);
    expect(ruby('bar\\z').test(two)).to.equal(true);
    expect(ruby('bar\\z').test(`${two}\n`)).to.equal(false);
    // \Z: the end, or before a last "\n".
    expect(ruby('foo\\Z').test(two)).to.equal(false);
    expect(ruby('bar\\Z').test(two)).to.equal(true);
    expect(ruby('bar\\Z').test(`${two}\n`)).to.equal(true);
    expect(ruby('bar\\Z').test(`${two}\n\n`)).to.equal(false);
    // Only "\n" ends a line for Ruby (JavaScript's m flag would also take "\r").
    expect(ruby('^foo$').test('foo\r\nbar')).to.equal(false);
    expect(ruby('^bar').test('foo\rbar')).to.equal(false);
    expect(ruby('^(.*)$').exec('foo\r\nbar')![1]).to.equal('foo\r');
    // Dot: not "\n", unless Ruby's m (REG_DOT_NEWLINE, REG_MULTILINE, (?m), (?m:…)).
    expect(ruby('foo.bar').test(two)).to.equal(false);
    expect(ruby('foo.bar', 'REG_DOT_NEWLINE').test(two)).to.equal(true);
    expect(ruby('foo.bar', 'REG_MULTILINE').test(two)).to.equal(true);
    expect(ruby('(?m)foo.bar').test(two)).to.equal(true);
    expect(ruby('(?m:foo.)bar').test(two)).to.equal(true);
    expect(ruby('(?m:foo).bar').test(two)).to.equal(false);
  });

  it('translates flags, \\h, POSIX classes and case-insensitive regions, and refuses what JavaScript lacks', () => {
    expect(translateRubyRegex('(?i)^abc', '').flags).to.equal('i');
    expect(translateRubyRegex('^(?i)abc', '').flags).to.equal('i');
    expect(translateRubyRegex('abc', 'REG_ICASE').flags).to.equal('i');
    expect(ruby('(?i:abc)').test('xABCx')).to.equal(true);
    expect(ruby('^x(?i:abc)$').test('xAbC')).to.equal(true);
    expect(ruby('^x(?i:abc)$').test('XAbC')).to.equal(false); // only the region is case-insensitive
    expect(ruby('^x(?i:[a-c]+)$').test('xAcB')).to.equal(true);
    expect(ruby('^\\h+$').test('09afAF')).to.equal(true);
    expect(ruby('^\\h+$').test('g')).to.equal(false);
    expect(ruby('^[[:alpha:]]+[[:digit:]]$').test('abC1')).to.equal(true);
    expect(ruby('^a{,2}$').test('aa')).to.equal(true);
    expect(ruby('^[]a]+$').test(']a')).to.equal(true);
    expect(ruby('^\\x4$').test('\x04')).to.equal(true);
    const named = ruby('^(\\w+) (?<v>\\d+)$').exec('abc 12')!;
    expect(named[1]).to.equal('12'); // with named groups Ruby's plain groups do not capture
    for (const [pattern, why] of [['a*+', 'possessive'], ['(?>a+)b', 'atomic'], ['\\Ga', '\\G'], ['[a[b]]', 'nested'], ['[a-z&&[^c]]', 'intersection'], ['(?i)a(?-i:b)', 'case-sensitive region']] as const) {
      expect(() => translateRubyRegex(pattern), pattern).to.throw(why);
    }
  });

  it('lists refused fingerprints with their reason (vendor/recog/REFUSED.md is the compile\'s own list)', () => {
    expect(fs.readFileSync(RECOG_REFUSED_MD, 'utf8')).to.equal(refusedMarkdown(result));
    for (const r of result.refused) expect(refusedMarkdown(result)).to.include(`fingerprint ${r.index + 1}): ${r.description}`);
    // A database with a pattern JavaScript cannot take: refused, counted, listed, the others loaded.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'recog-'));
    try {
      fs.writeFileSync(`${dir}/test.xml`, `<?xml version="1.0"?>
<fingerprints matches="test.banner" protocol="TEST">
  <fingerprint pattern="^x(?&gt;a+)b$"><description>Atomic</description><example>xaab</example><param pos="0" name="service.product" value="A"/></fingerprint>
  <fingerprint pattern="^Foo/(\\d+)$"><description>Foo</description><example service.version="2">Foo/2</example><param pos="0" name="service.product" value="Foo"/><param pos="1" name="service.version"/></fingerprint>
</fingerprints>`);
      const own = compileRecog(dir);
      expect(own.refused).to.have.length(1);
      expect(own.refused[0]).to.include({ database: 'test.banner', index: 0, description: 'Atomic' });
      expect(own.refused[0]!.reason).to.match(/atomic group/);
      expect(own.databases['test.banner']!.refused).to.deep.equal([0]);
      expect(own.databases['test.banner']!.loaded.map((f) => f.index)).to.deep.equal([1]);
      expect(refusedMarkdown(own)).to.match(/## atomic group \(\?>…\) \(1\)\n\n- `test\.banner` \(test\.xml, fingerprint 1\): Atomic — reason: atomic group/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
