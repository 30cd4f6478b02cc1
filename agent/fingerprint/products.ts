// Our own product rules for what Recog's databases do not name: common self-hosted, office, media
// and network products as their web front ends answer (a title, a header, a body that only they
// write), read after redirects are followed (match.ts followHttp). Written for this project from
// the products' own behaviour and documentation; each says what it reads and why it is theirs.
import type { AnswerRule, Field } from './rules.js';

const HTTP: AnswerRule['probes'] = ['http-get', 'tls'];
const FACTS: Record<string, Field> = { server: 'server', title: 'title', subject: 'cert.subject', san: 'cert.san', issuer: 'cert.issuer' };

type Product = Pick<AnswerRule, 'id' | 'name' | 'definition' | 'match' | 'confidence'> & Partial<Pick<AnswerRule, 'layer' | 'deviceType' | 'record'>>;

const app = (p: Product): AnswerRule => ({ evidence: 'answer', probes: HTTP, layer: 'application', record: FACTS, ...p });
const device = (p: Product & { deviceType: string }): AnswerRule => ({ evidence: 'answer', probes: HTTP, layer: 'device', record: FACTS, ...p });

export const PRODUCT_RULES: AnswerRule[] = [
  // Synology DSM's login page is titled "<model> - Synology DiskStation" (RackStation, Router for the others).
  device({ id: 'synology-dsm', name: 'Synology DiskStation', definition: 'Synology', deviceType: 'NAS', confidence: 'High', match: [{ field: 'title', pattern: /Synology[\s\u00a0](?<product>DiskStation|RackStation|Router|NAS)/ }] }),
  // TrueNAS' web UI (its Angular index) is titled "TrueNAS".
  device({ id: 'truenas', name: 'TrueNAS', definition: 'TrueNAS', deviceType: 'NAS', confidence: 'High', match: [{ field: 'title', pattern: /^TrueNAS\b/ }] }),
  // OpenWrt's LuCI: the login is titled "<host> - LuCI"; uhttpd's index refreshes to cgi-bin/luci/.
  device({ id: 'openwrt-luci', name: 'OpenWrt LuCI', definition: 'OpenWrt', deviceType: 'Router', confidence: 'High', match: [{ field: 'title', pattern: /(?:^|\s-\s)LuCI$/ }] }),
  // Hikvision cameras and recorders: the web server says "App-webs/" or "DNVRS-Webs"; the UI lives under /doc/page/.
  device({ id: 'hikvision-webs', name: 'Hikvision camera', definition: 'Hikvision', deviceType: 'Camera', confidence: 'High', match: [{ field: 'server', pattern: /^(?:App-webs\/|DNVRS-Webs|Hikvision-Webs)/ }] }),
  app({ id: 'pi-hole', name: 'Pi-hole', definition: 'Pi-hole', confidence: 'High', match: [{ field: 'title', pattern: /^Pi-hole\b/ }] }),
  app({ id: 'home-assistant', name: 'Home Assistant', definition: 'Home Assistant', confidence: 'High', match: [{ field: 'title', pattern: /^Home Assistant$/ }] }),
  // Plex Media Server marks every answer, even its 401, with X-Plex-Protocol.
  app({ id: 'plex', name: 'Plex Media Server', definition: 'Plex', confidence: 'High', match: [{ field: 'header.x-plex-protocol', pattern: /^\d/ }] }),
  app({ id: 'jellyfin', name: 'Jellyfin', definition: 'Jellyfin', confidence: 'High', match: [{ field: 'title', pattern: /^Jellyfin$/ }] }),
  app({ id: 'portainer', name: 'Portainer', definition: 'Portainer', confidence: 'High', match: [{ field: 'title', pattern: /^Portainer$/ }] }),
  app({ id: 'prometheus', name: 'Prometheus', definition: 'Prometheus', confidence: 'High', match: [{ field: 'title', pattern: /^Prometheus(?: Time Series Collection and Processing Server)?$/ }] }),
  // Jenkins (and Hudson before it) name themselves in every answer's headers, with the version.
  app({ id: 'jenkins', name: 'Jenkins', definition: 'Jenkins', confidence: 'High', match: [{ field: 'header.x-jenkins', pattern: /^(?<version>\d[\w.]*)/ }] }),
  // Elasticsearch 7.14+ answers with X-elastic-product; older ones with its JSON tagline.
  app({ id: 'elasticsearch', name: 'Elasticsearch', definition: 'Elasticsearch', confidence: 'High', match: [{ field: 'header.x-elastic-product', pattern: /^Elasticsearch$/ }] }),
  app({ id: 'elasticsearch-tagline', name: 'Elasticsearch', definition: 'Elasticsearch', confidence: 'High', match: [{ field: 'body', pattern: /"tagline"\s*:\s*"You Know, for Search"/ }] }),
  // Kibana's server (hapi) sends kbn-name / kbn-license-sig on every answer.
  app({ id: 'kibana', name: 'Kibana', definition: 'Kibana', confidence: 'High', match: [{ field: 'header.kbn-name', pattern: /^./ }] }),
  // HashiCorp Vault: its UI is titled "Vault" at /ui/ (a 307 from /), and its API answers with its own cache header.
  app({ id: 'vault', name: 'HashiCorp Vault', definition: 'Vault', confidence: 'Medium', match: [{ field: 'title', pattern: /^Vault$/ }] }),
  app({ id: 'unifi-network', name: 'UniFi Network', definition: 'UniFi', confidence: 'High', match: [{ field: 'title', pattern: /^UniFi(?: Network)?$/ }] }),
  app({ id: 'nextcloud', name: 'Nextcloud', definition: 'Nextcloud', confidence: 'High', match: [{ field: 'title', pattern: /\bNextcloud$/ }] }),
  app({ id: 'gitea', name: 'Gitea', definition: 'Gitea', confidence: 'High', match: [{ field: 'cookies', pattern: /(?:^|; )i_like_gitea=/ }] }),
  app({ id: 'rabbitmq-management', name: 'RabbitMQ Management', definition: 'RabbitMQ', confidence: 'High', match: [{ field: 'title', pattern: /^RabbitMQ Management$/ }] }),
  app({ id: 'vaultwarden', name: 'Vaultwarden', definition: 'Vaultwarden', confidence: 'High', match: [{ field: 'title', pattern: /^(?:Vaultwarden|Bitwarden) Web Vault$/ }] }),
];
