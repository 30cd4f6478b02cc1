// Service definitions (/service-definitions): the organization's own services for our agent to
// recognise: list, create, edit, delete; the API's validation errors shown by their
// field (a refused pattern says why). Reads and writes /api/v1/service_definitions; Admins and Owners
// write, everyone reads (the API says no to the others, and the message is shown).
import { api, ApiError } from '../api.js';
import { fill, h, notice, when } from '../dom.js';

interface ServiceDefinition {
  id: string; name: string; category: string; icon: string | null; ports: number[];
  probe: { type: 'banner' } | { type: 'http'; path: string };
  match: { field: string; pattern: string }; enabled: boolean; updated_at: string;
}

/** The icons the web app has (the API's list, src/modules/serviceDefinitions/schemas.ts SERVICE_ICONS). */
const ICONS = ['server', 'database', 'router', 'switch', 'firewall', 'access_point', 'printer', 'camera', 'nas', 'phone', 'container_host', 'hypervisor',
  'virtual_machine', 'workstation', 'nginx', 'postgresql', 'redis', 'docker', 'grafana', 'prometheus', 'proxmox', 'traefik', 'gitea', 'opnsense', 'pfsense',
  'home assistant', 'wireguard', 'haproxy', 'nodejs', 'uptime kuma', 'ubiquiti', 'mariadb', 'mongodb', 'rabbitmq', 'elasticsearch', 'pi-hole', 'truenas',
  'mikrotik', 'dovecot'];
const PATH = '/api/v1/service_definitions';

