// lk_linger: closing a connection its client may still be writing to, without a reset.
//
// When the server ends a connection first (a refused request, an answer with Connection:
// close, pipelined requests behind it), bytes the client sent may still be unread. A close
// with unread bytes makes the kernel send a reset, which discards whatever of the answers
// has not left yet, and a client that reads the reset first loses answers it was owed.
// So, as nginx's lingering close does: the guard keeps the socket open past
// libmicrohttpd's close (a duplicate descriptor), ends its sending side, and reads and
// drops what the client still sends until it closes too, or LK_LINGER_MS pass.
//
// Threading: a set belongs to one loop thread, which alone uses it while it runs; once it
// has ended, the server's stop uses it (closing the daemons starts some, then
// lk_linger_close_all).

#ifndef LK_LINGER_H
#define LK_LINGER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    LK_LINGER_MS = 5000,  // longest a closed connection is drained
    LK_LINGER_MAX = 256,  // lingering sockets per thread; past it a close is a plain one
    LK_LINGER_READS = 16,  // reads of a lingering socket per turn of its thread's loop
};

/// The epoll tag of a lingering socket: this plus its descriptor.
#define LK_LINGER_EVENT ((uint64_t)1 << 32)

typedef struct lk_lingering {
    struct lk_linger_entry {
        int fd;
        uint64_t deadline_ms;
    } entries[LK_LINGER_MAX];
    size_t count;
} lk_lingering;

/// Ends the sending side of connection socket `fd`, about to be closed by libmicrohttpd,
/// and keeps draining it (a duplicate in `epoll_fd`) when there is room and a descriptor.
void lk_linger_start(lk_lingering *set, int epoll_fd, int fd, uint64_t now_ms);

/// The lingering socket tagged `tag` is readable: drops what came; closes it at its
/// client's end of stream or an error.
void lk_linger_readable(lk_lingering *set, uint64_t tag);

/// Closes the sockets whose time is up; returns the milliseconds until the next one's, or
/// -1 for none.
long lk_linger_sweep(lk_lingering *set, uint64_t now_ms);

/// Closes every lingering socket.
void lk_linger_close_all(lk_lingering *set);

#ifdef __cplusplus
}
#endif

#endif
