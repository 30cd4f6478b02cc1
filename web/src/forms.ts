// Forms in a modal <dialog>: the browser traps focus in it and closes it on Escape; focus goes to
// the first field on open and back to what opened it on close. The title and the buttons (with the
// form's messages) stay in sight whatever the screen's height: only the fields between them scroll. Fields are labelled inputs built
// from a small description, so each editor (editors.ts) only lists its fields.
import './forms.css';
import { h } from './dom.js';

type Value = string | boolean | string[] | Array<Record<string, unknown>>;

export interface RowField { key: string; label: string; type?: 'number'; options?: Array<[string, string]> }

/** `hint`: a line under the field saying what it means (the field is described by it). */
export type Field = { hint?: string } & (
  | { key: string; label: string; kind: 'text' | 'textarea' | 'number' | 'time'; required?: boolean; placeholder?: string; min?: number; max?: number }
  | { key: string; label: string; kind: 'checkbox' }
  | { key: string; label: string; kind: 'select'; options: Array<[string, string]>; required?: boolean }
  /** A checkbox per option; the value lists the checked ones in the order they were checked (a request path's order). */
  | { key: string; label: string; kind: 'checks'; options: Array<[string, string]> }
  /** A list of rows (a host's addresses, ports, services): each row keeps what the form does not show (its id). */
  | { key: string; label: string; kind: 'rows'; item: string; fields: RowField[] });

/**
 * Escape closes the dialog, and only it: the screen behind has its own Escape (the map's closes the
 * details panel, and its preventDefault would keep the dialog open).
 */
function closeOnEscape(dialog: HTMLDialogElement): void {
  dialog.addEventListener('keydown', (e: KeyboardEvent) => {
    if (e.key !== 'Escape') return;
    e.preventDefault();
    e.stopPropagation();
    dialog.close();
  });
}

let uid = 0;
const nextId = (key: string) => `f-${key}-${++uid}`;

/** One field's element and how to read it back, with its hint under it. */
function control(field: Field, value: unknown): { el: HTMLElement; read: () => Value } {
  const made = bare(field, value);
  if (field.hint) {
    const hint = h('p', { class: 'hint', id: nextId(`${field.key}-hint`), 'data-hint-for': field.key }, field.hint);
    made.el.querySelector(field.kind === 'checks' ? 'fieldset' : 'input, select, textarea')?.setAttribute('aria-describedby', hint.id);
    if (field.kind === 'checks') made.el.setAttribute('aria-describedby', hint.id);
    made.el.append(hint);
  }
  return made;
}

function bare(field: Field, value: unknown): { el: HTMLElement; read: () => Value } {
  const id = nextId(field.key);
  switch (field.kind) {
    case 'checkbox': {
      const input = h('input', { type: 'checkbox', id, name: field.key, checked: value === true });
      return { el: h('div', { class: 'field check' }, input, h('label', { for: id }, field.label)), read: () => input.checked };
    }
    case 'select': {
      const select = h('select', { id, name: field.key, required: field.required }, field.options.map(([v, label]) => h('option', { value: v, selected: v === (value ?? '') }, label)));
      return { el: h('div', { class: 'field' }, h('label', { for: id }, field.label), select), read: () => select.value };
    }
    case 'checks': {
      // The order members were chosen in is kept (a request path's order): first as given, then as checked.
      const known = new Set(field.options.map(([v]) => v));
      const order = (Array.isArray(value) ? value as string[] : []).filter((v) => known.has(v));
      const boxes = field.options.map(([v, label]) => {
        const box = h('input', { type: 'checkbox', id: nextId(field.key), value: v, checked: order.includes(v) });
        box.addEventListener('change', () => {
          const at = order.indexOf(v);
          if (box.checked && at < 0) order.push(v);
          if (!box.checked && at >= 0) order.splice(at, 1);
        });
        return { v, el: h('div', { class: 'check' }, box, h('label', { for: box.id }, label)), box };
      });
      return {
        el: h('fieldset', { class: 'field' }, h('legend', {}, field.label), boxes.length ? boxes.map((b) => b.el) : h('p', { class: 'muted' }, 'None to choose from.')),
        read: () => [...order],
      };
    }
    case 'rows': return rows(field, Array.isArray(value) ? value as Array<Record<string, unknown>> : []);
    default: {
      const attrs = { id, name: field.key, required: field.required, placeholder: field.placeholder, value: value == null ? '' : String(value) };
      const input = field.kind === 'textarea' ? h('textarea', attrs) : h('input', { ...attrs, type: field.kind, min: field.min, max: field.max });
      if (field.kind === 'textarea') input.textContent = value == null ? '' : String(value);
      return { el: h('div', { class: 'field' }, h('label', { for: id }, field.label), input), read: () => input.value.trim() };
    }
  }
}

