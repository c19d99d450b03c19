// The file manager's upload: drop files on the form (or choose them) and they are sent at once
// with a progress bar; the page reloads when they are stored. Without script the form posts the
// same multipart body.
for (const form of document.querySelectorAll("form[data-upload]")) {
  const input = form.querySelector("input[type=file]");
  const bar = form.querySelector("progress");
  const status = form.querySelector("[data-upload-status]");
  const send = (files) => {
    if (!files.length) return;
    const body = new FormData();
    body.append("parent_id", form.elements.parent_id.value);
    for (const file of files) body.append("file", file, file.name);
    const xhr = new XMLHttpRequest();
    xhr.open("POST", form.action);
    xhr.setRequestHeader("Accept", "application/json");
    bar.hidden = false;
    bar.value = 0;
    status.textContent = `Uploading ${files.length} file${files.length === 1 ? "" : "s"}…`;
    xhr.upload.addEventListener("progress", (e) => {
      if (e.lengthComputable) bar.value = Math.round((e.loaded / e.total) * 100);
    });
    xhr.addEventListener("load", () => {
      if (xhr.status === 201) {
        bar.value = 100;
        status.textContent = "Uploaded.";
        location.reload();
        return;
      }
      let message = `The upload was refused (HTTP ${xhr.status}).`;
      try {
        const answer = JSON.parse(xhr.responseText);
        const first = Object.values(answer.errors || {})[0];
        message = (first && first[0]) || answer.message || message;
      } catch {}
      bar.hidden = true;
      status.textContent = message;
    });
    xhr.addEventListener("error", () => {
      bar.hidden = true;
      status.textContent = "The upload failed: the server could not be reached.";
    });
    xhr.send(body);
  };
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    send([...input.files]);
  });
  input.addEventListener("change", () => send([...input.files]));
  for (const type of ["dragenter", "dragover"]) {
    form.addEventListener(type, (e) => {
      e.preventDefault();
      form.classList.add("dragging");
    });
  }
  form.addEventListener("dragleave", () => form.classList.remove("dragging"));
  form.addEventListener("drop", (e) => {
    e.preventDefault();
    form.classList.remove("dragging");
    send([...e.dataTransfer.files]);
  });
}
