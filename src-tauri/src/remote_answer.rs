//! Answer from the popup for agents on the other machines the tray follows: their hooks'
//! requests come over each machine's watch stream (`lf_tray_core::permission::remote`)
//! and go to the same desk as a local hook's, as one more [`Input::Ask`]: the same popup
//! (which names the machine, as every remote session's does), the same one answer. The
//! answer goes back over the same link; the hook there checks it again from its own copy.
//!
//! A request the desk does not take is withdrawn at once, so the hook there gives no
//! decision without waiting. The hook ending there (the terminal answered) or the link
//! ending takes the popup down.

use std::collections::HashMap;
use std::sync::Arc;

use lf_tray_core::permission::remote::{Arrived, Links, ToMachine, ANSWERED_WAIT};
use lf_tray_core::permission::Request;
use lf_tray_core::{SessionKey, SessionRecord};
use lf_tray_surface::desk::{self, HookId, Input, ToHook};
use lf_tray_surface::notice;
use lf_tray_surface::policy::Focus;
use tokio::sync::mpsc;
use tokio::time::timeout;

use crate::shell::{Shell, ToDesk};

/// A request by where it came from: the machine and the relay's number for it there.
type There = (String, u64);

/// Take the machines' requests while the tray runs.
pub(crate) async fn serve(shell: Arc<Shell>, mut arrivals: mpsc::UnboundedReceiver<Arrived>) {
    let links = shell.engine.links().clone();
    // Each request the desk took, until it is answered, withdrawn or ended there.
    let mut open: HashMap<There, HookId> = HashMap::new();
    let (done, mut finished) = mpsc::unbounded_channel::<There>();
    loop {
        let arrived = tokio::select! {
            arrived = arrivals.recv() => match arrived {
                Some(arrived) => arrived,
                None => return,
            },
            Some(there) = finished.recv() => {
                open.remove(&there);
                continue;
            }
        };
        match arrived {
            Arrived::Request {
                machine,
                id,
                session,
                request,
            } => {
                if let Some(hook) = take(&shell, &links, &done, &machine, id, session, request) {
                    open.insert((machine, id), hook);
                }
            }
            Arrived::Ended { machine, id } => {
                if let Some(hook) = open.remove(&(machine, id)) {
                    shell.tell(Input::HookEnded(hook));
                }
            }
            Arrived::Gone { machine } => open.retain(|(on, _), hook| {
                if *on == machine {
                    shell.tell(Input::HookEnded(*hook));
                }
                *on != machine
            }),
            Arrived::Answering { machine, problem } => {
                if let Some(problem) = problem {
                    tracing::warn!("PERMISSION {machine}: {problem}");
                    shell.warn(format!("{machine}: answering from the popup: {problem}"));
                }
                // Its status line says now whether it answers from here.
                shell.send(ToDesk::Redraw);
            }
        }
    }
}

/// A machine's request, given to the desk if it takes it, else withdrawn there at once.
/// Returns the hook it is the desk's under, while its answer is carried on a task of its
/// own, which tells `done` when it is over.
fn take(
    shell: &Arc<Shell>,
    links: &Links,
    done: &mpsc::UnboundedSender<There>,
    machine: &str,
    id: u64,
    session: String,
    request: Request,
) -> Option<HookId> {
    let on = crate::permission::answering(&shell.settings(), request.client);
    let key = SessionKey {
        machine: Some(machine.to_string()),
        id: session,
    };
    // Decided here, not on a task of its own: the desk gets the ask before
    // anything this machine says later about the same request (its end).
    let found = desk::takes(&request, on, shell.held_back().as_deref()).and_then(|()| {
        shell
            .engine
            .session(&key)
            .ok_or_else(|| "its session is not in the machine's list here".into())
    });
    let record = match found {
        Ok(record) => record,
        Err(why) => {
            tracing::info!("PERMISSION no popup for {machine} request {id}: {why}");
            links.send(machine, ToMachine::Withdraw { id });
            return None;
        }
    };
    let hook = crate::permission::next_hook();
    let (to_hook, news) = mpsc::unbounded_channel();
    // Where the person looks is not asked: a terminal here running ssh to the
    // machine is not the agent's own terminal as the desktop knows it.
    let ask = Input::Ask {
        hook,
        record: record.clone(),
        request,
        on,
        focus: Focus::Unknown,
    };
    shell.send(ToDesk::Hook(ask, to_hook));
    let answer = answer(
        Arc::clone(shell),
        links.clone(),
        (machine.to_string(), id),
        (hook, record),
        news,
    );
    let done = done.clone();
    tauri::async_runtime::spawn(async move {
        done.send(answer.await).ok();
    });
    Some(hook)
}

/// Carry the desk's news for one request to the machine: `shown` once its popup is up,
/// then the person's answer, or its withdrawal. Returns the request's place when it is
/// over.
async fn answer(
    shell: Arc<Shell>,
    links: Links,
    there: There,
    (hook, record): (HookId, SessionRecord),
    mut news: mpsc::UnboundedReceiver<ToHook>,
) -> There {
    let (machine, id) = (&there.0, there.1);
    match news.recv().await {
        Some(ToHook::Taken) => {}
        Some(ToHook::Refused(why)) => {
            tracing::info!("PERMISSION no popup for {machine} request {id}: {why}");
            links.send(machine, ToMachine::Withdraw { id });
            return there;
        }
        _ => {
            links.send(machine, ToMachine::Withdraw { id });
            return there;
        }
    }
    if !links.send(machine, ToMachine::Shown { id }) {
        tracing::info!("PERMISSION {machine} request {id}: the link ended before it was shown");
        shell.tell(Input::HookEnded(hook));
        return there;
    }
    match news.recv().await {
        Some(ToHook::Answer(reply)) => {
            let word = reply.word();
            // Said to have answered only once the machine says its hook took it: an answer
            // lost on a link that died without a word is told, not taken for given.
            let took = match links.reply(machine, id, reply) {
                Some(taken) => matches!(timeout(ANSWERED_WAIT, taken).await, Ok(Ok(()))),
                None => false,
            };
            if took {
                tracing::info!("PERMISSION {machine} request {id} answered {word}");
            } else {
                tracing::warn!("PERMISSION {machine} request {id}: the {word} did not reach it");
                shell.tell(Input::ClickFailed(notice::undelivered(
                    &record, machine, word,
                )));
            }
        }
        // Withdrawn here (lf's attention left `waiting`, a newer request), or ended there
        // (the desk let go of it): the hook there gets no answer, at once.
        _ => {
            links.send(machine, ToMachine::Withdraw { id });
            tracing::info!("PERMISSION {machine} request {id}: withdrawn");
        }
    }
    there
}
