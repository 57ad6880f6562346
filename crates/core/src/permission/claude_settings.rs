//! The one hook the tray adds to Claude Code's settings (`~/.claude/settings.json`, or
//! `$CLAUDE_CONFIG_DIR/settings.json`) when the person turns *answer from the popup* on:
//! a `PermissionRequest` command hook that runs `lf-tray permission-hook`. Codex reads
//! its hooks from `$CODEX_HOME/hooks.json` (`~/.codex/hooks.json`) in the same format, and
//! gets the same one entry, running `lf-tray permission-hook --codex`.
//!
//! The file is the person's: everything but that one entry is kept as it was — key order,
//! other hooks, values — and a file as Claude Code writes it (two-space JSON) comes back
//! byte for byte when the entry is removed again. A file that does not parse, or whose
//! `hooks` are not the shape Claude reads, is never rewritten: the refusal says why.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

/// The hook event the tray answers.
pub const EVENT: &str = "PermissionRequest";
/// The subcommand Claude Code runs: `lf-tray permission-hook`.
pub const SUBCOMMAND: &str = "permission-hook";
/// What Codex's entry adds to it: its hook is a gate, not a race (`permission::Client`).
pub const CODEX_FLAG: &str = "--codex";
/// The timeout written into the entry, in seconds, as Claude Code reads it: the hook may
/// wait this long for the person. Ten minutes covers someone who steps away from the desk
/// briefly; the hook itself gives up earlier (`permission::GIVE_UP`), so Claude never has
/// to kill it.
pub const TIMEOUT_SECONDS: u64 = 600;

/// Where Claude Code keeps the person's settings: `$CLAUDE_CONFIG_DIR/settings.json`, else
/// `~/.claude/settings.json`.
pub fn path(config_dir: Option<PathBuf>, home: Option<PathBuf>) -> Option<PathBuf> {
    config_dir
        .filter(|d| !d.as_os_str().is_empty())
        .or_else(|| home.map(|h| h.join(".claude")))
        .map(|dir| dir.join("settings.json"))
}

/// Where Codex keeps its hooks: `$CODEX_HOME/hooks.json`, else `~/.codex/hooks.json`.
pub fn codex_path(codex_home: Option<PathBuf>, home: Option<PathBuf>) -> Option<PathBuf> {
    codex_home
        .filter(|d| !d.as_os_str().is_empty())
        .or_else(|| home.map(|h| h.join(".codex")))
        .map(|dir| dir.join("hooks.json"))
}

/// The hook's command line: the tray's own absolute path, quoted for the shell the agent
/// runs it with, then the subcommand (and Codex's flag).
pub fn command(program: &Path, client: super::Client) -> String {
    let program = shell_quote(&program.to_string_lossy());
    match client {
        super::Client::Claude => format!("{program} {SUBCOMMAND}"),
        super::Client::Codex => format!("{program} {SUBCOMMAND} {CODEX_FLAG}"),
    }
}

