#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
#if X
int f(void);
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
