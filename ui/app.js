// The review window. Rust decides everything (groups, order, what each row says, which
// buttons exist and why one is disabled, what Enter does): this file only draws the views
// it is given (`SessionView` in crates/surface/src/window.rs) and hands back the action
// token of the button pressed. It knows none of lf's states, kinds, fields or action kinds.
// All session text is untrusted: it only ever reaches the page as textContent.
'use strict';

const { invoke } = window.__TAURI__.core;
const { listen } = window.__TAURI__.event;

const $ = (id) => document.getElementById(id);

// What the person typed and what lf answered, kept across redraws (a redraw happens on
// every engine event, often while someone is typing).
const drafts = new Map();   // "id\u0000action" -> text
const errors = new Map();   // id -> lf's error text
const busy = new Set();     // ids with an action running
const expanded = new Set(); // ids whose row shows its prompt or summary and its actions
let board = { sessions: [], status: '', quiet: null, warnings: [], recent: [], tray: null, tray_fix: null, lf_missing: false };
let focusId = null;
// The row the keyboard acts on. It starts on the first row, the one that needs the person
// first, so Enter right after opening the window acts on it.
let selectedId = null;
let filter = '';

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === 'class') node.className = value;
    else if (key === 'text') node.textContent = value;
    else if (key.startsWith('data-') || key.startsWith('aria-') || key === 'role') node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

function matches(session) {
  if (!filter) return true;
  const needle = filter.toLowerCase();
  return session.search.some((text) => text.toLowerCase().includes(needle));
}

const visibleSessions = () => board.sessions.filter(matches);

// ---- time ----

const pad = (n) => String(n).padStart(2, '0');
const clock = (date) => `${pad(date.getHours())}:${pad(date.getMinutes())}`;

