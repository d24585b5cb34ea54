// lk_frame: a strict reader of HTTP/1.1 request framing (RFC 9112), used by the request
// guard (lk_guard.c) to decide, byte for byte, what libmicrohttpd may see.
//
// Why this exists: libmicrohttpd 0.9.75 parses requests leniently and differently from
// the proxies that sit in front of Lookout (two Content-Length headers, a Content-Length
// beside Transfer-Encoding, "Content-Length : 30", a NUL in the target, unknown transfer
// codings, unbounded chunk extensions, ...), and answers some faults itself with HTML and,
// for a malformed Content-Length, with its status line and headers twice. Two parsers
// that disagree on where a request ends are what request smuggling is made of. So every
// byte a client sends is read here first, and only a request that both parsers must read
// the same way reaches libmicrohttpd.
//
// The reader is pure (no I/O, no clock, no allocation), so it can be fuzzed on its own.
// It walks a request as a sequence of elements: the head (request line and header
// fields), body bytes (opaque), chunk-size lines, the CRLF after each chunk's data, and
// the trailer section.

#ifndef LK_FRAME_H
#define LK_FRAME_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The trailer section of a chunked body: its bytes and its fields, at most (431).
#define LK_FRAME_MAX_TRAILER_BYTES 4096
#define LK_FRAME_MAX_TRAILER_FIELDS 16

/// What a request may be at most. Anything larger is refused with the status named.
typedef struct lk_frame_limits {
    /// Request line plus header fields plus the empty line, in bytes (431; 414 when the
    /// request line alone is over it).
    size_t max_head;
    /// The request target, in bytes (414).
    size_t max_target;
    /// Header field lines (431).
    size_t max_fields;
    /// Query parameters (`&`-separated items) in the target (414).
    size_t max_parameters;
    /// The body: a Content-Length, or the sum of the chunk sizes (413).
    uint64_t max_body;
} lk_frame_limits;

/// Where the reader is within a request.
typedef enum lk_frame_state {
    LK_FRAME_HEAD = 0,     // at the start of a request (or between requests)
    LK_FRAME_BODY,         // inside a Content-Length body: `remaining` opaque bytes
    LK_FRAME_CHUNK_SIZE,   // before a chunk-size line
    LK_FRAME_CHUNK_DATA,   // inside a chunk's data: `remaining` opaque bytes
    LK_FRAME_CHUNK_END,    // before the CRLF that ends a chunk's data
    LK_FRAME_TRAILERS,     // inside the trailer section, before a field line or its end
    LK_FRAME_REFUSED,      // a fault was found; nothing more is read
} lk_frame_state;

/// Why a request was refused: an HTTP status, a stable code and a sentence.
typedef struct lk_frame_fault {
    unsigned int status;
    const char *code;
    const char *message;
} lk_frame_fault;

typedef struct lk_frame {
    lk_frame_state state;
    /// Opaque bytes left in the current body or chunk.
    uint64_t remaining;
    /// Chunk sizes so far in a chunked body.
    uint64_t body_total;
    /// Trailer bytes and fields so far.
    size_t trailer_bytes;
    size_t trailer_fields;
    lk_frame_fault fault;
} lk_frame;

/// Bytes that may pass now without being looked at (body and chunk data); 0 elsewhere.
uint64_t lk_frame_opaque(const lk_frame *frame);

/// Moves past `count` opaque bytes.
/// - Precondition: count <= lk_frame_opaque(frame).
void lk_frame_skip(lk_frame *frame, uint64_t count);

/// Reads the next element from `data`, the bytes pending at the frame's position.
///
/// Returns the length of a complete, valid element (the frame then moves past it);
/// 0 when the element is valid so far but incomplete and could still fit the limits;
/// -1 when the request is refused (the frame is then LK_FRAME_REFUSED and its `fault`
/// says why). The result never depends on how the bytes were split across calls: the
/// same element given whole or a byte at a time gives the same verdict.
/// - Precondition: lk_frame_opaque(frame) == 0 and the frame is not refused.
ssize_t lk_frame_next(lk_frame *frame, const lk_frame_limits *limits, const uint8_t *data, size_t length);

/// Whether the frame is between requests (nothing of a request read yet).
int lk_frame_at_boundary(const lk_frame *frame);

#ifdef __cplusplus
}
#endif

#endif
