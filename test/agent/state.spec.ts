// The agent's state file holds its key (a server_poll agent's paired key) and its daemon identity:
// saveState writes it 0600 whatever was there before (a 0644 file from an older agent, a copy made
// by hand) and whatever the umask, in a directory it creates 0700, by a rename (never half a file,
// no temporary file left).
import { chmodSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { emptyState, loadState, saveState } from '../../agent/state.js';

const mode = (path: string) => statSync(path).mode & 0o777;

describe('agent state file', () => {
  let dir: string;
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'agent-state-')); });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const withUmask = (umask: number, fn: () => void) => {
    const before = process.umask(umask);
    try { fn(); } finally { process.umask(before); }
  };

  it('a new file is 0600 in directories it creates 0700, even with umask 0', () => {
    const path = join(dir, 'a', 'b', 'state.json');
    withUmask(0, () => saveState(path, { ...emptyState(), apiKey: 'key-1' }));
    expect(mode(path).toString(8)).to.equal('600');
    expect(mode(join(dir, 'a', 'b')).toString(8)).to.equal('700');
    expect(mode(join(dir, 'a')).toString(8)).to.equal('700');
    expect(loadState(path).apiKey).to.equal('key-1');
  });

  it('replacing a 0644 file (and a 0666 one under umask 0) leaves it 0600, whole, no temporary file behind', () => {
    const path = join(dir, 'state.json');
    for (const [old, umask] of [[0o644, 0o022], [0o666, 0]] as const) {
      writeFileSync(path, '{"apiKey":"old"}\n');
      chmodSync(path, old);
      withUmask(umask, () => saveState(path, { ...emptyState(), apiKey: 'key-2', runCounter: 3 }));
      expect(mode(path).toString(8)).to.equal('600');
      expect(loadState(path)).to.include({ apiKey: 'key-2', runCounter: 3 });
      expect(readdirSync(dir)).to.deep.equal(['state.json']);
    }
  });

  it('a temporary file left 0644 by a killed agent of the same pid does not widen the new state', () => {
    const path = join(dir, 'state.json');
    const stale = `${path}.${process.pid}.tmp`;
    writeFileSync(stale, 'half');
    chmodSync(stale, 0o644);
    saveState(path, { ...emptyState(), apiKey: 'key-3' });
    expect(mode(path).toString(8)).to.equal('600');
    expect(loadState(path).apiKey).to.equal('key-3');
  });
});
