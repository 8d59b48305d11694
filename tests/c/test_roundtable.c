/*
 * C tests of libroundtable, through include/roundtable.h only: every error
 * path, four threads sharing one engine, byte-safe input, closing during a
 * call, cancellation. The governed change itself is a scenario of the
 * language-neutral corpus (tests/cases/tools/governed-demo.json), replayed
 * by tests/c/cases.c.
 * Built with -Wall -Wextra -Werror by scripts/test-ffi and run under
 * valgrind. Prints "N passed, N failed" last; exits 1 on any failure.
 */
#define _GNU_SOURCE
#include "roundtable.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/file.h>
#include <time.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int passed, failed;

#define CHECK(cond, ...)                                                   \
  do {                                                                     \
    if (cond) {                                                            \
      passed++;                                                            \
    } else {                                                               \
      failed++;                                                            \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);      \
      fprintf(stderr, __VA_ARGS__);                                        \
      fputc('\n', stderr);                                                 \
    }                                                                      \
  } while (0)

/* ---- a small JSON path reader (the results are compact JSON) ---------- */

static const char *skip_ws(const char *p) {
  while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r') p++;
  return p;
}

/* p at '"': returns the byte after the closing quote. */
static const char *skip_string(const char *p) {
  for (p++; *p && *p != '"'; p++)
    if (*p == '\\' && p[1]) p++;
  return *p ? p + 1 : p;
}

/* p at a value: returns the byte after it. */
static const char *skip_value(const char *p) {
  p = skip_ws(p);
  if (*p == '"') return skip_string(p);
  if (*p == '{' || *p == '[') {
    int depth = 0;
    while (*p) {
      if (*p == '"') {
        p = skip_string(p);
        continue;
      }
      if (*p == '{' || *p == '[') depth++;
      if (*p == '}' || *p == ']') {
        depth--;
        if (depth == 0) return p + 1;
      }
      p++;
    }
    return p;
  }
  while (*p && *p != ',' && *p != '}' && *p != ']') p++;
  return p;
}

/* The value of `key` in the object at `obj`, or NULL. */
static const char *member(const char *obj, const char *key, size_t key_len) {
  obj = skip_ws(obj);
  if (*obj != '{') return NULL;
  const char *p = skip_ws(obj + 1);
  while (*p == '"') {
    const char *name = p + 1;
    const char *end = skip_string(p);
    size_t len = (size_t)(end - 1 - name);
    p = skip_ws(end);
    if (*p != ':') return NULL;
    p = skip_ws(p + 1);
    if (len == key_len && strncmp(name, key, len) == 0) return p;
    p = skip_ws(skip_value(p));
    if (*p != ',') return NULL;
    p = skip_ws(p + 1);
  }
  return NULL;
}

/* The value at a dotted path ("proposal.id"), or NULL. */
static const char *at(const char *json, const char *path) {
  const char *v = json;
  while (v && *path) {
    const char *dot = strchr(path, '.');
    size_t len = dot ? (size_t)(dot - path) : strlen(path);
    v = member(v, path, len);
    path += len + (dot ? 1 : 0);
  }
  return v;
}

/* The string at `path`, copied into `buf` (no unescaping: ids need none). */
static const char *str_at(const char *json, const char *path, char *buf, size_t size) {
  const char *v = at(json, path);
  buf[0] = '\0';
  if (!v || *v != '"') return buf;
  const char *end = skip_string(v);
  size_t len = (size_t)(end - v - 2);
  if (len >= size) len = size - 1;
  memcpy(buf, v + 1, len);
  buf[len] = '\0';
  return buf;
}

/* ---- calling the engine ---------------------------------------------- */

static const char *HOST = "{\"id\":\"host\",\"kind\":\"orchestrator\"}";
static const char *ALICE = "{\"id\":\"alice\",\"kind\":\"agent\"}";
static const char *BOB = "{\"id\":\"bob\",\"kind\":\"agent\"}";

/* Call and expect success: returns the result (free with rt_string_free), or
 * NULL after reporting the error. */
