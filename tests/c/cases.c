/* Replays the language-neutral scenario corpus, the JSON files of tests/cases/tools
 * (the format: its README.md), through rt_engine_call. The Rust, Go and
 * Python suites replay the same files.
 *
 *   cases CORPUS_DIR
 *   cases --edit EDIT_FIXTURES_DIR
 *
 * With --edit it replays the edit-plan fixtures (tests/cases/edit) instead:
 * each case's files in a workspace, its plan proposed with proposal.create,
 * then either the refusal compared (code, message, details) or the change
 * reviewed and applied and the files on disk compared with the expected
 * bytes and executable bits.
 *
 * Exits 0 when every step of every scenario did what it expects, and when
 * a deliberately wrong expectation fails (the runner is not a rubber
 * stamp). JSON is read and written with cJSON (Debian's libcjson-dev). */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "roundtable.h"

#define MAX_SAVED 32

typedef struct {
  char *name;
  cJSON *value;
} saved_value;

typedef struct {
  saved_value items[MAX_SAVED];
  int n;
} saved_values;

static char *read_all(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  if (buf) buf[n] = 0;
  fclose(f);
  return buf;
}

static void mkdirs_for(const char *path) {
  char *copy = strdup(path);
  for (char *p = copy + 1; *p; p++) {
    if (*p == '/') {
      *p = 0;
      mkdir(copy, 0755);
      *p = '/';
    }
  }
  free(copy);
}

static const cJSON *saved_get(const saved_values *s, const char *name, size_t len) {
  for (int i = 0; i < s->n; i++)
    if (strlen(s->items[i].name) == len && strncmp(s->items[i].name, name, len) == 0) return s->items[i].value;
  return NULL;
}

/* A copy of v with every ${name} replaced by its saved value (a string that
 * is exactly ${name} becomes the value itself). */
static cJSON *substitute(const cJSON *v, const saved_values *s) {
  if (cJSON_IsString(v)) {
    const char *text = v->valuestring;
    size_t len = strlen(text);
    if (len > 3 && text[0] == '$' && text[1] == '{' && text[len - 1] == '}' && !strchr(text + 2, '$')) {
      const cJSON *whole = saved_get(s, text + 2, len - 3);
      if (whole) return cJSON_Duplicate(whole, 1);
    }
    size_t cap = len * 4 + 256, used = 0;
    char *out = malloc(cap);
    for (const char *p = text; *p;) {
      const char *end = p[0] == '$' && p[1] == '{' ? strchr(p, '}') : NULL;
      const cJSON *value = end ? saved_get(s, p + 2, (size_t)(end - p - 2)) : NULL;
      if (value && cJSON_IsString(value)) {
        size_t n = strlen(value->valuestring);
        if (used + n + 1 > cap) out = realloc(out, cap = (used + n) * 2 + 1);
        memcpy(out + used, value->valuestring, n);
        used += n;
        p = end + 1;
      } else {
        if (used + 2 > cap) out = realloc(out, cap *= 2);
        out[used++] = *p++;
      }
    }
    out[used] = 0;
    cJSON *made = cJSON_CreateString(out);
    free(out);
    return made;
  }
  if (cJSON_IsArray(v) || cJSON_IsObject(v)) {
    cJSON *made = cJSON_IsArray(v) ? cJSON_CreateArray() : cJSON_CreateObject();
    for (const cJSON *c = v->child; c; c = c->next) {
      cJSON *item = substitute(c, s);
      if (cJSON_IsArray(v))
        cJSON_AddItemToArray(made, item);
      else
        cJSON_AddItemToObject(made, c->string, item);
    }
    return made;
  }
  return cJSON_Duplicate(v, 1);
}

/* 1 when actual has everything expected names (objects by key, arrays
 * element by element with the same length, other values equal); else 0
 * with the path in why. */
