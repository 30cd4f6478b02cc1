// Create, edit and delete hosts (with addresses, ports and services), subnets, dependencies and
// tags, in the dialogs of forms.ts. An edit sends a PATCH of the fields that changed, with the
// updated_at read when the form opened: a 409 shows the conflict (reload, or overwrite the newer
// state with these fields). Reached from the map's details panel, the host page and the "+ Add"
// menu of the map and hosts pages; `changed` tells the screen to read the API again.
import { api, ApiError } from './api.js';
import { h } from './dom.js';
import { confirmDialog, openForm, type Field, type FormHandle } from './forms.js';
import { popover } from './popover.js';

export type EditableKind = 'host' | 'subnet' | 'dependency' | 'tag';

export interface EditContext {
  /** The network new hosts, subnets and dependencies go on. */
  networkId: string | undefined;
  /** After a save (the entity) or a delete (undefined). */
  changed: (kind: EditableKind, entity: Record<string, any> | undefined) => void;
}

const COLORS = ['Blue', 'Green', 'Red', 'Amber', 'Orange', 'Teal', 'Cyan', 'Indigo', 'Purple', 'Pink', 'Rose', 'Emerald', 'Fuchsia', 'Violet', 'Sky', 'Gray', 'Lime', 'Yellow'];
const SUBNET_TYPES = ['Lan', 'WiFi', 'Dmz', 'Management', 'Storage', 'IoT', 'Guest', 'VpnTunnel', 'Gateway', 'Internet', 'Remote', 'DockerBridge', 'MacVlan', 'IpVlan', 'Unknown', 'None'];
const pairs = (values: string[]) => values.map((v) => [v, v] as [string, string]);
const listOf = (path: string, networkId?: string) =>
  api.get<any[]>(`${path}?${new URLSearchParams({ limit: '1000', ...(networkId ? { network_id: networkId } : {}) })}`).catch(() => []);

interface KindDef {
  path: string;
  noun: string;
  fields(networkId: string | undefined, entity: Record<string, any> | undefined): Promise<Field[]>;
  /** The API's entity as the form's values. */
  values(entity: Record<string, any>): Record<string, unknown>;
  /** The form's values as the API's body (the whole body of a create). */
  body(values: Record<string, any>, networkId: string | undefined): Record<string, unknown>;
}

const itemPath = (def: KindDef, id: string) => `${def.path}/${encodeURIComponent(id)}`;
const nullIfEmpty = (v: unknown) => (v === '' ? null : v);

