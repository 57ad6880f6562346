//! Answering agents on other machines, over the watch stream the tray already runs there.
//!
//! The tray follows a machine that has lf-tray through one `ssh -T DEST lf-tray watch
//! --json` ([`crate::machine`]). That connection carries the requests too, both ways, so
//! there is no port, no forwarded socket and no second login:
//!
//! - the tray writes [`ToMachine`] lines to the watcher's stdin: whether answering is on
//!   (first thing, and on each change), then `shown`, a reply, or a withdrawal per request;
//! - the watcher there ([`Relay`]) keeps the `PermissionRequest` entry in that machine's
//!   Claude settings while answering is on, listens where the hook looks
//!   ([`super::hook_socket`]) with the tray's own socket server ([`super::socket`]), ties
//!   each hook to its lf session with the same walk as locally ([`super::requester`]), and
//!   prints [`FromMachine`] lines among its events.
//!
//! Both kinds are new line types: an older watcher ignores stdin, and an older tray
//! ignores event types it does not know, so either side may be older. An older watcher
//! never says `answering`, which is how the tray knows to say it needs a newer lf-tray.
//!
//! The hook there waits only while the link lives: the watcher reads the end of its
//! stdin when the ssh is cut, and closes every hook's connection — no decision, at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};

use super::{Reply, Request};

mod relay;

pub use relay::{Place, Relay};

/// One line from the tray to the machine's watcher.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToMachine {
    /// `answer_from_popup` here: on, the machine keeps the hook and listens; off, it takes
    /// its entry out.
    Answering(bool),
    /// The request's popup is up here: the hook there waits for the person.
    Shown { id: u64 },
    /// The person's answer; the hook checks it against its own copy of the request.
    Reply { id: u64, reply: Reply },
    /// No popup, or no longer one: the hook gives no decision, and the terminal keeps it.
    Withdraw { id: u64 },
    /// The tray is still there: sent while a request's popup is up, so that a link that
    /// died without a word is given up on there ([`SILENT`]).
    Alive,
}

/// How often the tray says it is there while a request's popup is up: three chances
/// within the machine's [`SILENT`]. Only while a popup waits: an idle link stays quiet.
pub const ALIVE_EVERY: Duration = Duration::from_secs(1);
/// How long a machine's watcher waits without a word from the tray before its waiting
/// hooks give no decision: a link that died without a word (a laptop's lid shut, a network
/// gone) is not seen by ssh for half a minute or more, and a cut link must not keep an
/// agent's hook longer than 3 s. A tray that is merely slow loses nothing: the request
/// ends here too, its popup goes, and the terminal there keeps the question.
pub const SILENT: Duration = Duration::from_secs(3);
/// How long the tray waits for the machine to say the hook took the person's answer:
/// over a live link it takes milliseconds; past this the link is taken to be dead (the
/// hook there has given up by then, [`SILENT`]) and the person is told to answer there.
pub const ANSWERED_WAIT: Duration = Duration::from_secs(3);

impl ToMachine {
    pub fn line(&self) -> String {
        let mut line = serde_json::to_string(self).unwrap_or_default();
        line.push('\n');
        line
    }

    /// A line read on the watcher's stdin; why not, for a clear message.
    pub fn read(line: &str) -> Result<ToMachine, String> {
        serde_json::from_str(line.trim()).map_err(|e| {
            format!("not a line from a tray (answering, shown, reply or withdraw): {e}")
        })
    }
}

/// One line from the machine's watcher to the tray, among its events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromMachine {
    /// A hook there asks, for lf session `session` there.
    Request {
        id: u64,
        session: String,
        request: Request,
    },
    /// The hook went away before an answer: Claude ended it (the terminal answered), or
    /// the tray was silent too long ([`SILENT`]).
    RequestEnded { id: u64 },
    /// The hook took the person's answer: it reached the agent.
    Answered { id: u64 },
    /// The watcher took the tray's `answering`: whether it now answers, and what the
    /// person must know if something kept it (Claude's settings there do not parse).
    Answering {
        on: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        problem: Option<String>,
    },
}

