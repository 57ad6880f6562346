// The review window. Rust decides everything (groups, order, which buttons exist and why one
// is disabled); this file only draws what it is given and sends back which button was
// pressed. All session text is untrusted: it only ever reaches the page as textContent.
'use strict';

const { invoke } = window.__TAURI__.core;
const { listen } = window.__TAURI__.event;

const $ = (id) => document.getElementById(id);

// What the person typed and what lf answered, kept across redraws (a redraw happens on
// every engine event, often while someone is typing).
const drafts = new Map();   // "id\u0000action" -> text
const errors = new Map();   // id -> lf's error text
const busy = new Set();     // ids with an action running
let board = { sessions: [], status: '', snoozed: false, warnings: [] };
let focusId = null;

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === 'class') node.className = value;
    else if (key === 'text') node.textContent = value;
    else if (key.startsWith('data-')) node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

const GROUP_TITLES = {
  ready: 'Ready for review',
  waiting: 'Waiting for you',
  active: 'Active',
  other: 'Other sessions',
};

const KIND_NAMES = { ask: 'Ask', flow: 'Flow review', interactive: 'Interactive' };

function render() {
  const groups = $('groups');
  const active = document.activeElement;
  const keep = active && active.dataset && active.dataset.input
    ? { id: active.closest('[data-session-id]').dataset.sessionId, input: active.dataset.input,
        start: active.selectionStart, end: active.selectionEnd }
    : null;

  const sections = [];
  let current = null;
  for (const session of board.sessions) {
    if (!current || current.group !== session.group) {
      current = { group: session.group, list: el('div', { class: 'list' }) };
      sections.push(el('section', { class: 'group', 'data-group': session.group },
        el('h2', { text: GROUP_TITLES[session.group] || session.group }), current.list));
    }
    current.list.append(card(session));
  }
  groups.replaceChildren(...sections);
  $('empty').hidden = board.sessions.length > 0;

  const waiting = board.sessions.filter((s) => s.group === 'ready' || s.group === 'waiting').length;
  $('count').textContent = waiting === 0 ? '' : waiting === 1 ? '1 needs you' : `${waiting} need you`;
  const parts = [board.status];
  if (board.snoozed) parts.push('notifications snoozed');
  if (board.warnings.length) parts.push(board.warnings[board.warnings.length - 1]);
  $('status').textContent = parts.filter(Boolean).join(' · ');
  $('status').title = [board.status, ...board.warnings].filter(Boolean).join('\n');

  if (keep) {
    const again = groups.querySelector(
      `[data-session-id="${CSS.escape(keep.id)}"] [data-input="${keep.input}"]`);
    if (again) {
      again.focus();
      again.setSelectionRange(keep.start, keep.end);
    }
  }
  if (focusId) reveal(focusId);
}

function card(session) {
  const node = el('article', { class: 'session', 'data-session-id': session.key });
  if (busy.has(session.key)) node.classList.add('busy');

  const chipList = chips(session);
  if (chipList.length) node.append(el('div', { class: 'chips' }, ...chipList));
  node.append(el('p', { class: 'title', text: session.title || session.id }));
  // Another machine's session says which (ids are unique per machine only).
  if (session.machine) node.append(el('p', { class: 'machine', text: `on ${session.machine}` }));

  // Generation D names the agent (`provider`) and where the work is (`work_path`, the
  // repository); older records have only lf's detail and the work's id.
  const work = session.work_path || (session.work ? session.work.id : '');
  const meta = [session.provider || session.detail, work, session.repo_name]
    .filter(Boolean).join(' · ');
  if (meta) node.append(el('p', { class: 'meta detail', text: meta }));
  if (session.cwd) {
    // The cwd is drawn right-to-left so a long path loses its start, not its end; the
    // isolate keeps the path's own characters in order.
    node.append(el('p', { class: 'cwd', title: session.cwd },
      el('bdi', { text: session.cwd })));
  }
  if (session.question) {
    node.append(el('div', { class: 'prompt' },
      el('span', { class: 'label', text: 'Question' }), document.createTextNode(session.question)));
  }
  if (session.ready_summary) {
    node.append(el('div', { class: 'summary' },
      el('span', { class: 'label', text: 'Ready' }), document.createTextNode(session.ready_summary)));
  }

  const row = el('div', { class: 'actions' });
  const reasons = [];
  for (const button of session.buttons) {
    if (button.text_hint) {
      node.append(textAction(session, button));
      continue;
    }
    row.append(el('button', {
      type: 'button',
      'data-action': button.kind,
      text: button.label,
      title: button.unavailable_reason || button.help || '',
      disabled: !button.enabled,
      onclick: () => act(session.key, button.kind),
    }));
    if (!button.enabled && button.unavailable_reason) reasons.push(`${button.label}: ${button.unavailable_reason}`);
  }
  // Open first, text actions after: insert the plain buttons above the text boxes.
  const firstText = node.querySelector('.text-action');
  node.insertBefore(row, firstText);
  if (firstText) node.append(el('p', { class: 'reason', text: 'Enter sends · Shift+Enter starts a new line' }));
  for (const reason of reasons) node.append(el('p', { class: 'reason', text: reason }));

  const error = errors.get(session.key);
  if (error) node.append(el('p', { class: 'error', role: 'alert', text: error }));
  return node;
}

