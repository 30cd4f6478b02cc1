// The name of a file exported from a view of the map, wherever it is made: the API's exports
// (GET /api/v1/topology/export, service.ts) and the map's own in the browser (PNG, SVG, draw.io:
// web/src/screens/map.ts bundles this module). Network, view and day of the instant drawn:
// topology-<network>-<view>-<YYYY-MM-DD>.<extension>. Pure: no Node, no DOM.

/** `instant`: an ISO date-time (its day names the file); `extension` without the dot. */
export function exportFileName(network: string, view: string, instant: string, extension: string): string {
  const slug = network.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '') || 'network';
  return `topology-${slug}-${view}-${instant.slice(0, 10)}.${extension}`;
}
