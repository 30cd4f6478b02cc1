// Sign in and register (/signin, /register): the API's session cookie. A session that expired
// comes back here with a message (?expired=1) and returns to where it was (?next=).
import { api, ApiError } from '../api.js';
import { fill, h, notice } from '../dom.js';
import type { Route } from '../main.js';

export function signInScreen(root: HTMLElement, route: Route, signedIn: () => void) {
  const registering = route.path === '/register';
  const message = h('div', { 'aria-live': 'polite' });
  if (route.query.get('expired')) message.append(notice('info', 'Your session has expired. Sign in again to continue.'));
  const email = h('input', { id: 'email', name: 'email', type: 'email', autocomplete: 'username', required: true });
  const password = h('input', { id: 'password', name: 'password', type: 'password', autocomplete: registering ? 'new-password' : 'current-password', required: true, minlength: registering ? 10 : undefined });
  const organization = h('input', { id: 'organization', name: 'organization', autocomplete: 'organization' });
  const submit = h('button', { type: 'submit' }, registering ? 'Create account' : 'Sign in');
  const form = h('form', {
    class: 'card signin',
    onsubmit: async (e: SubmitEvent) => {
      e.preventDefault();
      submit.disabled = true;
      fill(message);
      try {
        if (registering) await api.post('/api/auth/register', { email: email.value, password: password.value, ...(organization.value ? { organization_name: organization.value } : {}) });
        await api.post('/api/auth/login', { email: email.value, password: password.value });
        signedIn();
      } catch (err) {
        const e2 = err as ApiError;
        fill(message, notice('error', e2.message)); // the words, not the API's code: a person signs in here
        submit.disabled = false;
      }
    },
  },
  h('h1', {}, registering ? 'Create an account' : 'Sign in to netinventory'),
  message,
  h('label', { for: 'email' }, 'Email'), email,
  h('label', { for: 'password' }, 'Password'), password,
  registering ? [h('label', { for: 'organization' }, 'Organization name (optional)'), organization] : null,
  submit,
  h('p', {}, registering
    ? ['Already have an account? ', h('a', { href: '/signin' }, 'Sign in')]
    : ['New here? ', h('a', { href: '/register' }, 'Create an account')]));
  fill(root, h('div', { class: 'center' }, form));
  email.focus();
}