static char *ok_call(rt_engine *e, const char *tool, const char *args, const char *actor) {
  char *out = NULL;
  rt_error *err = NULL;
  rt_status s = rt_engine_call(e, tool, args, actor, &out, &err);
  CHECK(s == RT_OK, "%s: status %u: %s: %s %s", tool, (unsigned)s, rt_error_code(err),
        rt_error_message(err), rt_error_details_json(err));
  CHECK(s != RT_OK || err == NULL, "%s: err_out written on success", tool);
  rt_error_free(err);
  return out;
}

/* Call and expect `want` with the error code `code`; the message must be
 * readable (non-empty) and contain `needle` when given; the details must be
 * a JSON object; the result must stay untouched. */
static void err_call(rt_engine *e, const char *tool, const char *args, const char *actor,
                     rt_status want, const char *code, const char *needle) {
  char *sentinel = (char *)"untouched";
  char *out = sentinel;
  rt_error *err = NULL;
  rt_status s = rt_engine_call(e, tool, args, actor, &out, &err);
  CHECK(s == want, "%s: status %u, want %u (%s: %s)", tool ? tool : "(NULL)", (unsigned)s,
        (unsigned)want, rt_error_code(err), rt_error_message(err));
  CHECK(out == sentinel, "%s: result written on failure", tool ? tool : "(NULL)");
  CHECK(err != NULL, "no error object");
  if (err) {
    const char *c = rt_error_code(err), *m = rt_error_message(err), *d = rt_error_details_json(err);
    CHECK(c && strcmp(c, code) == 0, "code %s, want %s", c, code);
    CHECK(m && *m, "empty message");
    CHECK(!needle || (m && strstr(m, needle)), "message %s lacks %s", m, needle);
    CHECK(d && d[0] == '{', "details %s", d);
  }
  rt_error_free(err);
  /* The same failure with a NULL err_out: the status alone. */
  out = sentinel;
  s = rt_engine_call(e, tool, args, actor, &out, NULL);
  CHECK(s == want && out == sentinel, "with NULL err_out: %u", (unsigned)s);
}

static void write_file(const char *dir, const char *name, const char *text) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  CHECK(f != NULL, "fopen %s: %s", path, strerror(errno));
  if (!f) return;
  fputs(text, f);
  fclose(f);
}

static int file_equals(const char *dir, const char *name, const char *text) {
  char path[4096], buf[8192];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  return strcmp(buf, text) == 0;
}

