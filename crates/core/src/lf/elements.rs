//! lf's list split into its elements' bytes without decoding them: a small scanner that
//! knows strings (and their escapes) and nesting, and nothing else. What each element
//! holds is left to its decoding, which happens only for an element lf printed
//! differently from the last list ([`super::last_list`]); so a list of ten thousand in
//! which one changed is scanned once and decoded once, not parsed ten thousand times.
//!
//! The scanner checks what lies between the elements (the brackets, commas and
//! whitespace) and that each element's brackets and strings close; an element that is
//! not valid JSON inside is found when it is decoded, and an unchanged one was valid the
//! last time (only decoded records are kept).

/// JSON's whitespace, the only bytes allowed around the elements and the commas.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// The bytes of each element of the JSON array `bytes` (leading whitespace allowed),
/// in order, or a sentence saying where it is not an array of whole values.
pub(crate) fn array_elements(bytes: &[u8]) -> Result<Vec<&[u8]>, String> {
    // A list's elements are 1–2 KB each: room for them up front, no growth copies.
    let mut elements = Vec::with_capacity(bytes.len() / 1024 + 1);
    let mut at = skip_space(bytes, 0);
    if bytes.get(at) != Some(&b'[') {
        return Err(at_byte("expected `[`", at));
    }
    at = skip_space(bytes, at + 1);
    if bytes.get(at) == Some(&b']') {
        return end(bytes, at + 1).map(|()| elements);
    }
    loop {
        let start = at;
        at = value_end(bytes, at)?;
        elements.push(&bytes[start..at]);
        at = skip_space(bytes, at);
        match bytes.get(at) {
            Some(b',') => at = skip_space(bytes, at + 1),
            Some(b']') => return end(bytes, at + 1).map(|()| elements),
            Some(_) => return Err(at_byte("expected `,` or `]`", at)),
            None => return Err(unfinished()),
        }
    }
}

fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).copied().is_some_and(is_space) {
        at += 1;
    }
    at
}

/// Only whitespace after the array.
fn end(bytes: &[u8], at: usize) -> Result<(), String> {
    let rest = skip_space(bytes, at);
    if rest == bytes.len() {
        Ok(())
    } else {
        Err(at_byte("unexpected text after the list", rest))
    }
}

fn at_byte(what: &str, at: usize) -> String {
    format!("{what} at byte {}", at + 1)
}

fn unfinished() -> String {
    "the list ends before it closes".into()
}

/// Where the value starting at `at` ends: after its closing bracket or quote, or, for a
/// number or a word (`null`, `true`), at the first byte that cannot be part of one.
fn value_end(bytes: &[u8], at: usize) -> Result<usize, String> {
    match bytes.get(at) {
        None => Err(unfinished()),
        Some(b'{' | b'[') => nested_end(bytes, at),
        Some(b'"') => string_end(bytes, at + 1),
        Some(b',' | b']' | b'}' | b':') => Err(at_byte("expected a value", at)),
        Some(_) => {
            let len = bytes[at..]
                .iter()
                .position(|&b| is_space(b) || matches!(b, b',' | b']' | b'}' | b'[' | b'{'))
                .unwrap_or(bytes.len() - at);
            Ok(at + len)
        }
    }
}

/// After the quote that closes the string whose contents start at `at`.
fn string_end(bytes: &[u8], mut at: usize) -> Result<usize, String> {
    loop {
        let Some(found) = memchr::memchr2(b'"', b'\\', &bytes[at..]) else {
            return Err(unfinished());
        };
        at += found;
        if bytes[at] == b'"' {
            return Ok(at + 1);
        }
        // An escape: the byte after the backslash (a quote, another backslash, `u`, …)
        // is never the string's end.
        at += 2;
        if at > bytes.len() {
            return Err(unfinished());
        }
    }
}

