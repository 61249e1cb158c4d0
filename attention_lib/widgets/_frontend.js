// The explorers' small front end (anywidget ES module, no build step).
//
// Each explorer's VBox holds one ExplorerFrontend (attention_lib/widgets/_frontend.py).
// Its view finds the explorer around it (the closest `.attn-explorer`) and does the
// three things the kernel cannot do, because they happen in the page:
//
// 1. Honest state. A restarted, stopped or unreachable kernel runs no Python, so
//    the explorer cannot say so itself. Two independent signals, either enough:
//    - a heartbeat over this widget's own comm: a "ping" every few seconds, and
//      at once when someone touches the explorer, that the Python side answers
//      with a "pong". A restarted kernel has never heard of the comm and never
//      answers; a stopped or unreachable one cannot. This needs nothing but the
//      widget protocol, so it works in JupyterLab, Voila and any other front
//      end that runs ipywidgets.
//    - the kernel's status, when the widget manager exposes its kernel
//      (`widget_manager.kernel`, true for JupyterLab's and Voila's managers):
//      "restarting", "dead" or a disposed connection (JupyterLab's Shut Down
//      Kernel) is known at once instead of a ping timeout later.
//    When the kernel is gone the explorer shows a plain message, dims the stale
//    figure and switches every control off (disabled + inert). If pongs come
//    back (same kernel, connection restored) everything is switched on again;
//    after a restart they cannot, and the message says to run the cell again.
// 2. Accessible controls. Slider handles announce what the readout shows
//    ("d_k = 256"), not the handle position (8); toggle buttons say which one
//    is pressed (aria-pressed); a button whose text is only a symbol ("✕") gets
//    its tooltip as its name ("query 2, key 4: blocked ...").
//    Every slider handle is named after its label, the readout is a polite
//    live region, and the figure's image gets the kernel's words for what it
//    shows (the model's `description`) as its alt, updated with the figure.
// 3. Presenter keys. A clicker sends PageDown / PageUp (some send ArrowRight /
//    ArrowLeft); they press the explorer's `.attn-next` / `.attn-back` button.

// How often the heartbeat asks. Each ping makes the kernel flash "Busy" for a
// few milliseconds in JupyterLab's status bar, so where the kernel's status is
// known (and restarts, shutdowns and lost connections arrive as events) a slow
// beat is enough; touching an explorer pings at once in any case.
const PING_MS = 3000; // no kernel status to go by: the heartbeat is all we have
const HOOKED_PING_MS = 15000; // the kernel's status is known
const ANSWER_MS = 4000; // an unanswered ping older than this: the kernel is not answering
const NEXT_KEYS = new Set(["PageDown", "ArrowRight"]);
const BACK_KEYS = new Set(["PageUp", "ArrowLeft"]);

// Plain words; "this cell" is JupyterLab's, "reload the page" a board page's (Voila).
const AGAIN = "run this cell again (on a board page: reload the page)";
const MESSAGES = {
  restarted:
    "The kernel was restarted, so this explorer has lost its Python side: its controls " +
    `are switched off and the figure is the last one it drew. To use it, ${AGAIN}.`,
  stopped:
    "The kernel has stopped, so this explorer has lost its Python side: its controls " +
    `are switched off and the figure is the last one it drew. Start a kernel and ${AGAIN}.`,
  disconnected:
    "The connection to the kernel is lost: the controls are switched off and the figure " +
    "is the last one drawn. They come back on when the connection returns.",
  silent:
    "The kernel is not answering (stopped, or the server is out of reach): the controls " +
    "are switched off and the figure is the last one drawn. They come back on if it " +
    `answers; otherwise ${AGAIN}.`,
  busy: "The kernel is busy running another cell; this explorer catches up when it finishes.",
};

// ---------------------------------------------------------------------------
// Accessible controls: an idempotent pass over the explorer, re-run on changes.
// ---------------------------------------------------------------------------

function setAttr(node, name, value) {
  // Only write what differs: the MutationObserver that calls annotate() sees
  // our own writes too, and an unchanged attribute must not wake it again.
  if (node.getAttribute(name) !== value) node.setAttribute(name, value);
}

