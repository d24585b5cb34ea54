// The head libmicrohttpd is given; see lk_head.h.

#include "lk_head.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

// Fields libmicrohttpd needs to frame and answer a request.
static const char lk_framing[] = "host\0content-length\0transfer-encoding\0expect\0connection\0";

static int lk_named(lk_names names, const uint8_t *name, size_t length) {
    for (const char *candidate = names; *candidate != '\0'; candidate += strlen(candidate) + 1) {
        if (strlen(candidate) == length && strncasecmp(candidate, (const char *)name, length) == 0) return 1;
    }
    return 0;
}

// The end of the line starting at `position`: the index after its LF.
static size_t lk_line_end(const uint8_t *head, size_t length, size_t position) {
    const uint8_t *lf = memchr(head + position, '\n', length - position);
    return lf != NULL ? (size_t)(lf - head) + 1 : length;
}

// A copy of `target` in origin form.
static char *lk_origin_form(const uint8_t *target, size_t length) {
    size_t start = 0;
    size_t scheme = length >= 8 && strncasecmp((const char *)target, "https://", 8) == 0   ? 8
                    : length >= 7 && strncasecmp((const char *)target, "http://", 7) == 0 ? 7
                                                                                          : 0;
    int rooted = 1;
    if (scheme > 0) {
        start = scheme;
        while (start < length && target[start] != '/' && target[start] != '?') start++;
        rooted = start < length && target[start] == '/';
    }
    char *copy = malloc(length - start + 2);
    if (copy == NULL) return NULL;
    size_t offset = 0;
    if (!rooted) copy[offset++] = '/';  // "http://host" or "http://host?q": the path is "/"
    memcpy(copy + offset, target + start, length - start);
    copy[offset + length - start] = '\0';
    return copy;
}

size_t lk_head_compact(uint8_t *head, size_t length, lk_names kept, size_t *fields, char **target) {
    size_t position = 0;
    while (position < length && (head[position] == '\r' || head[position] == '\n')) position++;
    // Request line: METHOD SP TARGET SP VERSION EOL, single spaces (lk_frame checked it).
    size_t line_end = lk_line_end(head, length, position);
    const uint8_t *method_end = memchr(head + position, ' ', line_end - position);
    const uint8_t *target_start = method_end + 1;
    const uint8_t *target_end = memchr(target_start, ' ', (size_t)(head + line_end - target_start));
    *target = lk_origin_form(target_start, (size_t)(target_end - target_start));
    size_t out = 0;
    size_t method_length = (size_t)(method_end - (head + position));
    memmove(head, head + position, method_length);
    out = method_length;
    head[out++] = ' ';
    head[out++] = '/';
    size_t rest = (size_t)(head + line_end - target_end);  // " HTTP/1.1\r\n"
    memmove(head + out, target_end, rest);
    out += rest;
    position = line_end;
    *fields = 0;
    while (position < length) {
        line_end = lk_line_end(head, length, position);
        const uint8_t *colon = memchr(head + position, ':', line_end - position);
        if (colon == NULL) {  // the empty line that ends the head
            memmove(head + out, head + position, line_end - position);
            out += line_end - position;
            break;
        }
        size_t name_length = (size_t)(colon - (head + position));
        if (kept == NULL || lk_named(lk_framing, head + position, name_length) ||
            lk_named(kept, head + position, name_length)) {
            memmove(head + out, head + position, line_end - position);
            out += line_end - position;
            (*fields)++;
        }
        position = line_end;
    }
    return out;
}
