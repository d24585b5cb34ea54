// The request guard; see lk_guard.h for what it does and why.

#define _GNU_SOURCE
#include "lk_guard.h"

#include "lk_head.h"
#include "lk_server.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>

struct lk_guard_conn {
    lk_loop *loop;
    struct MHD_Connection *connection;
    int fd;
    int counted;
    lk_frame frame;
    // Bytes read from the socket and not yet given to libmicrohttpd: the first `ready`
    // are checked; the rest is the start of an element that is not complete yet.
    uint8_t *stash;
    size_t stash_length;
    size_t ready;
    // After a refusal: the bytes that end the request for libmicrohttpd.
    const char *completion;
    size_t completion_length;
    size_t completion_sent;
    // Request heads given to libmicrohttpd (a completion's head included), and requests
    // it has started; the refused request's number, 0 for none.
    unsigned long long heads;
    unsigned long long started;
    unsigned long long refused;
    lk_frame_fault fault;
    // The client's end of stream was read in the middle of a request, with bytes still to
    // give libmicrohttpd first.
    int ended;
    // The client's end of stream was read: nothing it sent is left in the socket.
    int drained;
    // Deadline of the request being read (0: none), and what it is computed from.
    uint64_t deadline_ms;
    uint64_t since_ms;
    uint64_t body_bytes;
    lk_guard_conn *previous;
    lk_guard_conn *next;
    // The targets of the heads given to libmicrohttpd, which sees "/" instead, oldest first.
    struct lk_target *targets;
    struct lk_target *last_target;
};

struct lk_target {
    struct lk_target *next;
    char *text;
};

// A minimal request head: stands in for a refused head, so that libmicrohttpd starts a
// request the handler answers with the refusal.
static const char lk_stand_in_head[] = "GET / HTTP/1.1\r\nHost: lookout\r\n\r\n";

// Sockets to guards, by descriptor. A slot is written when libmicrohttpd starts a
// connection and cleared when it closes it, both before and after any recv on it, on the
// connection's loop thread; other threads only ever see their own sockets' slots, and a
// descriptor number is reused only after close, which orders the accesses.
static _Atomic(lk_guard_conn *) *lk_guard_table;
static size_t lk_guard_table_size;
static pthread_once_t lk_guard_table_once = PTHREAD_ONCE_INIT;

static void lk_guard_table_init(void) {
    struct rlimit limit;
    size_t size = 65536;
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_max != RLIM_INFINITY && limit.rlim_max > size) {
        size = (size_t)limit.rlim_max;
    }
    if (size > ((size_t)1 << 22)) size = (size_t)1 << 22;
    lk_guard_table = calloc(size, sizeof(*lk_guard_table));
    lk_guard_table_size = lk_guard_table != NULL ? size : 0;
}

uint64_t lk_guard_now_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
    return (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000;
}

lk_guard_conn *lk_guard_open(lk_loop *loop, struct MHD_Connection *connection) {
    pthread_once(&lk_guard_table_once, lk_guard_table_init);
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (info == NULL || info->connect_fd < 0 || (size_t)info->connect_fd >= lk_guard_table_size) {
        return NULL;
    }
    lk_guard_conn *conn = calloc(1, sizeof(*conn));
    if (conn == NULL) return NULL;
    conn->loop = loop;
    conn->connection = connection;
    conn->fd = info->connect_fd;
    atomic_store_explicit(&lk_guard_table[conn->fd], conn, memory_order_release);
    return conn;
}

static void lk_guard_unlist(lk_guard_conn *conn) {
    if (conn->deadline_ms == 0) return;
    if (conn->previous != NULL) {
        conn->previous->next = conn->next;
    } else {
        conn->loop->deadlines = conn->next;
    }
    if (conn->next != NULL) conn->next->previous = conn->previous;
    conn->previous = NULL;
    conn->next = NULL;
    conn->deadline_ms = 0;
}

static void lk_guard_set_deadline(lk_guard_conn *conn, uint64_t deadline_ms) {
    if (conn->deadline_ms == 0) {
        conn->next = conn->loop->deadlines;
        if (conn->next != NULL) conn->next->previous = conn;
        conn->loop->deadlines = conn;
        lk_loop_guard(conn->loop);
    }
    conn->deadline_ms = deadline_ms;
}

void lk_guard_close(lk_guard_conn *conn) {
    // The server ends the connection. Unless the client's end of stream was read, it may
    // still be writing, and a close with its bytes unread would reset the connection and
    // lose answers not yet sent: the thread drains it first (lk_linger.h). Where its end
    // was read, nothing is unread, and libmicrohttpd's close (without a shutdown first,
    // with MHD_USE_TURBO: lk_server.c) ends the stream itself.
    if (!conn->drained) {
        lk_thread *thread = conn->loop->thread;
        lk_linger_start(&thread->lingering, thread->epoll_fd, conn->fd, lk_guard_now_ms());
    }
    atomic_store_explicit(&lk_guard_table[conn->fd], NULL, memory_order_release);
    lk_guard_unlist(conn);
    while (conn->targets != NULL) free(lk_guard_take_target(conn));
    free(conn->stash);
    free(conn);
}