function annotate(root) {
  for (const slider of root.querySelectorAll(".widget-slider")) {
    const handle = slider.querySelector(".noUi-handle");
    const readout = slider.querySelector(".widget-readout");
    if (!handle || !readout) continue;
    const shown = readout.textContent.trim();
    const label = slider.querySelector(".widget-label");
    const name = label ? label.textContent.trim() : "";
    if (shown) setAttr(handle, "aria-valuetext", name ? `${name} = ${shown}` : shown);
    if (name || shown) setAttr(handle, "aria-label", name || shown);
  }
  for (const input of root.querySelectorAll("input")) {
    // A field with no visible label (the walkthrough's card entries): its tooltip,
    // which ipywidgets puts on the field or on its hidden label, is its name.
    const label = input.labels?.[0];
    const name = input.title || label?.title;
    if (name && !label?.textContent.trim()) setAttr(input, "aria-label", name);
  }
  for (const readout of root.querySelectorAll(".attn-readout")) {
    // Announced when it changes, after what the reader is saying (polite).
    setAttr(readout, "role", "status");
    setAttr(readout, "aria-live", "polite");
  }
  for (const button of root.querySelectorAll(".widget-toggle-button")) {
    setAttr(button, "aria-pressed", String(button.classList.contains("mod-active")));
  }
  for (const button of root.querySelectorAll("button[title]")) {
    // Only symbol-only buttons: a worded button keeps its visible text as its
    // name, so "Next" stays what a voice-control user says.
    if (!/\p{L}/u.test(button.textContent)) setAttr(button, "aria-label", button.title);
  }
}

// ---------------------------------------------------------------------------
// Switching the explorer off and on again.
// ---------------------------------------------------------------------------

function switchOff(root, own) {
  // Returns the undo. `inert` stops clicks, keys and focus everywhere in the
  // explorer but our own message; `disabled` makes each control look and read
  // as off (ipywidgets' own disabled look; noUiSlider ignores a [disabled] target).
  const undo = [];
  for (const child of root.children) {
    if (child.contains(own) || child.inert) continue;
    child.inert = true;
    undo.push(() => (child.inert = false));
  }
  for (const control of root.querySelectorAll("button, input, select, textarea")) {
    if (control.disabled) continue;
    control.disabled = true;
    undo.push(() => (control.disabled = false));
  }
  for (const target of root.querySelectorAll(".noUi-target:not([disabled])")) {
    target.setAttribute("disabled", "");
    undo.push(() => target.removeAttribute("disabled"));
  }
  for (const editable of root.querySelectorAll('[contenteditable="true"]')) {
    editable.setAttribute("contenteditable", "false");
    undo.push(() => editable.setAttribute("contenteditable", "true"));
  }
  return () => undo.forEach((step) => step());
}

// ---------------------------------------------------------------------------
// Presenter keys: one listener per page, shared by every explorer on it.
// ---------------------------------------------------------------------------

const PRESENTER = Symbol.for("attention_lib.presenter-keys");

function presenterRegistry() {
  // One registry per page however many copies of this module the page loaded.
  if (!globalThis[PRESENTER]) {
    const roots = new Set();
    globalThis[PRESENTER] = roots;
    window.addEventListener("keydown", (event) => onPresenterKey(event, roots), true);
  }
  return globalThis[PRESENTER];
}

function typingTarget(node) {
  // Keys that edit text or move a slider belong to that control, not to us.
  return (
    !!node &&
    (node.isContentEditable ||
      /^(INPUT|TEXTAREA|SELECT)$/.test(node.tagName) ||
      !!node.closest?.('.noUi-handle, .cm-editor, [role="slider"], [role="textbox"]'))
  );
}

function visibleArea(node) {
  const box = node.getBoundingClientRect();
  const w = Math.min(box.right, window.innerWidth) - Math.max(box.left, 0);
  const h = Math.min(box.bottom, window.innerHeight) - Math.max(box.top, 0);
  return Math.max(w, 0) * Math.max(h, 0);
}

