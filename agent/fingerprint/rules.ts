// Our own fingerprint rules: plain data, reviewed like code. Written for this project from the
// protocols' public specifications and real servers' greetings (nothing taken from Scanopy's
// service definitions, AGPL, or nmap's nmap-service-probes, NPSL).
//
// An answer rule reads the answer of a probe (probes.ts): every condition's pattern must match its
// field; named groups of the patterns become the service's facts. Rules are tried in order and the
// first that matches an answer wins, so specific rules come before generic ones. A port rule
// names the usual service of a port when it is open but no answer matched (confidence Low).
// `definition` is the service_definition sent to the server: names it and the web app know
// ("SSH", "Redis", "PostgreSQL", "Nginx", …) so the map shows their icons.
import type { Confidence, Layer } from '../scan/types.js';
import { PATH_RULES } from './appProbes.js';
import { HANDSHAKE_RULES } from './handshakes.js';
import { PRODUCT_RULES } from './products.js';
import type { ProbeId } from './probes.js';

export type Field =
  | 'answer' // the raw bytes (latin1 text)
  | 'status' // HTTP status line
  | 'server' // HTTP Server header
  | `header.${string}` // any other HTTP header, name in lower case: 'header.x-powered-by'
  | 'title' // HTML <title>
  | 'body' // the HTTP body as text
  | 'cookies' // every Set-Cookie's name=value, joined by "; "
  | 'favicon' // MD5 of /favicon.ico (hex)
  | 'cert.subject' // TLS certificate subject CN
  | 'cert.san' // subjectAltName
  | 'cert.issuer'; // issuer CN (or O)

export interface Condition {
  field: Field;
  pattern: RegExp;
}

export interface AnswerRule {
  evidence: 'answer';
  id: string;
  name: string;
  definition: string;
  /** The answers it reads: the first is sent first on `ports`. */
  probes: ProbeId[];
  /** The service talks first (a greeting): its answer to any probe starts with it, so any answer is read. */
  anyProbe?: boolean;
  /** Where this rule's first probe is tried before the others. */
  ports?: number[];
  /** Only on these ports (a bare "220 " greeting says FTP on 21, SMTP on 25). */
  onlyPorts?: number[];
  match: Condition[];
  /** Facts copied from fields when they are there, e.g. { title: 'title' }. */
  record?: Record<string, Field>;
  confidence: Confidence;
  /**
   * What the match says: a protocol (the default), the server software, the application, a device
   * or an OS. The port's service is named after the most specific layer found; the others are its facts.
   */
  layer?: Layer;
  /** More findings read from the match's facts: `{ layer: 'os', nameFact: 'os' }` (the OS an SSH greeting names). */
  also?: Array<{ layer: Layer; nameFact: string; versionFact?: string; confidence?: Confidence }>;
  /** A device's kind when the rule names a device ("Printer", "NAS"…). */
  deviceType?: string;
}

export interface PortRule {
  evidence: 'port';
  id: string;
  name: string;
  definition: string;
  ports: number[];
}

export type Rule = AnswerRule | PortRule;

const HTTP_PORTS = [80, 81, 3000, 5000, 8000, 8008, 8080, 8081, 8088, 8888, 9000];
const TLS_PORTS = [443, 4443, 5001, 7443, 8443, 9443, 10000];
const HTTP_FACTS: Record<string, Field> = { server: 'server', title: 'title', subject: 'cert.subject', san: 'cert.san', issuer: 'cert.issuer' };

