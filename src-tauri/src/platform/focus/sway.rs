//! sway and i3, through `swaymsg`: their views by pid, the focused one, and focusing.

use super::*;
use serde_json::Value;

fn tree() -> Option<Value> {
    serde_json::from_str(&run("swaymsg", &["-r", "-t", "get_tree"]).ok()?).ok()
}

fn walk<'a>(node: &'a Value, out: &mut Vec<&'a Value>) {
    if node.get("pid").and_then(Value::as_u64).is_some() {
        out.push(node);
    }
    for key in ["nodes", "floating_nodes"] {
        for child in node
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            walk(child, out);
        }
    }
}

fn views() -> Vec<(u32, u32, bool)> {
    let Some(tree) = tree() else {
        return Vec::new();
    };
    let mut nodes = Vec::new();
    walk(&tree, &mut nodes);
    nodes
        .into_iter()
        .filter_map(|n| {
            Some((
                n.get("pid")?.as_u64()? as u32,
                n.get("id")?.as_u64()? as u32,
                n.get("focused").and_then(Value::as_bool).unwrap_or(false),
            ))
        })
        .collect()
}

/// Views by pid, as con ids (what `[con_id=N]` takes).
pub(super) fn windows() -> HashMap<u32, u32> {
    views().into_iter().map(|(pid, id, _)| (pid, id)).collect()
}

pub(super) fn focused() -> Option<u32> {
    views().into_iter().find(|v| v.2).map(|v| v.1)
}

pub(super) fn focus(con: u32) -> Result<(), String> {
    run("swaymsg", &[&format!("[con_id={con}]"), "focus"]).map(|_| ())
}
