#!/usr/bin/env bash
# Regenerate the seed corpus of the `parse` fuzz target from real `git diff`
# (and GNU `diff -u`, and `git format-patch`) output.
#
#   bash fuzz/make-seeds.sh [OUT_DIR]    # default: tests/fuzz-corpus/parse
#
# Files it writes, by name:
#   git-*.diff     written by `git diff`: must parse and render byte-identically
#   plain-*.diff   written by GNU `diff -u`: must parse and render byte-identically
#   mail-*.patch   written by `git format-patch`: must parse; renders as the
#                  part between the preamble and the `-- ` signature
#   bad-*.diff     hand-broken patches: must be refused (`invalid_patch`;
#                  `bad-combined-*` with `unsupported_patch`)
# Crash regressions (`crash-*.bin`) are added by hand, never by this script.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../tests/fuzz-corpus/parse}
mkdir -p "$out"
out=$(cd "$out" && pwd)

work=$(mktemp -d "${TMPDIR:-/dev/shm}/roundtable-seeds.XXXXXX")
trap 'rm -rf "$work"' EXIT

export GIT_AUTHOR_NAME="Seed Author" GIT_AUTHOR_EMAIL="seed@example.invalid"
export GIT_COMMITTER_NAME="Seed Author" GIT_COMMITTER_EMAIL="seed@example.invalid"
export GIT_AUTHOR_DATE="2024-01-02T03:04:05Z" GIT_COMMITTER_DATE="2024-01-02T03:04:05Z"
export GIT_CONFIG_NOSYSTEM=1 HOME="$work/home"
mkdir -p "$HOME"
git config --global init.defaultBranch main
git config --global core.autocrlf false
git config --global core.quotePath true
git config --global diff.renames false

# A fresh repository with one commit of whatever `setup` creates, then the
# working-tree change `change` makes, staged; the diff goes to $out/$name.
# Extra arguments are passed to `git diff --cached --binary` (without
# `--binary` when SEED_TEXT_ONLY is set, for `Binary files … differ`).
seed() {
    local name=$1 setup=$2 change=$3
    shift 3
    local repo="$work/$name"
    rm -rf "$repo"
    git init -q "$repo"
    (
        cd "$repo"
        eval "$setup"
        git add -A
        git commit -q --allow-empty -m base
        eval "$change"
        git add -A
        local binary=--binary
        if [ -n "${SEED_TEXT_ONLY:-}" ]; then binary=--no-ext-diff; fi
        git diff --cached "$binary" "$@" >"$out/$name"
    )
    if [ ! -s "$out/$name" ]; then
        echo "make-seeds: $name came out empty" >&2
        exit 1
    fi
}

lines() { seq "$1" "$2" | sed 's/^/line /'; }

# A C-ish file with functions, so hunk headings carry a function name.
cfile() {
    for f in alpha beta gamma delta; do
        printf 'int %s(int x)\n{\n' "$f"
        for i in 1 2 3 4 5 6 7 8; do printf '    x += %d; /* %s */\n' "$i" "$f"; done
        printf '    return x;\n}\n\n'
    done
}

# ---- text modifications -------------------------------------------------
seed git-modify.diff 'lines 1 10 >f.txt' 'sed -i "5s/.*/line five/" f.txt' -M -C
seed git-multi-hunk.diff 'cfile >prog.c' \
    'sed -i -e "s/x += 2; \/\* alpha/x -= 2; \/* alpha/" -e "s/x += 7; \/\* gamma/x *= 7; \/* gamma/" -e "/x += 4; \/\* delta/d" prog.c' -M -C
seed git-multi-file.diff 'mkdir -p src doc; lines 1 6 >src/a.rs; lines 1 6 >src/b.rs; echo hi >doc/readme' \
    'echo more >>src/a.rs; sed -i 1d src/b.rs; echo bye >doc/readme' -M -C
seed git-unified0.diff 'lines 1 12 >f.txt' 'sed -i -e "3a inserted" -e "9d" f.txt' -U0 -M -C
seed git-empty-lines.diff 'printf "a\n\n\nb\n\nc\n" >f.txt' 'printf "a\n\nB\n\n\nc\n" >f.txt' -M -C
seed git-full-index.diff 'lines 1 4 >f.txt' 'echo five >>f.txt' --full-index -M -C
seed git-no-prefix.diff 'mkdir -p src; lines 1 4 >src/m.txt' 'echo tail >>src/m.txt' --no-prefix -M -C
seed git-custom-prefix.diff 'lines 1 4 >f.txt' 'echo tail >>f.txt' --src-prefix=old/ --dst-prefix=new/ -M -C

