//! The pages hold: every relative link and image in `README.md` and `docs/` points at a file
//! of the checkout (and a `#heading` at a heading of that page), every picture is a small PNG
//! that a page shows, and the README's two set-up commands are the ones CI and the demo run.
//!
//! A Rust test rather than a script: `cargo test --workspace`, which `scripts/test.sh` and CI
//! already run, runs it with no other tool, and it fails on a fresh clone like any other test.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate sits in the checkout")
        .to_path_buf()
}

/// `README.md` and every page under `docs/`, as paths inside the checkout.
fn pages() -> Vec<PathBuf> {
    let root = root();
    let mut pages = vec![root.join("README.md")];
    let mut dirs = vec![root.join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                pages.push(path);
            }
        }
    }
    pages.sort();
    pages
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The page's lines outside fenced code blocks.
fn unfenced(text: &str) -> impl Iterator<Item = &str> {
    let mut fenced = false;
    text.lines().filter(move |line| {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            return false;
        }
        !fenced
    })
}

/// The page's text outside fenced code blocks and inline code, where `[x](y)` is no link.
fn prose(text: &str) -> String {
    let mut out = String::new();
    for line in unfenced(text) {
        // Inline code: every other backtick-delimited span goes.
        for (i, part) in line.split('`').enumerate() {
            if i % 2 == 0 {
                out.push_str(part);
            }
        }
        out.push('\n');
    }
    out
}

/// Every link and image target on the page: the `(…)` after a `](`.
fn targets(text: &str) -> Vec<String> {
    let text = prose(text);
    let mut found = Vec::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let end = rest.find(')').expect("a link's target ends with )");
        found.push(rest[..end].trim().to_string());
        rest = &rest[end..];
    }
    found
}

/// Every image on the page: the target after a `![…](`.
fn images(text: &str) -> Vec<String> {
    let text = prose(text);
    let mut found = Vec::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("![") {
        rest = &rest[at + 2..];
        let Some(close) = rest.find("](") else { break };
        rest = &rest[close + 2..];
        let end = rest.find(')').expect("an image's target ends with )");
        found.push(rest[..end].trim().to_string());
    }
    found
}

/// A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    unfenced(text)
        .filter(|line| line.starts_with('#'))
        .map(|line| anchor(line.trim_start_matches('#')))
        .collect()
}

fn is_external(target: &str) -> bool {
    target.starts_with("http://") || target.starts_with("https://") || target.starts_with("mailto:")
}

#[test]
fn every_relative_link_and_image_resolves() {
    let root = root();
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = read(&page);
        let shown = page.strip_prefix(&root).unwrap().display().to_string();
        for target in targets(&text) {
            if is_external(&target) {
                continue;
            }
            checked += 1;
            let (file, heading) = match target.split_once('#') {
                Some((file, heading)) => (file, Some(heading)),
                None => (target.as_str(), None),
            };
            let path = if file.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(file)
            };
            if !path.exists() {
                broken.push(format!("{shown}: {target} — no file {}", path.display()));
                continue;
            }
            if !path
                .canonicalize()
                .unwrap()
                .starts_with(root.canonicalize().unwrap())
            {
                broken.push(format!("{shown}: {target} — outside the checkout"));
                continue;
            }
            if let Some(heading) = heading {
                if path.extension().is_some_and(|e| e == "md")
                    && !anchors(&read(&path)).contains(heading)
                {
                    broken.push(format!("{shown}: {target} — no heading #{heading} there"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    // The README alone links to a dozen pages: a parser that finds none is broken too.
    assert!(checked > 20, "only {checked} relative links found");
}

/// A picture is a screenshot cropped to what it shows: small enough for a page to load at
/// once and a repository to keep many of (the largest made so far is well under this).
const PICTURE_BYTES: u64 = 200 * 1024;

#[test]
fn every_picture_is_a_small_png_a_page_shows() {
    let root = root();
    let dir = root.join("docs/pictures");
    let mut shown = BTreeSet::new();
    for page in pages() {
        for image in images(&read(&page)) {
            assert!(
                !is_external(&image),
                "{}: {image} is not the suite's own picture",
                page.display()
            );
            let path = page.parent().unwrap().join(&image);
            let path = path.canonicalize().unwrap_or_else(|e| {
                panic!(
                    "{}: {image}: {e} (scripts/pictures.sh makes the pictures)",
                    page.display()
                )
            });
            assert!(
                path.starts_with(dir.canonicalize().unwrap()),
                "{}: {image} is not under docs/pictures/, where scripts/pictures.sh writes",
                page.display()
            );
            shown.insert(path);
        }
    }
    assert!(
        read(&root.join("README.md")).contains("![") && !shown.is_empty(),
        "the README shows no picture"
    );
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        assert!(
            bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
            "{} is not a PNG",
            path.display()
        );
        assert!(
            bytes.len() as u64 <= PICTURE_BYTES,
            "{} is {} bytes, over {PICTURE_BYTES}",
            path.display(),
            bytes.len()
        );
        assert!(
            shown.contains(&path.canonicalize().unwrap()),
            "{} is shown on no page",
            path.display()
        );
    }
}

/// The commands in the fenced block under a README heading.
fn commands_under(readme: &str, heading: &str) -> Vec<String> {
    let start = readme
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("the README has no {heading}"));
    let section = &readme[start + heading.len() + 2..];
    let open = section.find("```sh\n").expect("a ```sh block") + "```sh\n".len();
    let close = section[open..].find("```").expect("the block ends") + open;
    section[open..close]
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

#[test]
fn the_readmes_two_commands_are_the_ones_ci_and_the_demo_run() {
    let root = root();
    let readme = read(&root.join("README.md"));
    assert_eq!(commands_under(&readme, "## Run it"), ["scripts/demo.sh"]);
    assert_eq!(commands_under(&readme, "## Test it"), ["scripts/test.sh"]);

    // CI runs the README's test command, and nothing in its place.
    let ci = read(&root.join(".ci/run"));
    let last = ci.lines().rfind(|l| !l.trim().is_empty()).unwrap();
    assert_eq!(
        last.trim(),
        "exec bash scripts/test.sh",
        ".ci/run ends with {last:?}"
    );

    // The run command builds the demo and starts it, passing its arguments on.
    let demo = read(&root.join("scripts/demo.sh"));
    assert!(
        demo.contains("--features demo"),
        "scripts/demo.sh does not build the demo"
    );
    assert!(
        demo.contains(r#"exec "$bin" demo "$@""#),
        "scripts/demo.sh does not start `lf-tray demo` with its arguments"
    );
    for script in ["scripts/demo.sh", "scripts/test.sh"] {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(root.join(script))
            .unwrap()
            .permissions()
            .mode();
        assert!(mode & 0o111 != 0, "{script} is not executable");
    }
}

#[test]
fn the_link_reader_finds_links_and_skips_code() {
    let page =
        "See [a](docs/a.md#x) and ![p](pictures/p.png).\n`[no](code)`\n```\n[no](fence)\n```\n";
    assert_eq!(targets(page), ["docs/a.md#x", "pictures/p.png"]);
    assert_eq!(images(page), ["pictures/p.png"]);
    assert_eq!(
        anchor("When the hook is asked, per mode"),
        "when-the-hook-is-asked-per-mode"
    );
    assert_eq!(anchor("The `watch --json` lines"), "the-watch---json-lines");
}