impl FromMachine {
    /// A line of the watch stream that is one of these; `None` for any other type. Read
    /// from the text, not from a parsed value: a request carries Claude's suggestions as
    /// they were written ([`super::Raw`]), which only text keeps.
    pub fn read(line: &str) -> Option<Result<FromMachine, String>> {
        #[derive(Deserialize)]
        struct Kind {
            #[serde(rename = "type")]
            kind: String,
        }
        #[derive(Deserialize)]
        struct Asks {
            id: u64,
            session: String,
            request: Request,
        }
        #[derive(Deserialize)]
        struct Id {
            id: u64,
        }
        #[derive(Deserialize)]
        struct Took {
            on: bool,
            #[serde(default)]
            problem: Option<String>,
        }
        let kind = serde_json::from_str::<Kind>(line).ok()?.kind;
        let read = match kind.as_str() {
            "request" => serde_json::from_str::<Asks>(line).map(|a| FromMachine::Request {
                id: a.id,
                session: a.session,
                request: a.request,
            }),
            "request_ended" => {
                serde_json::from_str::<Id>(line).map(|i| FromMachine::RequestEnded { id: i.id })
            }
            "answered" => {
                serde_json::from_str::<Id>(line).map(|i| FromMachine::Answered { id: i.id })
            }
            "answering" => serde_json::from_str::<Took>(line).map(|t| FromMachine::Answering {
                on: t.on,
                problem: t.problem,
            }),
            _ => return None,
        };
        Some(read.map_err(|e| format!("a bad {kind} line: {e}")))
    }

    /// The request's number in a line [`FromMachine::read`] could not read, if it has one:
    /// the machine is told at once that it gets no popup.
    pub fn id_of(line: &str) -> Option<u64> {
        serde_json::from_str::<serde_json::Value>(line)
            .ok()?
            .get("id")?
            .as_u64()
    }
}

// --- the tray's side ---------------------------------------------------------------------

/// What came from the machines for the desk, each naming its machine.
#[derive(Debug, Clone, PartialEq)]
pub enum Arrived {
    Request {
        machine: String,
        id: u64,
        session: String,
        request: Request,
    },
    Ended {
        machine: String,
        id: u64,
    },
    /// The link to the machine ended: each of its open requests ended with it.
    Gone {
        machine: String,
    },
    /// The machine's watcher took `answering`: its status line changed; with what kept it
    /// from answering, if anything did.
    Answering {
        machine: String,
        problem: Option<String>,
    },
}

/// What a machine said about answering, for the status line.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Said {
    /// Connected; its watcher has not taken `answering` (an older lf-tray ignores it).
    Nothing,
    Taken(Option<String>),
}

/// One live link: its connection's serial, where its lines go, what it said about
/// answering, and the requests whose popups are up (the tray says it is alive meanwhile).
struct Linked {
    serial: u64,
    to: mpsc::UnboundedSender<ToMachine>,
    said: Said,
    shown: std::collections::HashSet<u64>,
}

#[derive(Default)]
struct Inner {
    /// Whether the tray answers: `None` for a watch without a desk (`lf-tray watch`),
    /// which tells the machines nothing and leaves their settings alone.
    answering: Option<bool>,
    links: HashMap<String, Linked>,
    /// Answers sent, by machine and request, until the machine says the hook took them.
    answers: HashMap<(String, u64), oneshot::Sender<()>>,
    /// Machines let go of while answering: told when each took `answering: false`.
    leaving: HashMap<String, Vec<oneshot::Sender<()>>>,
    next: u64,
    arrived: Option<mpsc::UnboundedSender<Arrived>>,
}

/// The live links to the machines' watchers, shared by their followers and the desk.
#[derive(Clone, Default)]
pub struct Links {
    inner: Arc<Mutex<Inner>>,
}

/// One follower's link, for the life of one connection: what to write to the machine's
/// stdin. Dropped, the machine's open requests end.
pub struct Link {
    links: Links,
    machine: String,
    serial: u64,
    pub to_machine: mpsc::UnboundedReceiver<ToMachine>,
}