function onPresenterKey(event, roots) {
  const forward = NEXT_KEYS.has(event.key);
  if (!forward && !BACK_KEYS.has(event.key)) return;
  if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
  const focus = document.activeElement;
  if (typingTarget(focus)) return;
  const live = [...roots].filter(
    (r) => r.isConnected && r.dataset.attnKernel !== "gone" && r.querySelector(".attn-next, .attn-back"),
  );
  // Only explorers with Next / Back take part. Focus inside one picks it.
  // With nothing focused (a Voila board page) the most visible one takes the keys. Focus elsewhere (a notebook
  // cell in JupyterLab) leaves the keys alone: PageDown still scrolls there.
  let root = live.find((r) => r.contains(focus));
  if (!root && (!focus || focus === document.body)) {
    root = live
      .map((r) => [visibleArea(r), r])
      .filter(([area]) => area > 0)
      .sort((a, b) => b[0] - a[0])[0]?.[1];
  }
  if (!root) return;
  const button = root.querySelector(forward ? ".attn-next" : ".attn-back");
  const target = button && (button.tagName === "BUTTON" ? button : button.querySelector("button"));
  if (!target) return;
  event.preventDefault();
  event.stopPropagation(); // JupyterLab would also scroll or move between cells
  if (!target.disabled) target.click(); // at the first or last step: nothing to do
}

// ---------------------------------------------------------------------------
// The view.
// ---------------------------------------------------------------------------

function kernelOf(model) {
  // JupyterLab's and Voila's widget managers expose the kernel connection;
  // another front end may not, and then the heartbeat alone decides.
  try {
    const kernel = model.widget_manager?.kernel;
    return kernel && kernel.statusChanged && kernel.connectionStatusChanged ? kernel : null;
  } catch {
    return null;
  }
}

