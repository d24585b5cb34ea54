// The request framing reader; see lk_frame.h for why it exists.
//
// Grammar (RFC 9112, RFC 9110), as strict as libmicrohttpd 0.9.75 or stricter everywhere,
// so that what passes here libmicrohttpd reads the same way:
//   request-line = method SP request-target SP HTTP-version CRLF   (one space each)
//   field-line   = field-name ":" OWS field-value OWS CRLF          (no space before ":")
//   chunk        = 1*16HEXDIG [ ";" chunk-ext ] CRLF chunk-data CRLF
// A bare LF ends a line as CRLF does (both parsers allow it); a bare CR anywhere, a NUL or
// another control character, obs-fold, and anything outside these forms are refused.

#include "lk_frame.h"

#include <string.h>

enum {
    LK_MAX_METHOD = 32,
    LK_MAX_CHUNK_LINE = 1024,  // hex size and extensions; a 100 KB extension is refused
};

static const lk_frame_fault lk_fault_none = {0, NULL, NULL};

static ssize_t lk_refuse(lk_frame *frame, unsigned int status, const char *code, const char *message) {
    frame->state = LK_FRAME_REFUSED;
    frame->remaining = 0;
    frame->fault.status = status;
    frame->fault.code = code;
    frame->fault.message = message;
    return -1;
}

static ssize_t lk_malformed(lk_frame *frame, const char *message) {
    return lk_refuse(frame, 400, "malformed_request", message);
}

// What each byte may be in a head: T a tchar (RFC 9110 §5.6.2), V a byte of a field value
// (§5.5: field-vchar / SP / HTAB; obs-text, 0x80-0xFF, is allowed as opaque). One load a
// byte: the tests this replaces took ~16 instructions a byte of a field value, and the
// head's reading 17,500 of a single-wake round's 311,000 (Benchmarks/README.md, stop 51).
enum { LK_TCHAR = 1, LK_VALUE = 2 };
#define T LK_TCHAR
#define V LK_VALUE
static const uint8_t lk_byte_class[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, V, 0, 0, 0, 0, 0, 0,  // 0x00
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  // 0x10
    V, T|V, V, T|V, T|V, T|V, T|V, T|V, V, V, T|V, T|V, V, T|V, T|V, V,  // 0x20
    T|V, T|V, T|V, T|V, T|V, T|V, T|V, T|V, T|V, T|V, V, V, V, V, V, V,  // 0x30
    V, T|V, T|V, T|V, T|V, T|V, T|V, T|V, T|V, T|V, T|V, T|V, T|V, T|V, T|V, T|V,  // 0x40
    T|V, T|V, T|V, T|V, T|V, T|V, T|V, T|V, T|V, T|V, T|V, V, V, V, T|V, T|V,  // 0x50
    T|V, T|V, T|V, T|V, T|V, T|V, T|V, T|V, T|V, T|V, T|V, T|V, T|V, T|V, T|V, T|V,  // 0x60
    T|V, T|V, T|V, T|V, T|V, T|V, T|V, T|V, T|V, T|V, T|V, V, T|V, V, T|V, 0,  // 0x70
    V, V, V, V, V, V, V, V, V, V, V, V, V, V, V, V,  // 0x80
    V, V, V, V, V, V, V, V, V, V, V, V, V, V, V, V,  // 0x90
    V, V, V, V, V, V, V, V, V, V, V, V, V, V, V, V,  // 0xA0
    V, V, V, V, V, V, V, V, V, V, V, V, V, V, V, V,  // 0xB0
    V, V, V, V, V, V, V, V, V, V, V, V, V, V, V, V,  // 0xC0
    V, V, V, V, V, V, V, V, V, V, V, V, V, V, V, V,  // 0xD0
    V, V, V, V, V, V, V, V, V, V, V, V, V, V, V, V,  // 0xE0
    V, V, V, V, V, V, V, V, V, V, V, V, V, V, V, V,  // 0xF0
};
#undef T
#undef V

static inline int lk_is_tchar(uint8_t byte) {
    return lk_byte_class[byte] & LK_TCHAR;
}

static int lk_is_hex(uint8_t byte) {
    return (byte >= '0' && byte <= '9') || (byte >= 'a' && byte <= 'f') || (byte >= 'A' && byte <= 'F');
}

static unsigned int lk_hex_value(uint8_t byte) {
    if (byte <= '9') return (unsigned int)(byte - '0');
    return (unsigned int)((byte | 0x20) - 'a' + 10);
}

