// AI chat made live. A prompt goes to POST /ai/chat and its answer is read as it streams
// (server-sent events over fetch, since EventSource cannot POST): each `delta` is appended to the
// answer as text (never as markup), `error` is shown in the answer, `[DONE]` ends it. Stop aborts
// the request; the server then keeps what was said, marked incomplete. Attachments upload first
// (POST /ai/attachments) and ride along by id. Rename, pin and delete use the JSON API.
(() => {
  const root = document.getElementById("ai");
  if (!root) return;
  let conversation = root.dataset.conversation || null;
  const form = document.getElementById("ai-composer");
  const input = document.getElementById("ai-message");
  const send = document.getElementById("ai-send");
  const stop = document.getElementById("ai-stop");
  const list = document.getElementById("messages");
  const uploads = document.getElementById("ai-uploads");
  const fileInput = document.getElementById("ai-file");
  const attached = []; // {id, name}
  let streaming = null; // the AbortController of the answer in progress

  const firstError = (data, status) => {
    const first = data && data.errors && Object.values(data.errors)[0];
    return (first && first[0]) || (data && data.message) || `The request failed (HTTP ${status}).`;
  };
  const api = async (method, path, body) => {
    const init = { method, headers: { Accept: "application/json" }, credentials: "same-origin" };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const res = await fetch(path, init);
    const text = await res.text();
    const data = text ? JSON.parse(text) : null;
    if (!res.ok) throw new Error(firstError(data, res.status));
    return data;
  };
  const showError = (box, error) => {
    if (!box) return;
    box.textContent = error ? error.message || String(error) : "";
    box.hidden = !error;
  };
  const formError = form.querySelector(".error");

  const bubble = (role, text) => {
    const empty = document.getElementById("no-messages");
    if (empty) empty.remove();
    const li = document.createElement("li");
    li.dataset.role = role;
    const meta = document.createElement("div");
    meta.className = "meta";
    const who = document.createElement("strong");
    who.textContent = role === "user" ? "You" : "Assistant";
    meta.append(who);
    const body = document.createElement("div");
    body.className = "body";
    body.textContent = text;
    li.append(meta, body);
    list.append(li);
    li.scrollIntoView({ block: "end" });
    return li;
  };
  const note = (li, text, isError) => {
    const span = document.createElement(isError ? "p" : "span");
    span.className = isError ? "error" : "muted";
    if (isError) span.setAttribute("role", "alert");
    span.textContent = isError ? text : ` (${text})`;
    if (isError) li.append(span);
    else li.querySelector(".meta").append(span);
  };

  const setStreaming = (controller) => {
    streaming = controller;
    stop.hidden = !controller;
    send.disabled = Boolean(controller);
  };

  // Reads `data:` events out of the stream, calling `onEvent` with each parsed one.
  const readEvents = async (res, onEvent) => {
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        for (const line of block.split("\n")) {
          if (!line.startsWith("data:")) continue; // comments keep the stream alive
          const data = line.slice(5).trim();
          if (data === "[DONE]") return;
          onEvent(JSON.parse(data));
        }
      }
    }
  };

  const ask = async () => {
    const message = input.value.trim();
    if (!message || streaming) return;
    showError(formError, null);
    const body = { message };
    if (conversation) body.conversation_id = conversation;
    if (attached.length) body.attachment_ids = attached.map((a) => a.id);
    const controller = new AbortController();
    setStreaming(controller);
    const mine = bubble("user", message);
    if (attached.length) {
      const ul = document.createElement("ul");
      ul.className = "attachments";
      for (const a of attached) {
        const li = document.createElement("li");
        li.textContent = a.name;
        ul.append(li);
      }
      mine.append(ul);
    }
    let answer = null;
    try {
      const res = await fetch("/ai/chat", {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
        body: JSON.stringify(body),
        signal: controller.signal,
      });
      if (!res.ok) {
        const text = await res.text();
        let data = null;
        try { data = text ? JSON.parse(text) : null; } catch (_) { data = null; }
        mine.remove();
        throw new Error(firstError(data, res.status));
      }
      input.value = "";
      attached.length = 0;
      uploads.replaceChildren();
      answer = bubble("assistant", "");
      answer.setAttribute("aria-busy", "true");
      const text = answer.querySelector(".body");
      await readEvents(res, (event) => {
        if (event.type === "conversation" && event.conversation_id !== conversation) {
          conversation = event.conversation_id;
          root.dataset.conversation = conversation;
          history.replaceState(null, "", `/ai/${conversation}`);
        } else if (event.type === "delta") {
          text.textContent += event.content;
          answer.scrollIntoView({ block: "end" });
        } else if (event.type === "error") {
          note(answer, event.message, true);
        }
      });
    } catch (error) {
      if (error.name === "AbortError") {
        if (answer) note(answer, "stopped");
      } else if (answer) {
        note(answer, error.message || String(error), true);
      } else {
        showError(formError, error);
      }
    } finally {
      if (answer) answer.removeAttribute("aria-busy");
      setStreaming(null);
      input.focus();
    }
  };

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    ask();
  });
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      ask();
    }
  });
  stop.addEventListener("click", () => streaming && streaming.abort());

  // --- Attachments -------------------------------------------------------------------------
  const chip = (a) => {
    const li = document.createElement("li");
    li.textContent = a.name;
    const remove = document.createElement("button");
    remove.type = "button";
    remove.className = "link";
    remove.textContent = "Remove";
    remove.setAttribute("aria-label", `Remove ${a.name}`);
    remove.addEventListener("click", () => {
      attached.splice(attached.indexOf(a), 1);
      li.remove();
    });
    li.append(" ", remove);
    uploads.append(li);
  };
  fileInput.addEventListener("change", async () => {
    showError(formError, null);
    for (const file of fileInput.files) {
      if (attached.length >= 5) {
        showError(formError, new Error("At most 5 attachments per message."));
        break;
      }
      const data = new FormData();
      data.append("file", file, file.name);
      try {
        const res = await fetch("/ai/attachments", {
          method: "POST",
          credentials: "same-origin",
          headers: { Accept: "application/json" },
          body: data,
        });
        const text = await res.text();
        const json = text ? JSON.parse(text) : null;
        if (!res.ok) throw new Error(`${file.name}: ${firstError(json, res.status)}`);
        const a = { id: json.data.id, name: json.data.name };
        attached.push(a);
        chip(a);
      } catch (error) {
        showError(formError, error);
      }
    }
    fileInput.value = "";
  });

  // --- The conversation's own actions ------------------------------------------------------
  const headError = document.getElementById("ai-head-error");
  const rename = document.getElementById("ai-rename");
  if (rename) {
    rename.addEventListener("submit", async (e) => {
      e.preventDefault();
      try {
        const title = document.getElementById("ai-title").value;
        const done = await api("PATCH", `/ai/conversations/${conversation}`, { title });
        const entry = document.querySelector(`#conversations [data-conversation="${conversation}"] .thread-title`);
        if (entry) entry.textContent = done.data.title;
        document.title = `${done.data.title} · AI chat`;
        showError(headError, null);
      } catch (error) {
        showError(headError, error);
      }
    });
  }
  const pin = document.getElementById("ai-pin");
  if (pin) {
    pin.addEventListener("click", async () => {
      try {
        await api("POST", `/ai/conversations/${conversation}/pin`);
        location.reload();
      } catch (error) {
        showError(headError, error);
      }
    });
  }
  const remove = document.getElementById("ai-delete");
  if (remove) {
    remove.addEventListener("click", async () => {
      if (!confirm("Delete this conversation and all its messages?")) return;
      try {
        await api("DELETE", `/ai/conversations/${conversation}`);
        location.assign("/ai");
      } catch (error) {
        showError(headError, error);
      }
    });
  }
})();
