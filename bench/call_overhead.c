/* The C side of bench/call_overhead.py: `proposal.get` through
 * rt_engine_call, looped, on a workspace the Python side prepared.
 *
 *   call_overhead ROOT PROPOSAL_ID CALLS RUNS
 *
 * Prints one line per run: the microseconds per call (result freed each
 * time, as a host would). Exits non-zero on any refused call. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "roundtable.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s ROOT PROPOSAL_ID CALLS RUNS\n", argv[0]);
    return 2;
  }
  long calls = atol(argv[3]), runs = atol(argv[4]);
  rt_engine *engine = NULL;
  rt_error *err = NULL;
  if (rt_engine_open(argv[1], "{\"durability\": \"off\"}", &engine, &err) != RT_OK) {
    fprintf(stderr, "open: %s\n", err ? rt_error_message(err) : "?");
    return 1;
  }
  char args[512];
  snprintf(args, sizeof args, "{\"proposal_id\": \"%s\"}", argv[2]);
  const char *actor = "{\"kind\": \"orchestrator\", \"id\": \"host\"}";
  for (long run = -1; run < runs; run++) {  /* run -1 warms up */
    double start = now_s();
    for (long i = 0; i < calls; i++) {
      char *out = NULL;
      if (rt_engine_call(engine, "proposal.get", args, actor, &out, &err) != RT_OK) {
        fprintf(stderr, "proposal.get: %s\n", err ? rt_error_message(err) : "?");
        return 1;
      }
      rt_string_free(out);
    }
    double us = (now_s() - start) * 1e6 / (double)calls;
    if (run >= 0) printf("%.3f\n", us);
  }
  rt_engine_close(engine);
  return 0;
}