static void remove_tree(const char *dir) {
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

/* A scratch repository with src/lib.rs; returns a malloc'd path. */
static char *scratch_repo(const char *lib_rs) {
  const char *tmp = getenv("TMPDIR");
  char tmpl[4096];
  snprintf(tmpl, sizeof tmpl, "%s/rt-c-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  char *dir = mkdtemp(tmpl);
  CHECK(dir != NULL, "mkdtemp: %s", strerror(errno));
  if (!dir) exit(1);
  char src[4200];
  snprintf(src, sizeof src, "%s/src", dir);
  mkdir(src, 0755);
  write_file(dir, "src/lib.rs", lib_rs);
  write_file(dir, "README.md", "demo project\n");
  return strdup(dir);
}

static rt_engine *open_engine(const char *root, const char *options) {
  rt_engine *e = NULL;
  rt_error *err = NULL;
  rt_status s = rt_engine_open(root, options, &e, &err);
  CHECK(s == RT_OK && e != NULL, "rt_engine_open: %u %s", (unsigned)s, rt_error_message(err));
  rt_error_free(err);
  return e;
}

/* ---- the demo's repository ------------------------------------------- */

static const char *LIB_RS =
    "pub fn greet(name: &str) -> String {\n"
    "    format!(\"Hello, {name}\")\n"
    "}\n"
    "\n"
    "pub fn shout(name: &str) -> String {\n"
    "    greet(name).to_uppercase()\n"
    "}\n";

static const char *SECOND_PATCH =
    "--- a/src/lib.rs\\n+++ b/src/lib.rs\\n@@ -1,3 +1,3 @@\\n"
    " pub fn greet(name: &str) -> String {\\n"
    "-    format!(\\\"Hello, {name}\\\")\\n"
    "+    format!(\\\"Hello, {name}!\\\")\\n"
    " }\\n";

static char args_buf[8192];
static const char *args(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args_buf, sizeof args_buf, fmt, ap);
  va_end(ap);
  return args_buf;
}

#define FREE_CALL(e, tool, a, actor) rt_string_free(ok_call(e, tool, a, actor))

/* ---- error paths ------------------------------------------------------ */

static void test_error_paths(void) {
  char *root = scratch_repo(LIB_RS);
  rt_engine *e = open_engine(root, "{\"durability\":\"normal\"}");
  if (!e) return;
  const char bad_utf8[] = {'a', (char)0xff, (char)0xfe, 0};
  char *out = NULL;
  rt_error *err = NULL;

  /* NULL handle and NULL / non-UTF-8 strings: invalid_argument naming the argument. */
  err_call(NULL, "agent.list", "{}", HOST, RT_INVALID_ARGUMENT, "invalid_argument", "engine");
  err_call(e, NULL, "{}", HOST, RT_INVALID_ARGUMENT, "invalid_argument", "tool");
  err_call(e, "agent.list", NULL, HOST, RT_INVALID_ARGUMENT, "invalid_argument", "args");
  err_call(e, "agent.list", "{}", NULL, RT_INVALID_ARGUMENT, "invalid_argument", "actor");
  err_call(e, bad_utf8, "{}", HOST, RT_INVALID_ARGUMENT, "invalid_argument", "UTF-8");
  err_call(e, "agent.list", bad_utf8, HOST, RT_INVALID_ARGUMENT, "invalid_argument", "args");
  err_call(e, "agent.list", "{}", bad_utf8, RT_INVALID_ARGUMENT, "invalid_argument", "actor");
  /* A NULL result pointer. */
  rt_status s = rt_engine_call(e, "agent.list", "{}", HOST, NULL, &err);
  CHECK(s == RT_INVALID_ARGUMENT && err && strstr(rt_error_message(err), "result_json_out"), "NULL result: %u",
        (unsigned)s);
  rt_error_free(err);
  err = NULL;

  /* Unknown tool, bad JSON, unknown keys, repeated keys. */
  err_call(e, "no.such.tool", "{}", HOST, RT_NOT_FOUND, "not_found", "no.such.tool");
  err_call(e, "agent.list", "{not json", HOST, RT_INVALID_ARGUMENT, "invalid_argument", "JSON");
  err_call(e, "task.create", "{\"task_id\":\"t\",\"title\":\"x\",\"colour\":\"red\"}", HOST, RT_INVALID_ARGUMENT,
           "invalid_argument", "colour");
  err_call(e, "task.create", "{\"task_id\":\"t\",\"task_id\":\"u\",\"title\":\"x\"}", HOST, RT_INVALID_ARGUMENT,
           "invalid_argument", NULL);

  /* Bad actors: not JSON, unknown kind, extra key. */
  err_call(e, "agent.list", "{}", "host", RT_INVALID_ARGUMENT, "invalid_argument", "actor");
  err_call(e, "agent.list", "{}", "{\"id\":\"x\",\"kind\":\"robot\"}", RT_INVALID_ARGUMENT, "invalid_argument",
           "actor");
  err_call(e, "agent.list", "{}", "{\"id\":\"x\",\"kind\":\"agent\",\"admin\":true}", RT_INVALID_ARGUMENT,
           "invalid_argument", "actor");

  /* Foreign actors: an unregistered agent proposes; an agent registers agents. */
  FREE_CALL(e, "task.create", "{\"task_id\":\"t1\",\"title\":\"A task\"}", HOST);
  err_call(e, "proposal.create",
           args("{\"task_id\":\"t1\",\"title\":\"x\",\"summary_md\":\"x\",\"patch\":\"%s\"}", SECOND_PATCH),
           "{\"id\":\"mallory\",\"kind\":\"agent\"}", RT_FORBIDDEN, "forbidden", NULL);
  err_call(e, "agent.register", "{\"agent_id\":\"mallory\",\"roles\":[\"author\"]}",
           "{\"id\":\"mallory\",\"kind\":\"agent\"}", RT_FORBIDDEN, "forbidden", NULL);
  err_call(e, "proposal.get", "{\"proposal_id\":\"prop-missing\"}", HOST, RT_NOT_FOUND, "not_found", NULL);

  /* rt_engine_open: NULL / non-UTF-8 / missing root, bad options, NULL engine_out. */
  rt_engine *e2 = (rt_engine *)&out; /* a sentinel that must stay untouched */
  struct {
    const char *root, *options, *code, *needle;
    rt_status want;
  } opens[] = {
      {NULL, NULL, "invalid_argument", "root", RT_INVALID_ARGUMENT},
      {bad_utf8, NULL, "invalid_argument", "root", RT_INVALID_ARGUMENT},
      {"/nonexistent/rt-c-test", NULL, "invalid_argument", "root", RT_INVALID_ARGUMENT},
      {root, "{\"durability\":\"sometimes\"}", "invalid_argument", "durability", RT_INVALID_ARGUMENT},
      {root, "{\"colour\":1}", "invalid_argument", "colour", RT_INVALID_ARGUMENT},
      {root, "[]", "invalid_argument", "object", RT_INVALID_ARGUMENT},
      {root, "{oops", "invalid_argument", "JSON", RT_INVALID_ARGUMENT},
      {root, bad_utf8, "invalid_argument", "options", RT_INVALID_ARGUMENT},
  };
  for (size_t i = 0; i < sizeof opens / sizeof opens[0]; i++) {
    err = NULL;
    s = rt_engine_open(opens[i].root, opens[i].options, &e2, &err);
    CHECK(s == opens[i].want, "open %zu: %u", i, (unsigned)s);
    CHECK(e2 == (rt_engine *)&out, "open %zu: engine_out written on failure", i);
    CHECK(err && strcmp(rt_error_code(err), opens[i].code) == 0, "open %zu: code %s", i, rt_error_code(err));
    CHECK(err && strstr(rt_error_message(err), opens[i].needle), "open %zu: message %s", i, rt_error_message(err));
    rt_error_free(err);
  }
  err = NULL;
  s = rt_engine_open(root, NULL, NULL, &err);
  CHECK(s == RT_INVALID_ARGUMENT && err && strstr(rt_error_message(err), "engine_out"), "NULL engine_out");
  rt_error_free(err);

  /* rt_patch_parse: a summary, a malformed patch, NULL with a length. */
  const char patch[] = "--- a/n.txt\n+++ b/n.txt\n@@ -1 +1 @@\n-one\n+two\n";
  out = NULL;
  s = rt_patch_parse((const uint8_t *)patch, strlen(patch), &out, NULL);
  CHECK(s == RT_OK && out && strstr(out, "\"new_path\":\"n.txt\""), "parse: %s", out);
  rt_string_free(out);
  /* A hunk cut short: it promises one added line and ends before it. */
  const char broken[] = "--- a/n.txt\n+++ b/n.txt\n@@ -1 +1 @@\n-one\n";
  err = NULL;
  out = NULL;
  s = rt_patch_parse((const uint8_t *)broken, strlen(broken), &out, &err);
  CHECK(s == RT_INVALID_PATCH && out == NULL, "malformed patch: %u", (unsigned)s);
  CHECK(err && strcmp(rt_error_code(err), "invalid_patch") == 0 && strstr(rt_error_details_json(err), "\"line\""),
        "parse error: %s", rt_error_details_json(err));
  rt_error_free(err);
  err = NULL;
  s = rt_patch_parse(NULL, 3, &out, &err);
  CHECK(s == RT_INVALID_ARGUMENT && out == NULL, "NULL patch: %u", (unsigned)s);
  rt_error_free(err);
  /* NULL with length 0 is the empty patch, which has no file: invalid_patch. */
  out = NULL;
  s = rt_patch_parse(NULL, 0, &out, NULL);
  CHECK(s == RT_INVALID_PATCH && out == NULL, "empty patch: %u", (unsigned)s);

  /* rt_patch_make: a modification rt_patch_parse reads back; NULL old data
     is a creation; a path outside the repository is refused. */
  out = NULL;
  size_t made_len = 0;
  s = rt_patch_make((const uint8_t *)"n.txt", 5, (const uint8_t *)"one\n", 4, (const uint8_t *)"two\n", 4, &out,
                    &made_len, NULL);
  CHECK(s == RT_OK && out && strlen(out) == made_len && strstr(out, "-one\n+two\n"), "make: %s", out);
  char *parsed = NULL;
  s = rt_patch_parse((const uint8_t *)out, made_len, &parsed, NULL);
  CHECK(s == RT_OK && parsed && strstr(parsed, "\"new_path\":\"n.txt\""), "made patch parsed: %s", parsed);
  rt_string_free(parsed);
  rt_string_free(out);
  out = NULL;
  s = rt_patch_make((const uint8_t *)"new.txt", 7, NULL, 0, (const uint8_t *)"x\n", 2, &out, NULL, NULL);
  CHECK(s == RT_OK && out && strstr(out, "new file mode 100644"), "make a creation: %s", out);
  rt_string_free(out);
  out = NULL;
  err = NULL;
  s = rt_patch_make((const uint8_t *)"../x", 4, NULL, 0, (const uint8_t *)"x", 1, &out, NULL, &err);
  CHECK(s == RT_PATH_ESCAPE && out == NULL && err && strcmp(rt_error_code(err), "path_escape") == 0,
        "make outside the repository: %u", (unsigned)s);
  rt_error_free(err);

  /* Every free and close accepts NULL; accessors return NULL for NULL. */
  rt_string_free(NULL);
  rt_error_free(NULL);
  rt_engine_close(NULL);
  CHECK(rt_error_code(NULL) == NULL && rt_error_message(NULL) == NULL && rt_error_details_json(NULL) == NULL,
        "accessors on NULL");

  rt_engine_close(e);
  remove_tree(root);
  free(root);
}

/* ---- four threads, one engine ---------------------------------------- */

#define THREADS 4
#define PER_THREAD 5

struct worker {
  rt_engine *engine;
  int index;
  int ok;
};

static void *work(void *arg) {
  struct worker *w = arg;
  char actor[128], a[4096];
  snprintf(actor, sizeof actor, "{\"id\":\"w%d\",\"kind\":\"agent\"}", w->index);
  for (int i = 0; i < PER_THREAD; i++) {
    snprintf(a, sizeof a,
             "{\"task_id\":\"t-conc\",\"title\":\"w%d change %d\",\"summary_md\":\"x\",\"patch\":\"%s\","
             "\"affected_resources\":[\"file:src/lib.rs\"]}",
             w->index, i, SECOND_PATCH);
    char *out = NULL;
    rt_error *err = NULL;
    if (rt_engine_call(w->engine, "proposal.create", a, actor, &out, &err) != RT_OK) {
      fprintf(stderr, "thread %d: %s: %s\n", w->index, rt_error_code(err), rt_error_message(err));
      rt_error_free(err);
      continue;
    }
    char pid[256], got[256];
    str_at(out, "proposal.id", pid, sizeof pid);
    rt_string_free(out);
    snprintf(a, sizeof a, "{\"proposal_id\":\"%s\"}", pid);
    out = NULL;
    if (rt_engine_call(w->engine, "proposal.get", a, actor, &out, NULL) == RT_OK &&
        strcmp(str_at(out, "proposal.id", got, sizeof got), pid) == 0)
      w->ok++;
    rt_string_free(out);
  }
  return NULL;
}

static void test_threads(void) {
  char *root = scratch_repo(LIB_RS);
  rt_engine *e = open_engine(root, "{\"durability\":\"normal\"}");
  if (!e) return;
  FREE_CALL(e, "task.create", "{\"task_id\":\"t-conc\",\"title\":\"Concurrent proposals\"}", HOST);
  struct worker workers[THREADS];
  pthread_t threads[THREADS];
  for (int i = 0; i < THREADS; i++) {
    FREE_CALL(e, "agent.register", args("{\"agent_id\":\"w%d\",\"roles\":[\"author\"]}", i), HOST);
  }
  for (int i = 0; i < THREADS; i++) {
    workers[i] = (struct worker){e, i, 0};
    CHECK(pthread_create(&threads[i], NULL, work, &workers[i]) == 0, "pthread_create");
  }
  for (int i = 0; i < THREADS; i++) {
    pthread_join(threads[i], NULL);
    CHECK(workers[i].ok == PER_THREAD, "thread %d: %d of %d", i, workers[i].ok, PER_THREAD);
  }
  /* A second engine on the same workspace sees every proposal. */
  rt_engine *other = open_engine(root, NULL);
  char *list = ok_call(other, "proposal.list", "{\"limit\":100}", HOST);
  int count = 0;
  for (const char *p = list; p && (p = strstr(p, "\"title\":\"w")); p++) count++;
  CHECK(count == THREADS * PER_THREAD, "%d proposals listed, want %d", count, THREADS * PER_THREAD);
  rt_string_free(list);
  rt_engine_close(other);
  rt_engine_close(e);
  remove_tree(root);
  free(root);
}

/* ---- byte-safe input, discovery, close during calls (issue 19) ------- */

/* alice (author) and bob (reviewer) registered, task t1, and alice's write
 * claim on `path`. */
static void author_and_reviewer(rt_engine *e, const char *path) {
  FREE_CALL(e, "agent.register", "{\"agent_id\":\"alice\",\"roles\":[\"author\"]}", HOST);
  FREE_CALL(e, "agent.register", "{\"agent_id\":\"bob\",\"roles\":[\"reviewer\"]}", HOST);
  FREE_CALL(e, "task.create", "{\"task_id\":\"t1\",\"title\":\"t\"}", HOST);
  FREE_CALL(e, "claim.acquire",
            args("{\"resource_id\":\"file:%s\",\"type\":\"write\",\"ttl_s\":600}", path), ALICE);
}

/* Proposal `pid` in review, approved by bob. */
static void approve(rt_engine *e, const char *pid) {
  FREE_CALL(e, "proposal.request_review", args("{\"proposal_id\":\"%s\"}", pid), ALICE);
  FREE_CALL(e, "vote.cast", args("{\"proposal_id\":\"%s\",\"revision\":1,\"vote\":\"approve\"}", pid), BOB);
}

/* Standard base64 of `n` bytes into `out` (NUL-terminated). */
static void base64(const unsigned char *in, size_t n, char *out) {
  static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t o = 0;
  for (size_t i = 0; i < n; i += 3) {
    unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0) |
                 (i + 2 < n ? in[i + 2] : 0);
    out[o++] = A[v >> 18 & 63];
    out[o++] = A[v >> 12 & 63];
    out[o++] = i + 1 < n ? A[v >> 6 & 63] : '=';
    out[o++] = i + 2 < n ? A[v & 63] : '=';
  }
  out[o] = '\0';
}