static int subset(const cJSON *want, const cJSON *got, char *at, size_t atcap, char *why, size_t whycap) {
  size_t mark = strlen(at);
  if (cJSON_IsObject(want)) {
    if (!cJSON_IsObject(got)) return snprintf(why, whycap, "%s: not an object", at), 0;
    for (const cJSON *w = want->child; w; w = w->next) {
      snprintf(at + mark, atcap - mark, "/%s", w->string);
      const cJSON *g = cJSON_GetObjectItemCaseSensitive(got, w->string);
      if (!g) return snprintf(why, whycap, "%s: missing", at), 0;
      if (!subset(w, g, at, atcap, why, whycap)) return 0;
      at[mark] = 0;
    }
    return 1;
  }
  if (cJSON_IsArray(want)) {
    if (!cJSON_IsArray(got) || cJSON_GetArraySize(want) != cJSON_GetArraySize(got))
      return snprintf(why, whycap, "%s: not an array of %d items", at, cJSON_GetArraySize(want)), 0;
    int i = 0;
    for (const cJSON *w = want->child, *g = got->child; w; w = w->next, g = g->next, i++) {
      snprintf(at + mark, atcap - mark, "/%d", i);
      if (!subset(w, g, at, atcap, why, whycap)) return 0;
      at[mark] = 0;
    }
    return 1;
  }
  if (!cJSON_Compare(want, got, 1)) {
    char *w = cJSON_PrintUnformatted(want), *g = cJSON_PrintUnformatted(got);
    snprintf(why, whycap, "%s: %s, expected %s", at, g, w);
    free(w);
    free(g);
    return 0;
  }
  return 1;
}

static const cJSON *pointer(const cJSON *doc, const char *path) {
  char *copy = strdup(path), *save = NULL;
  for (char *part = strtok_r(copy, "/", &save); part && doc; part = strtok_r(NULL, "/", &save))
    doc = cJSON_IsArray(doc) ? cJSON_GetArrayItem(doc, atoi(part)) : cJSON_GetObjectItemCaseSensitive(doc, part);
  free(copy);
  return doc;
}

static char *actor_json(const char *spelling) {
  const char *colon = strchr(spelling, ':');
  cJSON *a = cJSON_CreateObject();
  char *kind = strndup(spelling, colon ? (size_t)(colon - spelling) : strlen(spelling));
  cJSON_AddStringToObject(a, "kind", kind);
  cJSON_AddStringToObject(a, "id", colon ? colon + 1 : "");
  char *out = cJSON_PrintUnformatted(a);
  cJSON_Delete(a);
  free(kind);
  return out;
}

static int check_files(const char *root, const cJSON *files, char *why, size_t whycap) {
  for (const cJSON *f = files ? files->child : NULL; f; f = f->next) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", root, f->string);
    char *got = read_all(path);
    int ok = cJSON_IsNull(f) ? got == NULL : (got && strcmp(got, f->valuestring) == 0);
    if (!ok) snprintf(why, whycap, "file %s: %s", f->string, got ? got : "(absent)");
    free(got);
    if (!ok) return 0;
  }
  return 1;
}

static void remove_tree(const char *path) {
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", path);
}

/* The status include/roundtable.h gives each stable code: a refusal's
 * status must be its code's (RT_UNKNOWN_ERROR for a code not listed). */
