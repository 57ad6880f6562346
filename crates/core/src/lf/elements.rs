//! lf's list split into its elements' bytes as it arrives, without decoding them: a small
//! scanner that knows strings (and their escapes) and nesting, and nothing else. What
//! each element holds is left to its decoding, which happens only for an element lf
//! printed differently from the last list ([`super::last_list`]); so a list of ten
//! thousand in which one changed is scanned once and decoded once, not parsed ten
//! thousand times, and is never held whole: an element is handed on as soon as its last
//! byte is in.
//!
//! The scanner checks what lies between the elements (the brackets, commas and
//! whitespace) and that each element's brackets and strings close; an element that is
//! not valid JSON inside is found when it is decoded, and an unchanged one was valid the
//! last time (only decoded records are kept).

/// JSON's whitespace, the only bytes allowed around the elements and the commas.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// What the scanner expects next.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// The array's `[` (or, for C's and D's pages, an object: read whole).
    #[default]
    Open,
    /// The first element, or the `]` of an empty array.
    FirstOrClose,
    Element,
    CommaOrClose,
    /// Only whitespace after the array.
    Nothing,
    /// Not an array: everything is kept, to be read whole at the end.
    Whole,
}

/// Why the scan stopped short of a whole value.
enum Stop {
    /// The bytes so far end inside it.
    More,
    /// Not JSON: what was wrong, at this index of the bytes scanned.
    At(&'static str, usize),
}

/// How much of the next bytes an element left unfinished is first tried with: most of lf's
/// elements are one or two kilobytes, so a few tries finish one, each a small copy.
const FIRST_PIECE: usize = 64;

/// One answer of lf, fed as it is read: each whole element of its array is handed on
/// ([`Stream::push`]), and only the element being read is kept.
#[derive(Debug, Default)]
pub(crate) struct Stream {
    /// The bytes not handed on yet: the start of an element, or of what comes next.
    pending: Vec<u8>,
    /// How many bytes came before `pending`, for saying where something is wrong.
    before: usize,
    expect: Expect,
}

impl Stream {
    /// Add the next bytes of the answer, handing each element now whole to `each`; the
    /// first thing wrong stops it (what `each` says, or where the answer is no list).
    pub(crate) fn push(
        &mut self,
        bytes: &[u8],
        mut each: impl FnMut(&[u8]) -> Result<(), String>,
    ) -> Result<(), String> {
        let mut pending = std::mem::take(&mut self.pending);
        let mut from = 0;
        // The element the last bytes ended inside is finished first, from as few of these
        // bytes as it needs (twice as many each time it needs more), so that the rest are
        // scanned where they are rather than copied behind it.
        let mut piece = FIRST_PIECE;
        while !pending.is_empty() && from < bytes.len() {
            let more = piece.min(bytes.len() - from);
            pending.extend_from_slice(&bytes[from..from + more]);
            from += more;
            let used = self.scan(&pending, false, |_, item| each(item))?;
            let kept = pending.len() - used;
            if kept <= more {
                // What is left came from these bytes: it is scanned with the rest of them.
                from -= kept;
                pending.clear();
            } else {
                pending.drain(..used);
                piece *= 2;
            }
        }
        if pending.is_empty() {
            // The usual case between elements: the bytes are scanned where they are, and
            // only an element they end inside is kept.
            let used = self.scan(&bytes[from..], false, |_, item| each(item))?;
            pending.extend_from_slice(&bytes[from + used..]);
        }
        self.pending = pending;
        Ok(())
    }

    /// The answer is all in: the elements left go to `each`. For an answer that is not an
    /// array (C's and D's pages are objects), its bytes, whole, to be read as one.
    pub(crate) fn end(
        mut self,
        mut each: impl FnMut(&[u8]) -> Result<(), String>,
    ) -> Result<Option<Vec<u8>>, String> {
        let pending = std::mem::take(&mut self.pending);
        let used = self.scan(&pending, true, |_, item| each(item))?;
        self.pending = pending;
        self.pending.drain(..used);
        self.ended()
    }

