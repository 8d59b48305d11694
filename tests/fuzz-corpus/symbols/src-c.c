#include <stdio.h>

/* Adds. */
int add(int a, int b);
int add(int a, int b) { return a + b; }
void (*on_signal(int sig, void (*fn)(int)))(int);
struct point { int x; int y; };
typedef struct node { struct node *next; } node;
typedef int (*cmp_fn)(const void *, const void *);
#ifdef DEBUG
static void trace(const char *m) { puts(m); }
#else
static void trace(const char *m) { (void)m; }
#endif