const KINDS: Record<EditableKind, KindDef> = {
  host: {
    path: '/api/v1/hosts', noun: 'host',
    fields: async (networkId) => {
      const [tags, subnets] = await Promise.all([listOf('/api/v1/tags'), listOf('/api/v1/subnets', networkId)]);
      return [
        { key: 'name', label: 'Name', kind: 'text', required: true },
        { key: 'hostname', label: 'Hostname', kind: 'text', placeholder: 'nas.lan' },
        { key: 'description', label: 'Description', kind: 'textarea' },
        { key: 'hidden', label: 'Hidden on the map', kind: 'checkbox' },
        { key: 'tags', label: 'Tags', kind: 'checks', options: tags.map((t) => [t.id, t.name]) },
        { key: 'ip_addresses', label: 'IP addresses', kind: 'rows', item: 'address', fields: [
          { key: 'subnet_id', label: 'Subnet', options: subnets.map((s) => [s.id, `${s.name} (${s.cidr})`]) },
          { key: 'ip_address', label: 'Address' },
        ] },
        { key: 'ports', label: 'Ports', kind: 'rows', item: 'port', fields: [
          { key: 'number', label: 'Port', type: 'number' },
          { key: 'protocol', label: 'Protocol', options: pairs(['Tcp', 'Udp']) },
        ] },
        { key: 'services', label: 'Services', kind: 'rows', item: 'service', fields: [
          { key: 'name', label: 'Service' },
          { key: 'service_definition', label: 'Definition' },
        ] },
      ];
    },
    values: (e) => ({ ...e, hostname: e.hostname ?? '', description: e.description ?? '' }),
    body: (v, networkId) => ({
      name: v.name, hostname: nullIfEmpty(v.hostname), description: nullIfEmpty(v.description), hidden: v.hidden, tags: v.tags,
      ip_addresses: v.ip_addresses, ports: v.ports, services: v.services, network_id: networkId,
    }),
  },
  subnet: {
    path: '/api/v1/subnets', noun: 'subnet',
    fields: async () => [
      { key: 'cidr', label: 'CIDR', kind: 'text', required: true, placeholder: '10.0.1.0/24' },
      { key: 'name', label: 'Name', kind: 'text', required: true },
      { key: 'description', label: 'Description', kind: 'textarea' },
      { key: 'subnet_type', label: 'Type', kind: 'select', options: pairs(SUBNET_TYPES) },
    ],
    values: (e) => ({ ...e, description: e.description ?? '' }),
    body: (v, networkId) => ({ cidr: v.cidr, name: v.name, description: nullIfEmpty(v.description), subnet_type: v.subnet_type, network_id: networkId }),
  },
  dependency: {
    path: '/api/v1/dependencies', noun: 'dependency',
    fields: async (networkId, entity) => {
      const [services, hosts] = await Promise.all([listOf('/api/v1/services', networkId), listOf('/api/v1/hosts', networkId)]);
      const hostName = new Map(hosts.map((x) => [x.id, x.name]));
      const fields: Field[] = [
        { key: 'name', label: 'Name', kind: 'text', required: true },
        { key: 'description', label: 'Description', kind: 'textarea' },
        { key: 'dependency_type', label: 'Kind', kind: 'select', options: [['RequestPath', 'Request path (in list order)'], ['HubAndSpoke', 'Hub and spoke (first is the hub)']] },
        { key: 'color', label: 'Colour', kind: 'select', options: pairs(COLORS) },
        { key: 'edge_style', label: 'Lines', kind: 'select', options: pairs(['SmoothStep', 'Straight', 'Bezier']) },
      ];
      // Members by binding (from discovery) are kept as they are: the form picks services.
      if (entity?.members?.type !== 'Bindings') {
        fields.push({ key: 'service_ids', label: 'Members', kind: 'checks', options: services.map((s) => [s.id, `${s.name} · ${hostName.get(s.host_id) ?? '?'}`]) });
      }
      return fields;
    },
    values: (e) => ({ ...e, description: e.description ?? '', service_ids: e.members?.service_ids ?? [] }),
    body: (v, networkId) => ({
      name: v.name, description: nullIfEmpty(v.description), dependency_type: v.dependency_type, color: v.color, edge_style: v.edge_style,
      ...(v.service_ids ? { members: { type: 'Services', service_ids: v.service_ids } } : {}), network_id: networkId,
    }),
  },
  tag: {
    path: '/api/v1/tags', noun: 'tag',
    fields: async () => [
      { key: 'name', label: 'Name', kind: 'text', required: true },
      { key: 'color', label: 'Colour', kind: 'select', options: pairs(COLORS) },
      { key: 'description', label: 'Description', kind: 'textarea' },
      { key: 'is_application', label: 'An application', kind: 'checkbox' },
    ],
    values: (e) => ({ ...e, description: e.description ?? '' }),
    body: (v) => ({ name: v.name, color: v.color, description: nullIfEmpty(v.description), is_application: v.is_application }),
  },
};

/** The fields of `after` that differ from `before` (what a PATCH sends); network_id never moves. */
function changedFields(before: Record<string, unknown>, after: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(after)) {
    if (key !== 'network_id' && JSON.stringify(value) !== JSON.stringify(before[key])) out[key] = value;
  }
  return out;
}

/**
 * Opens the form of a new entity (no id) or of an existing one. Existing ones can be deleted from
 * it (after a confirmation); subnets, dependencies and tags can be picked from a list at its top.
 */
export async function openEditor(kind: EditableKind, id: string | undefined, ctx: EditContext): Promise<FormHandle> {
  const def = KINDS[kind];
  const entity = id ? await api.get(itemPath(def, id)) : undefined;
  const networkId = entity?.network_id ?? ctx.networkId;
  const fields = await def.fields(networkId, entity);
  const initial = entity ? def.values(entity) : { subnet_type: 'Lan', color: 'Blue', dependency_type: 'RequestPath', edge_style: 'SmoothStep' };
  const before = entity ? def.body(def.values(entity), networkId) : {};
  const openedAt: string | undefined = entity?.updated_at;
  const top = kind === 'host' ? undefined : await picker(kind, id, networkId, ctx);

  const save = async (values: Record<string, any>, form: FormHandle, expected = openedAt) => {
    const body = def.body(values, networkId);
    try {
      const saved = entity
        ? await api.patch(itemPath(def, entity.id), { ...changedFields(before, body), expected_updated_at: expected })
        : await api.post(def.path, body);
      form.close();
      ctx.changed(kind, saved);
    } catch (err) {
      const e = err as ApiError;
      if (e.code !== 'entity_modified') throw err;
      const reload = h('button', { type: 'button', onclick: () => { form.close(); void openEditor(kind, entity!.id, ctx); } }, 'Reload');
      const overwrite = h('button', { type: 'button', onclick: () => void save(form.values(), form, String(e.params?.actual ?? '')).catch((x: Error) => form.message(h('p', { class: 'notice error', role: 'alert' }, x.message))) }, 'Overwrite');
      form.message(h('div', { class: 'notice error conflict', role: 'alert' },
        h('p', {}, `This ${def.noun} changed since you opened it: reload (your edits are dropped) or overwrite (your fields replace the newer ones).`), reload, overwrite));
      reload.focus();
    }
  };

  return openForm({
    title: entity ? `Edit ${def.noun} ${entity.name}` : `New ${def.noun}`,
    fields, values: initial, top,
    submit: (values, form) => save(values, form),
    extra: (form) => (entity ? [h('button', { type: 'button', class: 'danger', onclick: () => void remove(kind, entity, ctx).then((gone) => gone && form.close()) }, 'Delete')] : []),
  });
}