static rt_status status_of(const char *code) {
  static const struct {
    const char *code;
    rt_status status;
  } statuses[] = {
      {"invalid_patch", RT_INVALID_PATCH},
      {"patch_does_not_apply", RT_PATCH_DOES_NOT_APPLY},
      {"unsupported_patch", RT_UNSUPPORTED_PATCH},
      {"path_escape", RT_PATH_ESCAPE},
      {"invalid_path", RT_INVALID_PATH},
      {"irreversible_patch", RT_IRREVERSIBLE_PATCH},
      {"invalid_argument", RT_INVALID_ARGUMENT},
      {"io", RT_IO},
      {"precondition_failed", RT_PRECONDITION_FAILED},
      {"invalid_edit_plan", RT_INVALID_EDIT_PLAN},
      {"incomplete_edit_plan", RT_INCOMPLETE_EDIT_PLAN},
      {"not_found", RT_NOT_FOUND},
      {"forbidden", RT_FORBIDDEN},
      {"conflict", RT_CONFLICT},
      {"illegal_transition", RT_ILLEGAL_TRANSITION},
      {"idempotency_conflict", RT_IDEMPOTENCY_CONFLICT},
      {"database", RT_DATABASE},
      {"incompatible_store", RT_INCOMPATIBLE_STORE},
      {"unknown_symbol", RT_UNKNOWN_SYMBOL},
      {"ambiguous_symbol", RT_AMBIGUOUS_SYMBOL},
      {"unsupported_language", RT_UNSUPPORTED_LANGUAGE},
      {"invalid_policy", RT_INVALID_POLICY},
      {"stale_claim", RT_STALE_CLAIM},
      {"validation_failed", RT_VALIDATION_FAILED},
      {"busy", RT_BUSY},
      {"special_file", RT_SPECIAL_FILE},
      {"cancelled", RT_CANCELLED},
      {"deadline_exceeded", RT_DEADLINE_EXCEEDED},
      {"inherited_engine", RT_INHERITED_ENGINE},
      {"panic", RT_PANIC},
  };
  for (size_t i = 0; code && i < sizeof statuses / sizeof *statuses; i++)
    if (strcmp(statuses[i].code, code) == 0) return statuses[i].status;
  return RT_UNKNOWN_ERROR;
}

/* Runs one scenario: the number of steps, or -1 with why set. */
static int run(const cJSON *scenario, char *why, size_t whycap) {
  char dir[] = "/tmp/rt-cases.XXXXXX";
  if (!mkdtemp(dir)) return snprintf(why, whycap, "mkdtemp: %s", strerror(errno)), -1;
  char root[256];
  snprintf(root, sizeof root, "%s/repo", dir);
  mkdir(root, 0755);
  for (const cJSON *f = cJSON_GetObjectItemCaseSensitive(scenario, "files")->child; f; f = f->next) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", root, f->string);
    mkdirs_for(path);
    FILE *out = fopen(path, "wb");
    fputs(f->valuestring, out);
    fclose(out);
  }
  rt_engine *engine = NULL;
  rt_error *err = NULL;
  int result = -1;
  saved_values saved = {.n = 0};
  if (rt_engine_open(root, NULL, &engine, &err) != RT_OK) {
    snprintf(why, whycap, "open: %s", rt_error_message(err));
    rt_error_free(err);
    goto done;
  }
  int i = 0;
  const cJSON *steps = cJSON_GetObjectItemCaseSensitive(scenario, "steps");
  for (const cJSON *step = steps->child; step; step = step->next, i++) {
    const char *tool = cJSON_GetObjectItemCaseSensitive(step, "tool")->valuestring;
    int prefix = snprintf(why, whycap, "step %d (%s): ", i, tool);
    char *w = why + prefix;
    size_t wcap = whycap - (size_t)prefix;
    cJSON *args = substitute(cJSON_GetObjectItemCaseSensitive(step, "args"), &saved);
    cJSON *expect = substitute(cJSON_GetObjectItemCaseSensitive(step, "expect"), &saved);
    char *args_text = cJSON_PrintUnformatted(args);
    char *actor = actor_json(cJSON_GetObjectItemCaseSensitive(step, "as")->valuestring);
    char *const untouched = (char *)"untouched";
    char *out = untouched;
    err = NULL;
    rt_status st = rt_engine_call(engine, tool, args_text, actor, &out, &err);
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(expect, "error");
    char at[1024] = "";
    int ok = 1;
    if (st == RT_OK) {
      cJSON *got = cJSON_Parse(out);
      if (code) {
        snprintf(w, wcap, "succeeded, expected %s", code->valuestring);
        ok = 0;
      } else if (!subset(cJSON_GetObjectItemCaseSensitive(expect, "ok"), got, at, sizeof at, w, wcap)) {
        ok = 0;
      } else {
        const cJSON *save = cJSON_GetObjectItemCaseSensitive(step, "save");
        for (const cJSON *sv = save ? save->child : NULL; sv && ok; sv = sv->next) {
          const cJSON *value = pointer(got, sv->valuestring);
          int again = -1; /* a name saved again takes the new value */
          for (int k = 0; k < saved.n; k++)
            if (strcmp(saved.items[k].name, sv->string) == 0) again = k;
          if (!value) {
            snprintf(w, wcap, "nothing at %s to save", sv->valuestring);
            ok = 0;
          } else if (again < 0 && saved.n == MAX_SAVED) {
            snprintf(w, wcap, "more than %d saved names", MAX_SAVED);
            ok = 0;
          } else if (again >= 0) {
            cJSON_Delete(saved.items[again].value);
            saved.items[again].value = cJSON_Duplicate(value, 1);
          } else {
            saved.items[saved.n].name = strdup(sv->string);
            saved.items[saved.n++].value = cJSON_Duplicate(value, 1);
          }
        }
      }
      cJSON_Delete(got);
      rt_string_free(out);
    } else {
      const char *got_code = rt_error_code(err);
      if (out != untouched) {
        snprintf(w, wcap, "refused (%s), but the result was written", got_code);
        ok = 0;
      } else if (st != status_of(got_code)) {
        snprintf(w, wcap, "status %u for code %s, expected %u", (unsigned)st, got_code, (unsigned)status_of(got_code));
        ok = 0;
      } else if (!code) {
        snprintf(w, wcap, "refused: %s: %s", got_code, rt_error_message(err));
        ok = 0;
      } else if (strcmp(got_code, code->valuestring) != 0) {
        snprintf(w, wcap, "%s: %s, expected %s", got_code, rt_error_message(err), code->valuestring);
        ok = 0;
      } else {
        const cJSON *want = cJSON_GetObjectItemCaseSensitive(expect, "details");
        cJSON *details = cJSON_Parse(rt_error_details_json(err));
        strcpy(at, "details");
        if (want && !subset(want, details, at, sizeof at, w, wcap)) ok = 0;
        cJSON_Delete(details);
      }
      rt_error_free(err);
    }
    if (ok) ok = check_files(root, cJSON_GetObjectItemCaseSensitive(step, "files"), w, wcap);
    free(actor);
    free(args_text);
    cJSON_Delete(args);
    cJSON_Delete(expect);
    if (!ok) goto done;
  }
  result = i;