// "waiting 12 min", "waiting 2 h", "waiting 3 d": whole units, rounded down, so the
// number only grows while the person watches.
function waited(since, now = Date.now() / 1000) {
  const minutes = Math.max(0, Math.floor((now - since) / 60));
  if (minutes < 1) return 'waiting <1 min';
  if (minutes < 60) return `waiting ${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `waiting ${hours} h`;
  return `waiting ${Math.floor(hours / 24)} d`;
}

// A local clock time for a moment of today, with the day for an older one.
function when(at, now = new Date()) {
  const date = new Date(at * 1000);
  const day = (d) => new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime();
  const days = Math.round((day(now) - day(date)) / 86400000);
  if (days === 0) return clock(date);
  if (days === 1) return `yesterday ${clock(date)}`;
  const name = date.toLocaleDateString(undefined, { weekday: 'short', day: 'numeric', month: 'short' });
  return `${name} ${clock(date)}`;
}

// One timer for the whole page, and only while something shows a waiting time: the
// finest unit shown is a minute, so it never runs faster than once a minute.
let clockTimer = null;
function syncClock() {
  const needed = document.querySelector('[data-since]') !== null;
  if (needed && clockTimer === null) {
    clockTimer = setInterval(tick, 60000);
  } else if (!needed && clockTimer !== null) {
    clearInterval(clockTimer);
    clockTimer = null;
  }
}

function tick() {
  const now = Date.now() / 1000;
  for (const node of document.querySelectorAll('[data-since]')) {
    node.textContent = waited(Number(node.dataset.since), now);
  }
  // "14:05" becomes "yesterday 14:05" at midnight.
  renderRecent();
  syncClock();
}

// ---- the list ----

function render() {
  const shown = visibleSessions();
  if (!shown.some((s) => s.key === selectedId)) selectedId = shown.length ? shown[0].key : null;
  keepingFocus(() => setRows(shown));
  $('empty').hidden = board.sessions.length > 0;
  $('no-match').hidden = board.sessions.length === 0 || shown.length > 0;
  $('no-match').textContent = `No session matches “${filter}”.`;

  const waiting = board.sessions.filter((s) => s.needs_you).length;
  $('count').textContent = waiting === 0 ? '' : waiting === 1 ? '1 needs you' : `${waiting} need you`;
  renderFooter();
  renderRecent();
  syncClock();
  if (focusId) reveal(focusId);
}

// The rows drawn again for what is now on screen (list.js: a scroll of a long list).
function redraw() {
  keepingFocus(drawRows);
  syncClock();
}

// Draw the rows again with the focus where it was: in a row's text box (with its selection)
// or on the selected row.
function keepingFocus(draw) {
  const groups = $('groups');
  const active = document.activeElement;
  const keep = active && active.dataset && active.dataset.input
    ? { id: active.closest('[data-session-id]').dataset.sessionId, input: active.dataset.input,
        start: active.selectionStart, end: active.selectionEnd }
    : null;
  const rowFocused = active && active.classList && active.classList.contains('session');
  draw();
  if (keep) {
    const again = groups.querySelector(
      `[data-session-id="${CSS.escape(keep.id)}"] [data-input="${keep.input}"]`);
    if (again) {
      again.focus();
      // A radio or checkbox has no text selection to put back.
      if (typeof keep.start === 'number') again.setSelectionRange(keep.start, keep.end);
    }
  } else if (rowFocused) {
    const again = rowNode(selectedId);
    if (again) again.focus({ preventScroll: true });
  }
}

// The footer: one line each, wrapping inside the window. Where no tray shows the app it
// says so first (it is how to find the app again), in one sentence with what to do behind
// a button.
let trayFixShown = false;
function renderFooter() {
  const lines = [];
  if (board.tray) {
    const line = el('p', { class: 'status-line tray-line', text: board.tray });
    if (board.tray_fix) {
      line.append(' ', el('button', {
        type: 'button',
        class: 'link',
        'aria-expanded': String(trayFixShown),
        text: trayFixShown ? 'Hide' : 'How to add one',
        onclick: () => { trayFixShown = !trayFixShown; renderFooter(); },
      }));
    }
    lines.push(line);
    if (board.tray_fix && trayFixShown) lines.push(el('p', { class: 'status-fix', text: board.tray_fix }));
  }
  const latest = board.warnings.length ? board.warnings[board.warnings.length - 1] : null;
  for (const text of [board.quiet, latest]) {
    if (text) lines.push(el('p', { class: 'status-line', text }));
  }
  if (board.status) {
    const line = el('p', { class: 'status-line', text: board.status });
    // Without lf the fix is the setting that names it.
    if (board.lf_missing) {
      line.append(' ', el('button', {
        type: 'button',
        class: 'link',
        'data-fix': 'lf',
        text: 'Set the lf program',
        onclick: () => { showSettings(true); $('set-lf').focus(); },
      }));
    }
    lines.push(line);
  }
  $('status').replaceChildren(...lines);
  $('status').title = [board.tray, board.quiet, ...board.warnings, board.status].filter(Boolean).join('\n');
}

const rowNode = (id) => id === null ? null
  : $('groups').querySelector(`[data-session-id="${CSS.escape(id)}"]`);

// One session: a one-line row (title, what and where it is, how long it waits), and when
// expanded its prompt or summary and its actions.
function row(session) {
  const open = expanded.has(session.key);
  const node = el('article', {
    class: 'session',
    role: 'listitem',
    'data-session-id': session.key,
    'aria-expanded': String(open),
    tabIndex: session.key === selectedId ? 0 : -1,
  });
  node.classList.toggle('expanded', open);
  node.classList.toggle('selected', session.key === selectedId);
  node.classList.toggle('dismissed', Boolean(session.dismissed));
  if (busy.has(session.key)) node.classList.add('busy');

  // The title on top, wrapping to at most two lines (the whole of a longer one on hover and
  // in the open row); under it what kind and where the session is and how long it waits,
  // wrapping rather than cut. Only the Dismiss column sits beside them, at a fixed width,
  // so a row's height depends on its words alone.
  const facts = el('span', { class: 'facts' });
  if (session.label) facts.append(el('span', { class: 'label-line', text: session.label }));
  if (session.waiting_since && session.needs_you) {
    facts.append(el('span', {
      class: 'since',
      'data-since': String(session.waiting_since),
      title: `Since ${when(session.waiting_since)}`,
      text: waited(session.waiting_since),
    }));
  }
  const line = el('div', { class: 'line', title: open ? 'Click to fold' : 'Click to show more' },
    el('span', { class: 'chevron', 'aria-hidden': 'true', text: open ? '▾' : '▸' }),
    el('span', { class: 'head' },
      el('span', { class: 'title', text: session.title, title: session.title }),
      facts.childElementCount ? facts : null));
  if (session.dismissable) {
    line.append(session.dismissed
      ? el('span', { class: 'dismissed-note', text: 'Dismissed', title: 'No popups or reminders until it changes' })
      : el('button', {
        type: 'button',
        class: 'dismiss quiet',
        'data-dismiss': '',
        text: 'Dismiss',
        title: 'No popups or reminders for this session until it changes',
        onclick: () => dismiss(session.key),
      }));
  }
  line.addEventListener('click', (event) => {
    if (event.target.closest('button')) return;
    select(session.key);
    toggle(session.key);
  });
  node.append(line);
  if (open) node.append(details(session));
  return node;
}

function details(session) {
  const node = el('div', { class: 'details' });
  if (session.chips.length) {
    node.append(el('div', { class: 'chips' },
      ...session.chips.map((chip) => el('span', { class: `chip ${chip.style}`, text: chip.text }))));
  }
  if (session.meta) node.append(el('p', { class: 'meta detail', text: session.meta }));
  if (session.cwd) {
    // The cwd is drawn right-to-left so a long path loses its start, not its end; the
    // isolate keeps the path's own characters in order.
    node.append(el('p', { class: 'cwd', title: session.cwd },
      el('bdi', { text: session.cwd })));
  }
  // Why the agent waits, in its own words: untrusted text, set as text.
  if (session.why) {
    node.append(el('div', { class: 'prompt reason-block' },
      el('span', { class: 'label', text: session.why.label }),
      document.createTextNode(session.why.text)));
  }
  if (session.stopped) {
    node.append(el('p', { class: 'meta', text: 'Its agent stopped; Open resumes it.' }));
  }
  if (session.question) {
    node.append(el('div', { class: 'prompt' },
      el('span', { class: 'label', text: 'Question' }), document.createTextNode(session.question)));
  }
  if (session.ready_summary) {
    node.append(el('div', { class: 'summary' },
      el('span', { class: 'label', text: 'Ready' }), document.createTextNode(session.ready_summary)));
  }

  // An agent's open request, answered here as from its popup: a tool to allow, questions
  // to answer, a plan to approve. Untrusted text (made visible by the app), set as text.
  if (session.request) node.append(requestCard(session));
  const buttons = el('div', { class: 'actions' });
  const reasons = [];
  const texts = [];
  for (const button of session.buttons) {
    if (button.text_hint) {
      texts.push(textAction(session, button));
      continue;
    }
    buttons.append(el('button', {
      type: 'button',
      'data-action': button.action,
      text: button.label,
      title: button.unavailable_reason || button.help || '',
      disabled: !button.enabled,
      onclick: () => act(session.key, button.action),
    }));
    if (!button.enabled && button.unavailable_reason) reasons.push(`${button.label}: ${button.unavailable_reason}`);
  }
  // Open first, text actions after.
  node.append(buttons, ...texts);
  if (texts.length) node.append(el('p', { class: 'reason', text: 'Enter sends · Shift+Enter starts a new line' }));
  for (const reason of reasons) node.append(el('p', { class: 'reason', text: reason }));
  if (session.runs_in) node.append(el('p', { class: 'reason', text: `It runs ${session.runs_in}.` }));

  const error = errors.get(session.key);
  if (error) node.append(el('p', { class: 'error', role: 'alert', text: error }));
  return node;
}

// ---- an agent's request: the card ----

// What the person picked and typed on a request's card, kept across redraws; a new request
// of the session (its view differs) starts afresh.
const cards = new Map(); // session key -> { sig, picks: [{ chosen: Set, own }], message }

function cardState(session) {
  const sig = JSON.stringify(session.request);
  let state = cards.get(session.key);
  if (!state || state.sig !== sig) {
    const questions = session.request.questions || [];
    state = { sig, picks: questions.map(() => ({ chosen: new Set(), own: '' })), message: '' };
    cards.set(session.key, state);
  }
  return state;
}

// Every question has an answer: an option chosen or words of the person's own.
const complete = (state) => state.picks.every((p) => p.chosen.size > 0 || p.own.trim() !== '');

function requestCard(session) {
  const request = session.request;
  const state = cardState(session);
  const card = el('div', { class: `request ${request.kind}`, 'data-request': request.kind });
  // The request's choices as Rust made them: each one's id goes back as it is, with the
  // field of the card it says it carries (`fills`).
  const given = (c) => {
    if (c.fills === 'answers') {
      return { answers: state.picks.map((p) => ({ chosen: [...p.chosen].sort((a, b) => a - b), own: p.own })) };
    }
    if (c.fills === 'plan') return { text: state.plan };
    if (c.fills === 'message') return { text: state.message };
    return {};
  };
  const button = (c, extra = {}) => el('button', {
    type: 'button', 'data-request-action': c.id, text: c.label, ...extra,
    onclick: () => answerRequest(session.key, c.id, given(c)),
  });
  if (request.kind === 'tool') {
    card.append(el('div', { class: 'prompt permission-block' },
      el('span', { class: 'label', text: 'Permission asked' }), document.createTextNode(request.runs)));
    if (request.always) card.append(el('p', { class: 'always', text: request.always }));
    const actions = el('div', { class: 'actions permission' },
      ...session.choices.map((c) => button(c)));
    card.append(actions);
  } else if (request.kind === 'plan') {
    // The plan itself is editable: Approve plan sends it as the card holds it, and Rust
    // tells an edit from the plan as asked.
    if (state.plan === undefined) state.plan = request.plan;
    const plan = el('textarea', {
      class: 'plan', 'data-input': 'plan', value: state.plan,
      rows: Math.min(16, request.plan.split('\n').length + 1), 'aria-label': 'Plan (editable)',
    });
    plan.addEventListener('input', () => { state.plan = plan.value; });
    card.append(el('span', { class: 'label', text: 'Plan · edit it before you approve, if you like' }), plan);
    const box = el('textarea', {
      'data-input': 'plan-message', rows: 2, value: state.message,
      placeholder: 'What to change (sent with Keep planning)',
    });
    box.addEventListener('input', () => { state.message = box.value; });
    card.append(box, el('div', { class: 'actions' }, ...session.choices.map((c) => button(c))));
  } else {
    const send = button(session.choices.find((c) => c.fills === 'answers'), { disabled: !complete(state) });
    const changed = () => { send.disabled = !complete(state); };
    request.questions.forEach((q, qi) => {
      const pick = state.picks[qi];
      const set = el('fieldset', { class: 'question', 'data-question': String(qi) });
      const legend = el('legend');
      if (q.header) legend.append(el('span', { class: 'chip kind', text: q.header }));
      legend.append(el('span', { class: 'question-text', text: q.question }));
      if (q.multi) legend.append(el('span', { class: 'hint', text: 'pick any' }));
      set.append(legend);
      const own = el('textarea', {
        'data-input': `own-${qi}`, rows: 1, value: pick.own,
        placeholder: q.options.length ? 'Or your own answer' : 'Your answer',
      });
      const inputs = q.options.map((option, oi) => {
        const input = el('input', {
          type: q.multi ? 'checkbox' : 'radio',
          name: `${session.key}\u0000${qi}`,
          'data-input': `q${qi}-o${oi}`,
          checked: pick.chosen.has(oi),
        });
        input.addEventListener('change', () => {
          if (q.multi) {
            if (input.checked) pick.chosen.add(oi); else pick.chosen.delete(oi);
          } else {
            // One answer to a single-select question: an option, or the person's words.
            pick.chosen = new Set([oi]);
            pick.own = '';
            own.value = '';
          }
          changed();
        });
        set.append(el('label', { class: 'option' }, input,
          el('span', { class: 'option-label', text: option.label }),
          option.description ? el('span', { class: 'option-about', text: option.description }) : null));
        return input;
      });
      own.addEventListener('input', () => {
        pick.own = own.value;
        if (!q.multi && own.value.trim() !== '') {
          pick.chosen.clear();
          for (const input of inputs) input.checked = false;
        }
        changed();
      });
      own.addEventListener('keydown', (event) => {
        if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
          event.preventDefault();
          if (complete(state)) send.click();
        }
      });
      set.append(own);
      card.append(set);
    });
    card.append(el('div', { class: 'actions' }, send),
      el('p', { class: 'reason', text: 'Send once every question has an answer · Enter in a text box sends' }));
  }
  return card;
}

function textAction(session, button) {
  const key = `${session.key}\u0000${button.action}`;
  const box = el('textarea', {
    'data-input': button.action,
    rows: 1,
    placeholder: button.text_hint,
    disabled: !button.enabled,
    value: drafts.get(key) || '',
    title: button.unavailable_reason || button.help || '',
  });
  const grow = () => { box.style.height = 'auto'; box.style.height = `${Math.min(box.scrollHeight + 2, 140)}px`; };
  box.addEventListener('input', () => { drafts.set(key, box.value); grow(); });
  box.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      act(session.key, button.action, box.value);
    }
  });
  requestAnimationFrame(grow);
  const submit = el('button', {
    type: 'button',
    'data-action': button.action,
    text: button.label,
    title: button.unavailable_reason || button.help || '',
    disabled: !button.enabled,
    onclick: () => act(session.key, button.action, box.value),
  });
  return el('div', { class: 'text-action' }, box, submit);
}

async function act(id, action, text) {
  if (busy.has(id)) return;
  busy.add(id);
  errors.delete(id);
  render();
  try {
    const message = await invoke('act', { id, action, text: text ?? null });
    drafts.delete(`${id}\u0000${action}`);
    if (message) toast(message);
  } catch (error) {
    errors.set(id, String(error));
  } finally {
    busy.delete(id);
  }
  await refresh();
}

let toastTimer = null;
function toast(text) {
  const node = $('toast');
  node.textContent = text;
  node.hidden = false;
  clearTimeout(toastTimer);
  // Long enough to read a sentence of lf's output.
  toastTimer = setTimeout(() => { node.hidden = true; }, 4000);
}

// Show one session: selected, expanded, scrolled to, and its text box focused (a window
// opened from a Flow review's popup is there to answer it).
function reveal(id) {
  const session = board.sessions.find((s) => s.key === id);
  if (!session) return;
  focusId = null;
  if (!matches(session)) setFilter('');
  selectedId = id;
  expanded.add(id);
  render();
  bringIntoView(id);
  const node = rowNode(id);
  if (!node) return;
  node.scrollIntoView({ block: 'center', behavior: 'smooth' });
  node.classList.add('focused');
  setTimeout(() => node.classList.remove('focused'), 2000);
  // An open request's card first: what the agent waits for.
  const box = node.querySelector('.request input, .request textarea, textarea:not(:disabled)');
  (box || node).focus({ preventScroll: true });
}

function select(id) {
  if (selectedId === id) return;
  selectedId = id;
  for (const node of $('groups').querySelectorAll('.session')) {
    const mine = node.dataset.sessionId === id;
    node.classList.toggle('selected', mine);
    node.tabIndex = mine ? 0 : -1;
  }
}

function toggle(id, open = !expanded.has(id)) {
  if (open) expanded.add(id);
  else expanded.delete(id);
  render();
  const node = rowNode(id);
  if (node) node.focus({ preventScroll: true });
}

async function answerRequest(id, choice, given) {
  errors.delete(id);
  try {
    await invoke('answer_request', { id, choice, given });
    cards.delete(id);
  } catch (error) {
    errors.set(id, String(error));
  }
  await refresh();
}

async function dismiss(id) {
  errors.delete(id);
  try {
    await invoke('dismiss', { id });
  } catch (error) {
    errors.set(id, String(error));
    expanded.add(id);
  }
  await refresh();
}

// ---- the Recent list ----

function renderRecent() {
  const list = $('recent-list');
  const entries = board.recent || [];
  $('recent-count').textContent = entries.length ? String(entries.length) : '';
  const now = new Date();
  list.replaceChildren(...entries.map((entry) => {
    const item = el('li', { class: 'recent-entry', 'data-what': entry.what, 'data-id': entry.id },
      el('time', { text: when(entry.at, now), dateTime: new Date(entry.at * 1000).toISOString() }),
      el('span', { class: 'what', text: entry.words }),
      el('span', { class: 'recent-title', text: entry.title || entry.id, title: entry.title || entry.id }));
    if (entry.machine) item.append(el('span', { class: 'machine', text: `on ${entry.machine}` }));
    return item;
  }));
  $('recent-empty').hidden = entries.length > 0;
}

// ---- the keyboard ----

function setFilter(text) {
  filter = text;
  $('filter').value = text;
  render();
}

function moveSelection(step) {
  const shown = visibleSessions();
  if (!shown.length) return;
  const at = shown.findIndex((s) => s.key === selectedId);
  const next = at < 0 ? 0 : Math.min(shown.length - 1, Math.max(0, at + step));
  select(shown[next].key);
  bringIntoView(shown[next].key);
  const node = rowNode(shown[next].key);
  if (node) {
    node.focus({ preventScroll: true });
    node.scrollIntoView({ block: 'nearest' });
  }
}

// Enter on a row: what choosing it means, as Rust says (`primary`: its terminal, or one
// opened); with none, the row expands, so the person sees the fields or lf's reason.
function primary(session) {
  if (session.request) {
    // The agent waits for this answer: the card, its first control focused.
    expanded.add(session.key);
    render();
    bringIntoView(session.key);
    const control = rowNode(session.key).querySelector('.request input, .request textarea, .request button');
    if (control) control.focus();
    return;
  }
  if (session.primary) {
    act(session.key, session.primary);
    return;
  }
  expanded.add(session.key);
  render();
  bringIntoView(session.key);
  const node = rowNode(session.key);
  const box = node && node.querySelector('textarea:not(:disabled)');
  if (box) box.focus();
  else if (node) node.focus({ preventScroll: true });
}

// The text box whose button has this key (a review's A and I), if it can be typed in.
function focusText(session, key) {
  const button = session.buttons.find((b) => b.text_hint && b.enabled && b.key === key);
  if (!button) return false;
  expanded.add(session.key);
  render();
  bringIntoView(session.key);
  const box = rowNode(session.key).querySelector(`textarea[data-input="${CSS.escape(button.action)}"]`);
  box.focus();
  return true;
}

const typing = (target) => target instanceof HTMLElement
  && (target.matches('input, textarea, select') || target.isContentEditable);

document.addEventListener('keydown', (event) => {
  if (event.defaultPrevented || event.isComposing) return;
  const target = event.target;
  if (event.key === 'Escape') {
    event.preventDefault();
    // Esc leaves what the person is in before it hides the window: a filter with text
    // (cleared first), a text box (a draft lives only as long as the window), the settings.
    if (target === $('filter') && filter) {
      setFilter('');
    } else if (target !== $('filter') && typing(target)) {
      const node = target.closest('.session');
      if (node) node.focus({ preventScroll: true });
      else target.blur();
    } else if (settingsShown) {
      showSettings(false);
    } else {
      invoke('close_window');
    }
    return;
  }
  // ↓ from the filter goes down to its first match, as in a search field with a list.
  if (target === $('filter') && event.key === 'ArrowDown') {
    event.preventDefault();
    moveSelection(-Infinity);
    return;
  }
  if (typing(target) || settingsShown || event.ctrlKey || event.altKey || event.metaKey) return;
  const session = board.sessions.find((s) => s.key === selectedId);
  const onRow = target === document.body || (target.classList && target.classList.contains('session'));
  switch (event.key) {
    case 'ArrowDown':
      moveSelection(1);
      break;
    case 'ArrowUp':
      moveSelection(-1);
      break;
    case 'Home':
      moveSelection(-Infinity);
      break;
    case 'End':
      moveSelection(Infinity);
      break;
    case 'ArrowRight':
      if (session) toggle(session.key, true);
      break;
    case 'ArrowLeft':
      if (session) toggle(session.key, false);
      break;
    case 'Enter':
      // On a focused button Enter presses that button.
      if (!onRow || !session) return;
      primary(session);
      break;
    case '/':
      $('filter').focus();
      $('filter').select();
      break;
    default:
      // A button's own key: its text box.
      if (!session || event.key.length !== 1 || !focusText(session, event.key.toLowerCase())) return;
      break;
  }
  // The key did its job: it must not also type into the box it focused or scroll the page.
  event.preventDefault();
});

// The board, asked for again; a burst of asks while one is on its way costs one more board
// after it, not one each. It settles once the page has drawn a board asked for after the
// call.
let loading = null;
let stale = false;
// The number of the board the page holds: the app gives what changed since it.
let held = null;
function refresh() {
  stale = true;
  if (!loading) {
    loading = (async () => {
      while (stale) {
        stale = false;
        await load();
      }
      loading = null;
    })();
  }
  return loading;
}

async function load() {
  try {
    take(await invoke('sessions', { held }));
  } catch (error) {
    // What the app gave may be lost with the answer: the next ask gets the whole board.
    held = null;
    board = { ...board, status: `Could not load the sessions: ${error}` };
  }
  forgetGone();
  render();
}

// A board given: every row in order, or (with its `order`) the rows that changed, placed
// among the rows held: runs of them (`[from, count]`, by place) and the changed ones' keys.
function take(next) {
  let sessions = next.sessions;
  if (next.order) {
    const changed = new Map(next.sessions.map((s) => [s.key, s]));
    const rows = board.sessions;
    sessions = [];
    for (const place of next.order) {
      if (typeof place === 'string') sessions.push(changed.get(place));
      else for (let i = place[0]; i < place[0] + place[1]; i++) sessions.push(rows[i]);
    }
    if (sessions.includes(undefined)) {
      // Not the rows the app thinks the page holds: it asks again for the whole board.
      held = null;
      stale = true;
      return;
    }
  }
  board = { ...next, sessions };
  held = next.number;
  // A window built to show one session learns which from its first list.
  if (board.focus) focusId = board.focus;
}

// What was kept for sessions that are no longer listed.
function forgetGone() {
  const ids = new Set(board.sessions.map((s) => s.key));
  for (const id of errors.keys()) if (!ids.has(id)) errors.delete(id);
  for (const id of expanded) if (!ids.has(id)) expanded.delete(id);
  for (const key of drafts.keys()) if (!ids.has(key.split('\u0000')[0])) drafts.delete(key);
  // A card whose request is gone (answered here or in the terminal) starts afresh next time.
  const open = new Set(board.sessions.filter((s) => s.request).map((s) => s.key));
  for (const id of cards.keys()) if (!open.has(id)) cards.delete(id);
}

// ---- settings ----

let settingsShown = false;
// Forget was chosen for the saved token: the save sends an empty one.
let forgetToken = false;
let forgetReplyToken = false;

function showSettings(show) {
  settingsShown = show;
  $('settings').hidden = !show;
  $('board').hidden = show;
  $('settings-toggle').setAttribute('aria-expanded', String(show));
  $('heading').textContent = show ? 'Settings' : 'Sessions';
  $('count').hidden = show;
  $('filter').hidden = show;
  $('settings-message').textContent = '';
  if (show) loadSettings();
  // A long list drawn while the settings hid it was drawn for no screen.
  else redraw();
}

function fillSettings(view) {
  const s = view.settings;
  $('set-terminal').value = s.terminal;
  $('set-template').value = s.terminal_template;
  $('set-ask').checked = s.notify_on_ask;
  $('set-ready').checked = s.notify_on_ready;
  $('set-sound').checked = s.sound;
  $('set-reminder').value = s.reminder_minutes;
  $('set-grace').value = s.attached_grace_seconds;
  $('set-focus-existing').checked = s.focus_existing;
  $('set-answer-from-popup').checked = s.answer_from_popup;
  $('set-answer-codex').checked = s.answer_codex_from_popup;
  $('set-codex-wait').value = s.codex_wait_seconds;
  $('set-answer-keys').checked = s.answer_keys;
  // Which keys the desktop gave, and which another program holds: Rust's words.
  $('keys-status').textContent = s.answer_keys ? (view.keys_status || '') : '';
  $('set-quiet-from').value = s.quiet_from || '';
  $('set-quiet-to').value = s.quiet_to || '';
  $('set-on-event').value = s.on_event || '';
  $('set-lf').value = s.lf_path || '';
  $('set-home').value = s.home || '';
  $('set-machines').value = (s.machines || []).join('\n');
  $('set-push-url').value = s.push_url || '';
  // The token never comes back: only whether one is set (and its end, when long).
  forgetToken = false;
  $('set-push-token').value = '';
  $('set-push-token').placeholder = view.push_token_hint
    ? `${view.push_token_hint} (type a new one to replace it)` : 'none (optional)';
  $('push-token-forget').hidden = !view.push_token_hint;
  $('set-push-when').value = s.push_when || 'away';
  $('set-away-after').value = s.away_after_seconds;
  $('set-push-text').checked = s.push_text;
  $('push-status').textContent = s.push_url ? (view.push_status || '') : '';
  // Answering from the phone: the reply token never comes back either.
  forgetReplyToken = false;
  $('set-answer-from-phone').checked = s.answer_from_phone;
  $('set-push-reply-token').value = '';
  $('set-push-reply-token').placeholder = view.push_reply_token_hint
    ? `${view.push_reply_token_hint} (type a new one to replace it)` : 'none';
  $('push-reply-token-forget').hidden = !view.push_reply_token_hint;
  $('push-reply-topic').textContent = s.push_reply_topic || 'made when you turn answering on';
  $('phone-status').textContent = s.answer_from_phone ? (view.phone_status || '') : '';
  // Whether each machine's agents are answered from here (only while answering is on).
  $('machines-answering').replaceChildren(
    ...(view.machines_answering || []).map((line) => el('li', { text: line })));
  $('set-autostart').checked = view.autostart;
  $('settings-path').textContent = view.path ? `Saved in ${view.path}` : '';
  $('log-row').hidden = !view.log;
  $('log-path').textContent = view.log || '';
  if (view.warning) {
    $('settings-message').className = 'message';
    $('settings-message').textContent = view.warning;
  }
  syncTemplate();
}

function syncTemplate() {
  $('template-row').hidden = $('set-terminal').value.trim() !== 'custom';
}

async function loadSettings() {
  try {
    fillSettings(await invoke('settings'));
  } catch (error) {
    $('settings-message').textContent = String(error);
  }
}

async function saveSettings(event) {
  event.preventDefault();
  const minutes = Number.parseInt($('set-reminder').value, 10);
  const grace = Number.parseInt($('set-grace').value, 10);
  const codexWait = Number.parseInt($('set-codex-wait').value, 10);
  const awayAfter = Number.parseInt($('set-away-after').value, 10);
  const settings = {
    terminal: $('set-terminal').value,
    terminal_template: $('set-template').value,
    notify_on_ask: $('set-ask').checked,
    notify_on_ready: $('set-ready').checked,
    sound: $('set-sound').checked,
    reminder_minutes: Number.isFinite(minutes) && minutes > 0 ? minutes : 0,
    attached_grace_seconds: Number.isFinite(grace) && grace > 0 ? grace : 0,
    focus_existing: $('set-focus-existing').checked,
    answer_from_popup: $('set-answer-from-popup').checked,
    answer_codex_from_popup: $('set-answer-codex').checked,
    codex_wait_seconds: Number.isFinite(codexWait) ? codexWait : 0,
    answer_keys: $('set-answer-keys').checked,
    lf_path: $('set-lf').value.trim() || null,
    home: $('set-home').value.trim() || null,
    quiet_from: $('set-quiet-from').value,
    quiet_to: $('set-quiet-to').value,
    on_event: $('set-on-event').value.trim() || null,
    machines: $('set-machines').value.split('\n'),
    push_url: $('set-push-url').value.trim() || null,
    // null keeps the saved token, '' forgets it, text replaces it.
    push_token: forgetToken ? '' : ($('set-push-token').value || null),
    push_when: $('set-push-when').value,
    away_after_seconds: Number.isFinite(awayAfter) ? awayAfter : 0,
    push_text: $('set-push-text').checked,
    answer_from_phone: $('set-answer-from-phone').checked,
    // As the push token: null keeps it, '' forgets it, text replaces it.
    push_reply_token: forgetReplyToken ? '' : ($('set-push-reply-token').value || null),
    // The tray's own; the panel only shows it.
    push_reply_topic: '',
  };
  const message = $('settings-message');
  try {
    fillSettings(await invoke('save_settings', { settings, autostart: $('set-autostart').checked }));
    message.className = 'message ok';
    message.textContent = 'Saved.';
  } catch (error) {
    message.className = 'message';
    message.textContent = String(error);
  }
}

// ---- the "no terminal" notice ----

function showNotice(notice) {
  $('notice-text').textContent = notice.text;
  $('notice-command').value = notice.command;
  $('notice').hidden = false;
}

async function copyCommand() {
  const input = $('notice-command');
  input.select();
  try {
    await navigator.clipboard.writeText(input.value);
    toast('Command copied.');
  } catch {
    // The command is selected; Ctrl+C copies it.
    toast('Press Ctrl+C to copy the selected command.');
  }
}

// ---- start ----

$('settings-toggle').addEventListener('click', () => showSettings(!settingsShown));
$('settings-cancel').addEventListener('click', () => showSettings(false));
$('log-open').addEventListener('click', async () => {
  try {
    await invoke('open_log');
  } catch (error) {
    $('settings-message').className = 'message';
    $('settings-message').textContent = String(error);
  }
});
$('quit').addEventListener('click', async () => {
  try {
    await invoke('quit');
  } catch (error) {
    $('settings-message').className = 'message';
    $('settings-message').textContent = String(error);
  }
});
$('settings').addEventListener('submit', saveSettings);
$('push-token-forget').addEventListener('click', () => {
  forgetToken = true;
  $('set-push-token').value = '';
  $('set-push-token').placeholder = 'forgotten when you save';
  $('push-token-forget').hidden = true;
});
$('push-reply-token-forget').addEventListener('click', () => {
  forgetReplyToken = true;
  $('set-push-reply-token').value = '';
  $('set-push-reply-token').placeholder = 'forgotten when you save';
  $('push-reply-token-forget').hidden = true;
});
$('set-terminal').addEventListener('input', syncTemplate);
$('notice-copy').addEventListener('click', copyCommand);
$('notice-dismiss').addEventListener('click', () => { $('notice').hidden = true; });
$('filter').addEventListener('input', () => { filter = $('filter').value; render(); });
$('board').addEventListener('scroll', scrolled, { passive: true });
window.addEventListener('resize', scrolled);

// The app tells the window one kind of thing at a time (`ToWindow` in
// crates/surface/src/window.rs).
listen('app', ({ payload: message }) => {
  switch (message.kind) {
    case 'changed':
      refresh();
      break;
    case 'focus':
      focusId = message.payload;
      if (settingsShown) showSettings(false);
      render();
      break;
    case 'launch_failed':
      showNotice(message.payload);
      break;
    case 'unreached':
      // Go to terminal did not get there; the session's own buttons are lf's way there.
      focusId = message.payload.key;
      render();
      toast(message.payload.text);
      break;
    default:
      break;
  }
});

refresh();