static void test_bytes_and_discovery(void) {
  /* A Latin-1 file changed by a Latin-1 patch, given as patch_base64. */
  char *root = scratch_repo(LIB_RS);
  write_file(root, "latin1.txt", "caf\xe9\nkeep \xff\n");
  rt_engine *e = open_engine(root, NULL);
  if (!e) return;
  author_and_reviewer(e, "latin1.txt");
  static const unsigned char patch[] =
      "--- a/latin1.txt\n+++ b/latin1.txt\n@@ -1,2 +1,2 @@\n-caf\xe9\n+na\xefve\n keep \xff\n";
  char b64[512];
  base64(patch, sizeof patch - 1, b64);
  char *made = ok_call(e, "proposal.create",
                       args("{\"task_id\":\"t1\",\"title\":\"L\",\"summary_md\":\"s\",\"patch_base64\":\"%s\"}", b64),
                       ALICE);
  char pid[256];
  str_at(made, "proposal.id", pid, sizeof pid);
  rt_string_free(made);
  approve(e, pid);
  FREE_CALL(e, "patch.apply", args("{\"proposal_id\":\"%s\",\"revision\":1}", pid), HOST);
  CHECK(file_equals(root, "latin1.txt", "na\xefve\nkeep \xff\n"), "latin1.txt is not byte-exact");

  /* rt_engine_call_n: lengths, not NULs. A NUL inside the arguments is
   * refused (never a call on the text before it); the result's length is
   * reported. */
  static const char tool[] = "proposal.get";
  char get[300];
  int n = snprintf(get, sizeof get, "{\"proposal_id\":\"%s\"}", pid);
  char *out = NULL;
  size_t len = 0;
  rt_error *err = NULL;
  rt_status s = rt_engine_call_n(e, (const unsigned char *)tool, sizeof tool - 1,
                                 (const unsigned char *)get, (size_t)n,
                                 (const unsigned char *)HOST, strlen(HOST), NULL, &out, &len, &err);
  CHECK(s == RT_OK && out && len == strlen(out), "call_n: %u len %zu", (unsigned)s, len);
  rt_string_free(out);
  rt_error_free(err);
  char with_nul[300];
  memcpy(with_nul, get, (size_t)n);
  with_nul[n] = '\0';
  memcpy(with_nul + n + 1, " junk", 5);
  out = NULL;
  err = NULL;
  s = rt_engine_call_n(e, (const unsigned char *)tool, sizeof tool - 1,
                       (const unsigned char *)with_nul, (size_t)n + 6,
                       (const unsigned char *)HOST, strlen(HOST), NULL, &out, NULL, &err);
  CHECK(s == RT_INVALID_ARGUMENT && out == NULL, "a NUL inside args: %u", (unsigned)s);
  rt_error_free(err);
  s = rt_engine_call_n(e, NULL, 3, (const unsigned char *)get, (size_t)n,
                       (const unsigned char *)HOST, strlen(HOST), NULL, &out, NULL, NULL);
  CHECK(s == RT_INVALID_ARGUMENT, "NULL with a length: %u", (unsigned)s);

  /* Discovery: the registry's schemas and the JSON surface's version. */
  char *tools = NULL;
  CHECK(rt_tools_json(&tools, NULL) == RT_OK && tools && tools[0] == '[', "rt_tools_json");
  CHECK(tools && strstr(tools, "\"name\":\"proposal.create\"") && strstr(tools, "\"patch_base64\""),
        "rt_tools_json lacks proposal.create's patch_base64");
  rt_string_free(tools);
  CHECK(rt_tools_json(NULL, NULL) == RT_INVALID_ARGUMENT, "rt_tools_json(NULL)");
  CHECK(rt_json_version() == RT_JSON_VERSION, "JSON version %u", rt_json_version());
  rt_engine_close(e);
  remove_tree(root);
  free(root);
}

