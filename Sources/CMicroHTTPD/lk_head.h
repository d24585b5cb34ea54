// lk_head: what of a request head libmicrohttpd is given.
//
// libmicrohttpd keeps a request's head, and a 56-byte record per header field and query
// parameter, in a memory pool per connection, which it clears in full (memset) after each
// response, so every byte of the pool stays resident while the connection lives, a held
// long-poll's included. The guard therefore gives it only what Lookout reads: the request
// target is kept aside (the C layer hands it to Swift) and replaced by "/", and header
// fields no route reads (cookies, user agents, ...) are left out. The pool then holds a
// few hundred bytes per request, and can be small.

#ifndef LK_HEAD_H
#define LK_HEAD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Header field names, lowercase, each ended by NUL, the list ended by an empty name.
typedef const char *lk_names;

/// Rewrites a complete, valid request head (lk_frame_next accepted it) in place: leading
/// empty lines dropped, the request target replaced by "/", and only the fields named in
/// `kept` (compared without case) and the framing fields (Host, Content-Length,
/// Transfer-Encoding, Expect, Connection) left, in order, each line as sent. With `kept`
/// NULL every field is left.
///
/// Returns the new length, never more than `length`; *fields is set to the fields left.
/// *target is set to a malloc'd copy of the target in origin form ("http://host/a?b" gives
/// "/a?b"), or NULL when out of memory.
size_t lk_head_compact(uint8_t *head, size_t length, lk_names kept, size_t *fields, char **target);

#ifdef __cplusplus
}
#endif

#endif
