// libFuzzer target for the C target's request handling as a whole: a real server
// (lk_mhd_start: the request guard, libmicrohttpd, the request protocol) on loopback,
// sent the input as a client's bytes, in pieces.
//
// The handler answers every request 200 with "METHOD TARGET BODY-LENGTH", and every
// refused request with its status and code. The pure framing reader (lk_frame.c) says how
// many answers to expect: one per complete request up to a refusal, plus the refusal's.
// Properties, on every input:
// - the server answers with a sequence of well-formed HTTP/1.1 responses, each once:
//   one status line, header fields, and exactly Content-Length bytes of body, then the
//   next response (libmicrohttpd's own double status line would fail this);
// - never more answers than expected, and fewer only when the server closed the
//   connection after an answer saying so (Connection: close: a request asking for it,
//   HTTP/1.0): nothing stalls, and no request is dropped unanswered;
// - after a refusal the server closes the connection;
// - the server survives: no crash, and it still answers a plain request afterwards.

#define _GNU_SOURCE  // memmem
#include "lk_frame.h"
#include "lk_mhd.h"
#include "pieces.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static lk_mhd_server *server;
static uint16_t port;

static void handle(void *context, lk_mhd_request *request) {
    (void)context;
    const char *code = NULL;
    const char *message = NULL;
    unsigned int status = lk_mhd_request_fault(request, &code, &message);
    char body[256];
    // A HEAD answer has no body: say so, for the reader of the answers.
    lk_mhd_header headers[] = {{"Content-Type", "text/plain"}, {"X-Head", "1"}};
    size_t header_count = strcmp(lk_mhd_request_method(request), "HEAD") == 0 ? 2 : 1;
    if (status != 0) {
        lk_mhd_respond(request, status, headers, header_count, code, strlen(code));
        return;
    }
    size_t length = 0;
    (void)lk_mhd_request_body(request, &length);
    int written = snprintf(body, sizeof(body), "%.16s %.64s %zu", lk_mhd_request_method(request),
                           lk_mhd_request_target(request), length);
    lk_mhd_respond(request, 200, headers, header_count, body, (size_t)written);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    lk_mhd_config config = {
        .bind_address = "127.0.0.1",
        .port = 0,
        .thread_count = 1,
        .connection_limit = 64,
        .per_ip_connection_limit = 0,
        .idle_timeout_seconds = 5,
        .max_head_bytes = 2048,
        .max_body_bytes = 4096,
        .request_timeout_seconds = 5,
        .request_headers = "authorization\0x-keep\0",  // as Lookout does: heads compacted
        .handler = handle,
        .context = NULL,
    };
    char error[256];
    server = lk_mhd_start(&config, error, sizeof(error));
    if (server == NULL) {
        fprintf(stderr, "cannot start: %s\n", error);
        abort();
    }
    port = lk_mhd_port(server);
    return 0;
}

