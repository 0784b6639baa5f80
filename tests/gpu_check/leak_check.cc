// In the sanitizer build, leak checking is off for this one test program:
// libnvrtc (closed source, opened at run time) leaves threads of its own
// running at exit, and LeakSanitizer's end-of-process tracer crashed on them
// once after every test had passed. AddressSanitizer and UBSan stay on here,
// and every other test program still checks loom's code for leaks.
#ifdef LOOM_SANITIZED_BUILD
extern "C" int __lsan_is_turned_off() { return 1; }
#endif