static inline int lk_is_field_byte(uint8_t byte) {
    return lk_byte_class[byte] & LK_VALUE;
}

static int lk_equal_caseless(const uint8_t *text, size_t length, const char *expected) {
    size_t count = strlen(expected);
    if (length != count) return 0;
    for (size_t index = 0; index < count; index++) {
        uint8_t a = text[index];
        uint8_t b = (uint8_t)expected[index];
        if (a >= 'A' && a <= 'Z') a = (uint8_t)(a | 0x20);
        if (a != b) return 0;
    }
    return 1;
}

// Where the line that starts at `position` ends: the index after its terminator, or 0
// when no terminator is in `data` yet. *end is set to the index of the terminator.
// Returns -1 for a CR not followed by LF.
static ssize_t lk_line(const uint8_t *data, size_t length, size_t position, size_t *end) {
    for (size_t index = position; index < length; index++) {
        if (data[index] == '\n') {
            *end = index;
            return (ssize_t)(index + 1);
        }
        if (data[index] == '\r') {
            if (index + 1 == length) return 0;
            if (data[index + 1] != '\n') return -1;
            *end = index;
            return (ssize_t)(index + 2);
        }
    }
    return 0;
}

uint64_t lk_frame_opaque(const lk_frame *frame) {
    return frame->state == LK_FRAME_BODY || frame->state == LK_FRAME_CHUNK_DATA ? frame->remaining : 0;
}

void lk_frame_skip(lk_frame *frame, uint64_t count) {
    frame->remaining -= count;
    if (frame->remaining > 0) return;
    frame->state = frame->state == LK_FRAME_BODY ? LK_FRAME_HEAD : LK_FRAME_CHUNK_END;
}

int lk_frame_at_boundary(const lk_frame *frame) {
    return frame->state == LK_FRAME_HEAD;
}

// The request target: origin-form, absolute-form (http or https), or "*" for OPTIONS.
// Every byte is visible ASCII (so no NUL, space, control or raw non-ASCII byte), and
// there is no fragment.
static ssize_t lk_check_target(lk_frame *frame, const lk_frame_limits *limits, const uint8_t *method,
                               size_t method_length, const uint8_t *target, size_t length) {
    if (length == 1 && target[0] == '*') {
        if (method_length == 7 && memcmp(method, "OPTIONS", 7) == 0) return 0;
        return lk_malformed(frame, "The request target '*' is only for OPTIONS.");
    }
    size_t path = 0;
    if (target[0] != '/') {
        size_t scheme = length >= 8 && lk_equal_caseless(target, 8, "https://") ? 8
                        : length >= 7 && lk_equal_caseless(target, 7, "http://") ? 7
                                                                                    : 0;
        if (scheme == 0) {
            return lk_malformed(frame, "The request target must be a path such as /v1/galleries, or an http URL.");
        }
        path = scheme;
        while (path < length && target[path] != '/' && target[path] != '?') {
            if (target[path] == '@') {
                return lk_malformed(frame, "The request target must not carry user information.");
            }
            path++;
        }
        if (path == scheme) return lk_malformed(frame, "The request target's URL has no host.");
    }
    size_t parameters = 0;
    int in_query = 0;
    for (size_t index = path; index < length; index++) {
        uint8_t byte = target[index];
        if (byte == '#') return lk_malformed(frame, "The request target must not have a fragment (#).");
        if (byte == '?' && !in_query) {
            in_query = 1;
            parameters = 1;
        } else if (byte == '&' && in_query) {
            parameters++;
        }
    }
    if (parameters > limits->max_parameters) {
        return lk_refuse(frame, 414, "uri_too_long", "The request target has too many query parameters.");
    }
    return 0;
}

// The Host field value: an authority without user information (RFC 9110 §7.2), here any
// visible ASCII but '/', '?', '#', '@' and '\'; empty is allowed.
static int lk_valid_host(const uint8_t *value, size_t length) {
    for (size_t index = 0; index < length; index++) {
        uint8_t byte = value[index];
        if (byte <= 0x20 || byte >= 0x7F || strchr("/?#@\\", byte) != NULL) return 0;
    }
    return 1;
}

