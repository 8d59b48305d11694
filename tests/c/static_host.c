/*
 * A host with its own SQLite-named symbol, linked against libroundtable
 * statically (scripts/test-ffi) and dynamically from an installed prefix:
 * roundtable's bundled SQLite must neither clash with nor merge into the
 * host's. Opens an engine on a scratch directory and makes a call, so the
 * bundled SQLite really runs; prints "ok" and exits 0.
 */
#define _GNU_SOURCE
#include "roundtable.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The host's own function of the name roundtable's SQLite also defines. */
int sqlite3_libversion_number(void) { return -42; }

int main(void) {
  char tmpl[] = "/tmp/rt-static-host-XXXXXX";
  char *root = mkdtemp(tmpl);
  if (!root) return 1;
  rt_engine *e = NULL;
  rt_error *err = NULL;
  char *out = NULL;
  int ok = rt_engine_open(root, "{\"durability\":\"off\"}", &e, &err) == RT_OK &&
           rt_engine_call(e, "agent.list", "{}", "{\"id\":\"h\",\"kind\":\"orchestrator\"}", &out,
                          &err) == RT_OK &&
           strstr(out, "\"agents\"") != NULL && sqlite3_libversion_number() == -42 &&
           rt_json_version() == RT_JSON_VERSION;
  if (!ok && err) fprintf(stderr, "%s: %s\n", rt_error_code(err), rt_error_message(err));
  rt_string_free(out);
  rt_error_free(err);
  rt_engine_close(e);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  if (system(cmd) != 0) return 1;
  puts(ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
