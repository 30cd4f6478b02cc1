// Rules applied to probe answers: which service a port runs, and why (or why not). Also which
// probes a port gets, in which order, and when to stop.
import type { ProbeBudget } from '../scan/budget.js';
import type { Confidence, FoundService } from '../scan/types.js';
import { escapeBytes, PROBES, runProbe, type ProbeAnswer, type ProbeId, type ProbeTimeouts } from './probes.js';
import { RULES, type AnswerRule, type Field, type Rule } from './rules.js';

const RANK: Record<Confidence, number> = { Low: 0, Medium: 1, High: 2, Certain: 3 };

/** When no rule hints a port, probes go in this order (talks-first services need no payload). */
export const FALLBACK_PROBES: readonly ProbeId[] = ['null', 'http-get', 'tls', 'redis-ping', 'pg-sslrequest'];

const FIELD_LABELS: Record<string, string> = {
  answer: 'answer', status: 'status line', server: 'Server', title: 'title',
  'cert.subject': 'certificate subject CN', 'cert.san': 'certificate SAN', 'cert.issuer': 'certificate issuer',
};
const fieldLabel = (field: Field) => FIELD_LABELS[field] ?? `header ${field.slice('header.'.length)}`;

export function fieldOf(answer: ProbeAnswer, field: Field): string | undefined {
  switch (field) {
    case 'answer': return answer.bytes.length ? answer.bytes.toString('latin1') : undefined;
    case 'status': return answer.http?.statusLine;
    case 'server': return answer.http?.headers.server;
    case 'title': return answer.http?.title;
    case 'cert.subject': return answer.cert?.subject;
    case 'cert.san': return answer.cert?.san;
    case 'cert.issuer': return answer.cert?.issuer;
    default: return answer.http?.headers[field.slice('header.'.length)];
  }
}

export type RuleOutcome =
  | { matched: true; facts: Record<string, string>; shown: string }
  | { matched: false; why: string };

/** One answer rule against one answer: matched (facts, and the matched bytes to show) or why not. */
export function matchRule(rule: AnswerRule, answer: ProbeAnswer): RuleOutcome {
  if (!rule.anyProbe && !rule.probes.includes(answer.probe)) return { matched: false, why: `reads probe ${rule.probes.join(' or ')}, not ${answer.probe}` };
  if (rule.onlyPorts && !rule.onlyPorts.includes(answer.port)) return { matched: false, why: `only on port ${rule.onlyPorts.join(', ')}` };
  const facts: Record<string, string> = {};
  const shown: string[] = [];
  for (const { field, pattern } of rule.match) {
    const value = fieldOf(answer, field);
    if (value === undefined) return { matched: false, why: `no ${fieldLabel(field)} in the answer` };
    const m = pattern.exec(value);
    if (!m) return { matched: false, why: `${fieldLabel(field)} ${escapeBytes(value, 60)} does not match ${shortPattern(pattern)}` };
    for (const [k, v] of Object.entries(m.groups ?? {})) if (v !== undefined) facts[k] = v;
    // The bytes that matched (the whole field when the pattern matched an empty prefix).
    const matched = m[0].replace(/\r?\n$/, '') || value;
    shown.push(field === 'answer' ? escapeBytes(matched) : `${fieldLabel(field)} ${escapeBytes(matched)}`);
  }
  for (const [fact, field] of Object.entries(rule.record ?? {})) {
    const value = fieldOf(answer, field);
    if (value) facts[fact] ??= value;
  }
  return { matched: true, facts, shown: shown.join(', ') };
}

/** A pattern as text, cut to ~60 characters (explain lines stay readable). */
function shortPattern(pattern: RegExp): string {
  const text = String(pattern);
  return text.length > 60 ? `${text.slice(0, 59)}…` : text;
}

export interface Verdict {
  rule: string;
  probe: ProbeId;
  outcome: RuleOutcome;
}

export interface Recognition {
  service: FoundService | null;
  /** Every rule tried on every answer, in order (for --explain). */
  verdicts: Verdict[];
}

/** The service on `port` from the answers its probes got: the most confident answer match, else the port's rule (Low). */
export function recognise(port: number, answers: ProbeAnswer[], rules: Rule[] = RULES): Recognition {
  const verdicts: Verdict[] = [];
  let best: FoundService | null = null;
  for (const answer of answers) {
    for (const rule of rules) {
      if (rule.evidence !== 'answer') continue;
      const outcome = matchRule(rule, answer);
      verdicts.push({ rule: rule.id, probe: answer.probe, outcome });
      if (!outcome.matched) continue;
      const service: FoundService = {
        rule: rule.id, name: rule.name, definition: rule.definition, port, protocol: 'Tcp', confidence: rule.confidence,
        reason: `rule ${rule.id}: probe ${PROBES[answer.probe].label} on ${port}/tcp answered ${outcome.shown}`,
      };
      if (Object.keys(outcome.facts).length) service.facts = outcome.facts;
      if (!best || RANK[service.confidence] > RANK[best.confidence]) best = service;
      break; // first matching rule wins for this answer
    }
  }
  if (best) return { service: best, verdicts };
  const byPort = rules.find((r) => r.evidence === 'port' && r.ports.includes(port));
  if (!byPort) return { service: null, verdicts };
  const silent = answers.length ? 'no probe answer matched a rule' : 'no probe ran';
  return {
    service: {
      rule: byPort.id, name: byPort.name, definition: byPort.definition, port, protocol: 'Tcp', confidence: 'Low',
      reason: `rule ${byPort.id}: port ${port}/tcp open (port number only: ${silent})`,
    },
    verdicts,
  };
}

/** The probes for `port`: those of the rules that hint this port first, then the fallbacks. */
export function probePlan(port: number, rules: Rule[] = RULES): ProbeId[] {
  const hinted = rules.flatMap((r) => (r.evidence === 'answer' && r.ports?.includes(port) ? [r.probes[0]] : []));
  return [...new Set([...hinted, ...FALLBACK_PROBES])];
}

export interface PortIdentity extends Recognition {
  answers: ProbeAnswer[];
}

/**
 * Probes one open port until a rule recognises its answer with High confidence (or the plan ends,
 * or the port stops accepting connections); then the best service found.
 */
export async function identifyPort(
  ip: string,
  port: number,
  budget: ProbeBudget,
  options: { signal?: AbortSignal; timeouts?: ProbeTimeouts; rules?: Rule[] } = {},
): Promise<PortIdentity> {
  const rules = options.rules ?? RULES;
  const answers: ProbeAnswer[] = [];
  for (const probe of probePlan(port, rules)) {
    if (options.signal?.aborted) break;
    const answer = await runProbe(ip, port, probe, budget, options.signal, options.timeouts);
    answers.push(answer);
    if (answer.error === 'refused' || answer.error === 'cancelled') break;
    const { service } = recognise(port, [answer], rules);
    if (service && RANK[service.confidence] >= RANK.High) break;
  }
  return { ...recognise(port, answers, rules), answers };
}
