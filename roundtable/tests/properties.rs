//! Property tests of the diff engine on generated patches:
//! `parse(render(p)) == p`, applying `p` gives the tree it was made from,
//! and applying `p.reverse()` to that restores the original bytes.

use proptest::prelude::*;
use roundtable::diff::{
    self, Body, ExtendedHeader, FilePatch, Hunk, Line, LineKind, Mode, ParseOptions, Patch,
    TreeFile,
};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// A small deterministic generator: proptest supplies the seed.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

type Tree = BTreeMap<Vec<u8>, TreeFile>;

/// Lines from a tiny vocabulary, so repeated lines (and so ambiguous
/// matches) are common; some CRLF; maybe no final newline.
fn text_lines(g: &mut Gen, n: usize, crlf: bool, final_newline: bool) -> Vec<Vec<u8>> {
    let mut lines: Vec<Vec<u8>> = (0..n)
        .map(|_| {
            let mut l = format!("w{}", g.below(6)).into_bytes();
            l.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
            l
        })
        .collect();
    if !final_newline {
        if let Some(last) = lines.last_mut() {
            while last.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
                last.pop();
            }
        }
    }
    lines
}

fn line(kind: LineKind, content: &[u8]) -> Line<'_> {
    let no_newline = !content.ends_with(b"\n");
    Line {
        kind,
        content,
        no_newline,
    }
}

/// Replace random, well-separated regions of `old`; return the new lines
/// and the hunks (three lines of context, as git writes them).
fn edit(g: &mut Gen, old: &[Vec<u8>], crlf: bool) -> (Vec<Vec<u8>>, Vec<Hunk<'static>>) {
    const CONTEXT: usize = 3;
    let mut regions = Vec::new(); // (start, old_len, new lines)
    let mut at = 0;
    loop {
        at += if regions.is_empty() {
            g.below(old.len() + 1)
        } else {
            2 * CONTEXT + 2 + g.below(8)
        };
        if at > old.len() || regions.len() == 4 {
            break;
        }
        let mut old_len = g.below((old.len() - at).min(3) + 1);
        if at == old.len() && old.last().is_some_and(|l| !l.ends_with(b"\n")) {
            // Nothing can follow a last line without newline: replace it.
            at -= 1;
            old_len = 1;
        }
        let at_end = at + old_len == old.len();
        let n = g.below(4);
        let mut new = text_lines(g, n, crlf, true);
        if old_len == 0 && new.is_empty() {
            new = text_lines(g, 1, crlf, true);
        }
        if at_end && !new.is_empty() && g.chance(30) {
            let last = new.last_mut().expect("non-empty");
            last.retain(|b| *b != b'\n' && *b != b'\r');
        }
        regions.push((at, old_len, new));
        at += old_len;
    }
    let mut new_file = Vec::new();
    let mut hunks = Vec::new();
    let mut cursor = 0;
    let mut delta: isize = 0;
    for (start, old_len, new_lines) in &regions {
        let before = CONTEXT.min(*start);
        let after = CONTEXT.min(old.len() - start - old_len);
        new_file.extend_from_slice(&old[cursor..*start]);
        new_file.extend(new_lines.iter().cloned());
        cursor = start + old_len;
        let mut lines = Vec::new();
        for l in &old[start - before..*start] {
            lines.push(line(LineKind::Context, l));
        }
        for l in &old[*start..start + old_len] {
            lines.push(line(LineKind::Delete, l));
        }
        for l in new_lines {
            lines.push(line(LineKind::Insert, l));
        }
        for l in &old[start + old_len..start + old_len + after] {
            lines.push(line(LineKind::Context, l));
        }
        let old_count = before + old_len + after;
        let new_count = before + new_lines.len() + after;
        let first = (start - before) as isize; // 0-based first line of the range
        let old_start = if old_count == 0 { first } else { first + 1 };
        let new_start = if new_count == 0 {
            first + delta
        } else {
            first + delta + 1
        };
        hunks.push(Hunk::new(old_start as u32, new_start as u32, b"", &lines));
        delta += new_lines.len() as isize - *old_len as isize;
    }
    new_file.extend_from_slice(&old[cursor..]);
    (new_file, hunks)
}