/// After the bracket that closes the object or array opening at `at`, each bracket
/// matched with its own kind.
fn nested_end(bytes: &[u8], mut at: usize) -> Result<usize, String> {
    // lf's records nest three or four deep; deeper is kept on the heap.
    let mut open: Vec<u8> = Vec::with_capacity(8);
    loop {
        let Some(&b) = bytes.get(at) else {
            return Err(unfinished());
        };
        match b {
            b'"' => {
                at = string_end(bytes, at + 1)?;
                continue;
            }
            b'{' => open.push(b'}'),
            b'[' => open.push(b']'),
            b'}' | b']' => {
                if open.pop() != Some(b) {
                    return Err(at_byte("a bracket closes what it did not open", at));
                }
                if open.is_empty() {
                    return Ok(at + 1);
                }
            }
            _ => {}
        }
        at += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::value::RawValue;

    /// What serde_json reads as the array's elements, as text.
    fn serde_elements(text: &str) -> Result<Vec<String>, serde_json::Error> {
        let items: Vec<&RawValue> = serde_json::from_str(text)?;
        Ok(items.into_iter().map(|i| i.get().to_string()).collect())
    }

    fn scanned(text: &str) -> Result<Vec<String>, String> {
        array_elements(text.as_bytes()).map(|items| {
            items
                .into_iter()
                .map(|i| String::from_utf8(i.to_vec()).unwrap())
                .collect()
        })
    }

    #[test]
    fn elements_are_what_serde_json_reads() {
        let tricky = [
            "[]",
            " \n[ \t]\r\n",
            r#"[{"a":"x\"]}"},{"b":"[{"}]"#,
            r#"[{"a":"\\"},{"b":"\\\""}]"#,
            r#"[{"t":"ünï ✓ \u00e9 😀","n":[1,[2,{"c":[]}]]}]"#,
            "[\n  {\n    \"id\": \"a\",\n    \"x\": null\n  },\n  {\"id\":\"b\"}\n]\n",
            r#"[1, -2.5e3, true, null, "s", [], {}]"#,
            r#"[{"key with } and ]":"value with { and ["}]"#,
            r#"[[[[[[[[[[[[1]]]]]]]]]]]]"#,
        ];
        for text in tricky {
            assert_eq!(
                scanned(text).unwrap(),
                serde_elements(text).unwrap(),
                "{text}"
            );
        }
    }

    #[test]
    fn a_list_that_is_not_whole_is_refused_with_where() {
        let bad = [
            ("", "expected `[` at byte 1"),
            ("{}", "expected `[` at byte 1"),
            ("[", "the list ends before it closes"),
            (r#"[{"a":1}"#, "the list ends before it closes"),
            (r#"[{"a":"1}]"#, "the list ends before it closes"),
            (r#"[{"a":1},]"#, "expected a value at byte 10"),
            (r#"[{"a":1} {"b":2}]"#, "expected `,` or `]` at byte 10"),
            (
                r#"[{"a":[1}]"#,
                "a bracket closes what it did not open at byte 9",
            ),
            (r#"[{"a":1}}]"#, "expected `,` or `]` at byte 9"),
            (
                r#"[{"a":1}] x"#,
                "unexpected text after the list at byte 11",
            ),
            (r#"[{"a":"\"#, "the list ends before it closes"),
            ("[,]", "expected a value at byte 2"),
        ];
        for (text, want) in bad {
            assert_eq!(scanned(text).unwrap_err(), want, "{text}");
            assert!(serde_elements(text).is_err(), "serde_json agrees: {text}");
        }
    }

    /// What the scanner leaves to the decoding: an element whose brackets close but whose
    /// inside is not JSON is handed out whole, for its decoding to refuse.
    #[test]
    fn an_element_invalid_inside_is_left_to_its_decoding() {
        let text = r#"[{"id":"a"},{"id" "b"},tru]"#;
        assert_eq!(
            scanned(text).unwrap(),
            [r#"{"id":"a"}"#, r#"{"id" "b"}"#, "tru"]
        );
        assert!(serde_elements(text).is_err());
    }
}