export function serviceDefinitionsScreen(outlet: HTMLElement) {
  const list = h('div', {});
  const status = h('div', { 'aria-live': 'polite' });
  let editing: ServiceDefinition | null = null;

  const input = (id: string, label: string, attrs: Record<string, unknown> = {}) => {
    const el = h('input', { id, name: id, ...attrs });
    return { el, row: h('p', {}, h('label', { for: id }, label), ' ', el, h('span', { class: 'field-error', id: `${id}-error`, role: 'alert' })) };
  };
  const name = input('sd-name', 'Name', { required: true, maxlength: 100, placeholder: 'Acme console' });
  const category = input('sd-category', 'Category', { required: true, maxlength: 40, placeholder: 'Web' });
  const ports = input('sd-ports', 'TCP ports', { required: true, placeholder: '8080, 8443' });
  const path = input('sd-path', 'HTTP path', { placeholder: '/api/about' });
  const pattern = input('sd-pattern', 'Pattern', { required: true, maxlength: 500, placeholder: '"product":\\s*"acme"' });
  const header = input('sd-header', 'Header name', { placeholder: 'server' });
  const icon = h('select', { id: 'sd-icon' }, h('option', { value: '' }, '(none)'), ICONS.map((i) => h('option', { value: i }, i)));
  const probe = h('select', { id: 'sd-probe' }, h('option', { value: 'http' }, 'HTTP GET of a path'), h('option', { value: 'banner' }, 'Banner (what the service says first)'));
  const field = h('select', { id: 'sd-field' }, ['body', 'title', 'status', 'header', 'banner'].map((f) => h('option', { value: f }, f)));
  const enabled = h('input', { id: 'sd-enabled', type: 'checkbox', checked: true });
  const submit = h('button', { type: 'submit' }, 'Create');
  const cancel = h('button', { type: 'button', class: 'link', hidden: true, onclick: () => reset() }, 'Cancel');
  const errors: Record<string, HTMLElement> = {
    name: name.row, category: category.row, ports: ports.row, 'probe.path': path.row, 'match.pattern': pattern.row, 'match.field': header.row,
  };

  function sync() {
    const http = probe.value === 'http';
    path.row.hidden = !http;
    if (http && field.value === 'banner') field.value = 'body';
    if (!http) field.value = 'banner';
    header.row.hidden = field.value !== 'header';
  }
  probe.addEventListener('change', sync);
  field.addEventListener('change', sync);

  function clearErrors() {
    for (const row of Object.values(errors)) fill(row.querySelector('.field-error')!, '');
    fill(status, '');
  }
  function reset() {
    editing = null;
    for (const i of [name, category, ports, path, pattern, header]) i.el.value = '';
    icon.value = '';
    probe.value = 'http';
    field.value = 'body';
    enabled.checked = true;
    submit.textContent = 'Create';
    cancel.hidden = true;
    clearErrors();
    sync();
  }
  function edit(d: ServiceDefinition) {
    reset();
    editing = d;
    name.el.value = d.name;
    category.el.value = d.category;
    ports.el.value = d.ports.join(', ');
    icon.value = d.icon ?? '';
    probe.value = d.probe.type;
    path.el.value = d.probe.type === 'http' ? d.probe.path : '';
    field.value = d.match.field.startsWith('header:') ? 'header' : d.match.field;
    header.el.value = d.match.field.startsWith('header:') ? d.match.field.slice('header:'.length) : '';
    pattern.el.value = d.match.pattern;
    enabled.checked = d.enabled;
    submit.textContent = 'Save';
    cancel.hidden = false;
    sync();
    name.el.focus();
  }

  const form = h('form', {
    class: 'stack',
    onsubmit: async (e: SubmitEvent) => {
      e.preventDefault();
      clearErrors();
      const body = {
        name: name.el.value, category: category.el.value, icon: icon.value || null,
        ports: ports.el.value.split(/[\s,]+/).filter(Boolean).map(Number),
        probe: probe.value === 'http' ? { type: 'http', path: path.el.value } : { type: 'banner' },
        match: { field: field.value === 'header' ? `header:${header.el.value}` : field.value, pattern: pattern.el.value },
        enabled: enabled.checked,
      };
      try {
        if (editing) await api.put(`${PATH}/${editing.id}`, body);
        else await api.post(PATH, body);
        reset();
        fill(status, notice('info', 'Saved. Agents use it from their next Network discovery.'));
        await load();
      } catch (err) {
        const e2 = err as ApiError;
        // A field's error beside the field (ports.64 → ports), and the message above the form.
        const at = String(e2.params?.field ?? '').replace(/\.\d+$/, '');
        const row = errors[at] ?? errors[at.split('.')[0]!];
        if (row) fill(row.querySelector('.field-error')!, String(e2.params?.reason ?? e2.message));
        fill(status, notice('error', e2.message, e2.code));
      }
    },
  },
  name.row, category.row,
  h('p', {}, h('label', { for: 'sd-icon' }, 'Icon'), ' ', icon),
  ports.row,
  h('p', {}, h('label', { for: 'sd-probe' }, 'Probe'), ' ', probe), path.row,
  h('p', {}, h('label', { for: 'sd-field' }, 'Match field'), ' ', field), header.row, pattern.row,
  h('p', {}, h('label', { for: 'sd-enabled' }, enabled, ' Enabled')),
  h('p', {}, submit, ' ', cancel));

  async function load() {
    try {
      const items = await api.get<ServiceDefinition[]>(`${PATH}?limit=0`);
      fill(list, items.length
        ? h('table', { class: 'list' },
          h('thead', {}, h('tr', {}, ['Name', 'Category', 'Ports', 'Probe', 'Match', 'Enabled', 'Updated', ''].map((x) => h('th', { scope: 'col' }, x)))),
          h('tbody', {}, items.map((d) => h('tr', {},
            h('td', {}, d.name), h('td', {}, d.category), h('td', {}, d.ports.join(', ')),
            h('td', {}, d.probe.type === 'http' ? `GET ${d.probe.path}` : 'banner'),
            h('td', {}, h('code', {}, `${d.match.field} ~ /${d.match.pattern}/`)),
            h('td', {}, d.enabled ? 'yes' : 'no'), h('td', {}, when(d.updated_at)),
            h('td', {},
              h('button', { type: 'button', onclick: () => edit(d) }, 'Edit'), ' ',
              h('button', { type: 'button', class: 'danger', onclick: async () => {
                if (!confirm(`Delete the service definition “${d.name}”?`)) return;
                await api.delete(`${PATH}/${d.id}`).catch((err: ApiError) => fill(status, notice('error', err.message, err.code)));
                if (editing?.id === d.id) reset();
                await load();
              } }, 'Delete'))))))
        : h('p', { class: 'muted' }, 'No service definitions yet. A definition tells the agent how to recognise a service of your own: its ports, what to ask, and a pattern its answer matches.'));
    } catch (err) {
      const e = err as ApiError;
      fill(list, notice('error', e.message, e.code));
    }
  }
  sync();
  fill(outlet, h('h1', {}, 'Service definitions'), list, h('h2', {}, 'New or edited definition'), status, form);
  void load();
}