    /// What is left once the answer is all in and scanned.
    fn ended(self) -> Result<Option<Vec<u8>>, String> {
        match self.expect {
            Expect::Nothing => Ok(None),
            Expect::Whole => Ok(Some(self.pending)),
            Expect::Open => Err(self.at("expected `[`", self.pending.len())),
            _ => Err(unfinished()),
        }
    }

    /// Hand on every element whole in `bytes` (what follows the `before` bytes already
    /// scanned), with where it starts in the answer; how many bytes were used comes back.
    /// An answer that is not an array uses none, from where it starts: it is kept whole.
    fn scan(
        &mut self,
        bytes: &[u8],
        all_in: bool,
        mut each: impl FnMut(usize, &[u8]) -> Result<(), String>,
    ) -> Result<usize, String> {
        let mut at = 0;
        loop {
            at = skip_space(bytes, at);
            let Some(&b) = bytes.get(at) else { break };
            match (self.expect, b) {
                (Expect::Whole, _) => return Ok(0),
                (Expect::Open, b'[') => self.expect = Expect::FirstOrClose,
                (Expect::Open, _) => {
                    self.expect = Expect::Whole;
                    self.before += at;
                    return Ok(at);
                }
                (Expect::FirstOrClose | Expect::CommaOrClose, b']') => {
                    self.expect = Expect::Nothing
                }
                (Expect::CommaOrClose, b',') => self.expect = Expect::Element,
                (Expect::CommaOrClose, _) => {
                    return Err(self.at("expected `,` or `]`", at));
                }
                (Expect::FirstOrClose | Expect::Element, _) => match value_end(bytes, at, all_in) {
                    Ok(end) => {
                        each(self.before + at, &bytes[at..end])?;
                        self.expect = Expect::CommaOrClose;
                        at = end;
                        continue;
                    }
                    Err(Stop::More) if all_in => return Err(unfinished()),
                    Err(Stop::More) => break,
                    Err(Stop::At(what, where_)) => return Err(self.at(what, where_)),
                },
                (Expect::Nothing, _) => return Err(self.at("unexpected text after the list", at)),
            }
            at += 1;
        }
        self.before += at;
        Ok(at)
    }

    fn at(&self, what: &str, at: usize) -> String {
        format!("{what} at byte {}", self.before + at + 1)
    }
}

/// The bytes of each element of the JSON array `bytes` (leading whitespace allowed),
/// in order, or a sentence saying where it is not an array of whole values.
pub(crate) fn array_elements(bytes: &[u8]) -> Result<Vec<&[u8]>, String> {
    let mut elements = Vec::new();
    let mut stream = Stream::default();
    let used = stream.scan(bytes, true, |start, item| {
        elements.push(&bytes[start..start + item.len()]);
        Ok(())
    })?;
    stream.pending.extend_from_slice(&bytes[used..]);
    match stream.ended()? {
        None => Ok(elements),
        Some(_) => Err("expected `[` at byte 1".into()),
    }
}

fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).copied().is_some_and(is_space) {
        at += 1;
    }
    at
}

fn unfinished() -> String {
    "the list ends before it closes".into()
}

/// Where the value starting at `at` ends: after its closing bracket or quote, or, for a
/// number or a word (`null`, `true`), at the first byte that cannot be part of one
/// (which, before `all_in`, must have come).
fn value_end(bytes: &[u8], at: usize, all_in: bool) -> Result<usize, Stop> {
    match bytes[at] {
        b'{' | b'[' => nested_end(bytes, at),
        b'"' => string_end(bytes, at + 1),
        b',' | b']' | b'}' | b':' => Err(Stop::At("expected a value", at)),
        _ => match bytes[at..]
            .iter()
            .position(|&b| is_space(b) || matches!(b, b',' | b']' | b'}' | b'[' | b'{'))
        {
            Some(len) => Ok(at + len),
            None if all_in => Ok(bytes.len()),
            None => Err(Stop::More),
        },
    }
}

