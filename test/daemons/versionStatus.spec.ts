// version_status (decisions §7), a pure function: every status and its boundaries, the computed
// flags, and a sunset date passing (`now` given).
import { expect } from 'chai';
import { parseVersion, versionPolicyFromEnv, versionStatus, type VersionPolicy } from '../../src/modules/daemons/versionStatus.js';

const POLICY: VersionPolicy = { minimumSupported: '0.12.0', recommended: '0.14.13' };
const SUNSET: VersionPolicy = { minimumSupported: '0.12.0', recommended: '0.18.0', sunset: { floor: '0.17.5', date: '2027-03-01' } };
const at = (iso: string) => new Date(iso);

describe('daemons/versionStatus', () => {
  const table: Array<[string | null, string, string[]]> = [
    [null, 'Unknown', ['Warning']],
    ['not-a-version', 'Unknown', ['Warning']],
    ['0.11.99', 'Unsupported', ['Critical']],
    ['0.12.0', 'Outdated', ['Warning']], // the minimum itself is supported
    ['0.14.12', 'Outdated', ['Warning']],
    ['0.14.13', 'Current', []], // recommended
    ['v0.14.13', 'Current', []],
    ['0.14.13-rc.1', 'Current', []], // a pre-release counts as its release
    ['1.0.0', 'Current', []], // newer than the server knows
  ];
  for (const [version, status, severities] of table) {
    it(`${version ?? 'no version'} → ${status}`, () => {
      const s = versionStatus(version, POLICY);
      expect(s.status).to.equal(status);
      expect(s.version).to.equal(version);
      expect(s.warnings.map((w) => w.severity)).to.deep.equal(severities);
      expect(s).to.not.have.property('sunset_date');
    });
  }

  it('messages name the version and the recommended one', () => {
    expect(versionStatus(null, POLICY).warnings[0]!.message).to.equal('Daemon version unknown. Update to 0.14.13 or later.');
    expect(versionStatus('0.11.0', POLICY).warnings[0]!.message).to.equal('Daemon 0.11.0 is no longer supported. Update to 0.14.13 or later to reconnect.');
    expect(versionStatus('0.13.0', POLICY).warnings[0]!.message).to.equal('Daemon 0.13.0 is outdated. Update to 0.14.13 for the latest features.');
  });

  it('supports_unified_discovery from 0.15.0, has_correct_docker_volume_mount from 0.16.1 (false when unknown)', () => {
    const flags = (v: string | null) => {
      const s = versionStatus(v, { ...POLICY, recommended: '0.20.0' });
      return [s.supports_unified_discovery, s.has_correct_docker_volume_mount];
    };
    expect(flags(null)).to.deep.equal([false, false]);
    expect(flags('0.14.99')).to.deep.equal([false, false]);
    expect(flags('0.15.0')).to.deep.equal([true, false]);
    expect(flags('0.16.0')).to.deep.equal([true, false]);
    expect(flags('0.16.1')).to.deep.equal([true, true]);
  });

  describe('with a sunset (floor 0.17.5, last day 2027-03-01)', () => {
    it('below the floor: Deprecated with the date until the end of that day, Unsupported from the next', () => {
      for (const now of ['2026-11-22T00:00:00Z', '2027-03-01T23:59:59.999Z']) {
        const s = versionStatus('0.17.4', SUNSET, at(now));
        expect(s, now).to.include({ status: 'Deprecated', sunset_date: '2027-03-01' });
        expect(s.warnings).to.deep.equal([{
          message: 'Daemon 0.17.4 is deprecated and support ends 2027-03-01. Update to 0.18.0 or later before then to avoid interruption.',
          severity: 'Critical', sunset_date: '2027-03-01',
        }]);
      }
      const after = versionStatus('0.17.4', SUNSET, at('2027-03-02T00:00:00Z'));
      expect(after).to.include({ status: 'Unsupported', sunset_date: '2027-03-01' });
      expect(after.warnings[0]).to.include({ severity: 'Critical', sunset_date: '2027-03-01' });
      expect(after.warnings[0]!.message).to.equal('Daemon 0.17.4 is no longer supported (support ended 2027-03-01). Update to 0.18.0 or later to reconnect.');
    });

    it('at the floor it is only Outdated; at recommended Current; below the minimum Unsupported whatever the date', () => {
      expect(versionStatus('0.17.5', SUNSET, at('2028-01-01T00:00:00Z')).status).to.equal('Outdated');
      expect(versionStatus('0.18.0', SUNSET, at('2028-01-01T00:00:00Z')).status).to.equal('Current');
      const old = versionStatus('0.11.0', SUNSET, at('2026-01-01T00:00:00Z'));
      expect(old.status).to.equal('Unsupported');
      expect(old).to.not.have.property('sunset_date');
      expect(versionStatus(null, SUNSET, at('2028-01-01T00:00:00Z')).status).to.equal('Unknown');
    });
  });

  it('the policy comes from the environment: defaults, overrides, a sunset only with floor and date, semver checked', () => {
    expect(versionPolicyFromEnv({})).to.deep.equal(POLICY);
    expect(versionPolicyFromEnv({ DAEMON_MIN_VERSION: '0.13.0', DAEMON_RECOMMENDED_VERSION: '0.15.2', DAEMON_SUNSET_FLOOR: '0.14.0' }))
      .to.deep.equal({ minimumSupported: '0.13.0', recommended: '0.15.2' });
    expect(versionPolicyFromEnv({ DAEMON_SUNSET_FLOOR: '0.17.5', DAEMON_SUNSET_DATE: '2027-03-01' }).sunset).to.deep.equal({ floor: '0.17.5', date: '2027-03-01' });
    expect(() => versionPolicyFromEnv({ DAEMON_RECOMMENDED_VERSION: 'latest' })).to.throw(/not a semver/);
    expect(parseVersion('0.14')).to.equal(null);
  });
});