# ---- newline handling ---------------------------------------------------
seed git-no-newline-old.diff 'printf "one\ntwo" >f.txt' 'printf "one\ntwo\nthree\n" >f.txt' -M -C
seed git-no-newline-new.diff 'printf "one\ntwo\n" >f.txt' 'printf "one\n2" >f.txt' -M -C
seed git-no-newline-both.diff 'printf "one\ntwo" >f.txt' 'printf "one\nTWO" >f.txt' -M -C
seed git-crlf.diff 'printf "one\r\ntwo\r\nthree\r\n" >f.txt' 'printf "one\r\n2\r\nthree\r\nfour\r\n" >f.txt' -M -C

# ---- creations and deletions --------------------------------------------
seed git-new-file.diff ':' 'mkdir -p dir; lines 1 3 >dir/new.txt' -M -C
seed git-new-executable.diff ':' 'printf "#!/bin/sh\necho hi\n" >run.sh; chmod +x run.sh' -M -C
seed git-deleted-file.diff 'lines 1 3 >gone.txt' 'rm gone.txt' -M -C
seed git-new-empty.diff ':' ': >empty' -M -C
seed git-deleted-empty.diff ': >empty' 'rm empty' -M -C
seed git-new-symlink.diff ':' 'ln -s target/path link' -M -C

# ---- modes, renames, copies ---------------------------------------------
seed git-mode-change.diff 'lines 1 3 >tool' 'chmod +x tool' -M -C
seed git-mode-and-content.diff 'lines 1 3 >tool; chmod +x tool' 'chmod -x tool; echo more >>tool' -M -C
seed git-rename-pure.diff 'mkdir -p old; lines 1 8 >old/name.txt' 'mkdir -p new; git mv old/name.txt new/name.txt' -M -C
seed git-rename-edit.diff 'lines 1 20 >before.txt' 'git mv before.txt after.txt; sed -i "10s/.*/changed/" after.txt' -M -C
seed git-rename-mode.diff 'lines 1 8 >script' 'git mv script script.sh; chmod +x script.sh' -M -C
seed git-copy-edit.diff 'lines 1 20 >orig.txt' 'cp orig.txt copy.txt; sed -i "3s/.*/copied/" copy.txt' -C -C
seed git-copy-and-modify.diff 'lines 1 20 >src.txt' 'cp src.txt dup.txt; echo appended >>src.txt' -M -C
# git breaks only files of 400 bytes or more.
seed git-break-rewrite.diff 'lines 1 60 >f.txt' 'seq 1000 1009 >f.txt' -B -M -C

# ---- names git quotes, and names with spaces ----------------------------
seed git-quoted-names.diff ':' $'printf "x\\n" >"tab\there"; printf "y\\n" >"quo\\"te"; printf "z\\n" >"back\\\\slash"' -M -C
seed git-non-ascii.diff 'printf "a\n" >"café.txt"' 'printf "b\n" >"café.txt"; printf "n\n" >"日本.txt"; printf "l\n" >"$(printf "latin\351.txt")"' -M -C
seed git-rename-quoted.diff 'lines 1 8 >"plain name"' 'git mv "plain name" "résumé \"final\".txt"' -M -C
seed git-space-names.diff 'lines 1 4 >"with space.txt"' 'echo more >>"with space.txt"' -M -C
seed git-rename-spaces.diff 'lines 1 8 >"a b c"' 'git mv "a b c" "d e f"' -M -C

# ---- binary -------------------------------------------------------------
binfile() { head -c "$2" /dev/zero | tr '\0' '\1' >"$1"; printf '\0\377\376binary tail %s' "$3" >>"$1"; }
seed git-binary-literal.diff ':' 'binfile blob.bin 40 one' -M -C
seed git-binary-delta.diff 'awk "BEGIN{for(i=0;i<300;i++)printf \"%c%s\", 0, i}" >big.bin' \
    'awk "BEGIN{for(i=0;i<300;i++)printf \"%c%s\", 0, (i==150?\"X\":i)}" >big.bin' -M -C