impl Links {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic elsewhere must not stop the answers.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Where the desk hears of requests; asked once, by the one desk.
    pub fn arrivals(&self) -> mpsc::UnboundedReceiver<Arrived> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.lock().arrived = Some(tx);
        rx
    }

    /// Answering on or off: every machine linked now is told, and each linked later.
    pub fn set_answering(&self, on: bool) {
        let mut inner = self.lock();
        if inner.answering == Some(on) {
            return;
        }
        inner.answering = Some(on);
        for link in inner.links.values() {
            let _ = link.to.send(ToMachine::Answering(on));
        }
    }

    /// A connection to `machine`'s watcher is up: its lines to write, starting with
    /// whether the tray answers.
    pub fn connect(&self, machine: &str) -> Link {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut inner = self.lock();
        if let Some(on) = inner.answering {
            let _ = tx.send(ToMachine::Answering(on));
        }
        inner.next += 1;
        let serial = inner.next;
        inner.links.insert(
            machine.to_string(),
            Linked {
                serial,
                to: tx,
                said: Said::Nothing,
                shown: Default::default(),
            },
        );
        Link {
            links: self.clone(),
            machine: machine.to_string(),
            serial,
            to_machine: rx,
        }
    }

    /// `machine` is dropped from the list: while the tray answers, its watcher is told
    /// to take its entry out of Claude's settings there. Resolves once it did, or at once
    /// when there is nothing to tell — the caller cuts the link after it, and bounds the
    /// wait (a machine that does not answer still goes).
    pub fn let_go(&self, machine: &str) -> oneshot::Receiver<()> {
        let (done, said) = oneshot::channel();
        let mut inner = self.lock();
        let told = inner.answering == Some(true)
            && inner.links.get(machine).is_some_and(|link| {
                link.said != Said::Nothing && link.to.send(ToMachine::Answering(false)).is_ok()
            });
        if told {
            inner
                .leaving
                .entry(machine.to_string())
                .or_default()
                .push(done);
        }
        said
    }

    /// Write a line to `machine`'s watcher; false when no link to it is up.
    pub fn send(&self, machine: &str, line: ToMachine) -> bool {
        let mut inner = self.lock();
        let Some(link) = inner.links.get_mut(machine) else {
            return false;
        };
        match &line {
            ToMachine::Shown { id } => {
                link.shown.insert(*id);
            }
            ToMachine::Reply { id, .. } | ToMachine::Withdraw { id } => {
                link.shown.remove(id);
            }
            ToMachine::Answering(_) | ToMachine::Alive => {}
        }
        link.to.send(line).is_ok()
    }

    /// The person's answer to request `id` there: resolves once the machine says its hook
    /// took it; fails when the link ends first. `None`: no link to send it on.
    pub fn reply(&self, machine: &str, id: u64, reply: Reply) -> Option<oneshot::Receiver<()>> {
        let (took, taken) = oneshot::channel();
        // Registered first: the machine's word may come back before this returns.
        self.lock().answers.insert((machine.to_string(), id), took);
        if !self.send(machine, ToMachine::Reply { id, reply }) {
            self.lock().answers.remove(&(machine.to_string(), id));
            return None;
        }
        Some(taken)
    }

    /// Whether a request's popup is up for `machine`: the tray says it is alive meanwhile.
    pub fn waiting(&self, machine: &str) -> bool {
        self.lock()
            .links
            .get(machine)
            .is_some_and(|link| !link.shown.is_empty())
    }

    fn tell(&self, arrived: Arrived) {
        if let Some(tx) = &self.lock().arrived {
            let _ = tx.send(arrived);
        }
    }

    /// What `machine`'s status line says about answering there, while the tray answers;
    /// `watched`: whether it is followed through lf-tray (else only its lf is there).
    pub fn status(&self, machine: &str, watched: Option<bool>) -> Option<String> {
        let inner = self.lock();
        if inner.answering != Some(true) {
            return None;
        }
        Some(match (watched, inner.links.get(machine).map(|l| &l.said)) {
            (Some(false), _) => "answering needs lf-tray there".into(),
            (_, None) | (None, _) => return None,
            (_, Some(Said::Nothing)) => "answering needs a newer lf-tray there".into(),
            (_, Some(Said::Taken(None))) => "answers from here".into(),
            (_, Some(Said::Taken(Some(problem)))) => format!("not answering: {problem}"),
        })
    }
}

