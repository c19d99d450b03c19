// The chat hub made live. It speaks the Pusher protocol (version 7) to /app/{key} itself, so the
// page needs no client library: it subscribes to the open thread's presence channel (messages,
// reactions, who is here) and to the user's own channel (unread counts, new conversations,
// mentions), signing each subscription through POST /broadcasting/auth. Every change is sent
// through the JSON API with X-Socket-ID, so this tab does not get its own change back.
// Message HTML comes from the server, escaped there (`html`): the script never builds markup
// from text.
(() => {
  const root = document.getElementById("chat");
  if (!root) return;
  const me = Number(root.dataset.user);
  const chat = root.dataset.chat || null;
  const CHUNK = 5 * 1024 * 1024;
  const EMOJIS = ["👍", "❤️", "😄", "🎉", "👀"];
  let socketId = null;

  const api = async (method, path, body, headers = {}) => {
    const init = { method, headers: { Accept: "application/json", ...headers }, credentials: "same-origin" };
    if (socketId) init.headers["X-Socket-ID"] = socketId;
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const res = await fetch(path, init);
    const text = await res.text();
    const data = text ? JSON.parse(text) : null;
    if (!res.ok) {
      const first = data && data.errors && Object.values(data.errors)[0];
      throw new Error((first && first[0]) || (data && data.message) || `HTTP ${res.status}`);
    }
    return data;
  };
  const showError = (form, error) => {
    const box = form && form.querySelector(".error");
    if (!box) return;
    box.textContent = error ? error.message || String(error) : "";
    box.hidden = !error;
  };

  // --- The realtime connection -------------------------------------------------------------
  const handlers = new Map(); // channel -> (event, data) => void
  const send = (ws, event, data) => ws.readyState === 1 && ws.send(JSON.stringify({ event, data }));
  let ws = null;
  let retry = 500;
  const subscribe = async (channel) => {
    if (!ws || !socketId) return;
    try {
      const auth = await api("POST", "/broadcasting/auth", { socket_id: socketId, channel_name: channel });
      send(ws, "pusher:subscribe", { channel, ...auth });
    } catch (e) {
      console.warn(`chat: cannot listen on ${channel}`, e);
    }
  };
  const connect = () => {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    ws = new WebSocket(`${scheme}://${location.host}/app/${root.dataset.key}?protocol=7&client=vellum-ui&version=1`);
    ws.addEventListener("message", (frame) => {
      let message;
      try {
        message = JSON.parse(frame.data);
      } catch {
        return;
      }
      const data = typeof message.data === "string" ? safeParse(message.data) : message.data;
      if (message.event === "pusher:connection_established") {
        socketId = data.socket_id;
        retry = 500;
        for (const channel of handlers.keys()) subscribe(channel);
        refreshUnread();
      } else if (message.event === "pusher:ping") {
        send(ws, "pusher:pong", {});
      } else if (message.channel && handlers.has(message.channel)) {
        handlers.get(message.channel)(message.event, data);
      }
    });
    ws.addEventListener("close", () => {
      socketId = null;
      setTimeout(connect, retry);
      retry = Math.min(retry * 2, 15000);
    });
  };
  const safeParse = (text) => {
    try {
      return JSON.parse(text);
    } catch {
      return null;
    }
  };

  // --- Unread badges -------------------------------------------------------------------------
  const setBadge = (el, n) => {
    if (!el) return;
    el.textContent = String(n);
    el.hidden = !n;
  };
  const refreshUnread = async () => {
    try {
      const { data } = await api("GET", "/chat/unread-count");
      setBadge(document.getElementById("chat-total"), data.total);
      for (const tab of ["collection", "private"]) setBadge(root.querySelector(`[data-unread-tab="${tab}"]`), data[tab]);
      for (const badge of root.querySelectorAll("[data-unread]")) setBadge(badge, data.chats[badge.dataset.unread] || 0);
    } catch {}
  };
  let readTimer = null;
  const markRead = () => {
    if (!chat || document.visibilityState !== "visible") return;
    clearTimeout(readTimer);
    readTimer = setTimeout(() => api("POST", `/chat/${chat}/read`, {}).then(refreshUnread).catch(() => {}), 150);
  };
  document.addEventListener("visibilitychange", markRead);

  handlers.set(`private-App.Models.User.${me}`, (event, data) => {
    if (event === "ChatUnreadUpdated") {
      setBadge(root.querySelector(`[data-unread="${data.chat_id}"]`), data.unread);
      refreshUnread();
    } else if (event === "ThreadUpserted") {
      addThread(data.thread);
    } else if (event.endsWith("BroadcastNotificationCreated")) {
      toast(`${data.title}: ${data.body_preview}`, `/chat/${data.chat_id}`);
    }
  });
  const addThread = (thread) => {
    // Only the private tab (not the archive) lists new conversations.
    if (!document.getElementById("chat-start")) return;
    let list = document.getElementById("threads");
    if (!list) {
      // The first conversation of an empty tab: the list takes the empty state's place.
      const empty = root.querySelector(".chat-list .empty");
      if (!empty) return;
      list = el("ul", "threads");
      list.id = "threads";
      empty.replaceWith(list);
    }
    if (list.querySelector(`[data-thread="${thread.id}"]`)) return;
    const li = document.createElement("li");
    li.dataset.thread = thread.id;
    const a = document.createElement("a");
    a.href = `/chat/${thread.id}?tab=private`;
    const title = document.createElement("span");
    title.className = "thread-title";
    title.textContent = thread.title;
    const badge = document.createElement("span");
    badge.className = "badge";
    badge.dataset.unread = thread.id;
    badge.hidden = true;
    a.append(title, badge);
    li.append(a);
    list.prepend(li);
  };
  const toast = (text, href) => {
    const note = document.createElement("a");
    note.className = "toast";
    note.href = href;
    note.textContent = text;
    note.setAttribute("role", "status");
    document.body.append(note);
    setTimeout(() => note.remove(), 8000);
  };

  // --- The open thread -----------------------------------------------------------------------
  const list = document.getElementById("messages");
  const when = (iso) => (iso || "").slice(0, 16).replace("T", " ");
  const el = (tag, className, text) => {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  };
  const renderReactions = (ul, reactions) => {
    ul.replaceChildren();
    for (const r of reactions) {
      const button = el("button", "", `${r.emoji} ${r.count}`);
      button.type = "button";
      button.dataset.react = r.emoji;
      button.setAttribute("aria-pressed", String(r.user_ids.includes(me)));
      const item = el("li");
      item.append(button);
      ul.append(item);
    }
  };
  const renderMessage = (m) => {
    const li = el("li");
    li.id = `m${m.id}`;
    li.dataset.message = m.id;
    if (m.author && m.author.id === me) li.dataset.mine = "";
    const meta = el("div", "meta");
    meta.append(el("strong", "", m.author ? m.author.name : "Deleted user"), " ");
    const time = el("time", "", when(m.created_at));
    time.dateTime = m.created_at;
    meta.append(time);
    if (m.edited_at) meta.append(" ", el("span", "muted", "(edited)"));
    li.append(meta);
    if (m.reply_to) li.append(el("blockquote", "reply", `${m.reply_to.author ? `${m.reply_to.author.name}: ` : ""}${m.reply_to.body_preview}`));
    const body = el("div", "body");
    body.innerHTML = m.html; // escaped by the server
    li.append(body);
    if (m.attachments.length) {
      const files = el("ul", "attachments");
      for (const f of m.attachments) {
        const a = el("a", "", f.name);
        a.href = f.url;
        a.download = "";
        const item = el("li");
        item.append(a, " ", el("span", "muted", `${f.size} bytes`));
        files.append(item);
      }
      li.append(files);
    }
    const reactions = el("ul", "reactions");
    renderReactions(reactions, m.reactions);
    li.append(reactions);
    addActions(li);
    return li;
  };
  const upsert = (m) => {
    if (!list) return;
    document.getElementById("no-messages")?.remove();
    const fresh = renderMessage(m);
    const old = document.getElementById(`m${m.id}`);
    if (old) old.replaceWith(fresh);
    else {
      list.append(fresh);
      fresh.scrollIntoView({ block: "end" });
    }
  };
  const addActions = (li) => {
    if (li.querySelector(".actions")) return;
    const bar = el("div", "actions");
    const add = (label, action) => {
      const b = el("button", "link", label);
      b.type = "button";
      b.dataset.action = action;
      bar.append(b);
    };
    for (const emoji of EMOJIS) {
      const b = el("button", "link", emoji);
      b.type = "button";
      b.dataset.react = emoji;
      b.setAttribute("aria-label", `React with ${emoji}`);
      bar.append(b);
    }
    add("Reply", "reply");
    add(li.hasAttribute("data-pinned") ? "Unpin" : "Pin", "pin");
    if (li.hasAttribute("data-mine")) {
      add("Edit", "edit");
      add("Delete", "delete");
    }
    li.append(bar);
  };

  let replyTo = null;
  if (chat && list) {
    for (const li of list.querySelectorAll("li[data-message]")) addActions(li);
    handlers.set(`presence-chat.${chat}`, (event, data) => {
      if (event === "MessageCreated" || event === "MessageUpdated") {
        upsert(data.message);
        if (event === "MessageCreated") markRead();
      } else if (event === "MessageDeleted") {
        document.getElementById(`m${data.message_id}`)?.remove();
      } else if (event === "ReactionToggled") {
        const ul = document.querySelector(`#m${data.message_id} .reactions`);
        if (ul) renderReactions(ul, data.reactions);
      } else if (event === "pusher_internal:subscription_succeeded") {
        presence(Object.values((data.presence && data.presence.hash) || {}));
      } else if (event === "pusher_internal:member_added") {
        presence([...here.values(), data.user_info], true);
      } else if (event === "pusher_internal:member_removed") {
        here.delete(String(data.user_id));
        presence([...here.values()], true);
      }
    });
    list.addEventListener("click", async (e) => {
      const button = e.target.closest("button");
      const li = e.target.closest("li[data-message]");
      if (!button || !li) return;
      const path = `/chat/${chat}/messages/${li.dataset.message}`;
      try {
        if (button.dataset.react) {
          const { data } = await api("POST", `${path}/reactions`, { emoji: button.dataset.react });
          renderReactions(li.querySelector(".reactions"), data.reactions);
        } else if (button.dataset.action === "pin") {
          upsert((await api("POST", `${path}/pin`)).data);
        } else if (button.dataset.action === "delete") {
          if (!confirm("Delete this message for everyone?")) return;
          await api("DELETE", path);
          li.remove();
        } else if (button.dataset.action === "edit") {
          const text = prompt("Edit your message", li.querySelector(".body").textContent);
          if (text !== null) upsert((await api("PUT", path, { body: text })).data);
        } else if (button.dataset.action === "reply") {
          replyTo = Number(li.dataset.message);
          textarea.placeholder = `Replying to: ${li.querySelector(".body").textContent.slice(0, 60)}`;
          textarea.focus();
        }
      } catch (error) {
        toast(error.message, "#");
      }
    });
    markRead();
  }

  const here = new Map();
  const presence = (members, merge = false) => {
    if (!merge) here.clear();
    for (const m of members) if (m) here.set(String(m.id), m);
    const ul = document.getElementById("presence");
    if (!ul) return;
    ul.replaceChildren(...[...here.values()].map((m) => el("li", "", m.name)));
  };

  // --- Mentions and the composer --------------------------------------------------------------
  const composer = document.getElementById("composer");
  const textarea = document.getElementById("composer-body");
  const mentioned = new Map(); // "@Name" -> {type, id}
  const attachments = new Map(); // id -> name
  const suggest = (input, box, pick) => {
    let active = -1;
    let items = [];
    const close = () => {
      box.hidden = true;
      active = -1;
    };
    const show = (entries) => {
      items = entries;
      box.replaceChildren(
        ...entries.map((entry, i) => {
          const li = el("li", "", `${entry.label}${entry.type === "group" ? " (group)" : ""}`);
          li.setAttribute("role", "option");
          li.id = `${box.id}-${i}`;
          li.addEventListener("mousedown", (e) => {
            e.preventDefault();
            pick(entry);
            close();
          });
          return li;
        }),
      );
      box.hidden = !entries.length;
    };
    input.addEventListener("keydown", (e) => {
      if (box.hidden) return;
      if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        e.preventDefault();
        active = (active + (e.key === "ArrowDown" ? 1 : items.length - 1)) % items.length;
        for (const [i, li] of [...box.children].entries()) li.setAttribute("aria-selected", String(i === active));
      } else if ((e.key === "Enter" || e.key === "Tab") && active >= 0) {
        e.preventDefault();
        e.stopImmediatePropagation();
        pick(items[active]);
        close();
      } else if (e.key === "Escape") close();
    });
    input.addEventListener("blur", () => setTimeout(close, 100));
    return { show, close };
  };
  const directory = async (search) => {
    const { data } = await api("GET", `/chat/options/directory?per_page=8&search=${encodeURIComponent(search)}`);
    return data;
  };

  const placeholder = textarea ? textarea.placeholder : "";
  if (composer && textarea) {
    const box = document.getElementById("mention-suggest");
    const mention = suggest(textarea, box, (entry) => {
      const at = textarea.value.lastIndexOf("@", textarea.selectionStart);
      const tag = `@${entry.label}`;
      textarea.value = `${textarea.value.slice(0, at)}${tag} ${textarea.value.slice(textarea.selectionStart)}`;
      mentioned.set(tag, entry);
      textarea.focus();
    });
    // Answers to earlier keystrokes may arrive after later ones: only the latest is shown.
    let lookup = 0;
    textarea.addEventListener("input", async () => {
      // A one-to-one conversation takes no mentions (the server refuses them).
      if (root.dataset.mentions === "off") return;
      const upto = textarea.value.slice(0, textarea.selectionStart);
      const match = /(?:^|\s)@([^\s@]{1,40})$/.exec(upto);
      const current = ++lookup;
      if (!match) return mention.close();
      try {
        const found = await directory(match[1]);
        if (current === lookup) mention.show(found);
      } catch {
        if (current === lookup) mention.close();
      }
    });
    textarea.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey && box.hidden) {
        e.preventDefault();
        composer.requestSubmit();
      }
    });
    composer.addEventListener("submit", async (e) => {
      e.preventDefault();
      const body = textarea.value;
      const picked = [...mentioned.entries()].filter(([tag]) => body.includes(tag)).map(([, entry]) => entry);
      const payload = {
        body,
        attachment_ids: [...attachments.keys()],
        mentioned_user_ids: picked.filter((m) => m.type === "user").map((m) => m.id),
        mentioned_group_ids: picked.filter((m) => m.type === "group").map((m) => m.id),
      };
      if (replyTo) payload.reply_to_id = replyTo;
      try {
        const { data } = await api("POST", `/chat/${chat}/messages`, payload);
        upsert(data);
        textarea.value = "";
        textarea.placeholder = placeholder;
        replyTo = null;
        mentioned.clear();
        attachments.clear();
        document.getElementById("uploads").replaceChildren();
        showError(composer, null);
      } catch (error) {
        showError(composer, error);
      }
    });
    document.getElementById("composer-file").addEventListener("change", (e) => {
      for (const file of e.target.files) uploadFile(file);
      e.target.value = "";
    });
  }

  // --- Uploads: one request up to a chunk, chunked (and resumed) beyond ------------------------
  const uploadRow = (file) => {
    const li = el("li");
    const bar = el("progress");
    bar.max = 100;
    bar.value = 0;
    bar.setAttribute("aria-label", `Uploading ${file.name}`);
    li.append(el("span", "", file.name), " ", bar);
    document.getElementById("uploads").append(li);
    return { li, bar };
  };
  const done = (row, attachment) => {
    attachments.set(attachment.id, attachment.name);
    row.bar.value = 100;
    row.li.dataset.attachment = attachment.id;
    const remove = el("button", "link", "Remove");
    remove.type = "button";
    remove.addEventListener("click", () => {
      attachments.delete(attachment.id);
      row.li.remove();
    });
    row.li.append(" ", remove);
  };
  const uploadFile = (file) => {
    const row = uploadRow(file);
    if (file.size <= CHUNK) return uploadSingle(file, row);
    return uploadChunked(file, row).catch((error) => {
      row.li.append(" ", el("span", "error", error.message));
    });
  };
  const uploadSingle = (file, row) => {
    const form = new FormData();
    form.append("file", file, file.name);
    const xhr = new XMLHttpRequest();
    xhr.open("POST", `/chat/${chat}/attachments`);
    xhr.setRequestHeader("Accept", "application/json");
    xhr.upload.addEventListener("progress", (e) => {
      if (e.lengthComputable) row.bar.value = Math.round((e.loaded / e.total) * 100);
    });
    xhr.addEventListener("load", () => {
      const answer = safeParse(xhr.responseText) || {};
      if (xhr.status === 201) return done(row, answer.data);
      const first = answer.errors && Object.values(answer.errors)[0];
      row.li.append(" ", el("span", "error", (first && first[0]) || answer.message || `HTTP ${xhr.status}`));
    });
    xhr.addEventListener("error", () => row.li.append(" ", el("span", "error", "The upload failed.")));
    xhr.send(form);
  };
  const putChunk = async (path, blob) => {
    const res = await fetch(path, {
      method: "PUT",
      credentials: "same-origin",
      headers: { Accept: "application/json", "Content-Type": "application/octet-stream" },
      body: blob,
    });
    if (!res.ok) throw new Error(`chunk refused (HTTP ${res.status})`);
  };
  const uploadChunked = async (file, row) => {
    const { data: started } = await api("POST", `/chat/${chat}/uploads`, { name: file.name, size: file.size });
    const base = `/chat/${chat}/uploads/${started.id}`;
    let missing = started.missing;
    for (let round = 0; missing.length && round < 5; round++) {
      for (const index of missing) {
        const start = index * started.chunk_size;
        try {
          await putChunk(`${base}/chunks/${index}`, file.slice(start, start + started.chunk_size));
        } catch {
          break; // ask the server what it has, then send the rest
        }
        row.bar.value = Math.round(((started.chunks - missing.length + 1) / started.chunks) * 100);
      }
      missing = (await api("GET", base)).data.missing;
    }
    if (missing.length) throw new Error("The upload could not be finished.");
    done(row, (await api("POST", `${base}/complete`)).data);
  };

  // --- Starting a conversation, archiving ------------------------------------------------------
  const start = document.getElementById("chat-start");
  if (start) {
    const input = document.getElementById("chat-people");
    const chosen = document.getElementById("chat-chosen");
    const button = start.querySelector("button[type=submit]");
    const picked = new Map();
    const redraw = () => {
      chosen.replaceChildren(
        ...[...picked.values()].map((entry) => {
          const chip = el("li", "", entry.label);
          const x = el("button", "link", "×");
          x.type = "button";
          x.setAttribute("aria-label", `Remove ${entry.label}`);
          x.addEventListener("click", () => {
            picked.delete(`${entry.type}:${entry.id}`);
            redraw();
          });
          chip.append(" ", x);
          return chip;
        }),
      );
      button.disabled = !picked.size;
    };
    const people = suggest(input, document.getElementById("chat-people-suggest"), (entry) => {
      if (!(entry.type === "user" && entry.id === me)) picked.set(`${entry.type}:${entry.id}`, entry);
      input.value = "";
      redraw();
    });
    input.addEventListener("input", async () => {
      const text = input.value.trim();
      if (!text) return people.close();
      try {
        people.show(await directory(text));
      } catch {
        people.close();
      }
    });
    start.addEventListener("submit", async (e) => {
      e.preventDefault();
      const entries = [...picked.values()];
      try {
        const { data } = await api("POST", "/chat/threads", {
          kind: "direct",
          user_ids: entries.filter((x) => x.type === "user").map((x) => x.id),
          group_ids: entries.filter((x) => x.type === "group").map((x) => x.id),
        });
        location.assign(`/chat/${data.id}?tab=private`);
      } catch (error) {
        showError(start, error);
      }
    });
  }
  for (const form of root.querySelectorAll("form[data-chat-action]")) {
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      await api("POST", `/chat/${chat}/${form.dataset.chatAction}`).catch(() => {});
      location.reload();
    });
  }

  connect();
})();
