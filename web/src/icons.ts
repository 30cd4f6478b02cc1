// The map's pictures, bundled (nothing is fetched: the CSP allows images from this origin, data:
// and blob: URLs only): an icon per host kind from Tabler Icons (MIT) and a logo per well-known
// service from Simple Icons (CC0). Only the ones imported here are bundled. Each becomes a data:
// URL, usable both as a Cytoscape background image and as an <img>; the canvas draws them under a
// blob: URL (drawnImage).
import server from '@tabler/icons/outline/server.svg' with { type: 'text' };
import network from '@tabler/icons/outline/network.svg' with { type: 'text' };
import router from '@tabler/icons/outline/router.svg' with { type: 'text' };
import wall from '@tabler/icons/outline/wall.svg' with { type: 'text' };
import accessPoint from '@tabler/icons/outline/access-point.svg' with { type: 'text' };
import printer from '@tabler/icons/outline/printer.svg' with { type: 'text' };
import cctv from '@tabler/icons/outline/device-cctv.svg' with { type: 'text' };
import database from '@tabler/icons/outline/database.svg' with { type: 'text' };
import phone from '@tabler/icons/outline/device-mobile.svg' with { type: 'text' };
import container from '@tabler/icons/outline/container.svg' with { type: 'text' };
import serverCog from '@tabler/icons/outline/server-cog.svg' with { type: 'text' };
import cube from '@tabler/icons/outline/cube.svg' with { type: 'text' };
import desktop from '@tabler/icons/outline/device-desktop.svg' with { type: 'text' };
// Logos with long paths (Jenkins, Synology, Vaultwarden, MySQL, Kubernetes, Apache: 3-5 kB each)
// are left out: those services show their name alone.
import {
  siDocker, siGitea, siGrafana, siHaproxy, siHomeassistant, siMariadb, siMongodb, siNginx, siNodedotjs, siOpnsense, siPfsense,
  siPostgresql, siPrometheus, siProxmox, siRabbitmq, siRedis, siTraefikproxy, siUbiquiti, siUptimekuma, siWireguard,
  siElasticsearch, siPihole, siTruenas, siMikrotik, siDovecot,
} from 'simple-icons';

/** Host kinds (src/modules/topology/hostKind.ts) with the words the legend uses and their icon. */
export const HOST_KINDS: Record<string, { name: string; svg: string }> = {
  firewall: { name: 'Firewall', svg: wall },
  router: { name: 'Router', svg: router },
  switch: { name: 'Switch', svg: network },
  access_point: { name: 'Access point', svg: accessPoint },
  printer: { name: 'Printer', svg: printer },
  camera: { name: 'Camera', svg: cctv },
  nas: { name: 'NAS', svg: database },
  phone: { name: 'Phone', svg: phone },
  container_host: { name: 'Container host', svg: container },
  hypervisor: { name: 'Hypervisor', svg: serverCog },
  virtual_machine: { name: 'Virtual machine', svg: cube },
  server: { name: 'Server', svg: server },
  workstation: { name: 'Workstation', svg: desktop },
};

const dataUrl = (svg: string) => `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg.replace(/\s+/g, ' ').trim())}`;
const kindUrls = new Map<string, string>();

/** A host kind's icon as a data: URL, stroked in `color` (undefined for a kind we have no icon for). */
export function kindIcon(kind: string | undefined, color = '#334155'): string | undefined {
  const icon = kind ? HOST_KINDS[kind] : undefined;
  if (!icon) return undefined;
  const key = `${kind}|${color}`;
  let url = kindUrls.get(key);
  if (!url) kindUrls.set(key, (url = dataUrl(icon.svg.replace(/currentColor/g, color).replace(/\sclass="[^"]*"/, ''))));
  return url;
}

// Matched against a service's definition (lower case), first match wins.
const LOGOS: Array<[RegExp, { path: string; hex: string; title: string }]> = [
  [/nginx/, siNginx], [/postgres/, siPostgresql], [/redis/, siRedis], [/docker/, siDocker], [/grafana/, siGrafana],
  [/prometheus/, siPrometheus], [/proxmox/, siProxmox], [/traefik/, siTraefikproxy], [/gitea/, siGitea],
  [/opnsense/, siOpnsense], [/pfsense/, siPfsense], [/home assistant/, siHomeassistant], [/wireguard/, siWireguard],
  [/haproxy/, siHaproxy], [/node\.?js/, siNodedotjs], [/uptime kuma/, siUptimekuma],
  [/unifi|ubiquiti/, siUbiquiti], [/mariadb/, siMariadb], [/mongo/, siMongodb], [/rabbitmq/, siRabbitmq], [/elasticsearch/, siElasticsearch],
  [/pi-?hole/, siPihole], [/truenas/, siTruenas], [/mikrotik|routeros/, siMikrotik], [/dovecot/, siDovecot],
];
const logoUrls = new Map<string, string | undefined>();

/** A well-known service's logo as a data: URL, in its brand colour (undefined: the name alone is shown). */
export function serviceLogo(definition: string | undefined): string | undefined {
  const d = (definition ?? '').toLowerCase();
  if (!d) return undefined;
  if (!logoUrls.has(d)) {
    const icon = LOGOS.find(([re]) => re.test(d))?.[1];
    logoUrls.set(d, icon && dataUrl(`<svg xmlns="http://www.w3.org/2000/svg" width="24" height="24" viewBox="0 0 24 24"><path fill="#${icon.hex}" d="${icon.path}"/></svg>`));
  }
  return logoUrls.get(d);
}

const drawnUrls = new Map<string, string>();

/**
 * The same picture under a short blob: URL, made once per picture, for the canvas's background
 * images. Cytoscape hashes a background image's URL character by character each time it styles an
 * element, and a data: URL is 0.5-3 kB: at 1,000 elements that hashing was the largest part of
 * the first frame's styling. The data: URL stays what the HTML titles, the legend and the exports
 * use (a file embeds its pictures). Where blob: URLs are not made, the data: URL itself.
 */
export function drawnImage(dataUrl: string): string {
  let url = drawnUrls.get(dataUrl);
  if (url === undefined) {
    const comma = dataUrl.indexOf(',');
    const type = dataUrl.slice(5, comma).split(';')[0] || 'image/svg+xml';
    url = typeof URL.createObjectURL === 'function' && dataUrl.startsWith('data:') && !dataUrl.slice(0, comma).endsWith(';base64')
      ? URL.createObjectURL(new Blob([decodeURIComponent(dataUrl.slice(comma + 1))], { type }))
      : dataUrl;
    drawnUrls.set(dataUrl, url);
  }
  return url;
}
