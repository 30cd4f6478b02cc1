// The diff list's lines name tags (issue 23.4): a tag recoloured or renamed, a tag added to or
// removed from an element, by the tag's name from the organization's tags (web/src/mapState.ts).
import { expect } from 'chai';
import { changeLines, type TopologyDiff } from '../../web/src/mapState.js';

const empty = { added: [], removed: [], changed: [] };

describe('web diff lines: tags by name (pure)', () => {
  it('names tag recolours, renames, and tags added to or removed from an element', () => {
    const diff: TopologyDiff = {
      from: 'a', to: 'b', edges: empty,
      nodes: {
        added: [{ id: 'tag:t3', kind: 'tag', entity_id: 't3', parent_id: null, label: 'shop' }],
        removed: [],
        changed: [
          { id: 'tag:t2', kind: 'tag', changes: { color: ['Amber', 'Orange'] } },
          { id: 'tag:t4', kind: 'tag', changes: { label: ['obs', 'observability'], color: ['Gray', 'Purple'] } },
          { id: 'host:h1', kind: 'host', changes: { tags: [['t2'], ['t1', 't9']] } },
          { id: 'host:h2', kind: 'host', changes: { tags: [[], ['t1']], hostname: ['a.lan', 'b.lan'] } },
        ],
      },
    };
    const labels: Record<string, string> = { 'tag:t2': 'staging', 'host:h1': 'web-01', 'host:h2': 'db-01' };
    const tags: Record<string, string> = { t1: 'production', t2: 'staging' };
    expect(changeLines(diff, (id) => labels[id], (id) => tags[id]).map((l) => l.text)).to.deep.equal([
      'tag shop added',
      'tag staging recoloured Amber → Orange',
      'tag obs renamed to observability',
      'tag observability recoloured Gray → Purple',
      'tag production added to web-01',
      'tag t9 added to web-01', // not among the tags: its id
      'tag staging removed from web-01',
      'tag production added to db-01',
      'db-01 changed (hostname: a.lan → b.lan)',
    ]);
  });
});