done:
  rt_engine_close(engine);
  for (int k = 0; k < saved.n; k++) {
    free(saved.items[k].name);
    cJSON_Delete(saved.items[k].value);
  }
  remove_tree(dir);
  return result;
}

/* --- the edit-plan fixtures (tests/cases/edit) ----------------------- */

static int b64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

/* Standard base64 (padding optional) decoded into a new buffer. */
static unsigned char *b64_decode(const char *text, size_t *len) {
  unsigned char *out = malloc(strlen(text) * 3 / 4 + 3);
  size_t n = 0;
  unsigned bits = 0;
  int have = 0;
  for (const char *p = text; *p && *p != '='; p++) {
    int v = b64_value(*p);
    if (v < 0) continue;
    bits = (bits << 6) | (unsigned)v;
    if ((have += 6) >= 8) {
      have -= 8;
      out[n++] = (unsigned char)(bits >> have);
    }
  }
  *len = n;
  return out;
}

static char *call(rt_engine *e, const char *actor, const char *tool, const char *args, rt_error **err) {
  char *out = NULL, *who = actor_json(actor);
  *err = NULL;
  if (rt_engine_call(e, tool, args, who, &out, err) != RT_OK) out = NULL;
  free(who);
  return out;
}

/* One fixture: 1 when it did what it expects, 0 with why set, -1 when it
 * cannot be sent through the tools (plan_text: not a JSON object). */
