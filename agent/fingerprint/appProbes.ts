// Our own application probes: a GET of a well-known health or identity path, asked only of an HTTP
// port whose first page (redirects followed) named no application or device, at most
// MAX_PATH_PROBES per port, never a credential. Each path's rules read only that path's answer
// (their probe is `GET <path>`). Written for this project from the products' own API documentation;
// each rule says what the product answers there.
import type { AnswerRule } from './rules.js';

/** The probe id of a GET of `path` asked by a rule of this file or by a custom definition. */
export const pathProbeId = (path: string) => `GET ${path}`;

/** At most this many path GETs per port ("at most a few GETs per HTTP port"). */
export const MAX_PATH_PROBES = 3;

type PathRule = Pick<AnswerRule, 'id' | 'name' | 'definition' | 'match' | 'confidence'> & { path: string; ports: number[] };

/** `ports`: where the product usually listens; those ports ask its path first. */
const rule = ({ path, ports, ...r }: PathRule): AnswerRule => ({ evidence: 'answer', layer: 'application', probes: [pathProbeId(path)], ports, ...r });

export const PATH_RULES: AnswerRule[] = [
  // Grafana's /api/health (no login): {"commit": "…", "database": "ok", "version": "11.2.0"}.
  rule({ id: 'grafana-health', name: 'Grafana', definition: 'Grafana', confidence: 'High', path: '/api/health', ports: [3000],
    match: [{ field: 'body', pattern: /"database"\s*:\s*"\w+"[\s\S]{0,200}"version"\s*:\s*"(?<version>\d[\w.+-]*)"/ }] }),
  // etcd's /version: {"etcdserver":"3.5.9","etcdcluster":"3.5.0"}.
  rule({ id: 'etcd-version', name: 'etcd', definition: 'etcd', confidence: 'High', path: '/version', ports: [2379, 2380],
    match: [{ field: 'body', pattern: /"etcdserver"\s*:\s*"(?<version>\d[\w.]*)"/ }] }),
  // The Kubernetes API server's /version (anonymous by default): {"major": "1", …, "gitVersion": "v1.29.2", …, "platform": "linux/amd64"}.
  rule({ id: 'kubernetes-version', name: 'Kubernetes API server', definition: 'Kubernetes', confidence: 'High', path: '/version', ports: [6443, 8443],
    match: [{ field: 'body', pattern: /"gitVersion"\s*:\s*"v(?<version>\d+\.\d+[\w.+-]*)"[\s\S]{0,400}"platform"/ }] }),
  // The Docker Registry HTTP API v2 (distribution): /v2/ answers 200 or 401 with this header on every answer.
  rule({ id: 'docker-registry', name: 'Docker Registry', definition: 'Docker Registry', confidence: 'High', path: '/v2/', ports: [5000],
    match: [{ field: 'header.docker-distribution-api-version', pattern: /^registry\/2\./ }] }),
  // Spring Boot Actuator's health endpoint, exposed by default: its own media type, {"status":"UP"}.
  rule({ id: 'spring-boot-actuator', name: 'Spring Boot', definition: 'Spring Boot', confidence: 'High', path: '/actuator/health', ports: [8080, 8081],
    match: [{ field: 'header.content-type', pattern: /^application\/vnd\.spring-boot\.actuator\.v\d\+json/ }] }),
  // InfluxDB 2's /health: {"name":"influxdb", "message":"ready for queries and writes", "status":"pass", …, "version": "v2.7.1"}.
  rule({ id: 'influxdb-health', name: 'InfluxDB', definition: 'InfluxDB', confidence: 'High', path: '/health', ports: [8086],
    match: [{ field: 'body', pattern: /"name"\s*:\s*"influxdb"[\s\S]{0,300}?(?:"version"\s*:\s*"v?(?<version>\d[\w.]*)")?/ }] }),
];

/**
 * The paths to ask of `port`, at most MAX_PATH_PROBES: those of the rules listening there first,
 * then the others in the order of `rules` (one GET per path, whatever the number of rules reading it).
 */
export function pathPlan(port: number, rules: readonly AnswerRule[]): string[] {
  const withPath = rules.flatMap((r) => r.probes.filter((p) => p.startsWith('GET /')).map((p) => ({ path: p.slice('GET '.length), here: r.ports?.includes(port) ?? false })));
  const ordered = [...withPath.filter((p) => p.here), ...withPath.filter((p) => !p.here)].map((p) => p.path);
  return [...new Set(ordered)].slice(0, MAX_PATH_PROBES);
}
