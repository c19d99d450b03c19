// The role editor's preview panel: loads the item's preview-as-role page for the chosen
// collection and item and shows its verdict and explanation in place.
const form = document.querySelector("form[data-role-preview]");
const out = document.getElementById("role-preview");
if (form && out) {
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const collection = encodeURIComponent(form.elements.namedItem("collection").value);
    const item = encodeURIComponent(form.elements.namedItem("item_id").value);
    const role = encodeURIComponent(form.dataset.role);
    out.textContent = "Loading…";
    const res = await fetch(`/collections/${collection}/items/${item}/preview-as-role?role=${role}`, {
      headers: { Accept: "text/html" },
    });
    const page = new DOMParser().parseFromString(await res.text(), "text/html");
    const result = page.getElementById("preview-result");
    out.replaceChildren(...(result ? result.childNodes : [document.createTextNode(
      res.status === 404 ? "No such item." : `The preview failed (HTTP ${res.status}).`)]));
  });
}
