//! `cargo build --release -p lf-sim --bin lf && cargo bench -p lf-tray --no-default-features --bench gui`
//!
//! Issue 47 on the app's path: what the desk's task and a redraw cost per input at 10,
//! 1 000 and 10 000 open sessions (or the counts named as arguments), about 1 % waiting,
//! listed by the stand-in lf of generation E2 into a real engine. Per part, the median of
//! [`ROUNDS`] calls and the heap allocations of one: the engine's list
//! (`Engine::sessions`), the desk's view (`Desk::view`, after every input, ticks included),
//! the tray's menu and icon (`View::tray`, `menu::menu`, `Look::of`), and the window's rows:
//! all of them (`window::views`, what a page opened is given) and what one change gives an
//! open page (`Rows::rows`: one session renamed, the others' records shared as the engine
//! shares what lf printed unchanged), with the bytes of their JSON. The desk's task makes a
//! view after every input; a redraw (after an input that changed what is shown) reads the
//! list and builds the menu and, with a window open, what changed of its rows. Prints;
//! asserts nothing.

use std::alloc::{GlobalAlloc, Layout, System};
use std::fs;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use lf_sim::{Activity, SessionSpec, SimHome};
use lf_tray_core::engine::{Config, Engine};
use lf_tray_core::history::History;
use lf_tray_core::{Event, SessionRecord};
use lf_tray_surface::desk::{Desk, Input};
use lf_tray_surface::menu::{self, Look};
use lf_tray_surface::policy::Clock;
use lf_tray_surface::rows::Rows;
use lf_tray_surface::window::{self, Reach};

mod common;

/// Calls per part: enough for a stable median at 10 000 in a few seconds.
const ROUNDS: usize = 21;
/// A first list of 10 000 sessions takes seconds on a busy machine. Generous, to fail
/// rather than hang.
const WAIT: Duration = Duration::from_secs(120);

/// Counts the heap allocations of the bench's process, to print them per call.
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        System.realloc(ptr, layout, new)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn main() {
    let counts = common::counts();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let rows: Vec<String> = counts
        .into_iter()
        .map(|n| runtime.block_on(row(n)))
        .collect();
    println!(
        "\n| open sessions | `Engine::sessions` (after a change, then again) | `Desk::view` (every input) | the tray's menu \
         and icon | the window's rows, all (bytes) | the window's rows, one change (bytes) | a redraw, \
         window open |"
    );
    println!("|---|---|---|---|---|---|---|");
    for row in rows {
        println!("{row}");
    }
}

/// One part's median time and the allocations of its first call, as a cell.
fn timed<T>(part: impl FnMut() -> T) -> (Duration, u64) {
    let (median, allocations, _) = timed_first(part);
    (median, allocations)
}

/// [`timed`], and how long the first call took: the list is made on the first read after
/// a change.
fn timed_first<T>(mut part: impl FnMut() -> T) -> (Duration, u64, Duration) {
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    let started = Instant::now();
    drop(std::hint::black_box(part()));
    let first = started.elapsed();
    let allocations = ALLOCATIONS.load(Ordering::Relaxed) - before;
    let mut times: Vec<Duration> = (0..ROUNDS)
        .map(|_| {
            let started = Instant::now();
            let out = std::hint::black_box(part());
            let took = started.elapsed();
            drop(out);
            took
        })
        .collect();
    times.sort();
    (times[ROUNDS / 2], allocations, first)
}

fn cell((took, allocations): (Duration, u64)) -> String {
    format!("{took:.2?} ({allocations})")
}

async fn row(count: usize) -> String {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("alpha");
    fs::create_dir_all(repo.join(".git")).unwrap();
    let sim = SimHome::new(dir.path().join("home"));
    let ids: Vec<String> = (0..count).map(|i| format!("S-{i:05}")).collect();
    let specs: Vec<SessionSpec> = ids
        .iter()
        .map(|id| SessionSpec::new(id, format!("Session {id}"), &repo))
        .collect();
    let mut store = sim.store().unwrap();
    store.create_sessions(&specs).unwrap();
    // About 1 % waiting, at least one.
    for id in ids.iter().step_by(100) {
        store.activity(id, Activity::Ask).unwrap();
    }
    let lf = common::e2_lf(dir.path());

    let config = Config::from_env(Some(sim.home().to_path_buf()), Some(lf));
    let (engine, mut events) = Engine::start(config);
    let mut desk = Desk::new(History::default());
    let prefs = lf_tray_surface::settings::Settings::default().preferences();
    // The desk learns the list as the app's does: from the engine's first events.
    let first = tokio::time::timeout(WAIT, async {
        loop {
            let event = events.recv().await.expect("the engine ended");
            if let Event::Snapshot { sessions, .. } = &event {
                assert_eq!(sessions.len(), count);
                break event;
            }
        }
    })
    .await
    .expect("no snapshot in time");
    desk.step(
        Clock::system(),
        &prefs,
        Input::Events {
            batch: vec![first],
            focus: Vec::new(),
        },
    );

    let (again, allocations, first) = timed_first(|| engine.sessions());
    let listed = (again, allocations);
    let sessions = engine.sessions();
    let view = timed(|| desk.view(Clock::system(), &prefs));
    let shown = desk.view(Clock::system(), &prefs);
    let tray = timed(|| {
        let popups = shown.tray();
        (menu::menu(&sessions, &popups), Look::of(&sessions))
    });
    let rows = timed(|| window::views(&shown, &sessions, Reach::Button, |_: &SessionRecord| None));
    let all_bytes = serde_json::to_vec(&window::views(&shown, &sessions, Reach::Button, |_| None))
        .unwrap()
        .len();
    // An open page's board after one change: the list read again with one session renamed,
    // and back, by turns. The other records are the same `Arc`s, as the engine keeps a
    // record whose text lf printed unchanged.
    let mut again = sessions.to_vec();
    let renamed = std::sync::Arc::make_mut(&mut again[1]);
    renamed.title = format!("{} (renamed)", renamed.title);
    let lists = [sessions.to_vec(), again];
    let mut page = Rows::default();
    let mut held = page
        .rows(None, &shown, &lists[0], Reach::Button, |_| None)
        .number;
    let mut turn = 0;
    let mut change_bytes = 0;
    let change = timed(|| {
        turn += 1;
        let given = page.rows(Some(held), &shown, &lists[turn % 2], Reach::Button, |_| {
            None
        });
        held = given.number;
        change_bytes = serde_json::to_vec(&given.rows).unwrap().len()
            + serde_json::to_vec(&given.order).unwrap().len();
        given
    });
    // A redraw: the list read once more, the tray's menu, and what changed of an open
    // window's rows.
    let redraw = (listed.0 + tray.0 + change.0, listed.1 + tray.1 + change.1);
    format!(
        "| {count} | {first:.2?} first, then {} | {} | {} | {} ({all_bytes}) | {} ({change_bytes}) | {} |",
        cell(listed),
        cell(view),
        cell(tray),
        cell(rows),
        cell(change),
        cell(redraw),
    )
}
