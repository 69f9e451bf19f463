/**
 * The one script of the end-user pages: runs the WebAuthn ceremonies of forms (or of blocks inside
 * a form, with `data-action`: the sign-in page keeps one form) marked `data-passkey="create"|"get"`. Served from the tenant's OIDC path (same origin) and allowed by
 * `script-src 'self'` on exactly the pages that need it; everything else stays script-free.
 *
 * A ceremony: POST the form's CSRF token to `data-options` (the server stores the challenge, bound
 * to the session or interaction), run navigator.credentials.create()/get() with the options, put
 * the credential as JSON into the form's hidden `credential` field and submit the form the normal
 * way, so the server's answer (a page, a redirect back to the application) is an ordinary
 * navigation. With `data-conditional`, a passkey is also offered in the e-mail field's autofill
 * where the browser supports conditional mediation (not under automation); pressing the button
 * cancels that request.
 * Written for this service (no bundler, no dependency), ES2020.
 */
import { createHash } from 'node:crypto';

export const PASSKEY_SCRIPT = `(function () {
  'use strict';
  function enc(buf) {
    var bytes = new Uint8Array(buf), s = '';
    for (var i = 0; i < bytes.length; i++) s += String.fromCharCode(bytes[i]);
    return btoa(s).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
  }
  function dec(str) {
    var b = str.replace(/-/g, '+').replace(/_/g, '/');
    while (b.length % 4) b += '=';
    var s = atob(b), out = new Uint8Array(s.length);
    for (var i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
    return out.buffer;
  }
  function withIds(list) {
    return (list || []).map(function (c) { return { type: c.type, id: dec(c.id), transports: c.transports }; });
  }
  function creationOptions(o) {
    var copy = Object.assign({}, o, { challenge: dec(o.challenge), user: Object.assign({}, o.user, { id: dec(o.user.id) }), excludeCredentials: withIds(o.excludeCredentials) });
    delete copy.hints;
    return copy;
  }
  function requestOptions(o) {
    var copy = Object.assign({}, o, { challenge: dec(o.challenge), allowCredentials: withIds(o.allowCredentials) });
    delete copy.hints;
    return copy;
  }
  function toJson(cred) {
    var r = cred.response, response;
    if (r.attestationObject) {
      response = { clientDataJSON: enc(r.clientDataJSON), attestationObject: enc(r.attestationObject), transports: r.getTransports ? r.getTransports() : [] };
    } else {
      response = { clientDataJSON: enc(r.clientDataJSON), authenticatorData: enc(r.authenticatorData), signature: enc(r.signature) };
      if (r.userHandle) response.userHandle = enc(r.userHandle);
    }
    var out = { id: cred.id, rawId: enc(cred.rawId), type: cred.type, response: response, clientExtensionResults: cred.getClientExtensionResults() };
    if (cred.authenticatorAttachment) out.authenticatorAttachment = cred.authenticatorAttachment;
    return out;
  }
  function say(box, text) {
    var status = box.querySelector('[data-passkey-status]');
    if (status) status.textContent = text;
  }
  function run(box, form, mediation, signal) {
    var body = new URLSearchParams();
    body.set('csrf_token', form.elements.csrf_token.value);
    return fetch(box.getAttribute('data-options'), { method: 'POST', body: body, credentials: 'same-origin', headers: { accept: 'application/json' } })
      .then(function (res) {
        if (!res.ok) throw new Error('options');
        return res.json();
      })
      .then(function (options) {
        if (box.getAttribute('data-passkey') === 'create') return navigator.credentials.create({ publicKey: creationOptions(options) });
        var request = { publicKey: requestOptions(options) };
        if (mediation) request.mediation = mediation;
        if (signal) request.signal = signal;
        return navigator.credentials.get(request);
      })
      .then(function (cred) {
        if (!cred) return;
        box.querySelector('input[name=credential]').value = JSON.stringify(toJson(cred));
        if (box.getAttribute('data-action')) form.setAttribute('action', box.getAttribute('data-action'));
        form.submit();
      });
  }
  var boxes = document.querySelectorAll('[data-passkey]');
  for (var i = 0; i < boxes.length; i++) {
    (function (box) {
      var form = box.tagName === 'FORM' ? box : box.closest('form');
      var button = box.querySelector('[data-passkey-start]');
      if (!button || !form) return;
      if (!window.PublicKeyCredential || !navigator.credentials) {
        button.disabled = true;
        say(box, box.getAttribute('data-unsupported') || '');
        return;
      }
      var conditional = null;
      button.addEventListener('click', function (event) {
        event.preventDefault();
        if (conditional) { conditional.abort(); conditional = null; }
        say(box, '');
        run(box, form).catch(function (err) {
          if (err && err.name === 'AbortError') return;
          say(box, box.getAttribute('data-failed') || '');
        });
      });
      var fieldId = box.getAttribute('data-conditional');
      // Not in automated browsers (navigator.webdriver): there a virtual authenticator answers a
      // conditional request at once, with no person choosing from autofill, and would sign in
      // before the page is used. The button works the same everywhere.
      if (fieldId && !navigator.webdriver && PublicKeyCredential.isConditionalMediationAvailable) {
        PublicKeyCredential.isConditionalMediationAvailable().then(function (available) {
          var field = document.getElementById(fieldId);
          if (!available || !field) return;
          field.setAttribute('autocomplete', 'username webauthn');
          conditional = new AbortController();
          run(box, form, 'conditional', conditional.signal).catch(function () {});
        });
      }
    })(boxes[i]);
  }
})();
`;

export const PASSKEY_SCRIPT_ETAG = `"${createHash('sha256').update(PASSKEY_SCRIPT).digest('base64url').slice(0, 22)}"`;
