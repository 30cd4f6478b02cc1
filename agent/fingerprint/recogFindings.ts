// Recog's fingerprints (recog.ts) asked about every field of an answer that one of its databases
// reads: an HTTP Server header, title, cookies, WWW-Authenticate, X-Powered-By and favicon; a
// certificate's subject and issuer; the greeting of SSH, FTP, SMTP, POP3, IMAP, telnet, MySQL, RTSP
// and SIP once a protocol rule has said which protocol talks. Each match becomes findings: the
// software (a server or an application), a device and an OS, as Recog's params name them.
import type { Confidence, Finding, Layer } from '../scan/types.js';
import { escapeBytes, type ProbeAnswer } from './probes.js';
import { recogMatch, type RecogMatch } from './recog.js';

export interface RecogFinding extends Finding {
  /** The Recog database and the text it read, for reasons and --explain. */
  database: string;
  /** The service definition a software finding names (its product). */
  definition?: string;
}

/** Databases that name the software answering (a server) rather than what it serves (an application). */
const SERVER_DATABASES = new Set(['http_header.server', 'ssh.banner', 'ftp.banner', 'smtp.banner', 'pop3.banner', 'imap4.banner', 'telnet_banners', 'mysql.banners', 'rtsp_header.server', 'sip_header.server', 'dns.versionbind']);
/** Weaker evidence: a title or an icon can be copied; a header or a greeting rarely is. */
const WEAK_DATABASES = new Set(['html_title', 'favicon.md5', 'http_header.cookie']);

/** The texts of an answer Recog can read: [database, text]. `protocol` is the definition a protocol rule gave the answer. */
export function recogInputs(answer: ProbeAnswer, protocol: string | undefined, facts: Record<string, string>): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  const http = answer.http;
  if (http && !answer.tlsOnly) {
    if (http.headers.server) out.push(['http_header.server', http.headers.server]);
    if (http.title) out.push(['html_title', http.title]);
    for (const cookie of http.cookies) out.push(['http_header.cookie', cookie]);
    if (http.headers['www-authenticate']) out.push(['http_header.wwwauth', http.headers['www-authenticate']]);
    if (http.headers['x-powered-by']) out.push(['http_header.x-powered-by', http.headers['x-powered-by']]);
  }
  if (answer.faviconMd5) out.push(['favicon.md5', answer.faviconMd5]);
  if (answer.cert?.subject) out.push(['x509.subject', `CN=${answer.cert.subject}`]);
  if (answer.cert?.issuer) out.push(['x509.issuer', `CN=${answer.cert.issuer}`]);
  const line = answer.bytes.toString('latin1').split(/\r?\n/)[0] ?? '';
  const greeting = (re: RegExp) => re.exec(line)?.[1];
  const banner: Record<string, [string, string | undefined]> = {
    SSH: ['ssh.banner', greeting(/^SSH-\d\.\d+-(.+)$/)],
    FTP: ['ftp.banner', greeting(/^220[ -](.*)$/)],
    SMTP: ['smtp.banner', greeting(/^220[ -](.*)$/)],
    POP3: ['pop3.banner', greeting(/^\+OK ?(.*)$/)],
    IMAP: ['imap4.banner', greeting(/^\* OK ?(.*)$/)],
    Telnet: ['telnet_banners', facts.banner],
    MySQL: ['mysql.banners', facts.version],
    MariaDB: ['mysql.banners', facts.version],
    RTSP: ['rtsp_header.server', facts.server],
    SIP: ['sip_header.server', facts.server],
    Dns: ['dns.versionbind', facts.version],
  };
  const [database, text] = (protocol && banner[protocol]) || [];
  if (database && text) out.push([database, text]);
  return out;
}

const joinName = (vendor: string | undefined, product: string | undefined) =>
  !product ? vendor ?? '' : vendor && product.includes(' ') && !product.toLowerCase().includes(vendor.toLowerCase()) ? `${vendor} ${product}` : product;

/** One Recog match as findings: its software (server or application), its device, its OS. */
export function findingsOfRecog(match: RecogMatch, text: string): RecogFinding[] {
  const p = match.params;
  const confidence: Confidence = WEAK_DATABASES.has(match.database) || Number(p['service.certainty'] ?? 1) < 1 ? 'Medium' : 'High';
  const evidence = `Recog ${match.database} ${escapeBytes(text, 60)}: ${match.description}`;
  const base = { rule: `recog:${match.database}`, confidence, evidence, database: match.database };
  const out: RecogFinding[] = [];
  const product = joinName(p['service.vendor'], p['service.product'] ?? p['service.family']);
  if (product) {
    const layer: Layer = SERVER_DATABASES.has(match.database) ? 'server' : 'application';
    // An application names its own definition; a server or a device keeps its protocol's (SMTP, HTTP).
    const f: RecogFinding = { ...base, layer, name: product, ...(layer === 'application' ? { definition: product } : {}) };
    if (p['service.version']) f.version = p['service.version'];
    if (p['service.vendor']) f.vendor = p['service.vendor'];
    out.push(f);
  }
  const deviceType = p['hw.device'] ?? p['os.device'];
  if (deviceType) {
    const name = joinName(p['hw.vendor'] ?? p['os.vendor'], p['hw.product'] && p['hw.product'] !== p['hw.family'] ? p['hw.product'] : p['os.product'] ?? p['hw.product']) || deviceType;
    const f: RecogFinding = { ...base, layer: 'device', name, deviceType };
    if (p['hw.version']) f.version = p['hw.version'];
    if (p['hw.vendor'] ?? p['os.vendor']) f.vendor = p['hw.vendor'] ?? p['os.vendor'];
    out.push(f);
  }
  const os = p['os.product'] ?? p['os.family'];
  if (os) {
    const f: RecogFinding = { ...base, layer: 'os', name: joinName(p['os.vendor'], os === 'Linux' && p['os.vendor'] ? `${p['os.vendor']} Linux` : os), confidence: confidence === 'High' ? 'Medium' : 'Low' };
    if (p['os.version']) f.version = p['os.version'];
    out.push(f);
  }
  return out;
}

/** Every finding Recog makes of one answer, in the order of its inputs. */
export function recogFindings(answer: ProbeAnswer, protocol: string | undefined, facts: Record<string, string>): RecogFinding[] {
  return recogInputs(answer, protocol, facts).flatMap(([database, text]) => {
    const match = recogMatch(database, text);
    return match ? findingsOfRecog(match, text) : [];
  });
}