function render({ model, el }) {
  el.classList.add("attn-frontend");
  const message = document.createElement("div");
  message.className = "attn-kernel-message";
  message.setAttribute("role", "status");
  message.setAttribute("aria-live", "assertive");
  el.appendChild(message);
  // The same words over the middle of the stale figure, where the eye is: the
  // message above can be off screen in a tall explorer (an output area scrolls
  // on its own, so CSS `sticky` cannot keep it in sight). Hidden from screen
  // readers, which already heard the message.
  const note = document.createElement("div");
  note.className = "attn-stale-note";
  note.setAttribute("aria-hidden", "true");
  const kernel = kernelOf(model);

  let root = null; // the explorer around us, once the page has put us in it
  let state = "live";
  let sent = 0; // number of the last ping sent
  let answered = 0; // number of the last ping answered
  let oldestUnanswered = null; // send time of the first ping still waiting
  let notBefore = 0; // pongs for pings up to this one predate a restart: ignored
  let fate = null; // why the kernel is gone for good (restarted, stopped), else null
  let undoSwitchOff = null;

  function show(newState, text) {
    state = newState;
    if (message.textContent !== text) message.textContent = text;
    if (!root) return; // applied by attach()
    root.dataset.attnKernel = state;
    if (state === "gone" && !undoSwitchOff) {
      undoSwitchOff = switchOff(root, el);
      root.classList.add("attn-kernel-gone");
    } else if (state !== "gone" && undoSwitchOff) {
      undoSwitchOff();
      undoSwitchOff = null;
      root.classList.remove("attn-kernel-gone");
    }
    const figure = state === "gone" && root.querySelector(".attn-figure");
    if (figure) {
      note.textContent = text;
      note.style.top = `${figure.offsetTop + figure.offsetHeight / 2}px`;
      if (!note.isConnected) root.appendChild(note);
    } else {
      note.remove();
    }
  }

  let answerTimer = null;
  function ping() {
    sent += 1;
    if (oldestUnanswered === null) {
      oldestUnanswered = Date.now();
      // Judge this ping as soon as it is late, not at the next beat.
      clearTimeout(answerTimer);
      answerTimer = setTimeout(check, ANSWER_MS + 50);
    }
    try {
      model.send({ type: "ping", n: sent });
    } catch {
      // A closed comm throws; the missing pong then says what we need to know.
    }
  }

  function check() {
    if (fate) return show("gone", MESSAGES[fate]);
    const waited = oldestUnanswered === null ? 0 : Date.now() - oldestUnanswered;
    if (waited < ANSWER_MS) return show("live", "");
    if (kernel?.status === "busy" && kernel.connectionStatus === "connected") {
      // Our ping waits in the queue behind a running cell: late, not gone. (A
      // kernel that queues comm messages behind cells, such as ipykernel 6;
      // ipykernel 7 with ipywidgets 8.1.9 answers widget messages while a cell
      // runs, so there this never shows.)
      return show("live", MESSAGES.busy);
    }
    const lost = kernel?.connectionStatus === "disconnected";
    show("gone", lost ? MESSAGES.disconnected : MESSAGES.silent);
  }

  function onMessage(content) {
    if (content?.type !== "pong" || !(content.n > notBefore)) return;
    answered = Math.max(answered, content.n);
    // The kernel has just answered: the clock for any later ping restarts now.
    oldestUnanswered = answered >= sent ? null : Date.now();
    fate = null; // the kernel that holds our comm answers: whatever happened, it is back
    check();
  }

  function onStatus(_kernel, status) {
    if (status === "restarting" || status === "autorestarting") fate = "restarted";
    else if (status === "dead" || status === "terminating") fate = "stopped";
    else return;
    notBefore = sent; // a pong still in flight from before must not revive us
    check();
  }

  function onConnection(_kernel, status) {
    if (status === "connected") ping(); // ask at once rather than at the next beat
    check();
  }

  function onDisposed() {
    // JupyterLab's "Shut Down Kernel" (and a kernel change) drops the connection
    // object without a "dead" status: our comm lived in that kernel, so it is over.
    onStatus(kernel, "dead");
  }

  function describeFigure() {
    const figure = root?.querySelector("img.attn-figure, .attn-figure img");
    if (figure) setAttr(figure, "alt", model.get("description"));
  }
  model.on("change:description", describeFigure);

  kernel?.statusChanged.connect(onStatus);
  kernel?.connectionStatusChanged.connect(onConnection);
  kernel?.disposed?.connect(onDisposed);
  model.on("msg:custom", onMessage);
  const timer = setInterval(
    () => {
      ping();
      check();
    },
    kernel ? HOOKED_PING_MS : PING_MS,
  );
  ping();

  // A control touched on a stale explorer: ask now, so the answer (or its
  // absence) is known about when the student expects the figure to change.
  const poke = () => {
    if (oldestUnanswered === null) ping();
  };
  const observer = new MutationObserver(() => {
    annotate(root);
    describeFigure(); // a figure view drawn again (JupyterLab's windowing) gets it back
  });
  const presenterRoots = presenterRegistry();

  function attach(found) {
    root = found;
    root.addEventListener("pointerdown", poke, true);
    root.addEventListener("keydown", poke, true);
    observer.observe(root, {
      subtree: true,
      childList: true,
      characterData: true,
      attributes: true,
      attributeFilter: ["class", "title", "aria-valuetext"],
    });
    annotate(root);
    describeFigure();
    presenterRoots.add(root);
    show(state, message.textContent);
  }

  // anywidget renders into an element the explorer's VBox inserts afterwards:
  // wait until it is in the page. Outside any explorer, its parent is the root.
  let waitTimer = null;
  const findRoot = () => {
    const found = el.closest(".attn-explorer") || (el.isConnected && el.parentElement);
    if (found) attach(found);
    else waitTimer = setTimeout(findRoot, 50);
  };
  findRoot();

  return () => {
    clearInterval(timer);
    clearTimeout(answerTimer);
    clearTimeout(waitTimer);
    observer.disconnect();
    model.off("msg:custom", onMessage);
    model.off("change:description", describeFigure);
    kernel?.statusChanged.disconnect(onStatus);
    kernel?.connectionStatusChanged.disconnect(onConnection);
    kernel?.disposed?.disconnect(onDisposed);
    if (root) {
      presenterRoots.delete(root);
      root.removeEventListener("pointerdown", poke, true);
      root.removeEventListener("keydown", poke, true);
    }
  };
}

export default { render };
