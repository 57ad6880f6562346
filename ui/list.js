// The list of sessions in the page: every row while there are few, only those on screen
// when there are many. Drawing all 10 000 rows of a large lf took 3.6 s to open the window
// and a second per keystroke of the filter (docs/benchmarks.md); beyond `DRAW_ALL` rows the
// page holds what is on screen and `MARGIN` either side, between two spacers as tall as the
// rows they stand for, redrawn in the frame after a scroll. The filter is still the way to
// find one: it looks through every session, drawn or not. What a row says is app.js's.
'use strict';

// A few hundred rows draw in a few milliseconds; below this the list is drawn whole, so a
// short list behaves exactly as it always did (every row in the page).
const DRAW_ALL = 300;
// A row never drawn yet is guessed one title line and one facts line high (50 px at the
// default font); a wrong guess only nudges the scrollbar until the row is drawn and measured.
const GUESS = 50;
// Drawn beyond each edge of the visible part, so a quick scroll or a page down shows rows
// already there: about a screenful of the default window.
const MARGIN = 800;

const heights = new Map(); // item key -> px, as last drawn
let items = [];            // the rows and their groups' headings, in order
let windowed = false;

const headKey = (group) => `\u0000${group}`;
const itemKey = (item) => item.head ? headKey(item.session.group) : item.session.key;
const height = (item) => heights.get(itemKey(item)) ?? GUESS;

// Each group's heading and rows, as sections; `opening` is false for a slice that starts
// in the middle of a group (its heading is above, not drawn).
function sections(list, opening = true) {
  const out = [];
  let current = null;
  for (const item of list) {
    const session = item.session;
    if (!current || current.group !== session.group) {
      current = { group: session.group, list: el('div', { class: 'list', role: 'list' }) };
      out.push(el('section', { class: 'group', 'data-group': session.group },
        item.head || (out.length === 0 && opening) ? el('h2', { text: session.group_title }) : null,
        current.list));
    }
    if (!item.head) current.list.append(row(session));
  }
  return out;
}

// The sessions to list, in order: drawn whole or a window of them.
function setRows(sessions) {
  items = [];
  let group = null;
  for (const session of sessions) {
    if (session.group !== group) {
      group = session.group;
      items.push({ head: true, session });
    }
    items.push({ session });
  }
  windowed = sessions.length > DRAW_ALL;
  drawRows();
}

function drawRows() {
  const host = $('groups');
  if (!windowed) {
    host.replaceChildren(...sections(items));
    return;
  }
  const scroller = $('board');
  // Where the list starts in the scrolled content (the notices above it come and go).
  const start = host.getBoundingClientRect().top - scroller.getBoundingClientRect().top + scroller.scrollTop;
  const top = scroller.scrollTop - start;
  const bottom = top + scroller.clientHeight;
  let y = 0;
  let first = items.length;
  let end = items.length;
  let above = 0;
  let upTo = 0;
  for (let i = 0; i < items.length; i++) {
    const h = height(items[i]);
    if (first === items.length && y + h >= top - MARGIN) { first = i; above = y; }
    if (end === items.length && y > bottom + MARGIN) { end = i; upTo = y; }
    y += h;
  }
  if (end === items.length) upTo = y;
  const slice = items.slice(first, end);
  const spacer = (px) => {
    const node = el('div', { class: 'spacer', 'aria-hidden': 'true' });
    // Through the CSSOM: the page's CSP refuses style attributes.
    node.style.height = `${px}px`;
    return node;
  };
  const lead = spacer(above);
  host.replaceChildren(lead, ...sections(slice, false), spacer(y - upTo));
  measure(lead, slice);
}

// Each drawn item's height, from where the one before it ended: a heading's is the gap down
// to its first row (its margins and the card's border), a row's its own box.
function measure(lead, slice) {
  // Behind the settings the list is not laid out: every box would measure 0.
  if ($('board').hidden) return;
  const rows = new Map();
  for (const node of $('groups').querySelectorAll('.session')) rows.set(node.dataset.sessionId, node);
  let cursor = lead.getBoundingClientRect().bottom;
  let heading = null;
  for (const item of slice) {
    if (item.head) { heading = headKey(item.session.group); continue; }
    const node = rows.get(item.session.key);
    if (!node) continue;
    const box = node.getBoundingClientRect();
    if (heading !== null) heights.set(heading, box.top - cursor);
    heights.set(item.session.key, box.bottom - (heading !== null ? box.top : cursor));
    heading = null;
    cursor = box.bottom;
  }
}

// Scroll so the session's row is on screen and drawn (the keyboard moves past the drawn
// ones); a no-op while every row is drawn, where the row's own scrollIntoView does it.
function bringIntoView(key) {
  if (!windowed) return;
  let y = 0;
  let found = null;
  for (const item of items) {
    if (!item.head && item.session.key === key) { found = item; break; }
    y += height(item);
  }
  if (!found) return;
  const scroller = $('board');
  const host = $('groups');
  const start = host.getBoundingClientRect().top - scroller.getBoundingClientRect().top + scroller.scrollTop;
  const h = height(found);
  if (start + y < scroller.scrollTop) scroller.scrollTop = start + y;
  else if (start + y + h > scroller.scrollTop + scroller.clientHeight) {
    scroller.scrollTop = start + y + h - scroller.clientHeight;
  }
  redraw();
}

// A scroll or a resize shows other rows: drawn in the next frame, once per frame.
let framePending = false;
function scrolled() {
  if (!windowed || framePending) return;
  framePending = true;
  requestAnimationFrame(() => {
    framePending = false;
    redraw();
  });
}