export const RULES: Rule[] = [
  {
    evidence: 'answer', id: 'ssh-greeting', name: 'SSH', definition: 'SSH',
    probes: ['null'], anyProbe: true, ports: [22, 2222],
    // RFC 4253 §4.2: "SSH-protoversion-softwareversion SP comments CR LF"; the comment often names the OS.
    match: [{ field: 'answer', pattern: /^SSH-(?<protocol>\d\.\d+)-(?<product>[A-Za-z][A-Za-z0-9.]*)(?:[_-](?<version>\d[^\s]*))?(?:[ \t][^\r\n]*?(?<os>Debian|Ubuntu|Raspbian|FreeBSD|Alpine|Fedora|CentOS))?[^\r\n]*\r?\n/ }],
    confidence: 'High',
    also: [{ layer: 'server', nameFact: 'product', versionFact: 'version' }, { layer: 'os', nameFact: 'os', confidence: 'Medium' }],
  },
  {
    evidence: 'answer', id: 'mariadb-handshake', name: 'MariaDB', definition: 'MariaDB',
    probes: ['null'], ports: [3306],
    // Handshake v10: 3-byte length, sequence 0, protocol 0x0a, NUL-terminated server version.
    match: [{ field: 'answer', pattern: /^[\s\S]{3}\x00\x0a(?<version>[0-9][^\x00]*MariaDB[^\x00]*)\x00/ }],
    confidence: 'High',
  },
  {
    evidence: 'answer', id: 'mysql-handshake', name: 'MySQL', definition: 'MySQL',
    probes: ['null'], ports: [3306],
    match: [{ field: 'answer', pattern: /^[\s\S]{3}\x00\x0a(?<version>[0-9]+\.[0-9]+\.[0-9]+[^\x00]*)\x00/ }],
    confidence: 'High',
  },
  {
    evidence: 'answer', id: 'mysql-refusal', name: 'MySQL', definition: 'MySQL',
    probes: ['null'],
    // An error packet (0xff) instead of a handshake: "Host '…' is not allowed to connect to this MySQL server".
    match: [{ field: 'answer', pattern: /^[\s\S]{3}\x00\xff[\s\S]{2}[^\x00]*?(?:MySQL|MariaDB) server/ }],
    confidence: 'High',
  },
  {
    evidence: 'answer', id: 'redis-ping', name: 'Redis', definition: 'Redis',
    probes: ['redis-ping'], ports: [6379],
    // RESP: PING answers +PONG; with a password -NOAUTH; in protected mode -DENIED.
    match: [{ field: 'answer', pattern: /^(?:\+PONG|-NOAUTH [^\r\n]*|-DENIED Redis [^\r\n]*)\r\n/ }],
    confidence: 'High',
  },
  {
    evidence: 'answer', id: 'postgresql-sslrequest', name: 'PostgreSQL', definition: 'PostgreSQL',
    probes: ['pg-sslrequest'], ports: [5432],
    // The protocol's SSLRequest is answered with exactly one byte: 'S' (TLS offered) or 'N'.
    match: [{ field: 'answer', pattern: /^(?<ssl>[SN])$/ }],
    confidence: 'High',
  },
  {
    evidence: 'answer', id: 'amqp-header', name: 'AMQP broker', definition: 'AMQP',
    probes: ['null'], anyProbe: true, ports: [5672],
    // An AMQP 0-9-1 server answers anything that is not its protocol header with its own header.
    match: [{ field: 'answer', pattern: /^AMQP\x00(?<major>[\x00-\x09])(?<minor>[\x00-\x09])(?<revision>[\x00-\x09])/ }],
    confidence: 'High',
  },
  {
    evidence: 'answer', id: 'ftp-greeting', name: 'FTP', definition: 'FTP',
    probes: ['null'], ports: [21],
    match: [{ field: 'answer', pattern: /^220[ -](?<greeting>[^\r\n]*?(?:FTP|FileZilla|vsFTPd|ProFTPD|Pure-FTPd)[^\r\n]*)\r?\n/i }],
    confidence: 'High',
  },
  {
    evidence: 'answer', id: 'smtp-greeting', name: 'SMTP', definition: 'SMTP',
    probes: ['null'], ports: [25, 587, 465],
    match: [{ field: 'answer', pattern: /^220[ -](?<greeting>[^\r\n]*?(?:E?SMTP|Postfix|Exim|Sendmail)[^\r\n]*)\r?\n/i }],
    confidence: 'High',
  },
  {
    evidence: 'answer', id: 'ftp-220-on-21', name: 'FTP', definition: 'FTP',
    probes: ['null'], onlyPorts: [21],
    match: [{ field: 'answer', pattern: /^220[ -](?<greeting>[^\r\n]*)\r?\n/ }],
    confidence: 'Medium',
  },
  {
    evidence: 'answer', id: 'smtp-220-on-mail-ports', name: 'SMTP', definition: 'SMTP',
    probes: ['null'], onlyPorts: [25, 587, 465],
    match: [{ field: 'answer', pattern: /^220[ -](?<greeting>[^\r\n]*)\r?\n/ }],
    confidence: 'Medium',
  },
  {
    evidence: 'answer', id: 'http-nginx', name: 'nginx', definition: 'Nginx',
    probes: ['http-get', 'tls'],
    match: [{ field: 'server', pattern: /^nginx(?:\/(?<version>[\d.]+))?/i }],
    record: HTTP_FACTS, confidence: 'High', layer: 'server',
  },
  {
    evidence: 'answer', id: 'http-apache', name: 'Apache httpd', definition: 'Apache',
    probes: ['http-get', 'tls'],
    match: [{ field: 'server', pattern: /^Apache(?:\/(?<version>[\d.]+))?/ }],
    record: HTTP_FACTS, confidence: 'High', layer: 'server',
  },
  {
    evidence: 'answer', id: 'http-python', name: 'Python http.server', definition: 'HTTP',
    probes: ['http-get', 'tls'],
    match: [{ field: 'server', pattern: /^SimpleHTTP\/(?<version>[\d.]+) Python\/(?<python>[\d.]+)/ }],
    record: HTTP_FACTS, confidence: 'High', layer: 'server',
  },
  {
    evidence: 'answer', id: 'http-express', name: 'Express (Node.js)', definition: 'Node.js',
    probes: ['http-get', 'tls'],
    match: [{ field: 'header.x-powered-by', pattern: /^Express$/ }],
    record: HTTP_FACTS, confidence: 'High', layer: 'server',
  },
  {
    evidence: 'answer', id: 'http-grafana', name: 'Grafana', definition: 'Grafana',
    probes: ['http-get', 'tls'],
    match: [{ field: 'title', pattern: /^Grafana\b/ }],
    record: HTTP_FACTS, confidence: 'High', layer: 'application',
  },
  // Products' web front ends (products.ts): applications and devices, read with the server rules above.
  ...PRODUCT_RULES,
  // Well-known health and identity paths (appProbes.ts): read only the answers of their own GETs.
  ...PATH_RULES,
  // Protocol handshakes (handshakes.ts), before the generic HTTPS / TLS rules that would read an IMAPS greeting as "a certificate".
  ...HANDSHAKE_RULES,
  {
    evidence: 'answer', id: 'https', name: 'HTTPS', definition: 'HTTPS',
    probes: ['tls'], ports: TLS_PORTS,
    match: [{ field: 'status', pattern: /^HTTP\/\d(?:\.\d)? (?<status>\d{3})/ }],
    record: HTTP_FACTS, confidence: 'High',
  },
  {
    evidence: 'answer', id: 'http', name: 'HTTP', definition: 'HTTP',
    probes: ['http-get'], ports: HTTP_PORTS,
    match: [{ field: 'status', pattern: /^HTTP\/\d(?:\.\d)? (?<status>\d{3})/ }],
    record: HTTP_FACTS, confidence: 'High',
  },
  {
    evidence: 'answer', id: 'tls-certificate', name: 'TLS service', definition: 'TLS',
    probes: ['tls'],
    // A handshake with a certificate, no HTTP answer after it (IMAPS, LDAPS, a TLS tunnel…).
    match: [{ field: 'cert.issuer', pattern: /^/ }],
    record: { subject: 'cert.subject', san: 'cert.san', issuer: 'cert.issuer' }, confidence: 'Medium',
  },
  { evidence: 'port', id: 'ssh-port', name: 'SSH', definition: 'SSH', ports: [22, 2222] },
  { evidence: 'port', id: 'ftp-port', name: 'FTP', definition: 'FTP', ports: [21] },
  { evidence: 'port', id: 'telnet-port', name: 'Telnet', definition: 'Telnet', ports: [23] },
  { evidence: 'port', id: 'smtp-port', name: 'SMTP', definition: 'SMTP', ports: [25, 465, 587] },
  { evidence: 'port', id: 'dns-port', name: 'DNS', definition: 'Dns', ports: [53] },
  { evidence: 'port', id: 'http-port', name: 'HTTP', definition: 'HTTP', ports: [80, 8080, 8000] },
  { evidence: 'port', id: 'https-port', name: 'HTTPS', definition: 'HTTPS', ports: [443, 8443] },
  { evidence: 'port', id: 'smb-port', name: 'SMB', definition: 'Samba', ports: [445] },
  { evidence: 'port', id: 'mysql-port', name: 'MySQL', definition: 'MySQL', ports: [3306] },
  { evidence: 'port', id: 'rdp-port', name: 'RDP', definition: 'RDP', ports: [3389] },
  { evidence: 'port', id: 'postgresql-port', name: 'PostgreSQL', definition: 'PostgreSQL', ports: [5432] },
  { evidence: 'port', id: 'redis-port', name: 'Redis', definition: 'Redis', ports: [6379] },
];
