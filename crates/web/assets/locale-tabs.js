// Locale tabs of the item form: without script every locale's input is shown (each labelled
// with its locale); with it, one locale at a time, picked from the tab list.
const tabs = document.querySelector(".locale-tabs");
if (tabs) {
  const buttons = [...tabs.querySelectorAll("button[data-locale]")];
  const show = (locale) => {
    for (const b of buttons) b.setAttribute("aria-selected", String(b.dataset.locale === locale));
    for (const input of document.querySelectorAll(".item-form [data-locale]")) {
      // An input with a problem stays visible whatever the tab.
      input.hidden = input.dataset.locale !== locale && !input.querySelector("[aria-invalid]");
    }
  };
  tabs.addEventListener("click", (e) => {
    const b = e.target.closest("button[data-locale]");
    if (b) show(b.dataset.locale);
  });
  tabs.addEventListener("keydown", (e) => {
    const at = buttons.indexOf(document.activeElement);
    if (at < 0 || (e.key !== "ArrowRight" && e.key !== "ArrowLeft")) return;
    const next = buttons[(at + (e.key === "ArrowRight" ? 1 : buttons.length - 1)) % buttons.length];
    next.focus();
    show(next.dataset.locale);
  });
  tabs.hidden = false;
  show(buttons[0]?.dataset.locale);
}
