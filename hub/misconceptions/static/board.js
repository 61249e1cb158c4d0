// The misconceptions board and the names window: one ES module, no build step.
// The service sends the whole view as a server-sent event each time it changes (api/events);
// the page redraws it, reconnects by itself when the service or the hub restarts (polling
// api/board meanwhile), and scales its type so that every part fits one screen.

const config = document.querySelector('meta[name="board-config"]').dataset;
const view = config.view; // "board" or "names"
const root = document.documentElement;
const $ = (id) => document.getElementById(id);
const MIN_FIT = 0.5; // the CSS keeps text at 14 px or more whatever --fit is
const ROOMY_FIT = 0.8; // whole titles are worth a fifth of the type's size, no more
const POLL_MS = 5000;

function url(path, params = {}) {
  const target = new URL(path, document.baseURI);
  for (const [key, value] of Object.entries(params)) target.searchParams.set(key, value);
  return target;
}

function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, value);
  for (const child of children) node.append(child);
  return node;
}

function time(seconds) {
  return new Date(seconds * 1000).toLocaleString([], {
    weekday: 'short', day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit',
  });
}

function signed(n) {
  return n > 0 ? `+${n}` : `−${-n}`;
}

// -- the theme: ?theme=, else the last choice on this machine, else the system's ----------
function setTheme(theme) {
  root.dataset.theme = theme;
  const button = $('board-theme');
  if (button) {
    button.setAttribute('aria-pressed', String(theme === 'dark'));
    button.textContent = theme === 'dark' ? 'Light' : 'Dark';
  }
}
const systemDark = window.matchMedia('(prefers-color-scheme: dark)').matches;
setTheme(root.dataset.theme || localStorage.getItem('misconceptions-theme') ||
  (systemDark ? 'dark' : 'light'));
$('board-theme')?.addEventListener('click', () => {
  const theme = root.dataset.theme === 'dark' ? 'light' : 'dark';
  localStorage.setItem('misconceptions-theme', theme);
  setTheme(theme);
  fit();
});

// -- drawing ------------------------------------------------------------------------------
function header(data) {
  const session = data.session;
  $('board-session').textContent = session.ended === null
    ? `Session: ${session.label}`
    : `Session: ${session.label}, closed ${time(session.ended)}`;
  const select = $('board-sessions');
  if (select) {
    select.replaceChildren(...data.sessions.map((s) => element('option', { value: s.id },
      s.ended === null ? `${s.label} (now)` : s.label)));
    select.value = String(session.id);
  }
  const exportLink = $('board-export');
  if (exportLink) exportLink.href = url('export.csv', { session: session.id }).href;
  const names = $('board-names');
  if (names) {
    names.href = url('names', { session: config.session }).href;
  }
}

function bar(part, diagnosis) {
  const share = part.attempted ? (100 * diagnosis.students) / part.attempted : 0;
  const change = diagnosis.change;
  const fill = element('div', { class: 'bar-fill' });
  fill.style.setProperty('--share', `${share.toFixed(1)}%`);
  const meta = element('p', { class: 'bar-meta' }, element('code', {}, diagnosis.name));
  if (diagnosis.hint) meta.append(` · ${diagnosis.hint}`);
  if (diagnosis.generic) meta.append(' · no specific mistake named');
  meta.title = meta.textContent;
  return element('li', {
    class: 'bar', 'data-diagnosis': diagnosis.name, 'data-students': diagnosis.students,
    'data-generic': String(diagnosis.generic),
  },
  element('div', { class: 'bar-head' },
    element('span', { class: 'bar-title', title: diagnosis.title }, diagnosis.title),
    element('span', { class: 'bar-count', 'aria-label': `${diagnosis.students} students` },
      String(diagnosis.students)),
    element('span', {
      class: 'bar-change', 'data-direction': change > 0 ? 'up' : change < 0 ? 'down' : 'same',
    }, change ? signed(change) : '')),
  element('div', { class: 'bar-track' }, fill),
  meta);
}

function partCard(part, windowMinutes) {
  const card = element('section', { class: 'part', 'data-part': part.key },
    element('h2', {}, `Exercise ${part.key}`, element('span', { class: 'part-title' }, part.title)));
  const passingChange = part.passing_change ? ` (${signed(part.passing_change)})` : '';
  card.append(element('p', { class: 'part-numbers' },
    element('span', { class: 'attempted' }, element('strong', {}, String(part.attempted)),
      ' tried'),
    element('span', { class: 'passing' }, element('strong', {}, String(part.passing)),
      ` pass${passingChange}`),
    element('span', { class: 'stuck' }, element('strong', {}, String(part.stuck)), ' stuck')));
  if (!part.attempted) {
    card.append(element('p', { class: 'part-empty' }, 'No checker run yet.'));
    return card;
  }
  if (part.diagnoses.length) {
    card.append(element('ol', { class: 'bars' }, ...part.diagnoses.map((d) => bar(part, d))));
  } else {
    card.append(element('p', { class: 'part-empty' }, 'No mistake in the latest runs.'));
  }
  if (part.others) {
    card.append(element('p', { class: 'part-others' },
      `and ${part.others} more mistake${part.others > 1 ? 's' : ''} (CSV)`));
  }
  // the bars carry their own change; the rest (a mistake fixed by all, one outside the top
  // five) is said here
  const barred = new Set(part.diagnoses.map((d) => d.name));
  const changes = part.changes.filter((c) => !barred.has(c.name));
  if (changes.length) {
    const items = changes.map((c) => `${c.title} ${signed(c.change)}`);
    card.append(element('p', { class: 'part-changes' },
      element('strong', {}, `Also in the last ${windowMinutes} min: `), items.join(', ')));
  }
  return card;
}