seed git-binary-deleted.diff 'binfile old.bin 20 two' 'rm old.bin' -M -C
seed git-binary-modify.diff 'binfile pic.bin 8 a' 'binfile pic.bin 9 b' -M -C
SEED_TEXT_ONLY=1 seed git-binary-marker.diff 'binfile m.bin 10 a' 'binfile m.bin 12 b' -M -C

# ---- GNU diff -u ----------------------------------------------------------
(
    cd "$work"
    lines 1 9 >old.txt
    lines 1 9 | sed -e '2s/.*/two/' -e '8a eight and a half' >new.txt
    touch -d '2024-01-02 03:04:05.123456789 +0000' old.txt
    touch -d '2024-02-03 04:05:06.987654321 +0000' new.txt
    TZ=UTC diff -u old.txt new.txt >"$out/plain-p0-unified.diff" || true
    mkdir -p a b
    printf 'keep\nold\n' >a/file.c
    printf 'keep\nnew\n' >b/file.c
    touch -d '2024-01-02 03:04:05 +0000' a/file.c b/file.c
    TZ=UTC diff -u a/file.c b/file.c >"$out/plain-prefixed.diff" || true
)

# ---- git format-patch: preamble, diffstat, `-- ` signature --------------
(
    repo="$work/mail"
    git init -q "$repo"
    cd "$repo"
    lines 1 6 >notes.txt
    git add -A
    git commit -q -m base
    sed -i '3s/.*/three/' notes.txt
    echo added >extra.txt
    git add -A
    git commit -q -m "Change notes and add extra" -m "A body paragraph explaining the change."
    git format-patch -1 --stdout --signature=2.39.5 >"$out/mail-format-patch.patch"
)

# ---- malformed patches ----------------------------------------------------
good="$out/git-modify.diff"
# The hunk is cut off before its last lines.
head -n 9 "$good" >"$out/bad-truncated-hunk.diff"
# The header promises more lines than the body has, then another header follows.
sed 's/^@@ -2,7 +2,7 @@/@@ -2,9 +2,9 @@/' "$good" >"$out/bad-counts-too-large.diff"
cat "$good" "$good" | sed '0,/^@@ -2,7 +2,7 @@/s//@@ -2,3 +2,3 @@/' >"$out/bad-counts-too-small.diff"
# A character outside git's base85 alphabet in a binary hunk.
awk 'done != 1 && prev ~ /^literal / { $0 = substr($0, 1, 2) "\"" substr($0, 4); done = 1 } { print; prev = $0 }' \
    "$out/git-binary-literal.diff" >"$out/bad-base85.diff"
# A binary literal whose declared size is wrong.
sed '0,/^literal /s/^literal \([0-9]*\)$/literal 9\1/' "$out/git-binary-literal.diff" >"$out/bad-binary-size.diff"
# A hunk with no file header.
sed -n '/^@@/,$p' "$good" >"$out/bad-hunk-without-header.diff"
# Text after the last section that is not a signature.
{ cat "$good"; echo "this is not a diff line"; } >"$out/bad-trailing-garbage.diff"
# A misplaced `\ No newline at end of file` before any hunk line.
awk '{ print } /^@@/ { print "\\ No newline at end of file" }' "$good" >"$out/bad-no-newline-marker.diff"
# An unterminated quoted name.
printf 'diff --git "a/open b/open\n--- "a/open\n+++ b/open\n@@ -1 +1 @@\n-x\n+y\n' >"$out/bad-unclosed-quote.diff"
# Empty input: no file section at all.
: >"$out/bad-empty.diff"
# A combined diff of a merge (`diff --cc`), as `git diff` writes it for a conflict.
(
    repo="$work/merge"
    git init -q "$repo"
    cd "$repo"
    lines 1 3 >m.txt
    git add -A
    git commit -q -m base
    git checkout -q -b side
    sed -i '2s/.*/side/' m.txt
    git commit -q -am side
    git checkout -q main
    sed -i '2s/.*/main/' m.txt
    git commit -q -am main
    git merge -q side >/dev/null 2>&1 || true
    git diff >"$out/bad-combined-conflict.diff"
)

for f in "$out"/bad-*.diff; do
    if [ "$(basename "$f")" != bad-empty.diff ] && [ ! -s "$f" ]; then
        echo "make-seeds: $f came out empty" >&2
        exit 1
    fi
done
ls "$out" | wc -l
