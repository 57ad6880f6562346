//! A user's own terminal command: a template with `{cwd}` and `{argv}` placeholders.
//!
//! The rule is documented on [`Choice::Custom`](super::Choice::Custom).

use crate::quote::{shell_quote, split_words};

const ARGV: &str = "{argv}";
const CWD: &str = "{cwd}";

/// The template's words with the placeholders filled in; the first is the program.
pub(super) fn expand(template: &str, cwd: &str, argv: &[String]) -> Result<Vec<String>, String> {
    let words = split_words(template).map_err(|why| format!("{template:?}: {why}"))?;
    if words.is_empty() {
        return Err("the custom terminal command is empty".into());
    }
    if !words.iter().any(|word| word.contains(ARGV)) {
        return Err(format!(
            "{template:?} has no {ARGV}, so the session would not run in it"
        ));
    }
    let command_line = argv
        .iter()
        .map(|arg| shell_quote(arg))
        .collect::<Vec<_>>()
        .join(" ");
    let mut out = Vec::new();
    for word in words {
        match word.as_str() {
            ARGV => out.extend(argv.iter().cloned()),
            CWD => out.push(cwd.to_string()),
            _ => out.push(substitute(&word, &command_line, &shell_quote(cwd))),
        }
    }
    Ok(out)
}

fn substitute(word: &str, command_line: &str, quoted_cwd: &str) -> String {
    let mut out = String::new();
    let mut rest = word;
    while let Some(at) = rest.find('{') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        if let Some(after) = rest.strip_prefix(ARGV) {
            out.push_str(command_line);
            rest = after;
        } else if let Some(after) = rest.strip_prefix(CWD) {
            out.push_str(quoted_cwd);
            rest = after;
        } else {
            out.push('{');
            rest = &rest[1..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn whole_words_expand_to_separate_arguments() {
        let got = expand(
            "urxvt -cd {cwd} -e {argv}",
            "/src/my app",
            &argv(&["/bin/lf", "session", "open", "ask 1"]),
        )
        .unwrap();
        assert_eq!(
            got,
            [
                "urxvt",
                "-cd",
                "/src/my app",
                "-e",
                "/bin/lf",
                "session",
                "open",
                "ask 1"
            ]
        );
    }

    #[test]
    fn embedded_placeholders_are_shell_quoted_in_one_pass() {
        let got = expand(
            r#"sh -c "cd {cwd} && exec {argv}" --dir={cwd}"#,
            "/src/it's",
            &argv(&["/bin/lf", "open", "{cwd}", "{argv}"]),
        )
        .unwrap();
        assert_eq!(
            got,
            [
                "sh",
                "-c",
                r"cd '/src/it'\''s' && exec /bin/lf open '{cwd}' '{argv}'",
                r"--dir='/src/it'\''s'",
            ]
        );
        let plain = expand("t --dir={cwd} {argv}", "/src/app", &argv(&["lf"])).unwrap();
        assert_eq!(plain, ["t", "--dir=/src/app", "lf"]);
    }

    #[test]
    fn unusable_templates_say_why() {
        let lf = argv(&["/bin/lf"]);
        assert!(expand("", "/", &lf).unwrap_err().contains("empty"));
        assert!(expand("xterm -e", "/", &lf).unwrap_err().contains("{argv}"));
        assert!(expand("xterm -e '{argv}", "/", &lf)
            .unwrap_err()
            .contains("not closed"));
    }
}
