// Lingering close; see lk_linger.h for what it does and why.

#define _GNU_SOURCE
#include "lk_linger.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

static void lk_linger_remove(lk_lingering *set, size_t index) {
    close(set->entries[index].fd);  // also leaves the epoll set: the last descriptor goes
    set->entries[index] = set->entries[--set->count];
}

void lk_linger_start(lk_lingering *set, int epoll_fd, int fd, uint64_t now_ms) {
    // The end of stream goes after the answers already written, before any reset.
    shutdown(fd, SHUT_WR);
    if (set->count == LK_LINGER_MAX) return;
    int kept = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (kept < 0) return;
    struct epoll_event event = {.events = EPOLLIN | EPOLLRDHUP, .data.u64 = LK_LINGER_EVENT + (uint64_t)kept};
    if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, kept, &event) != 0) {
        close(kept);
        return;
    }
    set->entries[set->count++] = (struct lk_linger_entry){kept, now_ms + LK_LINGER_MS};
}

void lk_linger_readable(lk_lingering *set, uint64_t tag) {
    int fd = (int)(tag - LK_LINGER_EVENT);
    size_t index = 0;
    while (index < set->count && set->entries[index].fd != fd) index++;
    if (index == set->count) return;
    // At most LK_LINGER_READS reads a turn: a client that keeps writing does not hold the
    // thread; the socket stays readable, and its deadline ends it.
    char dropped[16384];
    for (int reads = 0; reads < LK_LINGER_READS; reads++) {
        ssize_t got = recvfrom(fd, dropped, sizeof(dropped), MSG_DONTWAIT, NULL, NULL);
        if (got > 0) continue;
        if (got < 0 && errno == EINTR) continue;
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        lk_linger_remove(set, index);  // its end of stream, or an error
        return;
    }
}

long lk_linger_sweep(lk_lingering *set, uint64_t now_ms) {
    long next = -1;
    size_t index = 0;
    while (index < set->count) {
        uint64_t deadline = set->entries[index].deadline_ms;
        if (deadline <= now_ms) {
            lk_linger_remove(set, index);
            continue;
        }
        long left = (long)(deadline - now_ms);
        if (next < 0 || left < next) next = left;
        index++;
    }
    return next;
}

void lk_linger_close_all(lk_lingering *set) {
    while (set->count > 0) lk_linger_remove(set, set->count - 1);
}
