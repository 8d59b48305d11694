//! Rendering a [`Patch`] back to text.
//!
//! Each section is written from the syntax it keeps: the `diff --git` line
//! as written, extended headers in their order and git's spelling, names
//! quoted as git quotes them, hunk bodies copied verbatim and binary data
//! re-encoded in base85 (a deterministic encoding of the stored bytes). For
//! any patch `git diff` writes, `render(parse(x)) == x`.

use super::binary;
use super::quote::{write_name, write_quoted};
use super::{BinaryHunk, BinaryMethod, Body, ExtendedHeader, FileName, FilePatch, Hunk, Patch};
use std::io::Write as _;

impl Patch<'_> {
    /// The patch as text.
    pub fn render(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for file in self.files() {
            file.render_into(&mut out);
        }
        out
    }
}

impl FilePatch<'_> {
    /// Append this section, as text, to `out`.
    pub fn render_into(&self, out: &mut Vec<u8>) {
        // A section read with CRLF header lines is written back with them.
        let end_line = |out: &mut Vec<u8>| {
            if self.crlf && out.last() == Some(&b'\n') {
                out.pop();
                out.extend_from_slice(b"\r\n");
            }
        };
        if let Some(line) = &self.git_line {
            out.extend_from_slice(b"diff --git ");
            out.extend_from_slice(line);
            out.push(b'\n');
            end_line(out);
        }
        for h in &self.headers {
            header(out, h);
            end_line(out);
        }
        if let Some([old, new]) = &self.names {
            let traditional = self.git_line.is_none();
            file_name(out, b"--- ", old, traditional);
            file_name(out, b"+++ ", new, traditional);
        }
        match &self.body {
            Body::Text(hunks) => hunks.iter().for_each(|h| h.render_into(out)),
            Body::BinaryMarker(m) => {
                out.extend_from_slice(b"Binary files ");
                out.extend_from_slice(m);
                out.extend_from_slice(b" differ\n");
            }
            Body::Binary { forward, reverse } => {
                out.extend_from_slice(b"GIT binary patch\n");
                binary_hunk(out, forward);
                if let Some(r) = reverse {
                    binary_hunk(out, r);
                }
            }
        }
    }
}

impl Hunk<'_> {
    /// Append this hunk (header and body), as text, to `out`.
    pub fn render_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"@@ -");
        range(out, self.old_start, self.old_lines);
        out.extend_from_slice(b" +");
        range(out, self.new_start, self.new_lines);
        out.extend_from_slice(b" @@");
        out.extend_from_slice(&self.heading);
        out.push(b'\n');
        out.extend_from_slice(&self.body);
    }
}

fn range(out: &mut Vec<u8>, start: u32, lines: u32) {
    if lines == 1 {
        write!(out, "{start}").expect("writing to a Vec cannot fail");
    } else {
        write!(out, "{start},{lines}").expect("writing to a Vec cannot fail");
    }
}

fn header(out: &mut Vec<u8>, h: &ExtendedHeader<'_>) {
    let w = |out: &mut Vec<u8>, label: &str, name: &[u8]| {
        out.extend_from_slice(label.as_bytes());
        write_name(out, name);
        out.push(b'\n');
    };
    match h {
        ExtendedHeader::OldMode(m) => writeln!(out, "old mode {m}"),
        ExtendedHeader::NewMode(m) => writeln!(out, "new mode {m}"),
        ExtendedHeader::NewFileMode(m) => writeln!(out, "new file mode {m}"),
        ExtendedHeader::DeletedFileMode(m) => writeln!(out, "deleted file mode {m}"),
        ExtendedHeader::Similarity(n) => writeln!(out, "similarity index {n}%"),
        ExtendedHeader::Dissimilarity(n) => writeln!(out, "dissimilarity index {n}%"),
        ExtendedHeader::RenameFrom(p) => return w(out, "rename from ", p),
        ExtendedHeader::RenameTo(p) => return w(out, "rename to ", p),
        ExtendedHeader::CopyFrom(p) => return w(out, "copy from ", p),
        ExtendedHeader::CopyTo(p) => return w(out, "copy to ", p),
        ExtendedHeader::Index { old, new, mode } => match mode {
            Some(m) => writeln!(out, "index {old}..{new} {m}"),
            None => writeln!(out, "index {old}..{new}"),
        },
    }
    .expect("writing to a Vec cannot fail");
}

fn file_name(out: &mut Vec<u8>, prefix: &[u8], name: &FileName<'_>, traditional: bool) {
    out.extend_from_slice(prefix);
    let start = out.len();
    write_name(out, &name.name);
    // A bare name must read back as the same name before the same suffix
    // (a name that came quoted, followed by spaces, or ending in something
    // like a date, might not): otherwise quote it.
    let written = out.len() - start;
    if out.get(start) != Some(&b'"') {
        let line = [&out[start..], &*name.suffix].concat();
        if super::parse::name_end(&line, traditional) != written {
            out.truncate(start);
            write_quoted(out, &name.name);
        }
    }
    out.extend_from_slice(&name.suffix);
    out.push(b'\n');
}

fn binary_hunk(out: &mut Vec<u8>, h: &BinaryHunk) {
    let method = match h.method {
        BinaryMethod::Literal => "literal",
        BinaryMethod::Delta => "delta",
    };
    writeln!(out, "{method} {}", h.size).expect("writing to a Vec cannot fail");
    binary::encode_lines(&h.deflated, out);
    out.push(b'\n');
}