/// After the quote that closes the string whose contents start at `at`.
fn string_end(bytes: &[u8], mut at: usize) -> Result<usize, Stop> {
    loop {
        at = first(
            bytes,
            at,
            |word| marks(word, b'"') | marks(word, b'\\'),
            |b| matches!(b, b'"' | b'\\'),
        )
        .ok_or(Stop::More)?;
        if bytes[at] == b'"' {
            return Ok(at + 1);
        }
        // An escape: the byte after the backslash (a quote, another backslash, `u`, …)
        // is never the string's end.
        at += 2;
    }
}

const ONES: u64 = u64::from_ne_bytes([1; 8]);
const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);

/// The high bit of each byte of `word` that is `byte`, and maybe of some after the first
/// (a borrow may carry into them): only the lowest is exact, and only it is read.
fn marks(word: u64, byte: u8) -> u64 {
    let x = word ^ (ONES * u64::from(byte));
    x.wrapping_sub(ONES) & !x & HIGHS
}

/// Where the first byte from `at` on that `is` says is, eight bytes at a time: `marks_of`
/// marks them in a word (a call of memchr costs more than the short strings and the
/// indentation between them that most of lf's JSON is).
fn first(
    bytes: &[u8],
    mut at: usize,
    marks_of: impl Fn(u64) -> u64,
    is: impl Fn(u8) -> bool,
) -> Option<usize> {
    while let Some(eight) = bytes.get(at..at + 8) {
        let word = u64::from_le_bytes(eight.try_into().expect("eight bytes"));
        let marked = marks_of(word);
        if marked != 0 {
            return Some(at + marked.trailing_zeros() as usize / 8);
        }
        at += 8;
    }
    let rest = bytes.get(at..)?;
    rest.iter().position(|&b| is(b)).map(|found| at + found)
}

/// The bytes the scan stops at between strings: a string's start, and the brackets.
const STOPS: [bool; 256] = {
    let mut stops = [false; 256];
    let mut at = 0;
    while at < 5 {
        stops[b"\"{}[]"[at] as usize] = true;
        at += 1;
    }
    stops
};

/// How deep an element may nest: serde_json, which decodes it, refuses deeper.
const DEPTH: u32 = 128;