function rows(field: Extract<Field, { kind: 'rows' }>, initial: Array<Record<string, unknown>>): { el: HTMLElement; read: () => Value } {
  const list = h('ol', { class: 'rows' });
  const readers: Array<{ li: HTMLElement; read: () => Record<string, unknown> }> = [];
  const addRow = (row: Record<string, unknown>, focus = false) => {
    const inputs = field.fields.map((f) => {
      const id = nextId(`${field.key}-${f.key}`);
      const current = row[f.key] == null ? '' : String(row[f.key]);
      const input = f.options
        ? h('select', { id }, f.options.map(([v, label]) => h('option', { value: v, selected: v === current }, label)))
        : h('input', { id, type: f.type === 'number' ? 'number' : 'text', value: current, required: true });
      return { f, input, el: h('div', { class: 'field' }, h('label', { for: id }, f.label), input) };
    });
    const li = h('li', {}, inputs.map((i) => i.el));
    const entry = {
      li,
      read: () => ({ ...row, ...Object.fromEntries(inputs.map(({ f, input }) => [f.key, f.type === 'number' ? Number(input.value) : input.value.trim()])) }),
    };
    li.append(h('button', {
      type: 'button', class: 'link', 'aria-label': `Remove this ${field.item}`,
      onclick: () => { readers.splice(readers.indexOf(entry), 1); li.remove(); addButton.focus(); },
    }, 'Remove'));
    readers.push(entry);
    list.append(li);
    if (focus) inputs[0]?.input.focus();
  };
  const addButton = h('button', { type: 'button', onclick: () => addRow({}, true) }, `Add ${field.item}`);
  for (const row of initial) addRow(row);
  return { el: h('fieldset', { class: 'field rows-field' }, h('legend', {}, field.label), list, addButton), read: () => readers.map((r) => r.read()) };
}

export interface FormHandle {
  /** The current values by key. */
  values(): Record<string, Value>;
  /** Shows a message (an error, a conflict) above the buttons; null clears it. */
  message(content: Node | null): void;
  close(): void;
  dialog: HTMLDialogElement;
}

/**
 * A modal form. `submit` gets the values; a thrown error is shown in the form, which stays open.
 * `extra`: buttons beside Save (Delete).
 */
export function openForm(opts: {
  title: string; fields: Field[]; values: Record<string, unknown>; submitLabel?: string;
  top?: HTMLElement; extra?: (form: FormHandle) => HTMLElement[];
  submit: (values: Record<string, Value>, form: FormHandle) => Promise<void>;
}): FormHandle {
  const opener = document.activeElement as HTMLElement | null;
  const controls = opts.fields.map((f) => ({ f, ...control(f, opts.values[f.key]) }));
  const messages = h('div', { class: 'form-messages', 'aria-live': 'assertive' });
  const save = h('button', { type: 'submit', class: 'primary' }, opts.submitLabel ?? 'Save');
  const titleId = nextId('title');
  const dialog = h('dialog', { class: 'form-dialog', 'aria-labelledby': titleId });
  const handle: FormHandle = {
    dialog,
    values: () => Object.fromEntries(controls.map((c) => [c.f.key, c.read()])),
    message: (content) => { messages.replaceChildren(...(content ? [content] : [])); },
    close: () => dialog.close(),
  };
  const form = h('form', {
    method: 'dialog',
    onsubmit: async (e: SubmitEvent) => {
      e.preventDefault();
      save.disabled = true;
      handle.message(null);
      try {
        await opts.submit(handle.values(), handle);
      } catch (err) {
        handle.message(h('p', { class: 'notice error', role: 'alert' }, (err as Error).message));
      } finally {
        save.disabled = false;
      }
    },
  },
  // The title and the buttons stay in sight; the fields between them scroll (a long form on a phone).
  h('h2', { id: titleId }, opts.title),
  h('div', { class: 'form-body' }, opts.top ?? null, controls.map((c) => c.el)),
  h('div', { class: 'form-footer' }, messages,
    h('div', { class: 'form-buttons' }, save, ...(opts.extra?.(handle) ?? []), h('button', { type: 'button', onclick: () => dialog.close() }, 'Cancel'))));
  dialog.append(form);
  closeOnEscape(dialog);
  // Escape and Cancel both close; the dialog leaves the page once closed.
  dialog.addEventListener('close', () => { dialog.remove(); if (opener?.isConnected) opener.focus(); });
  document.body.append(dialog);
  dialog.showModal();
  (form.querySelector('input, select, textarea') as HTMLElement | null)?.focus();
  return handle;
}

/** Asks before something that cannot be undone (a sentence, or elements: what goes with it); answers whether the person confirmed. */
export function confirmDialog(question: string | Node[], confirmLabel: string): Promise<boolean> {
  return new Promise((resolve) => {
    const opener = document.activeElement as HTMLElement | null;
    const id = nextId('confirm');
    let answer = false;
    const dialog = h('dialog', { class: 'form-dialog confirm', role: 'alertdialog', 'aria-labelledby': id });
    const cancel = h('button', { type: 'button', onclick: () => dialog.close() }, 'Cancel');
    dialog.append(typeof question === 'string' ? h('p', { id }, question) : h('div', { id, class: 'confirm-text' }, question), h('div', { class: 'form-buttons' },
      h('button', { type: 'button', class: 'danger', onclick: () => { answer = true; dialog.close(); } }, confirmLabel), cancel));
    closeOnEscape(dialog);
    dialog.addEventListener('close', () => { dialog.remove(); if (opener?.isConnected) opener.focus(); resolve(answer); });
    document.body.append(dialog);
    dialog.showModal();
    cancel.focus(); // the safe answer is the default one
  });
}