impl Link {
    /// A line from the machine's watcher that is about answering.
    pub fn heard(&self, line: FromMachine) {
        let machine = self.machine.clone();
        let arrived = match line {
            FromMachine::Request {
                id,
                session,
                request,
            } => Arrived::Request {
                machine,
                id,
                session,
                request,
            },
            FromMachine::RequestEnded { id } => {
                if let Some(link) = self.links.lock().links.get_mut(&self.machine) {
                    link.shown.remove(&id);
                }
                Arrived::Ended { machine, id }
            }
            FromMachine::Answered { id } => {
                if let Some(took) = self.links.lock().answers.remove(&(machine, id)) {
                    let _ = took.send(());
                }
                return;
            }
            FromMachine::Answering { on, problem } => {
                let mut inner = self.links.lock();
                if let Some(link) = inner.links.get_mut(&self.machine) {
                    if link.serial == self.serial {
                        link.said = Said::Taken(problem.clone());
                    }
                }
                if !on {
                    // Dropping the senders tells whoever let it go.
                    inner.leaving.remove(&self.machine);
                }
                drop(inner);
                Arrived::Answering { machine, problem }
            }
        };
        self.links.tell(arrived);
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        let mut inner = self.links.lock();
        // A newer connection to the same machine may have taken its place already.
        if inner
            .links
            .get(&self.machine)
            .is_some_and(|link| link.serial == self.serial)
        {
            inner.links.remove(&self.machine);
            inner.leaving.remove(&self.machine);
            // Answers that were not taken yet never will be on this link.
            inner.answers.retain(|(on, _), _| *on != self.machine);
        }
        drop(inner);
        self.links.tell(Arrived::Gone {
            machine: self.machine.clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lf::record::SessionRecord;
    use crate::permission::socket::{self, tests::said};
    use crate::permission::SHOWN;
    use std::path::Path;
    use tokio::io::BufReader;
    use tokio::net::UnixStream;

    #[test]
    fn the_lines_both_ways_read_back_and_are_one_line_each() {
        let reply = ToMachine::Reply {
            id: 3,
            reply: Reply::Allow,
        };
        assert_eq!(
            reply.line(),
            "{\"reply\":{\"id\":3,\"reply\":{\"reply\":\"allow\"}}}\n"
        );
        assert_eq!(ToMachine::read(&reply.line()).unwrap(), reply);
        assert_eq!(ToMachine::Answering(true).line(), "{\"answering\":true}\n");
        assert_eq!(
            ToMachine::read(r#"{"withdraw":{"id":7}}"#).unwrap(),
            ToMachine::Withdraw { id: 7 }
        );
        let bad = ToMachine::read("yes please").unwrap_err();
        assert!(bad.starts_with("not a line from a tray"), "{bad}");
        assert!(ToMachine::read(r#"{"reply":{"id":1}}"#).is_err());

        let request: Request = serde_json::from_str(
            r#"{"tool_name":"Bash","tool_input":{"command":"rm -rf <b>x</b>\n$(id)"}}"#,
        )
        .unwrap();
        let line = FromMachine::Request {
            id: 1,
            session: "s1".into(),
            request: request.clone(),
        };
        let text = serde_json::to_string(&line).unwrap();
        assert!(text.starts_with(r#"{"type":"request","#), "{text}");
        assert_eq!(FromMachine::read(&text).unwrap().unwrap(), line);
        // Claude's suggestions as it wrote them, spacing and order, through the stream.
        let suggested: Request = serde_json::from_str(
            r#"{"tool_name":"Bash","tool_input":{},"permission_suggestions":[{"b": 1, "a": [2]}]}"#,
        )
        .unwrap();
        let line = FromMachine::Request {
            id: 2,
            session: "s1".into(),
            request: suggested,
        };
        let text = serde_json::to_string(&line).unwrap();
        assert!(text.contains(r#"[{"b": 1, "a": [2]}]"#), "{text}");
        assert_eq!(FromMachine::read(&text).unwrap().unwrap(), line);
        assert_eq!(
            FromMachine::read(r#"{"type":"request_ended","id":1}"#)
                .unwrap()
                .unwrap(),
            FromMachine::RequestEnded { id: 1 }
        );
        assert_eq!(
            FromMachine::read(r#"{"type":"answered","id":1}"#)
                .unwrap()
                .unwrap(),
            FromMachine::Answered { id: 1 }
        );
        // The engine's events are not these, and a malformed one says so, with its id.
        assert!(FromMachine::read(r#"{"type":"asked"}"#).is_none());
        let bad = r#"{"type":"request","id":7,"session":"s1","request":{}}"#;
        assert!(FromMachine::read(bad).unwrap().is_err());
        assert_eq!(FromMachine::id_of(bad), Some(7));
    }

    #[test]
    fn each_link_is_told_answering_and_its_status_follows_what_the_machine_said() {
        let links = Links::default();
        let mut quiet = links.connect("box");
        // A watch without a desk tells nothing.
        assert!(quiet.to_machine.try_recv().is_err());
        assert_eq!(links.status("box", Some(true)), None);
        drop(quiet);
        let mut arrivals = links.arrivals();
        assert_eq!(
            arrivals.try_recv().ok(),
            None,
            "the arrivals start after they are asked for"
        );
        links.set_answering(true);
        let mut link = links.connect("box");
        assert_eq!(
            link.to_machine.try_recv().ok(),
            Some(ToMachine::Answering(true))
        );
        assert_eq!(
            links.status("box", Some(true)).as_deref(),
            Some("answering needs a newer lf-tray there")
        );
        assert_eq!(
            links.status("far", Some(false)).as_deref(),
            Some("answering needs lf-tray there")
        );
        link.heard(FromMachine::Answering {
            on: true,
            problem: None,
        });
        assert_eq!(
            links.status("box", Some(true)).as_deref(),
            Some("answers from here")
        );
        assert_eq!(
            arrivals.try_recv().ok(),
            Some(Arrived::Answering {
                machine: "box".into(),
                problem: None
            }),
            "the status line changed"
        );
        link.heard(FromMachine::Answering {
            on: true,
            problem: Some("settings.json does not parse".into()),
        });
        assert_eq!(
            arrivals.try_recv().ok(),
            Some(Arrived::Answering {
                machine: "box".into(),
                problem: Some("settings.json does not parse".into())
            })
        );
        link.heard(FromMachine::RequestEnded { id: 4 });
        assert_eq!(
            arrivals.try_recv().ok(),
            Some(Arrived::Ended {
                machine: "box".into(),
                id: 4
            })
        );
        assert!(links.send("box", ToMachine::Shown { id: 4 }));
        assert_eq!(
            link.to_machine.try_recv().ok(),
            Some(ToMachine::Shown { id: 4 })
        );
        links.set_answering(false);
        assert_eq!(
            link.to_machine.try_recv().ok(),
            Some(ToMachine::Answering(false))
        );
        assert_eq!(links.status("box", Some(true)), None);
        drop(link);
        assert_eq!(
            arrivals.try_recv().ok(),
            Some(Arrived::Gone {
                machine: "box".into()
            })
        );
        assert!(!links.send("box", ToMachine::Shown { id: 4 }));
    }

    #[test]
    fn a_machine_let_go_is_told_to_take_its_entry_out_and_says_when_it_did() {
        let links = Links::default();
        links.set_answering(true);
        let mut link = links.connect("box");
        assert_eq!(
            link.to_machine.try_recv().ok(),
            Some(ToMachine::Answering(true))
        );
        // A watcher that never took `answering` (an older lf-tray) is not waited for.
        let mut said = links.let_go("box");
        assert_eq!(said.try_recv(), Err(oneshot::error::TryRecvError::Closed));
        assert!(link.to_machine.try_recv().is_err());
        link.heard(FromMachine::Answering {
            on: true,
            problem: None,
        });
        let mut said = links.let_go("box");
        assert_eq!(
            link.to_machine.try_recv().ok(),
            Some(ToMachine::Answering(false))
        );
        assert_eq!(said.try_recv(), Err(oneshot::error::TryRecvError::Empty));
        link.heard(FromMachine::Answering {
            on: false,
            problem: None,
        });
        assert_eq!(said.try_recv(), Err(oneshot::error::TryRecvError::Closed));
        // Nothing linked: nothing to wait for.
        assert_eq!(
            links.let_go("far").try_recv(),
            Err(oneshot::error::TryRecvError::Closed)
        );
    }

    #[test]
    fn the_tray_says_it_is_alive_only_while_a_popup_is_up_and_hears_when_an_answer_was_taken() {
        let links = Links::default();
        let link = links.connect("box");
        assert!(!links.waiting("box"));
        assert!(links.send("box", ToMachine::Shown { id: 1 }));
        assert!(links.send("box", ToMachine::Shown { id: 2 }));
        assert!(links.waiting("box"));
        link.heard(FromMachine::RequestEnded { id: 1 });
        let mut taken = links.reply("box", 2, Reply::Deny).unwrap();
        assert!(!links.waiting("box"), "no popup up: the link is quiet");
        assert_eq!(taken.try_recv(), Err(oneshot::error::TryRecvError::Empty));
        link.heard(FromMachine::Answered { id: 2 });
        assert_eq!(taken.try_recv(), Ok(()));
        // An answer on a link that ends before the machine took it is known lost.
        let mut lost = links.reply("box", 3, Reply::Allow).unwrap();
        drop(link);
        assert_eq!(lost.try_recv(), Err(oneshot::error::TryRecvError::Closed));
        assert!(
            links.reply("box", 4, Reply::Allow).is_none(),
            "no link: not sent"
        );
        assert_eq!(ToMachine::Alive.line(), "\"alive\"\n");
    }

    /// The watcher's side with a real socket: a hook (this test, whose process is the
    /// listed agent) is handed on, answered, and given up on when the tray falls silent.
    #[tokio::test]
    async fn a_hook_there_is_handed_on_answered_and_given_up_on_when_the_tray_falls_silent() {
        use crate::lf::{Agent, Runs};
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let socket = dir.path().join("lf-tray").join("permission.sock");
        let mut record: SessionRecord =
            serde_json::from_value(serde_json::json!({"id": "s1", "state": "waiting"})).unwrap();
        record.set_agent(Some(Agent {
            id: "a".into(),
            pid: Some(std::process::id()),
            runs: Runs::Terminal,
        }));
        let (out, mut lines) = mpsc::unbounded_channel();
        let place = Place {
            socket: socket.clone(),
            settings: None,
            command: "lf-tray permission-hook".into(),
            // SAFETY: getuid cannot fail.
            uid: unsafe { libc::getuid() },
        };
        let mut relay = Relay::new(
            place,
            out,
            Arc::new(move || vec![Arc::new(record.clone())].into()),
        );
        relay.take(ToMachine::Answering(true));
        assert!(matches!(
            lines.try_recv(),
            Ok(FromMachine::Answering { on: true, .. })
        ));
        async fn ask(
            socket: &Path,
            lines: &mut mpsc::UnboundedReceiver<FromMachine>,
        ) -> (BufReader<UnixStream>, u64) {
            let hook = socket::tests::ask(socket, socket::tests::BASH).await;
            let line = tokio::time::timeout(Duration::from_secs(5), lines.recv())
                .await
                .expect("the request handed on")
                .unwrap();
            let FromMachine::Request { id, session, .. } = line else {
                panic!("{line:?}")
            };
            assert_eq!(session, "s1");
            (hook, id)
        }

        // Shown, then the person's answer: the hook has it, and the tray hears it was taken.
        let (mut hook, id) = ask(&socket, &mut lines).await;
        relay.take(ToMachine::Shown { id });
        assert_eq!(said(&mut hook).await.trim(), SHOWN);
        relay.take(ToMachine::Reply {
            id,
            reply: Reply::Allow,
        });
        assert_eq!(said(&mut hook).await.trim(), Reply::Allow.line());
        let taken = tokio::time::timeout(Duration::from_secs(5), lines.recv()).await;
        assert_eq!(taken.unwrap(), Some(FromMachine::Answered { id }));

        // While the tray says it is alive, the hook waits past SILENT.
        let (mut hook, id) = ask(&socket, &mut lines).await;
        relay.take(ToMachine::Shown { id });
        assert_eq!(said(&mut hook).await.trim(), SHOWN);
        for _ in 0..7 {
            tokio::time::sleep(SILENT / 6).await;
            relay.take(ToMachine::Alive);
        }
        assert!(lines.try_recv().is_err(), "it still waits");
        // Silent from now on: no decision (the connection closed, within `said`'s bound;
        // the remote suite prints how long it takes), not before SILENT, and the request
        // ends for a tray that does hear.
        let quiet = std::time::Instant::now();
        assert_eq!(said(&mut hook).await, "", "closed without a word");
        let took = quiet.elapsed();
        assert!(took >= SILENT - Duration::from_millis(100), "{took:?}");
        let ended = tokio::time::timeout(Duration::from_secs(1), lines.recv()).await;
        assert_eq!(ended.unwrap(), Some(FromMachine::RequestEnded { id }));
        drop(relay);
        assert!(!socket.exists(), "nobody listens once the tray is gone");
    }
}