function drawBoard(data) {
  const minutes = Math.round(data.change_window_s / 60);
  $('board-parts').replaceChildren(...data.parts.map((part) => partCard(part, minutes)));
  const notes = [`Counted by students whose latest run shows the mistake; stuck: three or more
    failed runs a minute apart, not passing now; ± is the change over ${minutes} minutes.`];
  if (data.dropped) notes.push(`${data.dropped} reports were lost in full kernel outboxes.`);
  if (!data.catalogue_complete) notes.push('Titles and hints appear once attention_lib exports its catalogue of diagnoses.');
  $('board-footnote').textContent = notes.join(' ');
}

function drawNames(data) {
  $('board-parts').replaceChildren(...data.parts.map((part) => {
    const list = element('dl');
    for (const [name, students] of part.diagnoses) {
      list.append(element('dt', {}, `${name} (${students.length})`),
        element('dd', {}, students.join(', ')));
    }
    if (part.stuck.length) {
      list.append(element('dt', {}, `stuck (${part.stuck.length})`),
        element('dd', {}, part.stuck.join(', ')));
    }
    if (!list.children.length) list.append(element('dd', {}, 'nobody'));
    return element('section', { 'data-part': part.key },
      element('h2', {}, `Exercise ${part.key} · ${part.title}`), list);
  }));
}

// Titles and hints on three lines if that fits with the type at least ROOMY_FIT of its full
// size; else on two (then the hint on one), the type as large as fits: the largest --fit at
// which the page needs no scrolling (the CSS floors text at 14 px).
function fit() {
  if (view !== 'board') return;
  for (const [lines, smallest] of [['3', ROOMY_FIT], ['2', MIN_FIT], ['1', MIN_FIT]]) {
    document.body.dataset.lines = lines;
    let scale = 1;
    root.style.setProperty('--fit', String(scale));
    while (root.scrollHeight > window.innerHeight && scale > smallest) {
      scale = Math.round((scale - 0.04) * 100) / 100;
      root.style.setProperty('--fit', String(scale));
    }
    if (root.scrollHeight <= window.innerHeight) return;
  }
}
window.addEventListener('resize', fit);

function draw(data) {
  header(data);
  if (view === 'board') drawBoard(data);
  else drawNames(data);
  fit();
  document.body.dataset.updated = String(Date.now());
  document.dispatchEvent(new CustomEvent('board-drawn', { detail: data }));
}

// -- live: server-sent events, reconnecting; polling while they are down --------------------
function status(state, text) {
  const node = $('board-status');
  node.dataset.state = state;
  node.textContent = text;
}

async function poll() {
  const response = await fetch(url(`api/${view}`, { session: config.session }), {
    headers: { 'X-XSRFToken': config.xsrf }, credentials: 'same-origin',
  });
  if (response.status === 403) {
    status('down', 'signed out: reload the page to log in again');
    return false;
  }
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  draw(await response.json());
  return true;
}

// The service sends a heartbeat every 5 s; a stream silent for longer than this is dead even
// if it looks open (a proxy can keep it open after the service behind it died).
const SILENCE_MS = 15000;
let retryMs = 1000;
function connect() {
  const events = new EventSource(url('api/events', {
    view, session: config.session, _xsrf: config.xsrf,
  }));
  let heard = Date.now();
  let watchdog = null;
  const reconnect = () => {
    clearInterval(watchdog);
    events.close();
    status('down', 'reconnecting…');
    poll().catch(() => {}).finally(() => {
      setTimeout(connect, retryMs);
      retryMs = Math.min(retryMs * 2, POLL_MS);
    });
  };
  watchdog = setInterval(() => {
    if (Date.now() - heard > SILENCE_MS) reconnect();
  }, 1000);
  events.addEventListener('heartbeat', () => { heard = Date.now(); });
  events.addEventListener(view, (message) => {
    heard = Date.now();
    retryMs = 1000;
    status('live', 'live');
    draw(JSON.parse(message.data));
  });
  events.addEventListener('error', () => {
    if (events.readyState === EventSource.CONNECTING) {
      status('down', 'reconnecting…');
      return; // the browser retries by itself
    }
    reconnect(); // closed for good (the service answered with an error, or is down)
  });
}

$('board-sessions')?.addEventListener('change', (event) => {
  window.location.assign(url('', { session: event.target.value }).href);
});

$('board-new-session')?.addEventListener('click', async () => {
  if (!window.confirm('Start a new session? The counts start from zero; this one is kept.')) return;
  const response = await fetch(url('api/sessions'), {
    method: 'POST',
    headers: { 'X-XSRFToken': config.xsrf, 'Content-Type': 'application/json' },
    credentials: 'same-origin',
    body: JSON.stringify({ label: '' }),
  });
  if (response.ok) window.location.assign(url('').href);
  else status('down', `could not start a session (HTTP ${response.status})`);
});

if (typeof EventSource === 'function') {
  connect();
} else {
  setInterval(() => poll().catch(() => status('down', 'reconnecting…')), POLL_MS);
  poll().catch(() => status('down', 'reconnecting…'));
}
