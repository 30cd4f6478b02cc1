// Rules applied to probe answers: what a port runs, at every layer its answers show (a protocol,
// the server software, the application behind it, a device, an OS), and why (or why not). Also
// which probes a port gets, in which order, what an HTTP answer is followed by (its redirects on
// the same host, its favicon), and when to stop.
import type { ProbeBudget } from '../scan/budget.js';
import type { Confidence, Finding, FoundService, Layer } from '../scan/types.js';
import { HANDSHAKE_PARSERS } from './handshakes.js';
import { escapeBytes, PROBES, runHttp, runProbe, type ProbeAnswer, type ProbeId, type ProbeTimeouts } from './probes.js';
import { pathPlan, pathProbeId } from './appProbes.js';
import { recogFindings } from './recogFindings.js';
import { RULES, type AnswerRule, type Field, type Rule } from './rules.js';

const RANK: Record<Confidence, number> = { Low: 0, Medium: 1, High: 2, Certain: 3 };
/** Which finding names the port's service: the most specific one. */
const SPECIFIC: Layer[] = ['application', 'device', 'server', 'protocol', 'os'];

/** When no rule hints a port, probes go in this order (talks-first services need no payload). */
export const FALLBACK_PROBES: readonly ProbeId[] = ['null', 'http-get', 'tls', 'redis-ping', 'pg-sslrequest'];

const FIELD_LABELS: Record<string, string> = {
  answer: 'answer', status: 'status line', server: 'Server', title: 'title', body: 'body', cookies: 'cookies', favicon: 'favicon MD5',
  'cert.subject': 'certificate subject CN', 'cert.san': 'certificate SAN', 'cert.issuer': 'certificate issuer',
};
const fieldLabel = (field: Field) => FIELD_LABELS[field] ?? `header ${field.slice('header.'.length)}`;
const HTTP_FIELDS = new Set<string>(['status', 'server', 'title', 'body', 'cookies']);

export function fieldOf(answer: ProbeAnswer, field: Field): string | undefined {
  switch (field) {
    case 'answer': return answer.bytes.length ? answer.bytes.toString('latin1') : undefined;
    case 'status': return answer.http?.statusLine;
    case 'server': return answer.http?.headers.server;
    case 'title': return answer.http?.title;
    case 'body': return answer.http?.body || undefined;
    case 'cookies': return answer.http?.cookies.length ? answer.http.cookies.join('; ') : undefined;
    case 'favicon': return answer.faviconMd5;
    case 'cert.subject': return answer.cert?.subject;
    case 'cert.san': return answer.cert?.san;
    case 'cert.issuer': return answer.cert?.issuer;
    default: return answer.http?.headers[field.slice('header.'.length)];
  }
}

/**
 * Bytes from the network made text before they are facts: printable characters kept, control
 * characters (a NUL, an escape) written as \xNN, cut to 500 characters.
 */
