// The board page's own controls (templates/board/index.html.j2 puts them there):
// each answer opens behind its "Show answer" button, and one switch shows or
// hides every instructor note. Plain DOM, no build step, nothing fetched.
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
