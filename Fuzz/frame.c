// libFuzzer target for the request framing reader (Sources/CMicroHTTPD/lk_frame.c) and
// the head compaction after it (lk_head.c).
//
// The input is a client's byte stream. It is read twice: whole, and split into pieces
// (sizes taken from the input's first bytes) the way the request guard meets them, one
// recv at a time, holding an incomplete element back until more arrives. Properties:
// - no crash, no read outside the input (run under AddressSanitizer);
// - the reader always makes progress or stops: every call consumes, waits or refuses;
// - an element is never longer than the bytes given, nor than the limits allow;
// - the verdicts do not depend on how the stream was split: the same elements, the same
//   opaque bytes, and the same fault, whole or in pieces;
// - a head it accepts, compacted (lk_head_compact), is no longer, is accepted again as
//   one whole head with the same body framing after it, and its
//   target is kept aside in origin form.

#include "lk_frame.h"
#include "lk_head.h"
#include "pieces.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const lk_frame_limits limits = {
    .max_head = 2048, .max_target = 1024, .max_fields = 16, .max_parameters = 16, .max_body = 4096,
};

typedef struct trace {
    size_t events[4096];
    size_t count;
    unsigned int status;
    size_t consumed;
} trace;

// Compacts a copy of an accepted head and checks it against `after`, the frame past it.
static void check_compaction(const uint8_t *head, size_t length, const lk_frame *after) {
    static uint8_t copy[1 << 16];
    if (length > sizeof(copy)) return;
    memcpy(copy, head, length);
    size_t fields = 0;
    char *target = NULL;
    size_t compacted = lk_head_compact(copy, length, "authorization\0x-keep\0", &fields, &target);
    if (compacted > length || target == NULL || (target[0] != '/' && target[0] != '*')) abort();
    free(target);
    lk_frame again = {0};
    ssize_t read = lk_frame_next(&again, &limits, copy, compacted);
    if (read != (ssize_t)compacted || again.state != after->state || again.remaining != after->remaining) {
        fprintf(stderr, "compacted head framed differently: %zd of %zu, state %d/%d\n", read, compacted,
                again.state, after->state);
        abort();
    }
}

static void record(trace *t, size_t event) {
    if (t->count < sizeof(t->events) / sizeof(t->events[0])) t->events[t->count++] = event;
}

// Reads `data` arriving in pieces of the given sizes (0 means all the rest at once).
static void read_stream(const uint8_t *data, size_t size, const uint8_t *pieces, size_t piece_count, trace *t,
                        int compact) {
    lk_frame frame = {0};
    memset(t, 0, sizeof(*t));
    size_t arrived = 0;   // bytes the "socket" has delivered so far
    size_t position = 0;  // bytes the reader has consumed
    size_t piece = 0;
    for (;;) {
        uint64_t opaque = lk_frame_opaque(&frame);
        if (opaque > 0 && position < arrived) {
            size_t pass = opaque < arrived - position ? (size_t)opaque : arrived - position;
            lk_frame_skip(&frame, pass);
            position += pass;
            continue;
        }
        if (opaque == 0 && position < arrived) {
            lk_frame_state before = frame.state;
            ssize_t read = lk_frame_next(&frame, &limits, data + position, arrived - position);
            if (read < 0) {
                if (frame.state != LK_FRAME_REFUSED || frame.fault.status < 400 || frame.fault.code == NULL ||
                    frame.fault.message == NULL) {
                    abort();  // a refusal always says why
                }
                t->status = frame.fault.status;
                break;
            }
            if (read > 0) {
                if ((size_t)read > arrived - position) abort();  // longer than what it was given
                if (compact && before == LK_FRAME_HEAD) check_compaction(data + position, (size_t)read, &frame);
                position += (size_t)read;
                record(t, (size_t)read);
                continue;
            }
            // Incomplete: it must still fit the limits, or it would have been refused.
            if (arrived - position > limits.max_head + limits.max_body + 2048) abort();
        }
        if (arrived == size) break;
        arrived += fuzz_piece_size(pieces, piece_count, piece++, size - arrived);
    }
    t->consumed = position;
}

int LLVMFuzzerTestOneInput(const uint8_t *input, size_t size) {
    fuzz_pieces pieces;
    if (!fuzz_pieces_split(input, size, 32, &pieces)) return 0;
    const uint8_t *data = pieces.data;
    size_t length = pieces.length;

    static trace whole;
    static trace split;
    read_stream(data, length, NULL, 0, &whole, 1);
    read_stream(data, length, pieces.sizes, pieces.count, &split, 0);
    // Split reading sees the same bytes; a refusal may only come at the same point.
    if (whole.status != split.status || whole.consumed != split.consumed || whole.count != split.count ||
        memcmp(whole.events, split.events, whole.count * sizeof(whole.events[0])) != 0) {
        fprintf(stderr, "split changed the verdict: whole %u after %zu, split %u after %zu\n", whole.status,
                whole.consumed, split.status, split.consumed);
        abort();
    }
    return 0;
}
