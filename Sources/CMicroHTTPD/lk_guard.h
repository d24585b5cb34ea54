// lk_guard: reads every byte of every connection before libmicrohttpd does, and lets it
// see only requests whose framing is beyond doubt (lk_frame.h).
//
// How: libmicrohttpd 0.9.75 reads sockets with recv(2) only. This target defines recv, so
// the dynamic linker binds libmicrohttpd's calls to it (the program's own definition comes
// before libc's); for a socket the guard does not know it is plain recvfrom(2). For a
// connection the guard knows, it reads into libmicrohttpd's buffer, checks the bytes in
// place, and holds back the start of an element that is not complete yet (a head that
// trickles in), so libmicrohttpd never sees half of something the guard may refuse.
//
// A refused request is not answered by libmicrohttpd (which answers some faults with HTML,
// and a malformed Content-Length with its headers twice): the guard gives libmicrohttpd
// the bytes that end the request cleanly instead, a minimal head at a request boundary or
// the end of a chunked body, marks that request refused, and the handler answers it with
// the guard's status through the usual path, with Connection: close.
//
// Deadlines: a request's head must arrive within the request timeout of its first byte,
// and its body at no less than LK_GUARD_MIN_BODY_RATE bytes a second after the same grace
// (Apache's RequestReadTimeout, in one rule). A late head or chunk line is refused with
// 408; a body stalled in its data is closed, since libmicrohttpd cannot answer in the middle
// of a body.
//
// Threading: a connection's guard state is only touched on its loop's thread (libmicrohttpd
// reads, notifies and calls the handler for a connection on the thread running its daemon).

#ifndef LK_GUARD_H
#define LK_GUARD_H

#include "lk_frame.h"

#include <microhttpd.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The least average rate a body must arrive at once the grace period has passed.
#define LK_GUARD_MIN_BODY_RATE 1024

typedef struct lk_loop lk_loop;

/// What the guard keeps per connection; libmicrohttpd's socket context points at it.
typedef struct lk_guard_conn lk_guard_conn;

/// Starts guarding a new connection of `loop`: called from the connection-started notice,
/// before libmicrohttpd reads from it. Returns NULL when out of memory (or when the socket
/// cannot be tracked); the connection must then be closed unread.
lk_guard_conn *lk_guard_open(lk_loop *loop, struct MHD_Connection *connection);

/// Stops guarding: called from the connection-closed notice, before the socket is closed.
void lk_guard_close(lk_guard_conn *conn);

/// The guard of a connection, from its socket context.
lk_guard_conn *lk_guard_of(struct MHD_Connection *connection);

/// Counts a request libmicrohttpd has started on the connection and returns its number
/// (1 for the first).
unsigned long long lk_guard_request_started(lk_guard_conn *conn);

/// The target of the next request libmicrohttpd starts on the connection, as sent (in origin
/// form), malloc'd for the caller to free; NULL means "/". libmicrohttpd itself sees "/"
/// (lk_head.h).
char *lk_guard_take_target(lk_guard_conn *conn);

/// The fault that refused request number `request` of the connection, or NULL.
const lk_frame_fault *lk_guard_fault(const lk_guard_conn *conn, unsigned long long request);

/// Whether the connection's socket is counted against its client's connection limit, and
/// marks it so (lk_server.c keeps that count).
int lk_guard_counted(const lk_guard_conn *conn);
void lk_guard_set_counted(lk_guard_conn *conn);

/// Acts on the loop's connections whose deadline is at or before `now_ms` (monotonic
/// milliseconds), and returns the milliseconds until the next deadline (-1: none).
long lk_guard_sweep(lk_loop *loop, uint64_t now_ms);

/// Monotonic time in milliseconds.
uint64_t lk_guard_now_ms(void);

#ifdef __cplusplus
}
#endif

#endif