lk_guard_conn *lk_guard_of(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info != NULL ? info->socket_context : NULL;
}

unsigned long long lk_guard_request_started(lk_guard_conn *conn) {
    return ++conn->started;
}

const lk_frame_fault *lk_guard_fault(const lk_guard_conn *conn, unsigned long long request) {
    return conn->refused != 0 && conn->refused == request ? &conn->fault : NULL;
}

int lk_guard_counted(const lk_guard_conn *conn) {
    return conn->counted;
}

void lk_guard_set_counted(lk_guard_conn *conn) {
    conn->counted = 1;
}

// Keeps the target of a head given to libmicrohttpd, for lk_guard_take_target; NULL (a
// stand-in head, or out of memory) is taken as "/".
static void lk_guard_push_target(lk_guard_conn *conn, char *text) {
    struct lk_target *target = malloc(sizeof(*target));
    if (target == NULL) {
        free(text);
        return;  // lk_guard_take_target then finds fewer targets than requests and gives "/"
    }
    target->next = NULL;
    target->text = text;
    if (conn->last_target != NULL) {
        conn->last_target->next = target;
    } else {
        conn->targets = target;
    }
    conn->last_target = target;
}

char *lk_guard_take_target(lk_guard_conn *conn) {
    struct lk_target *target = conn->targets;
    if (target == NULL) return NULL;
    conn->targets = target->next;
    if (conn->targets == NULL) conn->last_target = NULL;
    char *text = target->text;
    free(target);
    return text;
}

// Refuses the request being read, found faulty in `state`: libmicrohttpd is given what
// ends it (unless it is inside opaque body bytes, where nothing can), and the fault is
// kept for the handler. Returns 0 when the connection must be closed instead.
static int lk_guard_refuse(lk_guard_conn *conn, lk_frame_state state, lk_frame_fault fault) {
    conn->fault = fault;
    conn->frame.state = LK_FRAME_REFUSED;
    conn->stash_length = conn->ready;  // checked bytes still go first; the rest is dropped
    lk_guard_unlist(conn);
    switch (state) {
    case LK_FRAME_HEAD:
        conn->completion = lk_stand_in_head;
        conn->refused = ++conn->heads;
        lk_guard_push_target(conn, NULL);
        break;
    case LK_FRAME_CHUNK_SIZE: conn->completion = "0\r\n\r\n"; break;
    case LK_FRAME_CHUNK_END: conn->completion = "\r\n0\r\n\r\n"; break;
    case LK_FRAME_TRAILERS: conn->completion = "\r\n"; break;
    case LK_FRAME_BODY:
    case LK_FRAME_CHUNK_DATA:
    case LK_FRAME_REFUSED: return 0;
    }
    if (state != LK_FRAME_HEAD) conn->refused = conn->heads;
    conn->completion_length = strlen(conn->completion);
    conn->completion_sent = 0;
    return 1;
}

// Reads the next element of the `*length` bytes at `data`, counting heads, and rewrites it
// for libmicrohttpd in place: a head as lk_head_compact has it (its target kept aside), a
// trailer field left out (no route reads trailers). What follows the element moves down
// and *length shrinks by what was left out. Returns as lk_frame_next does, except that a
// complete element's length is its rewritten one (0 for a dropped trailer field, which
// *dropped tells apart from an incomplete element); on a refusal the guard is set up to
// end the request.
static ssize_t lk_guard_element(lk_guard_conn *conn, uint8_t *data, size_t *length, int *dropped) {
    lk_mhd_server *server = conn->loop->server;
    lk_frame_state state = conn->frame.state;
    *dropped = 0;
    ssize_t read = lk_frame_next(&conn->frame, &server->limits, data, *length);
    if (read < 0) {
        (void)lk_guard_refuse(conn, state, conn->frame.fault);
        return read;
    }
    if (read == 0) return 0;
    size_t kept = (size_t)read;
    if (state == LK_FRAME_HEAD) {
        size_t fields = 0;
        char *target = NULL;
        kept = lk_head_compact(data, (size_t)read, server->kept_headers, &fields, &target);
        if (kept > server->kept_head_max || fields > server->kept_fields_max) {
            free(target);
            lk_frame_fault large = {431, "header_fields_too_large",
                                    "The header fields Lookout reads (Authorization and the like) are too large."};
            (void)lk_guard_refuse(conn, state, large);
            return -1;
        }
        conn->heads++;
        conn->since_ms = 0;
        conn->body_bytes = 0;
        lk_guard_push_target(conn, target);
    } else if (state == LK_FRAME_TRAILERS && conn->frame.state == LK_FRAME_TRAILERS) {
        kept = 0;  // a trailer field; the empty line that ends the section goes on
        *dropped = 1;
    }
    if (kept < (size_t)read) {
        memmove(data + kept, data + read, *length - (size_t)read);
        *length -= (size_t)read - kept;
    }
    return (ssize_t)kept;
}

