// The blocks editor: a blocks field's JSON shown as a list of blocks, each with its type, its
// data (JSON) and buttons to move it up or down or remove it, and a way to add a block of any
// type the field allows. The field's own textarea stays the form's value (kept in step, hidden):
// the server validates it as for any client, nested blocks within the depth limit included.
let uid = 0;
for (const area of document.querySelectorAll("textarea[data-blocks]")) {
  const spec = JSON.parse(area.dataset.blocks);
  let blocks;
  try {
    blocks = area.value.trim() ? JSON.parse(area.value) : [];
  } catch {
    continue; // Not JSON: leave the plain textarea so the value can be fixed by hand.
  }
  if (!Array.isArray(blocks)) continue;
  const editor = document.createElement("div");
  editor.className = "blocks";
  area.hidden = true;
  area.after(editor);
  const label = (key) => (spec.types.find((t) => t.key === key) || { label: key }).label;
  const save = () => {
    area.value = JSON.stringify(blocks, null, 2);
  };
  const render = () => {
    editor.replaceChildren();
    const list = document.createElement("ol");
    list.className = "block-list";
    blocks.forEach((block, at) => {
      const li = document.createElement("li");
      li.className = "block";
      const head = document.createElement("div");
      head.className = "block-head";
      const title = document.createElement("strong");
      title.textContent = `${at + 1}. ${label(block.type)}`;
      head.append(title);
      const button = (text, name, disabled, act) => {
        const b = document.createElement("button");
        b.type = "button";
        b.className = "small";
        b.textContent = text;
        b.setAttribute("aria-label", `${name} block ${at + 1} (${label(block.type)})`);
        b.disabled = disabled;
        b.addEventListener("click", act);
        head.append(b);
      };
      button("↑", "Move up", at === 0, () => {
        [blocks[at - 1], blocks[at]] = [blocks[at], blocks[at - 1]];
        save();
        render();
      });
      button("↓", "Move down", at === blocks.length - 1, () => {
        [blocks[at + 1], blocks[at]] = [blocks[at], blocks[at + 1]];
        save();
        render();
      });
      button("Remove", "Remove", false, () => {
        blocks.splice(at, 1);
        save();
        render();
      });
      const id = `block-data-${++uid}`;
      const dataLabel = document.createElement("label");
      dataLabel.htmlFor = id;
      dataLabel.textContent = `Data of block ${at + 1} (JSON)`;
      const data = document.createElement("textarea");
      data.id = id;
      data.className = "mono";
      data.rows = 4;
      data.spellcheck = false;
      data.value = JSON.stringify(block.data || {}, null, 2);
      data.addEventListener("input", () => {
        try {
          block.data = JSON.parse(data.value);
          data.removeAttribute("aria-invalid");
          save();
        } catch {
          data.setAttribute("aria-invalid", "true");
        }
      });
      li.append(head, dataLabel, data);
      list.append(li);
    });
    if (!blocks.length) {
      const none = document.createElement("p");
      none.className = "muted";
      none.textContent = "No blocks yet.";
      editor.append(none);
    }
    editor.append(list);
    const add = document.createElement("div");
    add.className = "toolbar";
    const pick = document.createElement("select");
    pick.setAttribute("aria-label", `Type of the block to add to ${area.name}`);
    for (const t of spec.types) pick.append(new Option(t.label, t.key));
    const addButton = document.createElement("button");
    addButton.type = "button";
    addButton.className = "small";
    addButton.textContent = "Add a block";
    addButton.disabled = !spec.types.length;
    addButton.addEventListener("click", () => {
      const type = spec.types.find((t) => t.key === pick.value);
      const data = Object.fromEntries((type ? type.fields : []).map((f) => [f, null]));
      blocks.push({ id: crypto.randomUUID(), type: pick.value, data });
      save();
      render();
    });
    const depth = document.createElement("span");
    depth.className = "muted";
    depth.textContent = `Nested blocks: up to ${spec.max_depth} levels (this field is level ${spec.depth}).`;
    add.append(pick, addButton, depth);
    editor.append(add);
  };
  render();
}
