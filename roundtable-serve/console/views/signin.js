// Sign in with an access token (the server's tokens file). The token is
// sent once to POST /api/v1/session; the server answers with an HttpOnly
// session cookie and the session's CSRF token. The page never stores it.
import * as api from '../api.js';
import { h } from '../text.js';
import { errorBox } from '../ui.js';

export function signinView({ onSignedIn }) {
  const input = h('input', { id: 'token', name: 'token', type: 'password', autocomplete: 'off', required: true, spellcheck: 'false' });
  const submit = h('button', { type: 'submit', class: 'btn btn-primary', id: 'sign-in' }, 'Sign in');
  const msg = h('div', { id: 'signin-message' });
  const form = h('form', { class: 'signin', id: 'signin-form' },
    h('h1', {}, 'Sign in'),
    h('p', {}, 'Use the access token your operator gave you. It is sent once; the server keeps your session in a cookie.'),
    h('div', { class: 'field' }, h('label', { for: 'token' }, 'Access token'), input),
    submit, msg);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    msg.replaceChildren();
    submit.disabled = true;
    try {
      const s = await api.signIn(input.value);
      input.value = '';
      onSignedIn(s);
    } catch (err) {
      msg.replaceChildren(errorBox(err, 'Not signed in:'));
      submit.disabled = false;
      input.focus();
    }
  });
  queueMicrotask(() => input.focus());
  return { el: form };
}
