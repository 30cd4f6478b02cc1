// An organization's custom service definitions, received with a Network discovery's work
// (`discovery_type.service_definitions`, src/modules/serviceDefinitions/work.ts), made answer rules
// like ours (rules.ts): layer application, id `custom:<definition id>`, named and defined by the
// definition's name, tried before the built-in rules. A banner definition reads the NULL probe's
// answer (the greeting); an HTTP one a GET of its path on a connection of its own (runHttp, never a
// credential), sent on the definition's ports and on any port that answered HTTP. Patterns are
// checked and run by src/core/safePattern.ts, the server's own check: a pattern the server would
// refuse is refused here too (a warning of the run), and inputs are cut to 4 KiB.
import { compilePattern } from '../../src/core/safePattern.js';
import type { ProbeBudget } from '../scan/budget.js';
import { identifyPort, recognise, type PortIdentity } from './match.js';
import { runHttp, type ProbeAnswer, type ProbeTimeouts } from './probes.js';
import { RULES, type AnswerRule, type Field, type Rule } from './rules.js';

/** A definition as the server sends it. */
export interface CustomDefinition {
  id: string;
  name: string;
  category?: string;
  icon?: string | null;
  ports: number[];
  probe: { type: 'banner' } | { type: 'http'; path: string };
  match: { field: string; pattern: string };
}

/** An answer rule made of a definition: what it came from travels with it. */
export interface CustomRule extends AnswerRule {
  custom: { id: string; name: string; category?: string; ports: number[]; path?: string };
}

const MAX_DEFINITIONS = 200;
/** The probe id of a custom HTTP GET of `path` (one per path: definitions asking the same path share the answer). */
export const customProbeId = (path: string) => `custom GET ${path}`;

function fieldOf(field: string): Field | null {
  if (field === 'banner') return 'answer';
  if (field === 'status' || field === 'title' || field === 'body') return field;
  const header = /^header:([A-Za-z0-9!#$%&'*+.^_`|~-]{1,64})$/.exec(field);
  return header ? `header.${header[1]!.toLowerCase()}` : null;
}

/**
 * The work's definitions made rules, the ports they add to those probed, and why any was left out
 * (a malformed one, or a pattern the check refuses).
 */
export function customRules(definitions: unknown): { rules: CustomRule[]; ports: number[]; refused: string[] } {
  const rules: CustomRule[] = [];
  const refused: string[] = [];
  const ports = new Set<number>();
  if (!Array.isArray(definitions)) return { rules, ports: [], refused };
  for (const d of definitions.slice(0, MAX_DEFINITIONS) as CustomDefinition[]) {
    const label = `custom definition ${String(d?.name)} (${String(d?.id)})`;
    const field = typeof d?.match?.field === 'string' ? fieldOf(d.match.field) : null;
    const okPorts = Array.isArray(d?.ports) ? d.ports.filter((p) => Number.isInteger(p) && p >= 1 && p <= 65535).slice(0, 64) : [];
    const path = d?.probe?.type === 'http' && typeof d.probe.path === 'string' && /^\/[\x21-\x7e]{0,499}$/.test(d.probe.path) ? d.probe.path : undefined;
    if (typeof d?.id !== 'string' || typeof d.name !== 'string' || !field || !okPorts.length || (d.probe?.type !== 'banner' && !path) || (field === 'answer') !== (d.probe?.type === 'banner')) {
      refused.push(`${label} left out: not a definition this agent understands`);
      continue;
    }
    let pattern: RegExp;
    try {
      pattern = compilePattern(d.match.pattern);
    } catch (err) {
      refused.push(`${label} left out: ${(err as Error).message}`);
      continue;
    }
    for (const p of okPorts) ports.add(p);
    rules.push({
      evidence: 'answer', id: `custom:${d.id}`, name: d.name, definition: d.name, layer: 'application', confidence: 'High',
      probes: path ? [customProbeId(path)] : ['null'],
      // A banner definition's ports hear the NULL probe first; an HTTP one's GET is sent by identifyWithCustom.
      ...(path ? {} : { ports: okPorts }),
      match: [{ field, pattern }],
      custom: { id: d.id, name: d.name, ...(d.category ? { category: d.category } : {}), ports: okPorts, ...(path ? { path } : {}) },
    });
  }
  return { rules, ports: [...ports].sort((a, b) => a - b), refused };
}

/**
 * The discovery type as reported back to the server: without what our server adds for our agent
 * alone (the custom definitions, the approvals' target options), so it is what a Scanopy daemon sends.
 */
export function withoutDefinitions<T>(discoveryType: T): T {
  if (!discoveryType || typeof discoveryType !== 'object' || !('service_definitions' in discoveryType || 'target_options' in discoveryType)) return discoveryType;
  const { service_definitions: _definitions, target_options: _options, ...rest } = discoveryType as Record<string, unknown>;
  return rest as T;
}

/** A service a custom definition named says so in its reason: "custom definition <name> (<id>): …". */
function named(identity: PortIdentity, custom: CustomRule[]): PortIdentity {
  const service = identity.service;
  const rule = service && custom.find((r) => r.id === service.rule);
  if (!service || !rule) return identity;
  const reason = `custom definition ${rule.custom.name} (${rule.custom.id}): ${service.reason.replace(/^rule [^ ]+: /, '')}`;
  const facts = rule.custom.category ? { ...(service.facts ?? {}), category: rule.custom.category } : service.facts;
  return { ...identity, service: { ...service, reason, ...(facts ? { facts } : {}) } };
}

/**
 * identifyPort (match.ts) with the custom rules first (`rules: [...customRules, ...RULES]`), then,
 * unless one already named the port, each custom HTTP path asked once (on the definition's ports, or
 * where the port answered HTTP) and the answers read again; a custom match names the port.
 */
export async function identifyWithCustom(
  ip: string, port: number, budget: ProbeBudget,
  options: { signal?: AbortSignal; timeouts?: ProbeTimeouts; rules?: Rule[]; listenOnly?: boolean } = {},
  custom: CustomRule[] = [],
): Promise<PortIdentity> {
  if (!custom.length) return identifyPort(ip, port, budget, options);
  const rules: Rule[] = [...custom, ...(options.rules ?? RULES)];
  const first = await identifyPort(ip, port, budget, { ...options, rules });
  if (first.service && custom.some((r) => r.id === first.service!.rule)) return named(first, custom);
  if (options.listenOnly || options.signal?.aborted) return first;
  const spokeHttp = first.answers.some((a) => a.http && !a.tlsOnly);
  const paths = [...new Set(custom.flatMap((r) => (r.custom.path && (spokeHttp || r.custom.ports.includes(port)) ? [r.custom.path] : [])))];
  if (!paths.length || first.answers.some((a) => a.error === 'refused')) return first;
  // Over TLS when only the TLS probe got an HTTP answer.
  const tlsToo = !first.answers.some((a) => a.http && !a.tlsOnly && a.probe !== 'tls') && first.answers.some((a) => a.http && a.probe === 'tls');
  const extra: ProbeAnswer[] = [];
  for (const path of paths) {
    if (options.signal?.aborted) break;
    const answer = await runHttp(ip, port, tlsToo, path, budget, options.signal, options.timeouts);
    extra.push({ ...answer, probe: customProbeId(path) });
  }
  const again = recognise(port, [...first.answers, ...extra], rules);
  if (!again.service || !custom.some((r) => r.id === again.service!.rule)) return { ...first, answers: [...first.answers, ...extra] };
  return named({ ...again, answers: [...first.answers, ...extra] }, custom);
}