// The head: request line, header fields and the empty line. Checks the framing fields
// and sets the frame's next state.
static ssize_t lk_read_head(lk_frame *frame, const lk_frame_limits *limits, const uint8_t *data, size_t length) {
    size_t position = 0;
    // RFC 9112 §2.2: empty lines before the request line are ignored (libmicrohttpd
    // skips them too). They count towards the head's size.
    while (position < length && (data[position] == '\r' || data[position] == '\n')) {
        if (data[position] == '\r') {
            if (position + 1 == length) goto incomplete;
            if (data[position + 1] != '\n') return lk_malformed(frame, "A CR must be followed by LF.");
            position++;
        }
        position++;
    }
    size_t request_line = position;

    // Method.
    size_t method_start = position;
    while (position < length && lk_is_tchar(data[position])) position++;
    size_t method_length = position - method_start;
    if (method_length > LK_MAX_METHOD) return lk_malformed(frame, "The method is too long.");
    if (position == length) goto incomplete;
    if (method_length == 0 || data[position] != ' ') {
        return lk_malformed(frame, "The request line must be METHOD SP TARGET SP HTTP/1.1, one space apart.");
    }
    position++;

    // Request target.
    size_t target_start = position;
    while (position < length && data[position] > 0x20 && data[position] < 0x7F) position++;
    size_t target_length = position - target_start;
    if (target_length > limits->max_target) {
        return lk_refuse(frame, 414, "uri_too_long", "The request target is too long.");
    }
    if (position == length) goto incomplete;
    if (target_length == 0 || data[position] != ' ') {
        return lk_malformed(
            frame, "The request target must be printable ASCII (percent-encode the rest), followed by one space.");
    }
    if (lk_check_target(frame, limits, data + method_start, method_length, data + target_start, target_length) < 0) {
        return -1;
    }
    position++;

    // HTTP-version: "HTTP/" DIGIT "." DIGIT.
    static const char pattern[] = "HTTP/d.d";
    size_t version_start = position;
    for (size_t index = 0; index < 8; index++, position++) {
        if (position == length) goto incomplete;
        uint8_t byte = data[position];
        int ok = pattern[index] == 'd' ? (byte >= '0' && byte <= '9') : byte == (uint8_t)pattern[index];
        if (!ok) return lk_malformed(frame, "The request line must end with HTTP/1.1 or HTTP/1.0.");
    }
    uint8_t major = data[version_start + 5];
    uint8_t minor = data[version_start + 7];
    if (major != '1') {
        return lk_refuse(frame, 505, "http_version_not_supported", "Only HTTP/1.1 and HTTP/1.0 are served.");
    }
    int http10 = minor == '0';
    if (position == length) goto incomplete;
    if (data[position] != '\r' && data[position] != '\n') {
        return lk_malformed(frame, "The request line must end after the version.");
    }
    size_t line_end = 0;
    ssize_t next = lk_line(data, length, position, &line_end);
    if (next < 0) return lk_malformed(frame, "A CR must be followed by LF.");
    if (next == 0) goto incomplete;
    position = (size_t)next;

    // Header fields.
    size_t fields = 0;
    unsigned int hosts = 0;
    int has_length = 0;
    int chunked = 0;
    uint64_t content_length = 0;
    for (;;) {
        if (position == length) goto incomplete;
        uint8_t first = data[position];
        if (first == '\r' || first == '\n') {
            next = lk_line(data, length, position, &line_end);
            if (next < 0) return lk_malformed(frame, "A CR must be followed by LF.");
            if (next == 0) goto incomplete;
            if (line_end != position) return lk_malformed(frame, "A CR must be followed by LF.");
            position = (size_t)next;
            break;
        }
        if (first == ' ' || first == '\t') {
            return lk_malformed(frame, "A header field cannot be continued on the next line (obs-fold).");
        }
        size_t name_start = position;
        while (position < length && lk_is_tchar(data[position])) position++;
        if (position == length) goto incomplete;
        size_t name_length = position - name_start;
        if (name_length == 0 || data[position] != ':') {
            return lk_malformed(frame, "A header field name must be a token followed directly by ':'.");
        }
        position++;
        size_t value_start = position;
        while (position < length && lk_is_field_byte(data[position])) position++;
        if (position < length && data[position] != '\r' && data[position] != '\n') {
            return lk_malformed(frame, "A header field value must not hold NUL or other control characters.");
        }
        next = lk_line(data, length, position, &line_end);
        if (next < 0) return lk_malformed(frame, "A CR must be followed by LF.");
        if (next == 0) goto incomplete;
        size_t value_end = line_end;
        while (value_start < value_end && (data[value_start] == ' ' || data[value_start] == '\t')) value_start++;
        while (value_end > value_start && (data[value_end - 1] == ' ' || data[value_end - 1] == '\t')) value_end--;
        // libmicrohttpd strips whitespace before a value but not after it: a framing field
        // with trailing whitespace would be read as another value there ("chunked\t" as
        // an unknown coding, "30 " as a malformed length).
        int trailing_space = value_end != line_end;
        const uint8_t *name = data + name_start;
        const uint8_t *value = data + value_start;
        size_t value_length = value_end - value_start;
        if (++fields > limits->max_fields) {
            return lk_refuse(frame, 431, "header_fields_too_large", "The request has too many header fields.");
        }
        if (lk_equal_caseless(name, name_length, "host")) {
            hosts++;
            if (!lk_valid_host(value, value_length)) return lk_malformed(frame, "The Host header is not a host.");
        } else if (lk_equal_caseless(name, name_length, "content-length")) {
            if (has_length) return lk_malformed(frame, "Content-Length is given more than once.");
            has_length = 1;
            if (value_length == 0 || value_length > 19 || trailing_space) {
                return lk_malformed(frame, "Content-Length must be a decimal number of bytes.");
            }
            for (size_t index = 0; index < value_length; index++) {
                if (value[index] < '0' || value[index] > '9') {
                    return lk_malformed(frame, "Content-Length must be a decimal number of bytes.");
                }
                content_length = content_length * 10 + (uint64_t)(value[index] - '0');  // 19 digits fit
            }
        } else if (lk_equal_caseless(name, name_length, "transfer-encoding")) {
            if (chunked) return lk_malformed(frame, "Transfer-Encoding is given more than once.");
            if (trailing_space) return lk_malformed(frame, "Transfer-Encoding must not end with whitespace.");
            if (!lk_equal_caseless(value, value_length, "chunked")) {
                return lk_refuse(frame, 501, "unsupported_transfer_coding",
                                 "Only Transfer-Encoding: chunked is accepted.");
            }
            chunked = 1;
        } else if (lk_equal_caseless(name, name_length, "expect")) {
            if (trailing_space || !lk_equal_caseless(value, value_length, "100-continue")) {
                return lk_refuse(frame, 417, "expectation_failed", "Only Expect: 100-continue is understood.");
            }
        }
        position = (size_t)next;
        if (position > limits->max_head) goto too_large;
    }
    if (position > limits->max_head) goto too_large;
    if (hosts > 1) return lk_malformed(frame, "The Host header is given more than once.");
    if (hosts == 0 && !http10) return lk_malformed(frame, "An HTTP/1.1 request needs a Host header.");
    if (chunked && has_length) return lk_malformed(frame, "A request cannot have both Content-Length and Transfer-Encoding.");
    if (chunked && http10) return lk_malformed(frame, "HTTP/1.0 has no Transfer-Encoding.");
    if (has_length && content_length > limits->max_body) {
        return lk_refuse(frame, 413, "payload_too_large", "The request body is larger than the server accepts.");
    }
    frame->body_total = 0;
    frame->trailer_bytes = 0;
    frame->trailer_fields = 0;
    if (chunked) {
        frame->state = LK_FRAME_CHUNK_SIZE;
    } else if (content_length > 0) {
        frame->state = LK_FRAME_BODY;
        frame->remaining = content_length;
    } else {
        frame->state = LK_FRAME_HEAD;
    }
    return (ssize_t)position;

incomplete:
    if (length < limits->max_head) return 0;
too_large:
    // Still in the request line: its target is what is too long.
    if (memchr(data + request_line, '\n', length - request_line) == NULL) {
        return lk_refuse(frame, 414, "uri_too_long", "The request line is too long.");
    }
    return lk_refuse(frame, 431, "header_fields_too_large", "The request's header fields are too large.");
}