fn name(g: &mut Gen, i: usize) -> Vec<u8> {
    const PARTS: &[&str] = &[
        "src",
        "a b",
        "tab\there",
        "q\"uote",
        "back\\slash",
        "café",
        "日本",
        "x",
    ];
    let mut n = Vec::new();
    if g.chance(50) {
        n.extend_from_slice(PARTS[g.below(PARTS.len())].as_bytes());
        n.push(b'/');
    }
    n.extend_from_slice(PARTS[g.below(PARTS.len())].as_bytes());
    n.extend_from_slice(format!("-{i}.txt").as_bytes());
    n
}

fn short_id(data: &[u8]) -> String {
    // Any hex works for text patches; derive it from the content.
    let sum = data
        .iter()
        .fold(0u32, |h, &b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
    format!("{:07x}", sum & 0x0fff_ffff)
}

fn full_id(data: &[u8]) -> String {
    // git's blob id, computed independently of the engine: sha1("blob N\0" + data).
    use sha1::Digest as _;
    let mut h = sha1::Sha1::new();
    h.update(format!("blob {}\0", data.len()).as_bytes());
    h.update(data);
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

struct Case {
    patch: Patch<'static>,
    before: Tree,
    after: Tree,
}

fn case(seed: u64) -> Case {
    let mut g = Gen(seed);
    let mut before = Tree::new();
    let mut after = Tree::new();
    let mut files = Vec::new();
    let sections = 1 + g.below(5);
    for i in 0.. {
        if i >= sections && !files.is_empty() {
            break;
        }
        let path = name(&mut g, i);
        let crlf = g.chance(20);
        let (n, final_newline) = (g.below(30), g.chance(80));
        let old_lines = text_lines(&mut g, n, crlf, final_newline);
        let old: Vec<u8> = old_lines.concat();
        let exec = g.chance(20);
        let kind = g.below(7);
        let (fp, old_state, new_state) = match kind {
            // modify, maybe with a mode change
            0..=2 => {
                let (new_lines, hunks) = edit(&mut g, &old_lines, crlf);
                let new: Vec<u8> = new_lines.concat();
                let flip = g.chance(25);
                let mut headers = Vec::new();
                if flip {
                    headers.push(ExtendedHeader::OldMode(Mode::file(exec)));
                    headers.push(ExtendedHeader::NewMode(Mode::file(!exec)));
                }
                headers.push(ExtendedHeader::Index {
                    old: Cow::Owned(short_id(&old)),
                    new: Cow::Owned(short_id(&new)),
                    mode: (!flip).then_some(Mode::file(exec)),
                });
                let body = Body::Text(if old == new { Vec::new() } else { hunks });
                if old == new && !flip {
                    continue;
                }
                let fp = FilePatch::git(&path, &path, headers, body);
                (
                    fp,
                    Some((path.clone(), old, exec)),
                    Some((path.clone(), new, exec != flip)),
                )
            }
            // rename, maybe with edits
            3 => {
                let (new_lines, hunks) = edit(&mut g, &old_lines, crlf);
                let new: Vec<u8> = if g.chance(50) {
                    new_lines.concat()
                } else {
                    old.clone()
                };
                let to = name(&mut g, i + 100);
                let mut headers = vec![
                    ExtendedHeader::Similarity(if new == old { 100 } else { 50 }),
                    ExtendedHeader::RenameFrom(Cow::Owned(path.clone())),
                    ExtendedHeader::RenameTo(Cow::Owned(to.clone())),
                ];
                let body = if new == old {
                    Body::Text(Vec::new())
                } else {
                    headers.push(ExtendedHeader::Index {
                        old: Cow::Owned(short_id(&old)),
                        new: Cow::Owned(short_id(&new)),
                        mode: Some(Mode::file(exec)),
                    });
                    Body::Text(hunks)
                };
                let fp = FilePatch::git(&path, &to, headers, body);
                (fp, Some((path.clone(), old, exec)), Some((to, new, exec)))
            }
            // create (possibly empty) and delete
            4 | 5 => {
                let content: Vec<u8> = old.clone();
                let hunks = if content.is_empty() {
                    Vec::new()
                } else {
                    let lines: Vec<Line<'_>> = old_lines
                        .iter()
                        .map(|l| line(LineKind::Insert, l))
                        .collect();
                    vec![Hunk::new(0, 1, b"", &lines)]
                };
                let create = kind == 4;
                let hunks = if create {
                    hunks
                } else {
                    hunks.iter().map(|h| reverse_hunk(h)).collect()
                };
                let headers = vec![
                    if create {
                        ExtendedHeader::NewFileMode(Mode::file(exec))
                    } else {
                        ExtendedHeader::DeletedFileMode(Mode::file(exec))
                    },
                    ExtendedHeader::Index {
                        old: Cow::Owned(if create {
                            "0000000".into()
                        } else {
                            short_id(&content)
                        }),
                        new: Cow::Owned(if create {
                            short_id(&content)
                        } else {
                            "0000000".into()
                        }),
                        mode: None,
                    },
                ];
                let fp = FilePatch::git(&path, &path, headers, Body::Text(hunks));
                let state = Some((path.clone(), content, exec));
                if create {
                    (fp, None, state)
                } else {
                    (fp, state, None)
                }
            }
            // binary modification with both hunks
            _ => {
                let old_bin: Vec<u8> = (0..g.below(200)).map(|_| g.next() as u8).collect();
                let new_bin: Vec<u8> = (0..1 + g.below(200)).map(|_| g.next() as u8).collect();
                let headers = vec![ExtendedHeader::Index {
                    old: Cow::Owned(full_id(&old_bin)),
                    new: Cow::Owned(full_id(&new_bin)),
                    mode: Some(Mode::file(exec)),
                }];
                let body = Body::Binary {
                    forward: diff::BinaryHunk::literal(&new_bin),
                    reverse: Some(diff::BinaryHunk::literal(&old_bin)),
                };
                let fp = FilePatch::git(&path, &path, headers, body);
                (
                    fp,
                    Some((path.clone(), old_bin, exec)),
                    Some((path.clone(), new_bin, exec)),
                )
            }
        };
        let fp = fp.unwrap_or_else(|e| panic!("seed {seed}: generated section is invalid: {e}"));
        if let Some((p, data, executable)) = old_state {
            before.insert(
                p,
                TreeFile {
                    data,
                    executable,
                    symlink: false,
                },
            );
        }
        if let Some((p, data, executable)) = new_state {
            after.insert(
                p,
                TreeFile {
                    data,
                    executable,
                    symlink: false,
                },
            );
        }
        files.push(fp);
    }
    // Files the patch does not touch are carried over unchanged.
    let untouched = TreeFile::regular(b"untouched\n".to_vec());
    before.insert(b"zz-untouched".to_vec(), untouched.clone());
    after.insert(b"zz-untouched".to_vec(), untouched);
    Case {
        patch: Patch::new(files),
        before,
        after,
    }
}

fn reverse_hunk(h: &Hunk<'_>) -> Hunk<'static> {
    let lines: Vec<Line<'_>> = h
        .lines()
        .map(|l| Line {
            kind: if l.kind == LineKind::Insert {
                LineKind::Delete
            } else {
                l.kind
            },
            ..l
        })
        .collect();
    Hunk::new(h.new_start(), 0, b"", &lines)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn parse_render_is_identity(seed in any::<u64>()) {
        let c = case(seed);
        let text = c.patch.render();
        let parsed = diff::parse(&text, &ParseOptions::default())
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", String::from_utf8_lossy(&text)));
        prop_assert_eq!(&parsed, &c.patch, "seed {}", seed);
        prop_assert_eq!(parsed.render(), text);
    }

    #[test]
    fn apply_gives_the_new_tree_and_reverse_restores_the_old(seed in any::<u64>()) {
        let c = case(seed);
        let after = diff::apply_in_memory(&c.patch, &c.before)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", String::from_utf8_lossy(&c.patch.render())));
        prop_assert_eq!(&after, &c.after, "seed {}", seed);
        let reverse = c.patch.reverse().expect("no copies were generated");
        let back = diff::apply_in_memory(&reverse, &after)
            .unwrap_or_else(|e| panic!("seed {seed}: reverse: {e}\n{}", String::from_utf8_lossy(&reverse.render())));
        prop_assert_eq!(back, c.before, "seed {}", seed);
        // The reverse patch is itself a well-formed patch.
        let reverse_text = reverse.render();
        let reparsed = diff::parse(&reverse_text, &ParseOptions::default());
        prop_assert!(reparsed.is_ok(), "seed {}: {:?}", seed, reparsed.err());
    }
}
