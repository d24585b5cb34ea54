// libFuzzer's entry point for a program that has its own main() ("Using libFuzzer as a
// library", LLVM's LibFuzzer.rst). SwiftPM gives every executable a main() of its own,
// so lookout-fuzz calls this instead of linking libFuzzer's main(). It is defined in
// the libFuzzer runtime that -sanitize=fuzzer links.
#ifndef C_LIB_FUZZER_H
#define C_LIB_FUZZER_H

#include <stddef.h>
#include <stdint.h>

/// Parses libFuzzer's flags from argc/argv and fuzzes (or replays files with)
/// `callback`; returns the process's exit status.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
