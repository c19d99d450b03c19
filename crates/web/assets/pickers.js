// The item form's pickers: "Choose…" beside a relation opens a search over the items the field
// can point at (the options endpoint); beside an image or file field, over the file manager's
// files. A choice fills the input: the id, added to a comma list, or a link added to the JSON of
// a many-to-many field.
const search = async (button, text) => {
  if (button.dataset.picker === "files") {
    const q = new URLSearchParams({ per_page: "20" });
    if (text) q.set("search", text);
    const res = await fetch(`/files?${q}`, { headers: { Accept: "application/json" } });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    const page = await res.json();
    return page.data.filter((f) => f.type === "file").map((f) => ({
      id: f.id,
      label: f.title || f.filename,
      thumb: f.effective_access === "public" && f.transforms ? f.transforms.thumbnail : null,
    }));
  }
  const q = new URLSearchParams({ field_id: button.dataset.fieldId, per_page: "20" });
  if (text) q.set("search", text);
  const res = await fetch(`/collections/${button.dataset.collection}/items/options?${q}`, {
    headers: { Accept: "application/json" },
  });
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  return (await res.json()).data;
};

const choose = (button, id) => {
  const input = document.getElementById(button.dataset.for);
  if (button.dataset.shape === "id") {
    input.value = String(id);
  } else if (button.dataset.shape === "ids") {
    const ids = input.value.split(",").map((s) => s.trim()).filter(Boolean);
    if (!ids.includes(String(id))) ids.push(String(id));
    input.value = ids.join(", ");
  } else {
    let links = [];
    try {
      links = input.value.trim() ? JSON.parse(input.value) : [];
    } catch {}
    if (!Array.isArray(links)) links = [];
    if (!links.some((l) => l && l.related_item_id === id)) links.push({ related_item_id: id });
    input.value = JSON.stringify(links, null, 2);
  }
  input.dispatchEvent(new Event("input", { bubbles: true }));
};

for (const button of document.querySelectorAll("button[data-picker]")) {
  const panel = document.querySelector(`[data-picker-panel="${button.dataset.for}"]`);
  const box = document.createElement("input");
  box.type = "search";
  box.placeholder = "Search";
  box.setAttribute("aria-label", "Search the choices");
  const list = document.createElement("ul");
  list.className = "picker-results";
  panel.append(box, list);
  const show = async () => {
    list.replaceChildren();
    try {
      const found = await search(button, box.value.trim());
      if (!found.length) list.append(Object.assign(document.createElement("li"), { textContent: "Nothing found." }));
      for (const option of found) {
        const li = document.createElement("li");
        const pick = document.createElement("button");
        pick.type = "button";
        pick.className = "link";
        if (option.thumb) {
          const img = document.createElement("img");
          img.src = option.thumb;
          img.alt = "";
          img.width = 40;
          img.height = 40;
          pick.append(img);
        }
        pick.append(`${option.label} (#${option.id})`);
        pick.addEventListener("click", () => choose(button, option.id));
        li.append(pick);
        list.append(li);
      }
    } catch (e) {
      list.append(Object.assign(document.createElement("li"), { textContent: `The choices could not be loaded (${e.message}).` }));
    }
  };
  let timer;
  box.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(show, 250);
  });
  button.addEventListener("click", () => {
    panel.hidden = !panel.hidden;
    button.setAttribute("aria-expanded", String(!panel.hidden));
    if (!panel.hidden) {
      box.focus();
      show();
    }
  });
}
