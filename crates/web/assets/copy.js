// "Copy" buttons: copies the named input's value and says so next to the button.
for (const button of document.querySelectorAll("button[data-copy]")) {
  button.addEventListener("click", async () => {
    const input = document.getElementById(button.dataset.copy);
    const said = document.querySelector(`[data-copied="${button.dataset.copy}"]`);
    try {
      await navigator.clipboard.writeText(input.value);
      if (said) said.textContent = "Copied.";
    } catch {
      input.select();
      if (said) said.textContent = "Selected: press Ctrl+C to copy.";
    }
  });
}