/// After the bracket that closes the object or array opening at `at`, each bracket
/// matched with its own kind.
fn nested_end(bytes: &[u8], mut at: usize) -> Result<usize, Stop> {
    // What is open, one bit a level (set: an array), so nothing is allocated.
    let mut arrays: u128 = 0;
    let mut depth = 0;
    loop {
        // Between strings most bytes are spaces, names' separators and numbers: passed
        // over eight at a time. `[` and `]` are `{` and `}` less one bit, so setting it
        // finds all four; only a control byte (never JSON here) is found with them.
        at = first(
            bytes,
            at,
            |word| {
                let word = word | (ONES * 0x20);
                marks(word, b'{') | marks(word, b'}') | marks(word, b'"')
            },
            |b| matches!(b | 0x20, b'{' | b'}' | b'"'),
        )
        .ok_or(Stop::More)?;
        match bytes[at] {
            other if !STOPS[other as usize] => {
                return Err(Stop::At("a control byte outside a string", at));
            }
            b'"' => {
                at = string_end(bytes, at + 1)?;
                continue;
            }
            open @ (b'{' | b'[') => {
                if depth == DEPTH {
                    return Err(Stop::At("nested too deep", at));
                }
                arrays = arrays << 1 | u128::from(open == b'[');
                depth += 1;
            }
            close => {
                if depth == 0 || (arrays & 1 == 1) != (close == b']') {
                    return Err(Stop::At("a bracket closes what it did not open", at));
                }
                arrays >>= 1;
                depth -= 1;
                if depth == 0 {
                    return Ok(at + 1);
                }
            }
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
            r#"[{"a":[{"b":[]},[{}]],"c":{"d":[[],{}]}},[{"e":"]"}]]"#,
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
            (
                "[{\"a\":1\u{2}}]",
                "a control byte outside a string at byte 8",
            ),
        ];
        for (text, want) in bad {
            assert_eq!(scanned(text).unwrap_err(), want, "{text}");
            assert!(serde_elements(text).is_err(), "serde_json agrees: {text}");
        }
    }

    /// Read eight bytes at a time, a quote, an escape or a bracket is found at every place
    /// in a word, and in the few bytes after the last whole word.
    #[test]
    fn what_ends_a_string_or_an_element_is_found_wherever_it_falls() {
        for pad in 0..20 {
            let x = "x".repeat(pad);
            let text = format!(
                r#"[{{"{x}":"{x}\"{x}\\","n":[{x:?},{{"{x}":[]}}]}},[{x:?}],"{x}\"]",{pad}]"#
            );
            assert_eq!(
                scanned(&text).unwrap(),
                serde_elements(&text).unwrap(),
                "{text}"
            );
        }
    }

    /// As deep as serde_json decodes, and no deeper.
    #[test]
    fn nesting_stops_where_decoding_does() {
        let nested = |depth: usize| format!("[{}{}]", "[".repeat(depth), "]".repeat(depth));
        assert_eq!(
            scanned(&nested(127)).unwrap(),
            serde_elements(&nested(127)).unwrap()
        );
        assert_eq!(scanned(&nested(128)).unwrap().len(), 1);
        assert!(scanned(&nested(129))
            .unwrap_err()
            .starts_with("nested too deep"));
    }

    /// Fed in pieces of every size, as a pipe may hand them, the stream hands on the same
    /// elements, and refuses the same lists with the same words, as the whole answer.
    #[test]
    fn any_split_of_the_answer_gives_the_same() {
        // Longer than the first pieces an unfinished element is tried with.
        let long = format!(
            r#"[{{"a":"{}\"]","b":[{{}}]}}, {{"c":"{}"}},"{}"]"#,
            "y".repeat(150),
            "z".repeat(300),
            "w".repeat(70)
        );
        let texts = [
            &long,
            "[\n  {\"id\": \"a\", \"t\": \"x\\\"]}\"},\n  [1, {\"b\": []}],\n  -12.5e3 , null,\"s\\\\\"\n]\n",
            r#"[{"a":[1}]"#,
            r#"[{"a":1} {"b":2}]"#,
            r#"[{"a":1}] x"#,
            r#"[{"a":"ü"},"#,
            r#"  {"entries":[],"next":null}"#,
        ];
        for text in texts {
            let whole = scanned(text);
            for size in 1..=text.len() {
                let mut got = Vec::new();
                let mut stream = Stream::default();
                let mut each = |item: &[u8]| {
                    got.push(String::from_utf8(item.to_vec()).unwrap());
                    Ok(())
                };
                let mut result = Ok(None);
                for piece in text.as_bytes().chunks(size) {
                    if let Err(e) = stream.push(piece, &mut each) {
                        result = Err(e);
                        break;
                    }
                }
                if result.is_ok() {
                    result = stream.end(&mut each);
                }
                match (&whole, result) {
                    (Ok(elements), Ok(None)) => assert_eq!(&got, elements, "{text} by {size}"),
                    (Err(e), Err(f)) => assert_eq!(e, &f, "{text} by {size}"),
                    (_, Ok(Some(rest))) => {
                        let text = text.trim_start();
                        assert_eq!(rest.trim_ascii_start(), text.as_bytes(), "kept whole");
                        assert!(text.starts_with('{'));
                    }
                    (whole, streamed) => panic!("{text} by {size}: {whole:?} vs {streamed:?}"),
                }
            }
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
