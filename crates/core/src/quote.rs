//! POSIX shell quoting, and the small word splitter for custom terminal templates.

/// Quote `s` as one word for a POSIX shell (sh, dash, bash, zsh; fish reads it the same).
///
/// Words made only of characters no shell treats specially are left bare, so a command
/// shown to the user stays readable (`'/my dir/lf' session open 'ask_1'`). Everything
/// else goes inside single quotes, where nothing is special; a single quote itself is
/// written as `'\''` (close, escaped quote, reopen). `=` and `~` are never bare: a bare
/// `A=b` at the start of a command is an assignment, and a leading `~` expands.
pub fn shell_quote(s: &str) -> String {
    let bare = |c: char| c.is_ascii_alphanumeric() || "_-./:,@%+".contains(c);
    if !s.is_empty() && s.chars().all(bare) {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Split a template into words the way a shell would, without any expansion: blanks
/// separate words; `'…'` keeps everything literally; `"…"` keeps everything but lets a
/// backslash escape `"` and `\`; outside quotes a backslash escapes the next character.
/// Quoted and bare parts next to each other form one word, and `""` is an empty word.
pub fn split_words(text: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    // Whether a word has started: `""` must yield an empty word, blanks must not.
    let mut in_word = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err("a single quote is not closed".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err("a double quote is not closed".into()),
                        },
                        Some(c) => word.push(c),
                        None => return Err("a double quote is not closed".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => word.push(c),
                    None => return Err("it ends with a lone backslash".into()),
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_words_stay_bare_and_the_rest_is_single_quoted() {
        assert_eq!(shell_quote("session"), "session");
        assert_eq!(shell_quote("/usr/local/bin/lf"), "/usr/local/bin/lf");
        assert_eq!(shell_quote("--replace"), "--replace");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("my dir"), "'my dir'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote("$(id)"), "'$(id)'");
        assert_eq!(shell_quote("a=b"), "'a=b'");
        assert_eq!(shell_quote("~/x"), "'~/x'");
        assert_eq!(shell_quote("line\nbreak"), "'line\nbreak'");
        assert_eq!(shell_quote("ünï"), "'ünï'");
    }

    #[test]
    fn quoted_words_come_back_intact_from_a_real_shell() {
        let hostile = [
            "",
            " ",
            "it's",
            "''",
            "\"\"",
            "$(touch /tmp/lf-pwned)",
            "`id`",
            "; rm -rf ~",
            "a && b || c",
            "line\nbreak\n",
            "-n",
            "--replace",
            "ünï ✓",
            "\\",
            "*",
            "a=b",
            "~",
            "!!",
            "#not a comment",
        ];
        let line = hostile.iter().map(|s| shell_quote(s)).collect::<Vec<_>>();
        let script = format!("printf '%s\\0' {}", line.join(" "));
        let out = std::process::Command::new("sh")
            .args(["-c", &script])
            .output()
            .unwrap();
        assert!(out.status.success());
        let got: Vec<&str> = std::str::from_utf8(&out.stdout)
            .unwrap()
            .split_terminator('\0')
            .collect();
        assert_eq!(got, hostile);
    }

    #[test]
    fn splitting_honours_quotes_and_escapes() {
        let words = |t: &str| split_words(t).unwrap();
        assert_eq!(words("  urxvt  -e  {argv} "), ["urxvt", "-e", "{argv}"]);
        assert_eq!(words("a 'b c' \"d e\""), ["a", "b c", "d e"]);
        assert_eq!(
            words(r#"sh -c "cd {cwd} && exec {argv}""#)[2],
            "cd {cwd} && exec {argv}"
        );
        assert_eq!(words(r#""say \"hi\" \\ \n""#), [r#"say "hi" \ \n"#]);
        assert_eq!(words(r"a\ b 'it'\''s'"), ["a b", "it's"]);
        assert_eq!(words("--dir='{cwd}'x"), ["--dir={cwd}x"]);
        assert_eq!(words("x '' \"\""), ["x", "", ""]);
        assert_eq!(words(""), Vec::<String>::new());
    }

    #[test]
    fn unfinished_quotes_are_refused() {
        assert!(split_words("a 'b").is_err());
        assert!(split_words("a \"b").is_err());
        assert!(split_words("a \"b\\").is_err());
        assert!(split_words("a \\").is_err());
    }
}