static int run_edit(const cJSON *c, char *why, size_t whycap) {
  const cJSON *plan = cJSON_GetObjectItemCaseSensitive(c, "plan");
  if (!plan) return -1;
  char dir[] = "/tmp/rt-edit.XXXXXX";
  if (!mkdtemp(dir)) return snprintf(why, whycap, "mkdtemp"), 0;
  char root[256], path[4096];
  snprintf(root, sizeof root, "%s/repo", dir);
  mkdir(root, 0755);
  for (const cJSON *f = cJSON_GetObjectItemCaseSensitive(c, "files")->child; f; f = f->next) {
    snprintf(path, sizeof path, "%s/%s", root, f->string);
    mkdirs_for(path);
    size_t n;
    unsigned char *bytes = b64_decode(cJSON_GetObjectItemCaseSensitive(f, "base64")->valuestring, &n);
    FILE *out = fopen(path, "wb");
    fwrite(bytes, 1, n, out);
    fclose(out);
    free(bytes);
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f, "executable"))) chmod(path, 0755);
  }
  rt_engine *e = NULL;
  rt_error *err = NULL;
  int ok = 0;
  if (rt_engine_open(root, "{\"durability\": \"off\"}", &e, &err) != RT_OK) {
    snprintf(why, whycap, "open: %s", rt_error_message(err));
    rt_error_free(err);
    goto done;
  }
  const char *setup[][3] = {
      {"orchestrator:host", "agent.register", "{\"agent_id\": \"ada\", \"roles\": [\"author\"]}"},
      {"orchestrator:host", "agent.register", "{\"agent_id\": \"rex\", \"roles\": [\"reviewer\"]}"},
      {"orchestrator:host", "task.create", "{\"task_id\": \"t\", \"title\": \"edit fixture\"}"},
  };
  for (size_t i = 0; i < sizeof setup / sizeof *setup; i++) {
    char *out = call(e, setup[i][0], setup[i][1], setup[i][2], &err);
    if (!out) {
      snprintf(why, whycap, "%s: %s", setup[i][1], rt_error_message(err));
      rt_error_free(err);
      goto done;
    }
    rt_string_free(out);
  }
  const cJSON *expect = cJSON_GetObjectItemCaseSensitive(c, "expect");
  const cJSON *error = cJSON_GetObjectItemCaseSensitive(expect, "error");
  const cJSON *changeset = cJSON_GetObjectItemCaseSensitive(expect, "changeset");
  /* Claim every path the change touches, so that it can land. */
  for (const cJSON *w = changeset ? changeset->child : NULL; w; w = w->next) {
    char args[4200];
    snprintf(args, sizeof args, "{\"resource_id\": \"file:%s\", \"type\": \"write\", \"ttl_s\": 600}",
             cJSON_GetObjectItemCaseSensitive(w, "path")->valuestring);
    char *out = call(e, "agent:ada", "claim.acquire", args, &err);
    if (!out) {
      snprintf(why, whycap, "claim.acquire: %s", rt_error_message(err));
      rt_error_free(err);
      goto done;
    }
    rt_string_free(out);
  }
  cJSON *create = cJSON_CreateObject();
  cJSON_AddStringToObject(create, "task_id", "t");
  cJSON_AddStringToObject(create, "title", "fixture");
  cJSON_AddStringToObject(create, "summary_md", cJSON_GetObjectItemCaseSensitive(c, "name")->valuestring);
  cJSON_AddItemToObject(create, "edit_plan", cJSON_Duplicate(plan, 1));
  char *create_text = cJSON_PrintUnformatted(create);
  cJSON_Delete(create);
  char *made = call(e, "agent:ada", "proposal.create", create_text, &err);
  free(create_text);
  if (error) {
    const char *code = cJSON_GetObjectItemCaseSensitive(error, "code")->valuestring;
    const cJSON *contains = cJSON_GetObjectItemCaseSensitive(error, "message_contains");
    const cJSON *details = cJSON_GetObjectItemCaseSensitive(error, "details");
    if (made) {
      snprintf(why, whycap, "succeeded, expected %s", code);
      rt_string_free(made);
    } else if (strcmp(rt_error_code(err), code) != 0) {
      snprintf(why, whycap, "%s: %s, expected %s", rt_error_code(err), rt_error_message(err), code);
    } else if (contains && !strstr(rt_error_message(err), contains->valuestring)) {
      snprintf(why, whycap, "message %s lacks %s", rt_error_message(err), contains->valuestring);
    } else {
      cJSON *got = cJSON_Parse(rt_error_details_json(err));
      char at[512] = "details";
      ok = !details || subset(details, got, at, sizeof at, why, whycap);
      cJSON_Delete(got);
    }
    rt_error_free(err);
    goto done;
  }
  if (!made) {
    snprintf(why, whycap, "proposal.create: %s: %s", rt_error_code(err), rt_error_message(err));
    rt_error_free(err);
    goto done;
  }
  cJSON *created = cJSON_Parse(made);
  rt_string_free(made);
  char pid_args[512];
  snprintf(pid_args, sizeof pid_args, "{\"proposal_id\": \"%s\", \"revision\": 1, \"vote\": \"approve\"}",
           pointer(created, "/proposal/id")->valuestring);
  cJSON_Delete(created);
  char review_args[512];
  snprintf(review_args, sizeof review_args, "%.*s}", (int)(strstr(pid_args, ", \"revision\"") - pid_args), pid_args);
  char apply_args[512];
  snprintf(apply_args, sizeof apply_args, "%.*s, \"revision\": 1}", (int)(strstr(pid_args, ", \"revision\"") - pid_args),
           pid_args);
  const char *flow[][3] = {
      {"agent:ada", "proposal.request_review", review_args},
      {"agent:rex", "vote.cast", pid_args},
      {"orchestrator:host", "patch.apply", apply_args},
  };
  for (size_t i = 0; i < sizeof flow / sizeof *flow; i++) {
    char *out = call(e, flow[i][0], flow[i][1], flow[i][2], &err);
    if (!out) {
      snprintf(why, whycap, "%s: %s: %s", flow[i][1], rt_error_code(err), rt_error_message(err));
      rt_error_free(err);
      goto done;
    }
    rt_string_free(out);
  }
  /* What landed is the expected bytes, executable bit and absences. */
  ok = 1;
  for (const cJSON *w = changeset->child; w && ok; w = w->next) {
    const char *p = cJSON_GetObjectItemCaseSensitive(w, "path")->valuestring;
    const cJSON *after = cJSON_GetObjectItemCaseSensitive(w, "after");
    snprintf(path, sizeof path, "%s/%s", root, p);
    struct stat st;
    int exists = stat(path, &st) == 0;
    if (cJSON_IsNull(after)) {
      if (exists) ok = 0, snprintf(why, whycap, "%s exists after the change", p);
      continue;
    }
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(after, "text");
    size_t want_len;
    unsigned char *want = text ? (unsigned char *)strdup(text->valuestring)
                               : b64_decode(cJSON_GetObjectItemCaseSensitive(after, "base64")->valuestring, &want_len);
    if (text) want_len = strlen(text->valuestring);
    FILE *f = exists ? fopen(path, "rb") : NULL;
    unsigned char *got = malloc(want_len + 2);
    size_t got_len = f ? fread(got, 1, want_len + 1, f) : 0;
    if (f) fclose(f);
    int exec = exists && (st.st_mode & 0100);
    if (!exists || got_len != want_len || memcmp(got, want, want_len) != 0)
      ok = 0, snprintf(why, whycap, "%s: not the expected bytes", p);
    else if (exec != cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(after, "executable")))
      ok = 0, snprintf(why, whycap, "%s: executable bit %d", p, exec);
    free(got);
    free(want);
  }