struct waiter {
  rt_engine *engine;
  volatile int entering;
  int ok;
};

/* One events.wait that waits its whole 300 ms (nothing happens). */
static void *wait_once(void *arg) {
  struct waiter *w = arg;
  char *out = NULL;
  w->entering = 1;
  if (rt_engine_call(w->engine, "events.wait", "{\"since_seq\":0,\"timeout_ms\":300}", HOST,
                     &out, NULL) == RT_OK)
    w->ok = 1;
  rt_string_free(out);
  return NULL;
}

/* Closing an engine while another thread is inside a call on it: the call
 * finishes normally, and the engine is freed after it (valgrind checks the
 * memory). The close comes 100 ms into a 300 ms wait. */
static void test_close_during_call(void) {
  for (int round = 0; round < 3; round++) {
    char *root = scratch_repo(LIB_RS);
    rt_engine *e = open_engine(root, "{\"durability\":\"off\"}");
    if (!e) return;
    struct waiter w = {e, 0, 0};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, wait_once, &w) == 0, "pthread_create");
    while (!w.entering) sched_yield();
    struct timespec pause = {0, 100000000L};
    nanosleep(&pause, NULL);
    rt_engine_close(e);
    pthread_join(t, NULL);
    CHECK(w.ok == 1, "round %d: the call in flight failed", round);
    remove_tree(root);
    free(root);
  }
}