export function factText(value: string): string {
  // eslint-disable-next-line no-control-regex
  const text = value.replace(/[\x00-\x1f\x7f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  return text.length > 500 ? `${text.slice(0, 499)}…` : text;
}

export type RuleOutcome =
  | { matched: true; facts: Record<string, string>; shown: string }
  | { matched: false; why: string };

/** One answer rule against one answer: matched (facts, and the matched bytes to show) or why not. */
export function matchRule(rule: AnswerRule, answer: ProbeAnswer): RuleOutcome {
  if (!rule.anyProbe && !rule.probes.includes(answer.probe)) return { matched: false, why: `reads probe ${rule.probes.join(' or ')}, not ${answer.probe}` };
  if (rule.onlyPorts && !rule.onlyPorts.includes(answer.port)) return { matched: false, why: `only on port ${rule.onlyPorts.join(', ')}` };
  if (answer.tlsOnly && rule.match.some((c) => HTTP_FIELDS.has(c.field) || c.field.startsWith('header.'))) {
    return { matched: false, why: 'the port answered plain HTTP as a TLS-only port does: read over TLS instead' };
  }
  const facts: Record<string, string> = {};
  const shown: string[] = [];
  for (const { field, pattern } of rule.match) {
    const value = fieldOf(answer, field);
    if (value === undefined) return { matched: false, why: `no ${fieldLabel(field)} in the answer` };
    const m = pattern.exec(value);
    if (!m) return { matched: false, why: `${fieldLabel(field)} ${escapeBytes(value, 60)} does not match ${shortPattern(pattern)}` };
    for (const [k, v] of Object.entries(m.groups ?? {})) if (v !== undefined) facts[k] = factText(v);
    // The bytes that matched (the whole field when the pattern matched an empty prefix).
    const matched = m[0].replace(/\r?\n$/, '') || value;
    shown.push(field === 'answer' ? escapeBytes(matched) : `${fieldLabel(field)} ${escapeBytes(matched)}`);
  }
  // Binary answers (BER, BSON, SMB2) read by their protocol's parser; its facts are printable text.
  for (const [k, v] of Object.entries(HANDSHAKE_PARSERS[rule.id]?.(answer.bytes) ?? {})) facts[k] ??= factText(v);
  for (const [fact, field] of Object.entries(rule.record ?? {})) {
    const value = fieldOf(answer, field);
    if (value) facts[fact] ??= factText(value);
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

interface Match {
  rule: AnswerRule;
  answer: ProbeAnswer;
  facts: Record<string, string>;
  shown: string;
}

/** The findings of one rule's match: its own layer's, and those its facts carry (`also`). */
function findingsOf({ rule, facts, shown }: Match): Finding[] {
  const layer = rule.layer ?? 'protocol';
  const own: Finding = { layer, name: rule.name, rule: rule.id, confidence: rule.confidence, evidence: shown };
  if (layer !== 'protocol' && facts.version) own.version = facts.version;
  if (rule.deviceType) own.deviceType = rule.deviceType;
  const out = [own];
  for (const a of rule.also ?? []) {
    const name = facts[a.nameFact];
    if (!name) continue;
    const f: Finding = { layer: a.layer, name, rule: rule.id, confidence: a.confidence ?? rule.confidence, evidence: shown };
    if (a.versionFact && facts[a.versionFact]) f.version = facts[a.versionFact];
    out.push(f);
  }
  return out;
}

/** "HTTPD" and "Apache httpd", "nginx" and "nginx": one product named twice (a server's stock page). */
function sameProduct(a: string, b: string): boolean {
  const [x, y] = [a.toLowerCase(), b.toLowerCase()];
  const words = (t: string) => new Set(t.split(/[^a-z0-9]+/).filter((w) => w.length > 2));
  const [wx, wy] = [words(x), words(y)];
  return x === y || [...wx].some((w) => wy.has(w));
}

const label = (f: Finding) => `${f.name}${f.version ? ` ${f.version}` : ''}`;

/**
 * The service on `port` from the answers its probes got. Every rule is tried on every answer; at
 * each layer the first matching rule of an answer counts, and across answers the most confident.
 * The service is named after the most specific layer found (an application behind nginx is the
 * application); the other findings stay with it. No answer match: the port's rule (Low).
 */
export function recognise(port: number, answers: ProbeAnswer[], rules: Rule[] = RULES, options: { recog?: boolean } = {}): Recognition {
  const verdicts: Verdict[] = [];
  const best = new Map<Layer, { finding: Finding; match: Match }>();
  let protocol: Match | undefined;
  for (const answer of answers) {
    const layersDone = new Set<Layer>();
    let answerProtocol: Match | undefined;
    for (const rule of rules) {
      if (rule.evidence !== 'answer') continue;
      const layer = rule.layer ?? 'protocol';
      if (layersDone.has(layer)) continue; // the first rule of a layer wins for this answer
      const outcome = matchRule(rule, answer);
      verdicts.push({ rule: rule.id, probe: answer.probe, outcome });
      if (!outcome.matched) continue;
      layersDone.add(layer);
      const match: Match = { rule, answer, facts: outcome.facts, shown: outcome.shown };
      if (layer === 'protocol') answerProtocol = match;
      if (layer === 'protocol' && (!protocol || RANK[rule.confidence] > RANK[protocol.rule.confidence])) protocol = match;
      for (const finding of findingsOf(match)) {
        const seen = best.get(finding.layer);
        if (!seen || RANK[finding.confidence] > RANK[seen.finding.confidence]) best.set(finding.layer, { finding, match });
      }
    }
    // Recog's fingerprints on the same answer: a finding replaces a rule's only when more confident.
    if (options.recog === false) continue;
    for (const finding of recogFindings(answer, answerProtocol?.rule.definition, answerProtocol?.facts ?? {})) {
      const seen = best.get(finding.layer);
      if (seen && RANK[finding.confidence] <= RANK[seen.finding.confidence]) continue;
      const rule: AnswerRule = {
        evidence: 'answer', id: finding.rule, name: finding.name, definition: finding.definition ?? answerProtocol?.rule.definition ?? finding.name,
        probes: [answer.probe], match: [], confidence: finding.confidence, layer: finding.layer,
      };
      verdicts.push({ rule: finding.rule, probe: answer.probe, outcome: { matched: true, facts: {}, shown: `${finding.layer} ${finding.name}${finding.version ? ` ${finding.version}` : ''} (${finding.evidence})` } });
      best.set(finding.layer, { finding: { layer: finding.layer, name: finding.name, rule: finding.rule, confidence: finding.confidence, evidence: finding.evidence, ...(finding.version ? { version: finding.version } : {}), ...(finding.vendor ? { vendor: finding.vendor } : {}), ...(finding.deviceType ? { deviceType: finding.deviceType } : {}) }, match: { rule, answer, facts: {}, shown: finding.evidence } });
    }
  }
  // A server's own page ("Welcome to nginx!") names the server again, not an application behind it.
  const [app, server] = [best.get('application'), best.get('server')];
  if (app && server && sameProduct(app.finding.name, server.finding.name)) best.delete('application');
  if (best.size) {
    const primaryLayer = SPECIFIC.find((l) => best.has(l) && (l !== 'os' || best.size === 1))!;
    const { finding: primary, match } = best.get(primaryLayer)!;
    // A server or application rule names the product; the protocol rule (HTTP, HTTPS…) its definition when the product has none of its own.
    const definition = (primaryLayer === 'server' && protocol && match.rule.definition === 'HTTP') || (primaryLayer === 'device' && protocol)
      ? protocol!.rule.definition : match.rule.definition;
    const findings = SPECIFIC.flatMap((l) => (best.has(l) ? [best.get(l)!.finding] : []));
    const facts: Record<string, string> = { ...(protocol?.facts ?? {}) };
    for (const { match: m } of best.values()) for (const [k, v] of Object.entries(m.facts)) facts[k] ??= v;
    for (const f of findings) if (f.layer !== primaryLayer && f.layer !== 'protocol') facts[f.layer] ??= label(f);
    const others = findings.filter((f) => f.rule !== primary.rule).map((f) => `${f.layer} ${label(f)} (rule ${f.rule})`);
    const service: FoundService = {
      rule: primary.rule, name: primary.name, definition, port, protocol: 'Tcp', confidence: primary.confidence,
      reason: `rule ${primary.rule}: probe ${PROBES[match.answer.probe]?.label ?? match.answer.probe} on ${port}/tcp answered ${match.shown}${others.length ? `; also ${others.join(', ')}` : ''}`,
      findings,
    };
    if (match.answer.http?.redirects?.length) facts.redirects ??= match.answer.http.redirects.join(' → ');
    if (Object.keys(facts).length) service.facts = facts;
    return { service, verdicts };
  }
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
  // A rule whose probe is a path GET (appProbes.ts) is asked after the plan, by identifyPort.
  const hinted = rules.flatMap((r) => (r.evidence === 'answer' && r.ports?.includes(port) && PROBES[r.probes[0]!] ? [r.probes[0]!] : []));
  return [...new Set([...hinted, ...FALLBACK_PROBES])];
}

export interface PortIdentity extends Recognition {
  answers: ProbeAnswer[];
}

/** At most this many redirects are followed, each on the same host (a login page behind `/`). */
export const MAX_REDIRECTS = 3;

/**
 * An HTTP answer completed: its redirects followed on the same address (another port or scheme
 * allowed: DSM's 5000 → https 5001), then the favicon of the page it ended on. Each is a GET on a
 * connection of its own, counted in the budget; never a credential.
 */
export async function followHttp(
  ip: string, port: number, first: ProbeAnswer, budget: ProbeBudget, signal?: AbortSignal, timeouts?: ProbeTimeouts,
): Promise<ProbeAnswer> {
  let answer = first;
  let at = { port, tls: first.probe === 'tls', path: '/' };
  const redirects: string[] = [];
  for (;;) {
    const page = answer.http;
    const location = page && redirectOf(page);
    if (!page || !location || redirects.length >= MAX_REDIRECTS) break;
    const next = sameHostTarget(ip, at, location);
    if (!next) break;
    redirects.push(`${page.status} ${next.tls !== at.tls || next.port !== at.port ? `${next.tls ? 'https' : 'http'}://:${next.port}` : ''}${next.path}`);
    const got = await runHttp(ip, next.port, next.tls, next.path, budget, signal, timeouts);
    if (!got.http) break;
    // What the first answer said stays where the page does not say it (a Server header, the certificate).
    got.http.headers = { ...page.headers, ...got.http.headers };
    got.cert ??= answer.cert;
    got.probe = first.probe;
    got.port = port;
    answer = got;
    at = next;
  }
  if (redirects.length && answer.http) answer.http.redirects = redirects;
  if (answer.http && answer.http.status < 500 && !signal?.aborted) {
    const icon = await runHttp(ip, at.port, at.tls, '/favicon.ico', budget, signal, timeouts, 256 * 1024);
    const body = icon.http?.status === 200 ? icon.bytes.subarray(icon.bytes.indexOf('\r\n\r\n') + 4) : null;
    if (body?.length && !/^\s*</.test(body.subarray(0, 64).toString('latin1'))) {
      const { createHash } = await import('node:crypto');
      answer.faviconMd5 = createHash('md5').update(body).digest('hex');
    }
  }
  return answer;
}

/**
 * Where an answer sends the client: a 3xx's Location, or a small page that only sends the browser on
 * (a meta refresh, `location.href = …`), as OpenWrt's uhttpd and camera UIs do.
 */
export function redirectOf(http: NonNullable<ProbeAnswer['http']>): string | undefined {
  if (http.status >= 300 && http.status < 400) return http.headers.location;
  if (http.status !== 200 || http.body.length > 4096) return undefined;
  const refresh = /<meta[^>]{0,200}http-equiv=["']?refresh["']?[^>]{0,200}content=["']?\s*\d+\s*;\s*url=([^"'>\s]{1,300})/i.exec(http.body);
  if (refresh) return refresh[1];
  return /(?:window\.|document\.|top\.)?location(?:\.href)?\s*=\s*["']([^"']{1,300})["']|location\.replace\(\s*["']([^"']{1,300})["']/.exec(http.body)?.slice(1).find(Boolean);
}

/** Where a Location header points, if on the same address (relative, or naming `ip`): port, scheme, path. */
export function sameHostTarget(ip: string, from: { port: number; tls: boolean }, location: string): { port: number; tls: boolean; path: string } | null {
  let url: URL;
  try {
    url = new URL(location, `${from.tls ? 'https' : 'http'}://${ip}:${from.port}/`);
  } catch {
    return null;
  }
  if (url.hostname !== ip || (url.protocol !== 'http:' && url.protocol !== 'https:')) return null;
  const tls = url.protocol === 'https:';
  return { port: url.port ? Number(url.port) : tls ? 443 : 80, tls, path: `${url.pathname}${url.search}` || '/' };
}

/**
 * Probes one open port until a rule recognises its answer with High confidence (or the plan ends,
 * or the port stops accepting connections); then the best service found. An HTTP answer is
 * followed (followHttp) before rules read it; a plain answer that says the port wants TLS is never
 * taken as HTTP, and the TLS probe comes next.
 */
export async function identifyPort(
  ip: string,
  port: number,
  budget: ProbeBudget,
  options: { signal?: AbortSignal; timeouts?: ProbeTimeouts; rules?: Rule[]; listenOnly?: boolean } = {},
): Promise<PortIdentity> {
  const rules = options.rules ?? RULES;
  const answers: ProbeAnswer[] = [];
  // listenOnly: only what the port says by itself (a printer's raw port prints any payload it gets).
  for (const probe of options.listenOnly ? ['null'] : probePlan(port, rules)) {
    if (options.signal?.aborted) break;
    let answer = await runProbe(ip, port, probe, budget, options.signal, options.timeouts);
    if (answer.http && !answer.tlsOnly) answer = await followHttp(ip, port, answer, budget, options.signal, options.timeouts);
    answers.push(answer);
    if (answer.error === 'refused' || answer.error === 'cancelled') break;
    const { service } = recognise(port, [answer], rules);
    if (service && RANK[service.confidence] >= RANK.High) break;
  }
  const found = recognise(port, answers, rules);
  if (options.listenOnly || options.signal?.aborted || namesProduct(found.service)) return { ...found, answers };
  // A web port whose first page named nothing: its well-known paths (appProbes.ts), until one names it.
  const web = answers.find((a) => a.http && !a.tlsOnly);
  if (!web || answers.some((a) => a.error === 'refused')) return { ...found, answers };
  const answerRules = rules.filter((r): r is AnswerRule => r.evidence === 'answer');
  let result = found;
  for (const path of pathPlan(port, answerRules)) {
    if (options.signal?.aborted) break;
    const got = await runHttp(ip, port, web.probe === 'tls', path, budget, options.signal, options.timeouts);
    answers.push({ ...got, probe: pathProbeId(path) });
    if (got.error === 'refused') break;
    result = recognise(port, answers, rules);
    if (namesProduct(result.service)) break;
  }
  return { ...result, answers };
}

/** A service named after an application or a device (not only its protocol or web server). */
const namesProduct = (service: FoundService | null) => (service?.findings ?? []).some((f) => f.layer === 'application' || f.layer === 'device');