done:
  rt_engine_close(e);
  remove_tree(dir);
  return ok;
}

/* Replays every fixture of the edit-plan corpus: 0 when all passed. */
static int run_edit_corpus(const char *dir) {
  const char *files[] = {"changesets.json", "coordinates.json", "refusals.json"};
  int passed = 0, skipped = 0, failed = 0;
  char why[8192];
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    char *text = read_all(path);
    cJSON *doc = text ? cJSON_Parse(text) : NULL;
    free(text);
    if (!doc) {
      fprintf(stderr, "FAIL %s: not read\n", path);
      failed++;
      continue;
    }
    for (cJSON *c = cJSON_GetObjectItemCaseSensitive(doc, "cases")->child; c; c = c->next) {
      int r = run_edit(c, why, sizeof why);
      /* The first case that lands, once more with other expected bytes:
       * it must fail (the comparison is not a rubber stamp). */
      if (r == 1 && i == 0 && c == cJSON_GetObjectItemCaseSensitive(doc, "cases")->child) {
        cJSON *after = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(c, "expect"), "changeset"), 0),
            "after");
        cJSON_ReplaceItemInObjectCaseSensitive(after, "text", cJSON_CreateString("not what lands\n"));
        cJSON_DeleteItemFromObjectCaseSensitive(after, "base64");
        char wrong[512];
        if (run_edit(c, wrong, sizeof wrong) != 0) {
          fprintf(stderr, "FAIL: a wrong expected content passed\n");
          failed++;
        }
      }
      if (r < 0)
        skipped++;
      else if (r)
        passed++;
      else {
        fprintf(stderr, "FAIL %s: %s: %s\n", files[i], cJSON_GetObjectItemCaseSensitive(c, "name")->valuestring, why);
        failed++;
      }
    }
    cJSON_Delete(doc);
  }
  printf("edit fixtures: %d passed, %d skipped (plan_text), %d failed\n", passed, skipped, failed);
  return failed || passed < 50;
}

