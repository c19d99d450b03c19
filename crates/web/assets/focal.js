// The focal-point picker: a click on the preview sets the focal point inputs (0 to 1 from the
// left and the top) and moves the mark; typing in the inputs moves the mark too.
const box = document.querySelector("[data-focal]");
if (box) {
  const img = box.querySelector("img");
  const mark = box.querySelector(".focal-mark");
  const x = document.getElementById("m-focal_point_x");
  const y = document.getElementById("m-focal_point_y");
  const place = () => {
    if (x.value === "" || y.value === "") return;
    mark.hidden = false;
    mark.style.left = `${Number(x.value) * 100}%`;
    mark.style.top = `${Number(y.value) * 100}%`;
  };
  img.addEventListener("click", (e) => {
    const r = img.getBoundingClientRect();
    const round = (v) => Math.min(1, Math.max(0, Math.round(v * 100) / 100));
    x.value = round((e.clientX - r.left) / r.width);
    y.value = round((e.clientY - r.top) / r.height);
    place();
  });
  x.addEventListener("input", place);
  y.addEventListener("input", place);
  place();
}
