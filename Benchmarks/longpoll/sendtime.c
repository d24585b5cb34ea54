// An LD_PRELOAD library that times a server's sends: how long each sendmsg, writev and
// send call takes, as the calling thread sees it. On loopback the sender's call also
// carries the receiving socket's TCP work and the wake-up of the reader, so it shows what
// part of a wake no server can save. Benchmarks/send-time.sh uses it on Lookout and Nchan.
//
// Each process writes "<start ns> <duration ns>" lines (CLOCK_MONOTONIC), one per call, to
// $SENDTIME_DIR/sends.<pid> when it exits. The directory is read once, at load: nginx
// clears its workers' environment, and they fork from the master that loaded this.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define SENDTIME_CAPACITY 400000

static uint64_t starts[SENDTIME_CAPACITY];
static uint32_t durations[SENDTIME_CAPACITY];
static atomic_int recorded;
static char directory[512];

static ssize_t (*real_sendmsg)(int, const struct msghdr *, int);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static ssize_t (*real_send)(int, const void *, size_t, int);

static uint64_t now_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

static void write_out(void) {
    int count = atomic_load(&recorded);
    if (count > SENDTIME_CAPACITY) count = SENDTIME_CAPACITY;
    if (directory[0] == 0 || count == 0) return;
    char path[600];
    snprintf(path, sizeof path, "%s/sends.%d", directory, (int)getpid());
    FILE *file = fopen(path, "w");
    if (file == NULL) return;
    for (int index = 0; index < count; index++) {
        // 0: a call another thread had begun to record when the process exited.
        if (durations[index] != 0) fprintf(file, "%llu %u\n", (unsigned long long)starts[index], durations[index]);
    }
    fclose(file);
}

__attribute__((constructor)) static void load(void) {
    const char *dir = getenv("SENDTIME_DIR");
    if (dir != NULL) snprintf(directory, sizeof directory, "%s", dir);
    real_sendmsg = (ssize_t (*)(int, const struct msghdr *, int))dlsym(RTLD_NEXT, "sendmsg");
    real_writev = (ssize_t (*)(int, const struct iovec *, int))dlsym(RTLD_NEXT, "writev");
    real_send = (ssize_t (*)(int, const void *, size_t, int))dlsym(RTLD_NEXT, "send");
}

__attribute__((destructor)) static void unload(void) {
    write_out();
}

static void record(uint64_t start, uint64_t end) {
    int index = atomic_fetch_add(&recorded, 1);
    if (index >= SENDTIME_CAPACITY) return;
    starts[index] = start;
    uint64_t took = end - start;
    durations[index] = took == 0 ? 1 : took > UINT32_MAX ? UINT32_MAX : (uint32_t)took;
}

ssize_t sendmsg(int fd, const struct msghdr *message, int flags) {
    uint64_t start = now_ns();
    ssize_t sent = real_sendmsg(fd, message, flags);
    record(start, now_ns());
    return sent;
}

ssize_t writev(int fd, const struct iovec *vector, int count) {
    uint64_t start = now_ns();
    ssize_t sent = real_writev(fd, vector, count);
    record(start, now_ns());
    return sent;
}

ssize_t send(int fd, const void *buffer, size_t length, int flags) {
    uint64_t start = now_ns();
    ssize_t sent = real_send(fd, buffer, length, flags);
    record(start, now_ns());
    return sent;
}
