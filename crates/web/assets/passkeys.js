// Passkeys in the admin UI: "Sign in with a passkey" on the sign-in page (usernameless: the
// authenticator names the account), and add / remove on the account page. The ceremonies are the
// JSON routes of docs/admin.md; the browser's WebAuthn JSON helpers do the encoding.

const problem = document.getElementById("passkey-error");

function show(message) {
  if (!problem) return;
  problem.textContent = message;
  problem.hidden = false;
}

async function call(method, url, body) {
  const res = await fetch(url, {
    method,
    credentials: "same-origin",
    headers: { "Accept": "application/json", "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  // Read the whole answer (even an empty 204) before the page moves on: a navigation while the
  // response is still loading aborts it.
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) {
    const errors = data && data.errors ? Object.values(data.errors).flat() : [];
    throw new Error(errors[0] || (data && data.message) || `The server answered ${res.status}.`);
  }
  return data;
}

// A cancelled or timed-out browser prompt is not an error worth more than a short note.
function explain(err) {
  return err && err.name === "NotAllowedError"
    ? "The passkey prompt was cancelled or timed out."
    : (err && err.message) || "Something went wrong.";
}

const supported = typeof window.PublicKeyCredential === "function"
  && typeof PublicKeyCredential.parseCreationOptionsFromJSON === "function";

const signIn = document.querySelector("[data-passkey-sign-in]");
if (signIn && !supported) signIn.hidden = true;
signIn?.addEventListener("click", async () => {
  signIn.disabled = true;
  try {
    const { data } = await call("POST", "/login/passkey/options", {});
    const publicKey = PublicKeyCredential.parseRequestOptionsFromJSON(data.options.publicKey);
    const credential = await navigator.credentials.get({ publicKey });
    await call("POST", "/login/passkey", { ceremony: data.ceremony, credential: credential.toJSON() });
    location.assign("/");
  } catch (err) {
    show(explain(err));
  } finally {
    signIn.disabled = false;
  }
});

const add = document.querySelector("[data-passkey-add]");
if (add && !supported) {
  add.disabled = true;
  show("This browser does not support passkeys.");
}
add?.addEventListener("click", async () => {
  add.disabled = true;
  try {
    const { data } = await call("POST", "/account/passkeys/options", {});
    const publicKey = PublicKeyCredential.parseCreationOptionsFromJSON(data.options.publicKey);
    const credential = await navigator.credentials.create({ publicKey });
    const name = document.getElementById("passkey-name")?.value.trim() || undefined;
    await call("POST", "/account/passkeys", { ceremony: data.ceremony, credential: credential.toJSON(), name });
    location.reload();
  } catch (err) {
    show(explain(err));
  } finally {
    add.disabled = false;
  }
});

for (const button of document.querySelectorAll("[data-passkey-delete]")) {
  button.addEventListener("click", async () => {
    if (!confirm(`Remove the passkey "${button.dataset.passkeyName}"? It will no longer sign you in.`)) return;
    try {
      await call("DELETE", `/account/passkeys/${encodeURIComponent(button.dataset.passkeyDelete)}`);
      location.reload();
    } catch (err) {
      show(explain(err));
    }
  });
}
