// AddressSanitizer's defaults for lookout-fuzz (sanitizer_common's interface: the runtime
// calls this if the program defines it).
//
// No leak checking: LeakSanitizer cannot follow a pointer that Swift keeps in a
// multi-payload enum, whose case lives in the pointer's spare bits, so it reports memory
// that is still reachable (the Ed25519 key inside a SigningKey, for one). Swift code frees
// nothing by hand; a C target's binary does not link this and keeps leak checking.
const char *__asan_default_options(void);

const char *__asan_default_options(void) { return "detect_leaks=0"; }
