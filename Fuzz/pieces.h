// How the C fuzz targets read an input as a client's bytes arriving in pieces: the first
// byte says how many of the next bytes are piece sizes (modulo a target's maximum), and
// each size says how many bytes arrive at once (0: all that are left); the rest is data.
#ifndef LK_FUZZ_PIECES_H
#define LK_FUZZ_PIECES_H
#include <stddef.h>
#include <stdint.h>

typedef struct fuzz_pieces {
    const uint8_t *sizes;
    size_t count;
    const uint8_t *data;
    size_t length;
} fuzz_pieces;

// Splits `input` into piece sizes (at most `most` - 1) and data; 0 when it is too short.
static inline int fuzz_pieces_split(const uint8_t *input, size_t size, size_t most, fuzz_pieces *pieces) {
    size_t count = size > 0 ? input[0] % most : 0;
    if (size < 1 + count) return 0;
    *pieces = (fuzz_pieces){input + 1, count, input + 1 + count, size - 1 - count};
    return 1;
}

// How many bytes piece number `piece` brings, of `left` still to arrive.
static inline size_t fuzz_piece_size(const uint8_t *sizes, size_t count, size_t piece, size_t left) {
    size_t step = piece < count && sizes[piece] != 0 ? sizes[piece] : left;
    return step < left ? step : left;
}
#endif