// chunk-size [ chunk-ext ] CRLF. libmicrohttpd reads the size up to ';' or the line's
// end, so nothing may come between the digits and either.
static ssize_t lk_read_chunk_size(lk_frame *frame, const lk_frame_limits *limits, const uint8_t *data,
                                  size_t length) {
    size_t position = 0;
    uint64_t size = 0;
    while (position < length && lk_is_hex(data[position])) {
        if (position == 16) return lk_malformed(frame, "A chunk size has more than 16 hexadecimal digits.");
        size = size << 4 | lk_hex_value(data[position]);
        position++;
    }
    if (position == length) {
        return length < LK_MAX_CHUNK_LINE ? 0 : lk_malformed(frame, "A chunk-size line is too long.");
    }
    if (position == 0 || (data[position] != ';' && data[position] != '\r' && data[position] != '\n')) {
        return lk_malformed(frame, "A chunk must start with its size in hexadecimal.");
    }
    while (position < length && data[position] != '\r' && data[position] != '\n') {
        if (!lk_is_field_byte(data[position])) {
            return lk_malformed(frame, "A chunk extension must not hold control characters.");
        }
        position++;
    }
    size_t line_end = 0;
    ssize_t next = lk_line(data, length, position, &line_end);
    if (next < 0) return lk_malformed(frame, "A CR must be followed by LF.");
    if (next == 0 || (size_t)next > LK_MAX_CHUNK_LINE) {
        if (length < LK_MAX_CHUNK_LINE && next == 0) return 0;
        return lk_malformed(frame, "A chunk-size line is too long.");
    }
    if (size == 0) {
        frame->state = LK_FRAME_TRAILERS;
        return next;
    }
    if (size > limits->max_body - frame->body_total) {
        return lk_refuse(frame, 413, "payload_too_large", "The request body is larger than the server accepts.");
    }
    frame->body_total += size;
    frame->state = LK_FRAME_CHUNK_DATA;
    frame->remaining = size;
    return next;
}