static int connect_to_server(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(port)};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    // libFuzzer's timer (SIGALRM) may interrupt connect; the connection then completes on
    // its own.
    if (fd < 0 || (connect(fd, (struct sockaddr *)&address, sizeof(address)) != 0 && errno != EINTR)) {
        perror("connect");
        abort();
    }
    struct pollfd writable = {fd, POLLOUT, 0};
    int error = 0;
    socklen_t size = sizeof(error);
    while (poll(&writable, 1, 1000) < 0 && errno == EINTR) {
    }
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) != 0 || error != 0) {
        fprintf(stderr, "connect: %s\n", strerror(error));
        abort();
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

// How many answers the server owes for `data`, as the framing reader sees it, and whether
// it refused a request (then it must close after answering it).
static size_t expected_answers(const uint8_t *data, size_t length, int *refused) {
    static const lk_frame_limits limits = {
        .max_head = 2048, .max_target = 2048, .max_fields = 100, .max_parameters = 256, .max_body = 4096};
    lk_frame frame = {0};
    size_t position = 0;
    size_t answers = 0;
    *refused = 0;
    while (position < length) {
        uint64_t opaque = lk_frame_opaque(&frame);
        if (opaque > 0) {
            size_t pass = opaque < length - position ? (size_t)opaque : length - position;
            lk_frame_skip(&frame, pass);
            position += pass;
            if (lk_frame_at_boundary(&frame)) answers++;
            continue;
        }
        ssize_t read = lk_frame_next(&frame, &limits, data + position, length - position);
        if (read < 0) {
            *refused = 1;
            return answers + 1;
        }
        if (read == 0) break;
        position += (size_t)read;
        if (lk_frame_at_boundary(&frame)) answers++;
    }
    return answers;
}

// Reads answers until `expected` have come (and, with `until_closed`, the server has closed
// the connection), the server closes, or 4 s pass (a stall). Checks each is well-formed;
// returns how many came, and sets *closed, and *last_closes when the last one said
// Connection: close.
static size_t read_answers(int fd, size_t expected, int until_closed, int *closed, int *last_closes) {
    static char text[1 << 20];
    size_t length = 0;
    size_t position = 0;
    size_t answers = 0;
    *closed = 0;
    *last_closes = 0;
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        // Take every complete response in the buffer.
        for (;;) {
            if (length - position < 12) break;
            if (memcmp(text + position, "HTTP/1.1 ", 9) != 0) {
                fprintf(stderr, "not a status line at %zu: %.40s\n", position, text + position);
                abort();
            }
            const char *end = memmem(text + position, length - position, "\r\n\r\n", 4);
            if (end == NULL) break;
            size_t head_end = (size_t)(end - text) + 4;
            if (memcmp(text + position + 9, "100 ", 4) == 0) {  // an interim 100 Continue
                position = head_end;
                continue;
            }
            const char *field = memmem(text + position, head_end - position, "\r\nContent-Length: ", 18);
            if (field == NULL) {
                fprintf(stderr, "a response without Content-Length\n");
                abort();
            }
            size_t body = memmem(text + position, head_end - position, "\r\nX-Head: 1", 11) != NULL
                              ? 0
                              : strtoul(field + 18, NULL, 10);
            if (body > length - head_end) break;
            *last_closes = memmem(text + position, head_end - position, "\r\nConnection: close\r\n", 21) != NULL;
            position = head_end + body;
            answers++;
        }
        if (answers > expected) {
            fprintf(stderr, "%zu answers, %zu expected\n", answers, expected);
            abort();
        }
        if (answers == expected && !*closed && !until_closed) return answers;
        if (*closed) {
            if (position != length) {
                fprintf(stderr, "the connection closed inside an answer: %.*s\n", (int)(length - position),
                        text + position);
                abort();
            }
            return answers;
        }
        struct pollfd ready = {fd, POLLIN, 0};
        int waited = poll(&ready, 1, 100);
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec > 4) {
            fprintf(stderr, "stalled: %zu of %zu answers after 4 s\n", answers, expected);
            abort();
        }
        if (waited <= 0) continue;
        ssize_t got = recvfrom(fd, text + length, sizeof(text) - length, 0, NULL, NULL);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            *closed = 1;
        } else {
            length += (size_t)got;
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *input, size_t size) {
    fuzz_pieces pieces;
    if (!fuzz_pieces_split(input, size, 8, &pieces)) return 0;
    const uint8_t *data = pieces.data;
    size_t length = pieces.length;

    int fd = connect_to_server();
    size_t sent = 0;
    for (size_t piece = 0; sent < length; piece++) {
        size_t step = fuzz_piece_size(pieces.sizes, pieces.count, piece, length - sent);
        ssize_t written = send(fd, data + sent, step, MSG_NOSIGNAL);
        if (written < 0 && errno == EINTR) continue;
        if (written < 0) break;  // the server closed
        sent += (size_t)written;
    }
    int refused = 0;
    size_t expected = expected_answers(data, sent, &refused);
    // After a refusal nothing more is read, and the connection closes.
    int closed = 0;
    int last_closes = 0;
    size_t answers = read_answers(fd, expected, refused, &closed, &last_closes);
    if (answers < expected && !last_closes) {
        fprintf(stderr, "closed after %zu of %zu answers, without Connection: close\n", answers, expected);
        abort();
    }
    close(fd);

    // Still serving.
    int check = connect_to_server();
    static const char plain[] = "GET /alive HTTP/1.1\r\nHost: x\r\n\r\n";
    ssize_t written = -1;
    while ((written = send(check, plain, sizeof(plain) - 1, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
    }
    if (written != (ssize_t)(sizeof(plain) - 1)) {
        perror("send");
        abort();
    }
    int check_closed = 0;
    int check_closes = 0;
    if (read_answers(check, 1, 0, &check_closed, &check_closes) != 1) {
        fprintf(stderr, "the server no longer answers\n");
        abort();
    }
    close(check);
    return 0;
}
