//! The web console's files, embedded in the binary (no build step).
//!
//! The files themselves live in `roundtable-serve/console/` and belong to
//! the console; this module only serves them. `GET /` is `index.html`;
//! `GET /console/<name>` is the file of that name in [`FILES`].

/// One embedded file: its name under `/console/`, and its text.
pub(crate) type File = (&'static str, &'static str);

/// Every file of the console.
///
/// ---- the console's table: ONE LINE PER FILE ----
/// Adding a module (`console/views/x.js`) is adding its line here; the
/// content type follows from the extension ([`content_type`]).
pub(crate) const FILES: &[File] = &[
    ("index.html", include_str!("../console/index.html")),
    ("app.js", include_str!("../console/app.js")),
    ("app.css", include_str!("../console/app.css")),
    ("api.js", include_str!("../console/api.js")),
    ("diff.js", include_str!("../console/diff.js")),
    ("keys.js", include_str!("../console/keys.js")),
    ("live.js", include_str!("../console/live.js")),
    ("text.js", include_str!("../console/text.js")),
    ("ui.js", include_str!("../console/ui.js")),
    ("views/blame.js", include_str!("../console/views/blame.js")),
    (
        "views/claims.js",
        include_str!("../console/views/claims.js"),
    ),
    ("views/inbox.js", include_str!("../console/views/inbox.js")),
    (
        "views/landing.js",
        include_str!("../console/views/landing.js"),
    ),
    (
        "views/proposal.js",
        include_str!("../console/views/proposal.js"),
    ),
    (
        "views/signin.js",
        include_str!("../console/views/signin.js"),
    ),
    ("views/undo.js", include_str!("../console/views/undo.js")),
];
// ---- end of the console's table ----

/// The file named `name`, if the console has it.
pub(crate) fn file(name: &str) -> Option<&'static File> {
    FILES.iter().find(|(n, _)| *n == name)
}

/// The content type of a console file, by its extension.
pub(crate) fn content_type(name: &str) -> &'static str {
    match name.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("json") => "application/json",
        _ => "text/plain; charset=utf-8",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_the_entry_points_and_no_inline_script_or_style() {
        for name in ["index.html", "app.js", "app.css"] {
            assert!(file(name).is_some(), "{name}");
        }
        let mut names: Vec<&str> = FILES.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), FILES.len(), "a file listed twice");
        let (_, index) = file("index.html").expect("index");
        let lower = index.to_ascii_lowercase();
        assert!(!lower.contains("<style"), "inline style in index.html");
        assert!(
            !lower.contains(" style="),
            "inline style attribute in index.html"
        );
        for script in lower.split("<script").skip(1) {
            let tag = script.split('>').next().unwrap_or("");
            assert!(tag.contains("src="), "inline script in index.html");
        }
        assert_eq!(content_type("views/x.js"), "text/javascript; charset=utf-8");
    }
}
