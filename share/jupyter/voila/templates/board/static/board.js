// The board page's own behaviour (templates/board/index.html.j2 loads it):
// each answer opens behind its "Show answer" button, one switch shows or
// hides every instructor note, and explorer figures are scaled to fit one
// screen. Plain DOM, no build step, nothing fetched.
(function () {
  "use strict";

  // Widgets drawn while their cell was hidden measured a zero-sized box; a
  // resize event makes Lumino lay them out again now that they can be seen.
  function relayout() {
    window.dispatchEvent(new Event("resize"));
  }

  function setAnswer(button, open) {
    const part = document.getElementById(button.getAttribute("aria-controls"));
    if (!part) return;
    part.hidden = !open;
    button.setAttribute("aria-expanded", String(open));
    button.textContent = button.dataset[open ? "hideLabel" : "showLabel"];
    // A markdown answer is also wrapped in <details> for GitHub and JupyterLab
    // (notes/conventions.md): one click on the board opens both.
    part.querySelectorAll("details").forEach((details) => {
      details.open = open;
    });
    if (open) relayout();
  }

  function setNotes(button, shown) {
    button.setAttribute("aria-pressed", String(shown));
    document.querySelectorAll(".board-instructor-note").forEach((note) => {
      note.hidden = !shown;
    });
    if (shown) relayout();
  }

  // An explorer's figure is rendered as wide as JupyterLab's column at
  // 1920x1080 and must never be enlarged (it would blur on the projector). On
  // a smaller window it could still run off the screen: scale it down to the
  // largest size at which the whole explorer (controls, readout, figure,
  // numbers) fits the window, keeping the figure's proportions and never
  // above its own pixel width. Every new PNG fires "load".
  const FIGURE = "img.attn-figure";
  const MARGIN = 24; // px kept free above and below the explorer

  function fitFigure(img) {
    const explorer = img.closest(".attn-explorer");
    if (!explorer || !img.naturalWidth || !img.naturalHeight) return;
    const others =
      explorer.getBoundingClientRect().height - img.getBoundingClientRect().height;
    const height = window.innerHeight - others - 2 * MARGIN;
    const fitting = Math.floor((height * img.naturalWidth) / img.naturalHeight);
    const width = Math.min(img.naturalWidth, Math.max(200, fitting));
    img.style.width = `min(100%, ${width}px)`;
    img.style.height = "auto";
    img.style.alignSelf = "center";
  }

  document.addEventListener(
    "load",
    (event) => {
      if (event.target.matches && event.target.matches(FIGURE)) fitFigure(event.target);
    },
    true, // load does not bubble; it can be caught on its way down
  );
  window.addEventListener("resize", () => document.querySelectorAll(FIGURE).forEach(fitFigure));

  document.addEventListener("click", (event) => {
    const answer = event.target.closest(".board-reveal");
    if (answer) {
      setAnswer(answer, answer.getAttribute("aria-expanded") !== "true");
      return;
    }
    const notes = event.target.closest("#board-notes-switch");
    if (notes) setNotes(notes, notes.getAttribute("aria-pressed") !== "true");
  });
})();