/* --- the runner's self-test ------------------------------------------ */

static cJSON *ok_of(cJSON *step) {
  return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(step, "expect"), "ok");
}

/* The index of the first step with an expected error (with_details: and
 * details), with files, or with save; -1 when there is none. */
static int find_step(cJSON *steps, const char *what) {
  int i = 0;
  for (cJSON *st = steps->child; st; st = st->next, i++) {
    cJSON *expect = cJSON_GetObjectItemCaseSensitive(st, "expect");
    if (strcmp(what, "error") == 0 && cJSON_GetObjectItemCaseSensitive(expect, "error")) return i;
    if (strcmp(what, "details") == 0 && cJSON_GetObjectItemCaseSensitive(expect, "details")) return i;
    if (strcmp(what, "files") == 0 && cJSON_GetObjectItemCaseSensitive(st, "files")) return i;
    if (strcmp(what, "save") == 0 && cJSON_GetObjectItemCaseSensitive(st, "save")) return i;
  }
  return -1;
}

/* Spoils the copy's steps one way; returns the step it spoiled. */
static int spoil(cJSON *steps, int kind) {
  cJSON *step0 = cJSON_GetArrayItem(steps, 0);
  cJSON *agent = cJSON_GetObjectItemCaseSensitive(ok_of(step0), "agent");
  int i;
  switch (kind) {
    case 0: /* another value */
      cJSON_ReplaceItemInObjectCaseSensitive(agent, "id", cJSON_CreateString("someone-else"));
      return 0;
    case 1: /* 1 is not true */
      cJSON_ReplaceItemInObjectCaseSensitive(ok_of(step0), "created", cJSON_CreateNumber(1));
      return 0;
    case 2: /* one element more */
      cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(agent, "roles"), cJSON_CreateString("x"));
      return 0;
    case 3: /* a key the result lacks */
      cJSON_AddNullToObject(ok_of(step0), "no_such_field");
      return 0;
    case 4: /* a refusal expected where the call succeeds */
      cJSON_ReplaceItemInObjectCaseSensitive(step0, "expect", cJSON_Parse("{\"error\": \"conflict\"}"));
      return 0;
    case 5: /* success expected where the call is refused */
      i = find_step(steps, "error");
      cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetArrayItem(steps, i), "expect", cJSON_Parse("{\"ok\": {}}"));
      return i;
    case 6: /* another code */
      i = find_step(steps, "error");
      cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(steps, i), "expect"),
                                             "error", cJSON_CreateString("not_found"));
      return i;
    case 7: /* details the refusal lacks */
      i = find_step(steps, "details");
      cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(steps, i), "expect"),
                                             "details", cJSON_Parse("{\"no_such_detail\": true}"));
      return i;
    case 8: /* other file contents */
    case 9: /* a file expected absent */
      i = find_step(steps, "files");
      {
        cJSON *files = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(steps, i), "files");
        cJSON_ReplaceItemInObjectCaseSensitive(files, files->child->string,
                                               kind == 8 ? cJSON_CreateString("not this\n") : cJSON_CreateNull());
      }
      return i;
    case 10: /* a pointer to nothing */
      i = find_step(steps, "save");
      {
        cJSON *save = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(steps, i), "save");
        cJSON_ReplaceItemInObjectCaseSensitive(save, save->child->string, cJSON_CreateString("/no/such/pointer"));
      }
      return i;
  }
  return -1;
}