fn shell_quote(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+,:@%".contains(&b));
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// Whether a hook command is one the tray wrote, for this or another place of the binary
/// (a moved or reinstalled `lf-tray`), for either agent: `<quoted path to lf-tray>
/// permission-hook [--codex]`.
fn is_ours(command: &str) -> bool {
    let command = command
        .strip_suffix(&format!(" {CODEX_FLAG}"))
        .unwrap_or(command);
    let Some(program) = command.strip_suffix(&format!(" {SUBCOMMAND}")) else {
        return false;
    };
    let unquoted = match program
        .strip_prefix('\'')
        .and_then(|p| p.strip_suffix('\''))
    {
        Some(inner) => inner.replace(r"'\''", "'"),
        None if shell_quote(program) == program => program.to_string(),
        None => return false,
    };
    let path = Path::new(&unquoted);
    path.is_absolute() && path.file_name().is_some_and(|name| name == "lf-tray")
}

/// Why the file was left alone, in a sentence for the person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A JSON value that keeps its objects' key order (and any duplicate keys) as read.
#[derive(Debug, Clone, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    fn get_mut(&mut self, key: &str) -> Option<&mut Json> {
        match self {
            // The last of duplicate keys is the one a JSON reader takes.
            Json::Object(entries) => entries
                .iter_mut()
                .rev()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v),
            _ => None,
        }
    }

    fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(entries) => entries.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    fn remove(&mut self, key: &str) {
        if let Json::Object(entries) = self {
            entries.retain(|(k, _)| k != key);
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Number(_) => "a number",
            Json::String(_) => "a string",
            Json::Array(_) => "a list",
            Json::Object(_) => "an object",
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Json, D::Error> {
        struct Any;
        impl<'de> Visitor<'de> for Any {
            type Value = Json;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Json, E> {
                Ok(Json::Bool(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Json, E> {
                Ok(Json::Number(v.into()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Json, E> {
                Ok(Json::Number(v.into()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Json, E> {
                serde_json::Number::from_f64(v)
                    .map(Json::Number)
                    .ok_or_else(|| E::custom("not a JSON number"))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Json, E> {
                Ok(Json::String(v.to_string()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Json, E> {
                Ok(Json::String(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Json::Array(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
                let mut entries = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, Json>()? {
                    entries.push((key, value));
                }
                Ok(Json::Object(entries))
            }
        }
        deserializer.deserialize_any(Any)
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => serializer.serialize_unit(),
            Json::Bool(b) => serializer.serialize_bool(*b),
            Json::Number(n) => n.serialize(serializer),
            Json::String(s) => serializer.serialize_str(s),
            Json::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Json::Object(entries) => {
                let mut map = serializer.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

fn parse(text: &str) -> Result<Json, Refusal> {
    let json: Json = serde_json::from_str(text).map_err(|e| {
        Refusal(format!(
            "it is not valid JSON ({e}); fix it, or turn this off"
        ))
    })?;
    if !matches!(json, Json::Object(_)) {
        return Err(Refusal(format!("it holds {}, not an object", json.kind())));
    }
    if let Some(hooks) = json.get("hooks") {
        if !matches!(hooks, Json::Object(_)) {
            return Err(Refusal(format!(
                "its \"hooks\" is {}, not an object",
                hooks.kind()
            )));
        }
        if let Some(list) = hooks.get(EVENT) {
            if !matches!(list, Json::Array(_)) {
                return Err(Refusal(format!(
                    "its \"hooks\".\"{EVENT}\" is {}, not a list",
                    list.kind()
                )));
            }
        }
    }
    Ok(json)
}

/// Two-space JSON, as Claude Code writes the file, ending as the person's did.
fn render(json: &Json, newline: bool) -> String {
    let mut text = serde_json::to_string_pretty(json).expect("a JSON tree always renders");
    if newline {
        text.push('\n');
    }
    text
}

fn our_hook(command: &str) -> Json {
    Json::Object(vec![
        ("type".into(), Json::String("command".into())),
        ("command".into(), Json::String(command.into())),
        ("timeout".into(), Json::Number(TIMEOUT_SECONDS.into())),
    ])
}

fn hook_command(hook: &Json) -> Option<&str> {
    match (hook.get("type"), hook.get("command")) {
        (Some(Json::String(t)), Some(Json::String(c))) if t == "command" => Some(c),
        _ => None,
    }
}

/// The tray's hooks in the `PermissionRequest` list, as (entry, hook) indices.
fn ours(list: &[Json]) -> Vec<(usize, usize, String)> {
    let mut found = Vec::new();
    for (e, entry) in list.iter().enumerate() {
        if let Some(Json::Array(hooks)) = entry.get("hooks") {
            for (h, hook) in hooks.iter().enumerate() {
                if let Some(command) = hook_command(hook).filter(|c| is_ours(c)) {
                    found.push((e, h, command.to_string()));
                }
            }
        }
    }
    found
}

/// Take every hook of the tray's out of the list; an entry left with no hooks goes too
/// (it was the tray's), an entry the person shares with hooks of their own stays.
fn strip_ours(list: &mut Vec<Json>) {
    for entry in list.iter_mut() {
        if let Some(Json::Array(hooks)) = entry.get_mut("hooks") {
            hooks.retain(|hook| !hook_command(hook).is_some_and(is_ours));
        }
    }
    list.retain(
        |entry| !matches!(entry.get("hooks"), Some(Json::Array(hooks)) if hooks.is_empty()),
    );
}

/// The file with the tray's entry in it, running `command`; `None` when it already holds
/// exactly that one entry (nothing to write). A tray entry for another path (the binary
/// moved) is replaced; a second one is never added.
pub fn with_hook(text: Option<&str>, command: &str) -> Result<Option<String>, Refusal> {
    let (mut json, newline) = match text {
        Some(text) if !text.trim().is_empty() => (parse(text)?, text.ends_with('\n')),
        _ => (Json::Object(Vec::new()), true),
    };
    if let Some(Json::Array(list)) = json.get("hooks").and_then(|h| h.get(EVENT)) {
        let found = ours(list);
        if found.len() == 1 && found[0].2 == command {
            return Ok(None);
        }
    }
    let Json::Object(top) = &mut json else {
        unreachable!("parse admits objects only")
    };
    if !top.iter().any(|(k, _)| k == "hooks") {
        top.push(("hooks".into(), Json::Object(Vec::new())));
    }
    let hooks = json.get_mut("hooks").expect("just made");
    let Json::Object(events) = hooks else {
        unreachable!("parse checked it")
    };
    if !events.iter().any(|(k, _)| k == EVENT) {
        events.push((EVENT.into(), Json::Array(Vec::new())));
    }
    let Some(Json::Array(list)) = hooks.get_mut(EVENT) else {
        unreachable!("parse checked it")
    };
    strip_ours(list);
    list.push(Json::Object(vec![
        ("matcher".into(), Json::String(String::new())),
        ("hooks".into(), Json::Array(vec![our_hook(command)])),
    ]));
    Ok(Some(render(&json, newline)))
}

/// The file without the tray's entry; `None` when it has none (nothing to write). A list
/// or `hooks` object left empty goes with it, so a file the tray only added to is as it was.
pub fn without_hook(text: Option<&str>) -> Result<Option<String>, Refusal> {
    let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
        return Ok(None);
    };
    let mut json = parse(text)?;
    let Some(hooks) = json.get_mut("hooks") else {
        return Ok(None);
    };
    let Some(Json::Array(list)) = hooks.get_mut(EVENT) else {
        return Ok(None);
    };
    if ours(list).is_empty() {
        return Ok(None);
    }
    strip_ours(list);
    if list.is_empty() {
        hooks.remove(EVENT);
    }
    if matches!(hooks, Json::Object(events) if events.is_empty()) {
        json.remove("hooks");
    }
    Ok(Some(render(&json, text.ends_with('\n'))))
}

/// What [`apply`] did to the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    Unchanged,
    Written,
}

/// Put the tray's hook in (`Some(command)`) or take it out (`None`), writing the file
/// atomically (a temp file beside it, renamed over it, with the file's own permissions),
/// through a symlink to the file it names. Nothing is written when nothing changes.
pub fn apply(path: &Path, command: Option<&str>) -> Result<Applied, Refusal> {
    let shown = path.display();
    // A settings file kept elsewhere (a dotfiles checkout) and linked here stays linked.
    let target = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let text = match std::fs::read_to_string(&target) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Refusal(format!("{shown} could not be read: {e}"))),
    };
    let changed = match command {
        Some(command) => with_hook(text.as_deref(), command),
        None => without_hook(text.as_deref()),
    }
    .map_err(|Refusal(why)| Refusal(format!("{shown} was left as it is: {why}")))?;
    let Some(new) = changed else {
        return Ok(Applied::Unchanged);
    };
    write_atomically(&target, new.as_bytes())
        .map_err(|e| Refusal(format!("{shown} could not be written: {e}")))?;
    Ok(Applied::Written)
}

fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut temp = tempfile::NamedTempFile::new_in(dir)?;
    if let Ok(meta) = std::fs::metadata(path) {
        temp.as_file().set_permissions(meta.permissions())?;
    }
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const CMD: &str = "/usr/bin/lf-tray permission-hook";

    /// A file as Claude Code writes it, with hooks of the person's own.
    const PERSONS: &str = r#"{
  "model": "opus",
  "permissions": {
    "allow": [
      "Bash(cargo test:*)"
    ],
    "deny": []
  },
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "~/bin/audit.sh"
          }
        ]
      }
    ],
    "PermissionRequest": [
      {
        "matcher": "Write",
        "hooks": [
          {
            "type": "command",
            "command": "notify-send write"
          }
        ]
      }
    ]
  },
  "zeta": 1.5,
  "alpha": null
}"#;

    fn entries(text: &str) -> Vec<serde_json::Value> {
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        v["hooks"][EVENT].as_array().cloned().unwrap_or_default()
    }

    #[test]
    fn on_adds_one_entry_and_keeps_the_rest_in_order() {
        let on = with_hook(Some(PERSONS), CMD).unwrap().unwrap();
        let list = entries(&on);
        assert_eq!(list.len(), 2);
        assert_eq!(
            list[0]["matcher"], "Write",
            "the person's entry stays first"
        );
        assert_eq!(
            list[1],
            serde_json::json!({"matcher": "", "hooks": [
                {"type": "command", "command": CMD, "timeout": 600}]})
        );
        // Everything else is as it was, keys in the person's order.
        let keys: Vec<&str> = on
            .lines()
            .filter(|l| l.starts_with("  \""))
            .map(|l| l.trim().split('"').nth(1).unwrap())
            .collect();
        assert_eq!(keys, ["model", "permissions", "hooks", "zeta", "alpha"]);
        assert!(on.contains("~/bin/audit.sh") && on.contains("\"zeta\": 1.5"));
        // Again: nothing to write, never a second entry.
        assert_eq!(with_hook(Some(&on), CMD).unwrap(), None);
    }

    #[test]
    fn off_gives_back_the_persons_file_byte_for_byte() {
        let on = with_hook(Some(PERSONS), CMD).unwrap().unwrap();
        assert_eq!(without_hook(Some(&on)).unwrap().unwrap(), PERSONS);
        let with_newline = format!("{PERSONS}\n");
        let on = with_hook(Some(&with_newline), CMD).unwrap().unwrap();
        assert_eq!(without_hook(Some(&on)).unwrap().unwrap(), with_newline);
        // A file without hooks gets hooks, and loses them again.
        let plain = "{\n  \"model\": \"sonnet\"\n}\n";
        let on = with_hook(Some(plain), CMD).unwrap().unwrap();
        assert_eq!(entries(&on).len(), 1);
        assert_eq!(without_hook(Some(&on)).unwrap().unwrap(), plain);
        // Nothing of the tray's: nothing to write.
        assert_eq!(without_hook(Some(PERSONS)).unwrap(), None);
        assert_eq!(without_hook(None).unwrap(), None);
    }

    #[test]
    fn a_moved_binary_is_repaired_to_one_entry() {
        let old = with_hook(Some(PERSONS), "'/opt/old place/lf-tray' permission-hook")
            .unwrap()
            .unwrap();
        let moved = with_hook(Some(&old), CMD).unwrap().unwrap();
        let list = entries(&moved);
        assert_eq!(list.len(), 2);
        assert_eq!(list[1]["hooks"][0]["command"], CMD);
        // Two of the tray's (a hand copy) become one.
        let twice = with_hook(Some(&moved), "/tmp/x/lf-tray permission-hook")
            .unwrap()
            .unwrap();
        let mut doubled: serde_json::Value = serde_json::from_str(&twice).unwrap();
        let extra = doubled["hooks"][EVENT][1].clone();
        doubled["hooks"][EVENT].as_array_mut().unwrap().push(extra);
        let doubled = serde_json::to_string_pretty(&doubled).unwrap();
        let fixed = with_hook(Some(&doubled), CMD).unwrap().unwrap();
        assert_eq!(entries(&fixed).len(), 2);
    }

    #[test]
    fn only_the_trays_own_hook_goes() {
        // The person put a hook of their own beside the tray's in its entry, and has one
        // that merely mentions lf-tray.
        let shared = format!(
            r#"{{"hooks": {{"PermissionRequest": [
                {{"matcher": "", "hooks": [{{"type": "command", "command": "{CMD}"}},
                                          {{"type": "command", "command": "mine"}}]}},
                {{"matcher": "", "hooks": [{{"type": "command", "command": "lf-tray permission-hook"}}]}},
                {{"matcher": "", "hooks": [{{"type": "command", "command": "/usr/bin/lf-tray permission-hook --other"}}]}}
            ]}}}}"#
        );
        let off = without_hook(Some(&shared)).unwrap().unwrap();
        let list = entries(&off);
        assert_eq!(list.len(), 3);
        assert_eq!(
            list[0]["hooks"],
            serde_json::json!([{"type": "command", "command": "mine"}])
        );
    }

    #[test]
    fn a_file_that_does_not_parse_is_refused_with_why() {
        for (text, why) in [
            ("{ \"model\": ", "not valid JSON"),
            ("[1, 2]", "not an object"),
            ("{\"hooks\": []}", "\"hooks\" is a list"),
            ("{\"hooks\": {\"PermissionRequest\": {}}}", "not a list"),
        ] {
            let on = with_hook(Some(text), CMD).unwrap_err();
            assert!(on.0.contains(why), "{text}: {on}");
            assert!(without_hook(Some(text)).is_err(), "{text}");
        }
    }

    #[test]
    fn commands_quote_the_path_and_are_recognised() {
        use crate::permission::Client;
        assert_eq!(command(Path::new("/usr/bin/lf-tray"), Client::Claude), CMD);
        let odd = command(Path::new("/home/o'neil/my apps/lf-tray"), Client::Claude);
        assert_eq!(odd, r"'/home/o'\''neil/my apps/lf-tray' permission-hook");
        let codex = command(Path::new("/usr/bin/lf-tray"), Client::Codex);
        assert_eq!(codex, "/usr/bin/lf-tray permission-hook --codex");
        assert!(is_ours(&odd) && is_ours(CMD) && is_ours(&codex));
        for not in [
            "/usr/bin/lf-tray permission-hook --other",
            "/usr/bin/lf-tray permission-hook --codex --codex",
            "lf-tray permission-hook",
            "/usr/bin/lf-tray-old permission-hook",
            "/usr/bin/lf-tray permission-hook; rm -rf ~",
            "/bin/sh -c x /usr/bin/lf-tray permission-hook",
        ] {
            assert!(!is_ours(not), "{not}");
        }
    }

    /// Codex's `hooks.json` is Claude's format: the same one entry, and off means off.
    #[test]
    fn codexs_hooks_file_gets_exactly_one_entry_and_loses_it_whole() {
        let codex = "/usr/bin/lf-tray permission-hook --codex";
        assert_eq!(
            codex_path(None, Some("/home/p".into())),
            Some(PathBuf::from("/home/p/.codex/hooks.json"))
        );
        assert_eq!(
            codex_path(Some("/srv/codex".into()), Some("/home/p".into())),
            Some(PathBuf::from("/srv/codex/hooks.json"))
        );
        let persons = r#"{
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "",
        "hooks": [
          {
            "type": "command",
            "command": "~/bin/audit.sh"
          }
        ]
      }
    ]
  }
}
"#;
        let on = with_hook(Some(persons), codex).unwrap().unwrap();
        assert_eq!(entries(&on).len(), 1);
        assert!(on.contains(r#""command": "/usr/bin/lf-tray permission-hook --codex""#));
        assert_eq!(with_hook(Some(&on), codex).unwrap(), None);
        // A Claude-style entry of the tray's in Codex's file is replaced, never doubled.
        let claudes = with_hook(Some(persons), CMD).unwrap().unwrap();
        let fixed = with_hook(Some(&claudes), codex).unwrap().unwrap();
        assert_eq!(entries(&fixed).len(), 1);
        assert_eq!(without_hook(Some(&on)).unwrap().unwrap(), persons);
    }

    #[test]
    fn apply_writes_atomically_keeps_mode_and_links_and_never_touches_a_bad_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("dotfiles-settings.json");
        std::fs::write(&real, PERSONS).unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
        let link = dir.path().join(".claude").join("settings.json");
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();

        assert_eq!(apply(&link, Some(CMD)).unwrap(), Applied::Written);
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(entries(&std::fs::read_to_string(&real).unwrap()).len(), 2);
        let mode = std::fs::metadata(&real).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(apply(&link, Some(CMD)).unwrap(), Applied::Unchanged);
        assert_eq!(apply(&link, None).unwrap(), Applied::Written);
        assert_eq!(std::fs::read_to_string(&real).unwrap(), PERSONS);
        // No temp file left beside it.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);

        std::fs::write(&real, "{ broken").unwrap();
        let refused = apply(&link, Some(CMD)).unwrap_err();
        assert!(refused.0.contains("left as it is"), "{refused}");
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "{ broken");

        // No file yet: on makes one; off with none writes nothing.
        let fresh = dir.path().join("new").join("settings.json");
        assert_eq!(apply(&fresh, None).unwrap(), Applied::Unchanged);
        assert!(!fresh.exists());
        assert_eq!(apply(&fresh, Some(CMD)).unwrap(), Applied::Written);
        assert_eq!(entries(&std::fs::read_to_string(&fresh).unwrap()).len(), 1);
    }

    #[test]
    fn the_path_follows_claude_config_dir() {
        assert_eq!(
            path(Some("/c".into()), Some("/home/me".into())),
            Some(PathBuf::from("/c/settings.json"))
        );
        assert_eq!(
            path(Some("".into()), Some("/home/me".into())),
            Some(PathBuf::from("/home/me/.claude/settings.json"))
        );
    }
}