static void lk_guard_skip(lk_guard_conn *conn, uint64_t count) {
    lk_frame_skip(&conn->frame, count);
    conn->body_bytes += count;
}

// Keeps the deadline of the request being read up to date: none between requests; the
// head's first byte plus the timeout while a head is incomplete; the body's start plus
// the timeout plus its bytes at the least rate while a body is read.
static void lk_guard_update_deadline(lk_guard_conn *conn) {
    int reading_head = conn->frame.state == LK_FRAME_HEAD && conn->stash_length > conn->ready;
    int reading_body = conn->frame.state != LK_FRAME_HEAD && conn->frame.state != LK_FRAME_REFUSED;
    if (!reading_head && !reading_body) {
        lk_guard_unlist(conn);
        conn->since_ms = 0;
        return;
    }
    if (conn->since_ms == 0) conn->since_ms = lk_guard_now_ms();
    uint64_t deadline = conn->since_ms + conn->loop->server->request_timeout_ms;
    if (reading_body) deadline += conn->body_bytes * 1000 / LK_GUARD_MIN_BODY_RATE;
    lk_guard_set_deadline(conn, deadline);
}

// Keeps the start of an incomplete element for later. The stash is allocated only while
// it holds something, so a connection between requests (a held long-poll) costs nothing
// here. Returns 0 when out of memory.
static int lk_guard_stash(lk_guard_conn *conn, const uint8_t *bytes, size_t count) {
    if (conn->stash == NULL) {
        conn->stash = malloc(conn->loop->server->stash_capacity);
        if (conn->stash == NULL) return 0;
    }
    memcpy(conn->stash + conn->stash_length, bytes, count);
    conn->stash_length += count;
    return 1;
}

static void lk_guard_release_stash(lk_guard_conn *conn) {
    if (conn->stash_length == 0 && conn->stash != NULL) {
        free(conn->stash);
        conn->stash = NULL;
    }
}

// Checks `*count` bytes just read into `data` in place, rewriting heads and dropping
// trailer fields as lk_guard_element does (so *count may shrink). Returns how many of the
// bytes may go to libmicrohttpd now; the start of an incomplete element after them goes to
// the stash.
static size_t lk_guard_check_in_place(lk_guard_conn *conn, uint8_t *data, size_t *count) {
    size_t position = 0;
    while (position < *count) {
        uint64_t opaque = lk_frame_opaque(&conn->frame);
        if (opaque > 0) {
            size_t passing = opaque < *count - position ? (size_t)opaque : *count - position;
            lk_guard_skip(conn, passing);
            position += passing;
            continue;
        }
        size_t left = *count - position;
        int dropped = 0;
        ssize_t read = lk_guard_element(conn, data + position, &left, &dropped);
        *count = position + left;
        if (read > 0 || dropped) {
            position += (size_t)read;
            continue;
        }
        if (read == 0 && !lk_guard_stash(conn, data + position, *count - position)) {
            lk_frame_fault memory = {503, "out_of_memory", "The server is out of memory; retry shortly."};
            (void)lk_guard_refuse(conn, conn->frame.state, memory);
        }
        break;
    }
    return position;
}