/* ---- cancellation and deadlines (issue 19 item 3) ---------------------- */

struct canceller {
  rt_cancel *cancel;
};

static void *cancel_soon(void *arg) {
  struct canceller *c = arg;
  struct timespec pause = {0, 50000000L};
  nanosleep(&pause, NULL);
  rt_cancel_cancel(c->cancel);
  return NULL;
}

/* An apply waiting for the workspace apply lock (held here with flock, as
 * another applier would) gives up at its deadline, or when its handle is
 * cancelled from another thread, long before the 10 s busy timeout — and
 * changes nothing. */
static void test_cancel_and_deadline(void) {
  char *root = scratch_repo(LIB_RS);
  rt_engine *e = open_engine(root, NULL);
  if (!e) return;
  author_and_reviewer(e, "README.md");
  char *made = ok_call(e, "proposal.create",
                       "{\"task_id\":\"t1\",\"title\":\"R\",\"summary_md\":\"s\",\"patch\":"
                       "\"--- a/README.md\\n+++ b/README.md\\n@@ -1 +1 @@\\n-demo project\\n+demo project!\\n\"}",
                       ALICE);
  char pid[256];
  str_at(made, "proposal.id", pid, sizeof pid);
  rt_string_free(made);
  approve(e, pid);
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/.roundtable", root);
  int held = open(dir, O_RDONLY | O_DIRECTORY);
  CHECK(held >= 0 && flock(held, LOCK_EX) == 0, "flock %s", dir);
  static const char tool[] = "patch.apply";
  char apply[512];
  snprintf(apply, sizeof apply, "{\"proposal_id\":\"%s\",\"revision\":1}", pid);
  size_t apply_len = strlen(apply);
  for (int round = 0; round < 2; round++) {
    rt_cancel *cancel = rt_cancel_new();
    rt_call_options options = {round == 0 ? 100 : 0, round == 1 ? cancel : NULL};
    pthread_t t;
    struct canceller c = {cancel};
    if (round == 1) CHECK(pthread_create(&t, NULL, cancel_soon, &c) == 0, "pthread_create");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char *out = NULL;
    rt_error *err = NULL;
    rt_status s = rt_engine_call_n(e, (const unsigned char *)tool, sizeof tool - 1, (const unsigned char *)apply,
                                   apply_len, (const unsigned char *)HOST, strlen(HOST), &options, &out, NULL, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    rt_status want = round == 0 ? RT_DEADLINE_EXCEEDED : RT_CANCELLED;
    CHECK(s == want && out == NULL, "round %d: status %u (%s), want %u", round, (unsigned)s,
          err ? rt_error_message(err) : "", (unsigned)want);
    CHECK(ms < 5000, "round %d: gave up after %.0f ms", round, ms);
    rt_error_free(err);
    if (round == 1) pthread_join(t, NULL);
    rt_cancel_free(cancel);
  }
  flock(held, LOCK_UN);
  close(held);
  /* Nothing changed: the file, and no transaction was recorded. */
  CHECK(file_equals(root, "README.md", "demo project\n"), "README.md changed");
  char *txs = ok_call(e, "transaction.list", "{}", HOST);
  CHECK(txs && strstr(txs, "\"transactions\":[]"), "a transaction was recorded: %s", txs);
  rt_string_free(txs);
  /* With the lock free, the same apply lands. */
  FREE_CALL(e, "patch.apply", apply, HOST);
  CHECK(file_equals(root, "README.md", "demo project!\n"), "README.md not applied");
  rt_cancel_cancel(NULL);
  rt_cancel_free(NULL);
  rt_engine_close(e);
  remove_tree(root);
  free(root);
}

int main(void) {
  CHECK(rt_abi_version() == RT_ABI_VERSION, "ABI %u", rt_abi_version());
  CHECK(rt_version() && rt_version()[0], "version");
  test_error_paths();
  test_threads();
  test_bytes_and_discovery();
  test_close_during_call();
  test_cancel_and_deadline();
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
