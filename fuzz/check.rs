// The properties the `parse` fuzz target checks, shared word for word by
// the fuzz target (`fuzz/fuzz_targets/parse.rs`) and the corpus replay test
// (`roundtable/tests/fuzz_replay.rs`), which both `include!` this file.
// It names everything by its full path so that it drops into either crate.

/// Check every property on `data`; panics on a violation.
///
/// For strip levels 0, 1 and 2, `parse` never panics. When it accepts the
/// input: `render` never panics; the rendered text parses (at the same strip
/// level) to an equal `Patch`; `reverse` never panics and its rendering
/// parses; and `apply_in_memory`
/// never panics (errors are fine) against two small trees built from the
/// patch itself, nor does applying the reverse patch to a successful result.
fn check(data: &[u8]) {
    for strip in 0..=2 {
        let options = roundtable::diff::ParseOptions::strip(strip);
        if let Ok(patch) = roundtable::diff::parse(data, &options) {
            check_accepted(&patch, data, &options);
        }
    }
}

/// The properties of a patch that `parse` accepted from `data`.
fn check_accepted(
    patch: &roundtable::diff::Patch<'_>,
    data: &[u8],
    options: &roundtable::diff::ParseOptions,
) {
    let rendered = patch.render();
    let reparsed = match roundtable::diff::parse(&rendered, options) {
        Ok(p) => p,
        Err(e) => panic!(
            "strip {}: the rendering of an accepted patch does not parse: {e}\n\
             input:    b\"{}\"\nrendered: b\"{}\"",
            options.strip,
            data.escape_ascii(),
            rendered.escape_ascii(),
        ),
    };
    assert!(
        reparsed == *patch,
        "strip {}: parse(render(p)) != p\ninput:    b\"{}\"\nrendered: b\"{}\"\n\
         p:        {patch:?}\nreparsed: {reparsed:?}",
        options.strip,
        data.escape_ascii(),
        rendered.escape_ascii(),
    );

    let reversed = patch.reverse().ok();
    if let Some(reversed) = &reversed {
        // The inverse is itself a well-formed patch.
        let text = reversed.render();
        if let Err(e) = roundtable::diff::parse(&text, options) {
            panic!(
                "strip {}: the reverse of an accepted patch does not parse: {e}\n\
                 input:    b\"{}\"\nreversed: b\"{}\"",
                options.strip,
                data.escape_ascii(),
                text.escape_ascii(),
            );
        }
    }
    for tree in [preimage_tree(patch), raw_tree(patch, data)] {
        if let Ok(after) = roundtable::diff::apply_in_memory(patch, &tree) {
            if let Some(reversed) = &reversed {
                // Errors are fine here too (git's matching is not always
                // invertible); only a panic is a failure.
                let _ = roundtable::diff::apply_in_memory(reversed, &after);
            }
        }
    }
}

/// Each old path mapped to the pre-image its section describes: the old
/// side of its hunks (context and removed lines, padded up to each hunk's
/// start line), or the old content a binary patch carries as a literal
/// reverse hunk; empty otherwise. With it most accepted patches apply, so
/// the applier is exercised beyond its first check.
fn preimage_tree(
    patch: &roundtable::diff::Patch<'_>,
) -> std::collections::BTreeMap<Vec<u8>, roundtable::diff::TreeFile> {
    use roundtable::diff::{BinaryMethod, Body, LineKind};
    // Hunk start lines can be huge; pad at most this many lines per hunk.
    const MAX_PAD: u64 = 64;
    let mut tree = std::collections::BTreeMap::new();
    for file in patch.files() {
        let Some(path) = file.old_path() else {
            continue;
        };
        let mut data = Vec::new();
        match file.body() {
            Body::Text(hunks) => {
                let mut lines: u64 = 0;
                for hunk in hunks {
                    // The lines before the hunk: an empty range (`-3,0`)
                    // starts after its line, a non-empty one at it.
                    let before = match hunk.old_lines() {
                        0 => hunk.old_start(),
                        _ => hunk.old_start().saturating_sub(1),
                    };
                    let start = u64::from(before).min(lines + MAX_PAD);
                    while lines < start {
                        data.extend_from_slice(b"padding\n");
                        lines += 1;
                    }
                    for line in hunk.lines().filter(|l| l.kind != LineKind::Insert) {
                        data.extend_from_slice(line.content);
                        lines += 1;
                    }
                }
            }
            Body::Binary {
                reverse: Some(reverse),
                ..
            } if reverse.method == BinaryMethod::Literal => {
                data = reverse.inflate().unwrap_or_default();
            }
            _ => {}
        }
        let executable = file.old_mode().is_some_and(|m| m.is_executable());
        // A path read by several sections (copied, then modified) keeps the
        // first pre-image that says something.
        let entry = tree
            .entry(path.to_vec())
            .or_insert_with(|| roundtable::diff::TreeFile::regular(Vec::new()));
        if entry.data.is_empty() {
            *entry = roundtable::diff::TreeFile { data, executable, symlink: false };
        }
    }
    tree
}

/// Every path the patch names, old and new, mapped to the input bytes: a
/// tree where most hunks do not match and every file to create exists.
fn raw_tree(
    patch: &roundtable::diff::Patch<'_>,
    data: &[u8],
) -> std::collections::BTreeMap<Vec<u8>, roundtable::diff::TreeFile> {
    patch
        .files()
        .iter()
        .flat_map(|f| [f.old_path(), f.new_path()])
        .flatten()
        .map(|path| {
            let file = roundtable::diff::TreeFile {
                data: data.to_vec(),
                executable: path.len() % 2 == 1,
                symlink: false,
            };
            (path.to_vec(), file)
        })
        .collect()
}