// Gives libmicrohttpd up to `length` bytes of the connection, as recv would.
static ssize_t lk_guard_read(lk_guard_conn *conn, uint8_t *buffer, size_t length) {
    size_t out = 0;
    ssize_t got = 0;
    // A read in this call found the client's end of stream. Not `got == 0`: a call that
    // fills libmicrohttpd's buffer from what the guard holds reads nothing.
    int at_end = 0;
    int saved_errno = errno;
    while (out < length && !conn->ended) {
        if (conn->ready > 0) {
            size_t count = conn->ready < length - out ? conn->ready : length - out;
            memcpy(buffer + out, conn->stash, count);
            memmove(conn->stash, conn->stash + count, conn->stash_length - count);
            conn->stash_length -= count;
            conn->ready -= count;
            out += count;
            continue;
        }
        if (conn->frame.state == LK_FRAME_REFUSED) {
            size_t left = conn->completion_length - conn->completion_sent;
            if (left == 0) break;  // nothing more is read from this connection
            size_t count = left < length - out ? left : length - out;
            memcpy(buffer + out, conn->completion + conn->completion_sent, count);
            conn->completion_sent += count;
            out += count;
            continue;
        }
        uint64_t opaque = lk_frame_opaque(&conn->frame);
        if (opaque > 0 && conn->stash_length > 0) {
            conn->ready = opaque < conn->stash_length ? (size_t)opaque : conn->stash_length;
            lk_guard_skip(conn, conn->ready);
            continue;
        }
        if (opaque == 0 && conn->stash_length > 0) {
            int dropped = 0;
            ssize_t read = lk_guard_element(conn, conn->stash, &conn->stash_length, &dropped);
            if (read > 0) conn->ready = (size_t)read;
            if (read != 0 || dropped) continue;
        }
        if (conn->stash_length == 0) {
            // The usual case: read straight into libmicrohttpd's buffer and check in place.
            size_t room = length - out;
            got = recvfrom(conn->fd, buffer + out, room, 0, NULL, NULL);
            at_end = got == 0;
            if (got <= 0) break;
            size_t count = (size_t)got;
            out += lk_guard_check_in_place(conn, buffer + out, &count);
            // A short read drained the socket, as libmicrohttpd assumes. In the middle of a
            // request, read once more anyway: an end of stream that came with the last bytes
            // gives no further event, and libmicrohttpd would wait for the rest of the body.
            if ((size_t)got < room && lk_frame_at_boundary(&conn->frame) && conn->stash_length == 0) break;
            continue;
        }
        // An element is incomplete: read more of it into the stash.
        size_t room = conn->loop->server->stash_capacity - conn->stash_length;
        got = room > 0 ? recvfrom(conn->fd, conn->stash + conn->stash_length, room, 0, NULL, NULL) : -1;
        at_end = got == 0;
        if (got <= 0) {
            if (room == 0) errno = EAGAIN;  // cannot happen: a full stash is refused first
            break;
        }
        conn->stash_length += (size_t)got;
    }
    lk_guard_release_stash(conn);
    lk_guard_update_deadline(conn);
    // The client closed. Between requests libmicrohttpd closes on end of stream; in the
    // middle of a request it would wait for the rest until the idle timeout, so the end is
    // reported there as a reset, which it closes on at once: now, or, when there are bytes
    // to give it first, at its next read, which a shutdown of our reading side brings on
    // (the end of stream was already signalled, and epoll signals only a change).
    if (at_end) conn->drained = 1;
    int ended = (at_end || conn->ended) && conn->frame.state != LK_FRAME_REFUSED &&
                !(lk_frame_at_boundary(&conn->frame) && conn->stash_length == 0);
    if (out > 0) {
        if (ended && !conn->ended) {
            conn->ended = 1;
            shutdown(conn->fd, SHUT_RD);
        }
        errno = saved_errno;
        return (ssize_t)out;
    }
    if (ended) {
        errno = ECONNRESET;
        return -1;
    }
    if (at_end && conn->frame.state != LK_FRAME_REFUSED) return 0;
    if (got > 0 || conn->frame.state == LK_FRAME_REFUSED) errno = EAGAIN;
    return -1;
}

// The program's recv: libmicrohttpd's reads come here (see lk_guard.h).
ssize_t recv(int fd, void *buffer, size_t length, int flags) {
    if (flags == 0 && fd >= 0 && (size_t)fd < lk_guard_table_size) {
        lk_guard_conn *conn = atomic_load_explicit(&lk_guard_table[fd], memory_order_acquire);
        if (conn != NULL) return lk_guard_read(conn, buffer, length);
    }
    return recvfrom(fd, buffer, length, flags, NULL, NULL);
}

long lk_guard_sweep(lk_loop *loop, uint64_t now_ms) {
    long next = -1;
    lk_guard_conn *conn = loop->deadlines;
    while (conn != NULL) {
        lk_guard_conn *following = conn->next;
        if (conn->deadline_ms <= now_ms) {
            lk_frame_fault late = {408, "request_timeout", "The request did not arrive in time."};
            lk_frame_state state = conn->frame.state;
            if (lk_frame_opaque(&conn->frame) == 0 && lk_guard_refuse(conn, state, late)) {
                // libmicrohttpd reads only when the socket is readable: make it so. The
                // completion is given from the stash, not the socket.
                shutdown(conn->fd, SHUT_RD);
            } else {
                lk_guard_unlist(conn);
                shutdown(conn->fd, SHUT_RDWR);  // in the middle of body bytes: close
            }
        } else {
            long left = (long)(conn->deadline_ms - now_ms);
            if (next < 0 || left < next) next = left;
        }
        conn = following;
    }
    return next;
}