/** Deletes after asking; answers whether it was deleted. */
export async function remove(kind: EditableKind, entity: { id: string; name: string }, ctx: EditContext): Promise<boolean> {
  const def = KINDS[kind];
  if (!(await confirmDialog(`Delete the ${def.noun} ${entity.name}? This cannot be undone (its history is kept).`, `Delete ${def.noun}`))) return false;
  try {
    await api.delete(itemPath(def, entity.id));
  } catch (err) {
    window.alert((err as ApiError).message);
    return false;
  }
  ctx.changed(kind, undefined);
  return true;
}

/** A select of the existing subnets, dependencies or tags at the top of their form: choosing one edits it. */
async function picker(kind: Exclude<EditableKind, 'host'>, id: string | undefined, networkId: string | undefined, ctx: EditContext): Promise<HTMLElement> {
  const def = KINDS[kind];
  const existing = await listOf(def.path, kind === 'tag' ? undefined : networkId);
  const selectId = `pick-${kind}`;
  const select = h('select', { id: selectId }, h('option', { value: '' }, `A new ${def.noun}`),
    existing.map((e) => h('option', { value: e.id, selected: e.id === id }, e.cidr ? `${e.name} (${e.cidr})` : e.name)));
  select.addEventListener('change', () => {
    (select.closest('dialog') as HTMLDialogElement | null)?.close();
    void openEditor(kind, select.value || undefined, ctx);
  });
  return h('div', { class: 'field' }, h('label', { for: selectId }, `Edit an existing ${def.noun}, or add one`), select);
}

/** Edit and Delete for one host (the map's details panel, the host page). */
export function hostActions(host: { id: string; name: string }, ctx: EditContext): HTMLElement {
  return h('p', { class: 'host-actions' },
    h('button', { type: 'button', id: 'edit-host', onclick: () => void openEditor('host', host.id, ctx) }, 'Edit'), ' ',
    h('button', { type: 'button', id: 'delete-host', class: 'danger', onclick: () => void remove('host', host, ctx) }, 'Delete'));
}

/**
 * The "+ Add" menu: a host, a subnet, a dependency or a tag (the last three also edit existing ones).
 * Its items are a popover (popover.ts), whole on screen also when the button sits in a toolbar's row.
 */
export function addMenu(ctx: EditContext): HTMLElement {
  const toggle = h('button', { type: 'button', id: 'add-menu', 'aria-haspopup': 'menu', 'aria-controls': 'add-menu-items' }, '+ Add');
  const labels: Array<[EditableKind, string]> = [['host', 'Host'], ['subnet', 'Subnet…'], ['dependency', 'Dependency…'], ['tag', 'Tag…']];
  const items = labels.map(([kind, label]) => h('button', { type: 'button', role: 'menuitem', 'data-kind': kind, tabindex: -1, onclick: () => { menu.close(); void openEditor(kind, undefined, ctx); } }, label));
  const list = h('div', { role: 'menu', id: 'add-menu-items', class: 'add-menu-items', 'aria-label': 'Add' }, items);
  const menu = popover(toggle, list, { focus: () => items[0] });
  list.addEventListener('keydown', (e: KeyboardEvent) => {
    const i = items.indexOf(document.activeElement as HTMLButtonElement);
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      items[(i + (e.key === 'ArrowDown' ? 1 : items.length - 1)) % items.length]!.focus();
    }
  });
  return h('div', { class: 'add-menu' }, toggle);
}
