// What a host is, from every finding of its ports and its SNMP system description:
// its kind of device and its model, its OS and version, each with the confidence of the best
// evidence for it. The MAC's vendor comes apart (the OUI registry).
import type { Confidence, Finding, FoundHost } from '../scan/types.js';
import { findingsOfRecog } from './recogFindings.js';
import { recogMatch } from './recog.js';

export interface HostFacts {
  deviceType: string | null;
  deviceModel: string | null;
  osName: string | null;
  osVersion: string | null;
  osConfidence: Confidence | null;
}

const RANK: Record<Confidence, number> = { Low: 0, Medium: 1, High: 2, Certain: 3 };

/** The device and OS a host's findings agree on best: the most confident of each, the first on a tie. */
export function hostFacts(host: Pick<FoundHost, 'services' | 'snmp'>): HostFacts {
  const findings: Finding[] = host.services.flatMap((s) => s.findings ?? []);
  const descr = host.snmp?.system.descr;
  if (descr) {
    const match = recogMatch('snmp.sys_description', descr);
    if (match) findings.push(...findingsOfRecog(match, descr));
  }
  const best = (layer: Finding['layer']) => findings.filter((f) => f.layer === layer).reduce<Finding | null>((a, f) => (!a || RANK[f.confidence] > RANK[a.confidence] ? f : a), null);
  const device = best('device');
  const os = best('os');
  return {
    deviceType: device?.deviceType ?? (host.services.some((s) => s.port === 631 || s.port === 515) ? 'Printer' : null),
    deviceModel: device?.name ?? null,
    osName: os?.name ?? null,
    osVersion: os?.version ?? null,
    osConfidence: os?.confidence ?? null,
  };
}