/* The number of wrong expectations that did not fail at their step. */
static int self_test(const cJSON *base) {
  static const char *kinds[] = {"value", "type", "length", "missing key", "expected refusal", "expected success",
                                "code", "details", "file", "absence", "save"};
  int bad = 0;
  char why[8192];
  for (int k = 0; k < (int)(sizeof kinds / sizeof *kinds); k++) {
    cJSON *copy = cJSON_Duplicate(base, 1);
    int at = spoil(cJSON_GetObjectItemCaseSensitive(copy, "steps"), k);
    char prefix[32];
    snprintf(prefix, sizeof prefix, "step %d ", at);
    if (at < 0 || run(copy, why, sizeof why) >= 0 || strncmp(why, prefix, strlen(prefix)) != 0) {
      fprintf(stderr, "FAIL: a wrong %s (step %d) did not fail there: %s\n", kinds[k], at, at < 0 ? "" : why);
      bad++;
    } else {
      printf("ok   a wrong %s fails: %s\n", kinds[k], why);
    }
    cJSON_Delete(copy);
  }
  return bad;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--edit") == 0) return run_edit_corpus(argv[2]);
  if (argc != 2) {
    fprintf(stderr, "usage: %s CORPUS_DIR | --edit EDIT_FIXTURES_DIR\n", argv[0]);
    return 2;
  }
  DIR *d = opendir(argv[1]);
  if (!d) return perror(argv[1]), 2;
  char *names[256];
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) && n < 256;) {
    size_t len = strlen(e->d_name);
    if (len > 5 && strcmp(e->d_name + len - 5, ".json") == 0) names[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof *names, by_name);
  int failed = 0, steps = 0;
  char why[8192];
  cJSON *first = NULL;
  for (int i = 0; i < n; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", argv[1], names[i]);
    char *text = read_all(path);
    cJSON *scenario = text ? cJSON_Parse(text) : NULL;
    free(text);
    int done = scenario ? run(scenario, why, sizeof why) : -1;
    if (done < 0) {
      fprintf(stderr, "FAIL %s: %s\n", names[i], scenario ? why : "not JSON");
      failed++;
    } else {
      printf("ok   %s (%d steps)\n", names[i], done);
      steps += done;
    }
    if (strcmp(names[i], "governed-demo.json") == 0 && scenario)
      first = scenario;
    else
      cJSON_Delete(scenario);
    free(names[i]);
  }
  /* The runner is not a rubber stamp: each kind of wrong expectation, put
   * into a copy of governed-demo.json, must fail it at that very step. */
  if (!first) {
    fprintf(stderr, "FAIL: no governed-demo.json\n");
    failed++;
  } else {
    failed += self_test(first);
    cJSON_Delete(first);
  }
  printf("%d scenarios, %d steps, %d failed\n", n, steps, failed);
  return failed || n < 4 ? 1 : 0;
}