// The line ending a chunk's data.
static ssize_t lk_read_chunk_end(lk_frame *frame, const uint8_t *data, size_t length) {
    size_t line_end = 0;
    ssize_t next = lk_line(data, length, 0, &line_end);
    if (next < 0 || (next > 0 && line_end != 0) || (next == 0 && data[0] != '\r')) {
        return lk_malformed(frame, "A chunk's data must be followed by CRLF.");
    }
    if (next == 0) return 0;
    frame->state = LK_FRAME_CHUNK_SIZE;
    return next;
}

// One trailer field line, or the empty line that ends the request.
static ssize_t lk_read_trailer(lk_frame *frame, const lk_frame_limits *limits, const uint8_t *data, size_t length) {
    size_t line_end = 0;
    ssize_t next = lk_line(data, length, 0, &line_end);
    if (next < 0) return lk_malformed(frame, "A CR must be followed by LF.");
    // An incomplete line may end in the CR of its CRLF.
    size_t scanned = next > 0 ? line_end : data[length - 1] == '\r' ? length - 1 : length;
    if (scanned > 0 && (data[0] == ' ' || data[0] == '\t')) {
        return lk_malformed(frame, "A trailer field cannot be continued on the next line (obs-fold).");
    }
    size_t position = 0;
    while (position < scanned && lk_is_tchar(data[position])) position++;
    if (position < scanned) {
        if (position == 0 || data[position] != ':') {
            return lk_malformed(frame, "A trailer field name must be a token followed directly by ':'.");
        }
        for (position++; position < scanned; position++) {
            if (!lk_is_field_byte(data[position])) {
                return lk_malformed(frame, "A trailer field value must not hold control characters.");
            }
        }
    }
    size_t total = frame->trailer_bytes + (next == 0 ? length : (size_t)next);
    if (total > LK_FRAME_MAX_TRAILER_BYTES || (next > 0 && line_end > 0 && frame->trailer_fields >= LK_FRAME_MAX_TRAILER_FIELDS)) {
        return lk_refuse(frame, 431, "header_fields_too_large", "The request's trailer fields are too large.");
    }
    if (next == 0) return 0;
    if (line_end == 0) {
        frame->state = LK_FRAME_HEAD;
        return next;
    }
    if (position == 0 || memchr(data, ':', line_end) == NULL) {
        return lk_malformed(frame, "A trailer field must be NAME: VALUE.");
    }
    frame->trailer_bytes = total;
    frame->trailer_fields++;
    return next;
}

ssize_t lk_frame_next(lk_frame *frame, const lk_frame_limits *limits, const uint8_t *data, size_t length) {
    if (frame->state == LK_FRAME_REFUSED) return -1;
    frame->fault = lk_fault_none;
    if (length == 0) return 0;
    switch (frame->state) {
    case LK_FRAME_HEAD: return lk_read_head(frame, limits, data, length);
    case LK_FRAME_CHUNK_SIZE: return lk_read_chunk_size(frame, limits, data, length);
    case LK_FRAME_CHUNK_END: return lk_read_chunk_end(frame, data, length);
    case LK_FRAME_TRAILERS: return lk_read_trailer(frame, limits, data, length);
    case LK_FRAME_BODY:
    case LK_FRAME_CHUNK_DATA:
    case LK_FRAME_REFUSED: break;
    }
    return lk_malformed(frame, "Body bytes were read as framing.");
}