// What the chips say. A record without a kind (generation D) has no kind chip; its state
// only says whether a terminal is attached, so "unknown" says nothing, and whether it waits
// on the person comes from `needs_you`, named when the state chip does not already say so.
function chips(session) {
  const list = [];
  if (session.kind) {
    list.push(el('span', { class: 'chip kind', text: KIND_NAMES[session.kind] || session.kind }));
  }
  const sayWaiting = session.state === 'waiting' || session.state === 'ready';
  if (session.needs_you && !sayWaiting) {
    list.push(el('span', { class: 'chip needs-you', text: 'Waiting for you' }));
  }
  if (session.state && session.state !== 'unknown') {
    list.push(el('span', { class: `chip state state-${session.state}`, text: session.state }));
  }
  return list;
}

function textAction(session, button) {
  const key = `${session.key}\u0000${button.kind}`;
  const box = el('textarea', {
    'data-input': button.kind,
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
      act(session.key, button.kind, box.value);
    }
  });
  requestAnimationFrame(grow);
  const submit = el('button', {
    type: 'button',
    'data-action': button.kind,
    text: button.label,
    title: button.unavailable_reason || button.help || '',
    disabled: !button.enabled,
    onclick: () => act(session.key, button.kind, box.value),
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

function reveal(id) {
  const node = $('groups').querySelector(`[data-session-id="${CSS.escape(id)}"]`);
  if (!node) return;
  focusId = null;
  node.scrollIntoView({ block: 'center', behavior: 'smooth' });
  node.classList.add('focused');
  setTimeout(() => node.classList.remove('focused'), 2000);
  const box = node.querySelector('textarea:not(:disabled)');
  if (box) box.focus();
}

async function refresh() {
  try {
    board = await invoke('sessions');
    // A window built to show one session learns which from its first list.
    if (board.focus) focusId = board.focus;
  } catch (error) {
    board = { ...board, status: `Could not load the sessions: ${error}` };
  }
  const ids = new Set(board.sessions.map((s) => s.key));
  for (const id of errors.keys()) if (!ids.has(id)) errors.delete(id);
  for (const key of drafts.keys()) if (!ids.has(key.split('\u0000')[0])) drafts.delete(key);
  render();
}

// ---- settings ----

let settingsShown = false;

function showSettings(show) {
  settingsShown = show;
  $('settings').hidden = !show;
  $('board').hidden = show;
  $('settings-toggle').setAttribute('aria-expanded', String(show));
  $('heading').textContent = show ? 'Settings' : 'Sessions';
  $('count').hidden = show;
  $('settings-message').textContent = '';
  if (show) loadSettings();
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
  $('set-lf').value = s.lf_path || '';
  $('set-home').value = s.home || '';
  $('set-machines').value = (s.machines || []).join('\n');
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
  const settings = {
    terminal: $('set-terminal').value,
    terminal_template: $('set-template').value,
    notify_on_ask: $('set-ask').checked,
    notify_on_ready: $('set-ready').checked,
    sound: $('set-sound').checked,
    reminder_minutes: Number.isFinite(minutes) && minutes > 0 ? minutes : 0,
    attached_grace_seconds: Number.isFinite(grace) && grace > 0 ? grace : 0,
    lf_path: $('set-lf').value.trim() || null,
    home: $('set-home').value.trim() || null,
    machines: $('set-machines').value.split('\n'),
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
$('settings').addEventListener('submit', saveSettings);
$('set-terminal').addEventListener('input', syncTemplate);
$('notice-copy').addEventListener('click', copyCommand);
$('notice-dismiss').addEventListener('click', () => { $('notice').hidden = true; });

listen('board', (event) => {
  board = event.payload;
  const ids = new Set(board.sessions.map((s) => s.key));
  for (const id of errors.keys()) if (!ids.has(id)) errors.delete(id);
  render();
});
listen('focus', (event) => {
  focusId = event.payload;
  if (settingsShown) showSettings(false);
  render();
});
listen('launch-failed', (event) => showNotice(event.payload));

refresh();
