// The access-handler protocol of libmicrohttpd, turned into one call per request.
//
// Every byte libmicrohttpd reads has passed the request guard first (lk_guard.h), which
// checks the framing strictly; a request it refused arrives here marked with its fault,
// and is answered with it and Connection: close.
//
// libmicrohttpd calls the access handler several times per request: once when the
// headers are parsed, once per chunk of body, and a final time with no data. Answering
// on the first call forces `Connection: close` (measured: notes/libmicrohttpd.md), so a
// request is handed to Swift on the final call. A suspended request is answered by
// storing its response and resuming the connection; libmicrohttpd then calls the access
// handler once more, and the stored response is queued from there.
// The event loops that run these callbacks are in lk_server.c.

#include "lk_mhd.h"

#include "lk_server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum lk_request_state {
    LK_READING = 0,   // headers or body still arriving
    LK_HANDLING,      // inside the Swift handler
    LK_SUSPENDED,     // handler suspended it; nobody answered yet
    LK_RESUMING,      // answered from another thread; waiting for the access handler
    LK_ANSWERED,      // a response is stored (or queued)
};

struct lk_mhd_request {
    lk_mhd_server *server;
    lk_loop *loop;
    struct MHD_Connection *connection;
    lk_guard_conn *guard;
    unsigned long long number;  // of the request on its connection, from 1
    const lk_frame_fault *fault;  // set when the guard refused it
    const char *method;   // owned by libmicrohttpd, valid for the request
    char *target;         // our copy of the raw URI: libmicrohttpd unescapes its own in place
    uint8_t *body;
    size_t body_length;
    size_t body_capacity;
    int was_suspended;
    _Atomic int state;
    struct MHD_Response *response;
    lk_mhd_shared *shared;  // when `response` is a shared one's: the reference this request holds
    unsigned int status;
    size_t head_used;  // of the connection's memory pool (lk_head_used)
    uint64_t received_ns;  // when tracing
    _Atomic uint64_t trace_tag;
};

// Tracing (lk_mhd_set_trace): off unless a hook is set.
static void (*lk_trace_hook)(uint64_t tag, unsigned int stage, uint64_t nanoseconds);

static uint64_t lk_now_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

static void lk_trace(struct lk_mhd_request *request, unsigned int stage) {
    uint64_t tag = atomic_load_explicit(&request->trace_tag, memory_order_relaxed);
    if (tag != 0) lk_trace_hook(tag, stage, lk_now_ns());
}

void lk_mhd_set_trace(void (*hook)(uint64_t tag, unsigned int stage, uint64_t nanoseconds)) {
    lk_trace_hook = hook;
}

uint64_t lk_mhd_request_received_ns(const lk_mhd_request *request) {
    return request->received_ns;
}

void lk_mhd_request_set_trace_tag(lk_mhd_request *request, uint64_t tag) {
    atomic_store_explicit(&request->trace_tag, tag, memory_order_relaxed);
}

_Static_assert(sizeof(unsigned int) >= 4, "HTTP status codes need at least 16 bits");

void *lk_on_uri(void *cls, const char *uri, struct MHD_Connection *connection) {
    lk_loop *loop = cls;
    struct lk_mhd_request *request = calloc(1, sizeof(*request));
    if (request == NULL) {
        return NULL;
    }
    request->server = loop->server;
    request->loop = loop;
    request->connection = connection;
    request->guard = lk_guard_of(connection);
    request->number = request->guard != NULL ? lk_guard_request_started(request->guard) : 0;
    (void)uri;  // "/": the target as sent is kept by the guard (lk_head.h)
    request->target = request->guard != NULL ? lk_guard_take_target(request->guard) : NULL;
    if (request->target == NULL) request->target = strdup("/");
    atomic_init(&request->state, LK_READING);
    if (request->target == NULL) {
        free(request);
        return NULL;
    }
    return request;
}

struct lk_mhd_shared {
    struct MHD_Response *response;
    unsigned int status;
    size_t head_bytes;  // of its header fields on the wire (lk_head_bytes)
    atomic_uint references;
};

// What libmicrohttpd adds to a response's header fields on the wire, at most: the status
// line, Date, Content-Length, Connection, and the empty line.
#define LK_RESPONSE_HEAD_EXTRA 160

// The bytes `headers` take on the wire ("Name: value\r\n" each), plus what libmicrohttpd adds.
static size_t lk_head_bytes(const lk_mhd_header *headers, size_t header_count) {
    size_t bytes = LK_RESPONSE_HEAD_EXTRA;
    for (size_t index = 0; index < header_count; index++) {
        bytes += strlen(headers[index].name) + strlen(headers[index].value) + 4;
    }
    return bytes;
}

// What of the connection's memory pool the request holds once its answer is being written:
// libmicrohttpd writes the response's head into the pool, after shrinking its read buffer
// to the request head it holds, beside a 64-byte record per field
// (connection.c: connection_switch_from_recv_to_send, build_header_response). Worked out
// once, on the connection's thread, before the handler runs: the request does not change
// after, and an answer may be given from any thread.
static size_t lk_head_used(const lk_mhd_request *request) {
    size_t pool = request->server->connection_memory;
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(request->connection, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    size_t head = info != NULL ? info->header_size : pool;
    int fields = MHD_get_connection_values(
        request->connection, MHD_HEADER_KIND | MHD_GET_ARGUMENT_KIND | MHD_FOOTER_KIND, NULL, NULL);
    return (head + 15) / 16 * 16 + 64 * (size_t)(fields > 0 ? fields : 0) + 64;
}

// Whether a response head of `head_bytes` fits what is left of the connection's memory
// pool; a head that does not fit makes libmicrohttpd close the connection without an answer.
static int lk_head_fits(const lk_mhd_request *request, size_t head_bytes) {
    size_t pool = request->server->connection_memory;
    return request->head_used < pool && head_bytes <= pool - request->head_used;
}

// The answer when the real one's header fields would not fit: a short JSON error.
static const char lk_too_large_body[] =
    "{\"error\":{\"code\":\"answer_too_large\",\"message\":\"The answer's header fields are larger than "
    "this connection can send; ask for less (a shorter query).\"}}";

// Gives up the request's hold on its response, queued or not.
static void lk_drop_response(struct lk_mhd_request *request) {
    if (request->shared != NULL) {
        lk_mhd_shared_release(request->shared);
    } else if (request->response != NULL) {
        MHD_destroy_response(request->response);
    }
    request->shared = NULL;
    request->response = NULL;
}

static void lk_free_request(struct lk_mhd_request *request) {
    lk_drop_response(request);
    free(request->body);
    free(request->target);
    free(request);
}

void lk_on_completed(void *cls, struct MHD_Connection *connection, void **req_cls,
                            enum MHD_RequestTerminationCode code) {
    (void)connection;
    (void)cls;
    struct lk_mhd_request *request = *req_cls;
    if (request == NULL) {
        return;
    }
    if (request->was_suspended) {
        atomic_fetch_sub(&request->server->suspended, 1);
        atomic_fetch_sub_explicit(&request->loop->thread->suspended, 1, memory_order_relaxed);
    }
    if (lk_trace_hook != NULL && code == MHD_REQUEST_TERMINATED_COMPLETED_OK) lk_trace(request, LK_MHD_TRACE_SENT);
    lk_free_request(request);
    *req_cls = NULL;
}

// Keeps a chunk of the body; 0 when out of memory, or past the limit (which the guard
// refuses before: a body of its size never reaches here).
static int lk_append_body(struct lk_mhd_request *request, const char *data, size_t size) {
    size_t limit = request->server->config.max_body_bytes;
    if (size > limit - request->body_length) {
        return 0;
    }
    if (request->body_length + size > request->body_capacity) {
        size_t capacity = request->body_capacity == 0 ? 4096 : request->body_capacity;
        while (capacity < request->body_length + size) {
            capacity *= 2;
        }
        if (capacity > limit) {
            capacity = limit;
        }
        uint8_t *grown = realloc(request->body, capacity);
        if (grown == NULL) {
            return 0;
        }
        request->body = grown;
        request->body_capacity = capacity;
    }
    memcpy(request->body + request->body_length, data, size);
    request->body_length += size;
    return 1;
}

static enum MHD_Result lk_queue_stored(struct lk_mhd_request *request) {
    enum MHD_Result result = MHD_queue_response(request->connection, request->status,
                                                request->response);
    lk_drop_response(request);  // libmicrohttpd holds its own reference while it sends
    return result;
}

// The request whose handler runs on this thread (lk_mhd_send_woken); NULL outside one.
static __thread struct lk_mhd_request *lk_dispatching;

void lk_mhd_send_woken(void) {
    if (lk_dispatching != NULL) lk_loop_send_woken(lk_dispatching->loop);
}

static __thread void *lk_resume_batch;

void *lk_thread_resume_batch(void) {
    return lk_resume_batch;
}

void lk_thread_set_resume_batch(void *batch) {
    lk_resume_batch = batch;
}

// Runs the Swift handler and queues its answer unless it suspended the request.
static enum MHD_Result lk_dispatch(struct lk_mhd_request *request) {
    lk_mhd_server *server = request->server;
    if (request->guard != NULL) request->fault = lk_guard_fault(request->guard, request->number);
    if (lk_trace_hook != NULL) request->received_ns = lk_now_ns();
    request->head_used = lk_head_used(request);
    atomic_store(&request->state, LK_HANDLING);
    // Saved and restored: a handler run by lk_loop_send_woken runs inside another's.
    struct lk_mhd_request *outer = lk_dispatching;
    lk_dispatching = request;
    server->config.handler(server->config.context, request);
    lk_dispatching = outer;
    int state = atomic_load(&request->state);
    if (state == LK_SUSPENDED || state == LK_RESUMING) {
        // Answered later; libmicrohttpd calls the access handler again after the resume.
        return MHD_YES;
    }
    if (request->response == NULL) {
        static const char body[] =
            "{\"error\":{\"code\":\"internal\",\"message\":\"The request was not answered.\"}}";
        lk_mhd_header type = {"Content-Type", "application/json"};
        lk_mhd_respond(request, 500, &type, 1, body, sizeof(body) - 1);
    }
    lk_loop_send_woken(request->loop);
    return lk_queue_stored(request);
}

enum MHD_Result lk_on_access(void *cls, struct MHD_Connection *connection,
                                    const char *url, const char *method, const char *version,
                                    const char *upload_data, size_t *upload_data_size,
                                    void **req_cls) {
    (void)cls;
    (void)url;
    (void)version;
    struct lk_mhd_request *request = *req_cls;
    if (request == NULL) {
        return MHD_NO;  // out of memory in lk_on_uri: drop the connection
    }
    (void)connection;
    if (request->method == NULL) {
        // First call: the head is parsed; answer once the body is in too (the guard has
        // already refused a declared body over the limit).
        request->method = method;
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        if (!lk_append_body(request, upload_data, *upload_data_size)) {
            return MHD_NO;  // out of memory: drop the connection
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (atomic_load(&request->state) == LK_READING) {
        return lk_dispatch(request);
    }
    if (request->response != NULL) {
        if (lk_trace_hook != NULL) lk_trace(request, LK_MHD_TRACE_RESUMED);
        request->loop->answer_queued = 1;
        return lk_queue_stored(request);  // called again after a resume
    }
    return MHD_YES;
}

lk_mhd_server *lk_mhd_request_server(const lk_mhd_request *request) {
    return request->server;
}

unsigned int lk_mhd_request_thread(const lk_mhd_request *request) {
    return lk_loop_thread_index(request->loop);
}

const char *lk_mhd_request_method(const lk_mhd_request *request) {
    return request->method != NULL ? request->method : "";
}

const char *lk_mhd_request_target(const lk_mhd_request *request) {
    return request->target != NULL ? request->target : "/";
}

const char *lk_mhd_request_header(const lk_mhd_request *request, const char *name) {
    return MHD_lookup_connection_value(request->connection, MHD_HEADER_KIND, name);
}

struct lk_header_visit {
    void (*visit)(void *context, const char *name, const char *value);
    void *context;
};

static enum MHD_Result lk_visit_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                       const char *value) {
    (void)kind;
    struct lk_header_visit *visit = cls;
    visit->visit(visit->context, key, value != NULL ? value : "");
    return MHD_YES;
}

size_t lk_mhd_request_header_count(const lk_mhd_request *request) {
    int count = MHD_get_connection_values(request->connection, MHD_HEADER_KIND, NULL, NULL);
    return count > 0 ? (size_t)count : 0;
}

void lk_mhd_request_headers(const lk_mhd_request *request,
                            void (*visit)(void *context, const char *name, const char *value),
                            void *context) {
    struct lk_header_visit state = {visit, context};
    MHD_get_connection_values(request->connection, MHD_HEADER_KIND, lk_visit_header, &state);
}

const uint8_t *lk_mhd_request_body(const lk_mhd_request *request, size_t *length) {
    *length = request->body_length;
    return request->body;
}

unsigned int lk_mhd_request_fault(const lk_mhd_request *request, const char **code, const char **message) {
    if (request->fault == NULL) return 0;
    *code = request->fault->code;
    *message = request->fault->message;
    return request->fault->status;
}

unsigned int lk_mhd_request_client_address(const lk_mhd_request *request, uint8_t bytes[16]) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(request->connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL) {
        return 0;
    }
    const struct sockaddr *address = info->client_addr;
    if (address->sa_family == AF_INET) {
        memcpy(bytes, &((const struct sockaddr_in *)address)->sin_addr, 4);
        return 4;
    }
    if (address->sa_family == AF_INET6) {
        const struct in6_addr *v6 = &((const struct sockaddr_in6 *)address)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(v6)) {
            // A dual-stack socket reports IPv4 clients as ::ffff:a.b.c.d; give them as IPv4.
            memcpy(bytes, &v6->s6_addr[12], 4);
            return 4;
        }
        memcpy(bytes, v6->s6_addr, 16);
        return 16;
    }
    return 0;
}

void lk_mhd_suspend(lk_mhd_request *request) {
    request->was_suspended = 1;
    atomic_fetch_add(&request->server->suspended, 1);
    atomic_fetch_add_explicit(&request->loop->thread->suspended, 1, memory_order_relaxed);
    MHD_suspend_connection(request->connection);
    atomic_store(&request->state, LK_SUSPENDED);
}

// A response with copies of the headers and body; NULL when out of memory.
static struct MHD_Response *lk_build_response(const lk_mhd_header *headers, size_t header_count,
                                              const void *body, size_t body_length) {
    struct MHD_Response *response = MHD_create_response_from_buffer(
        body_length, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (response == NULL) {
        return NULL;
    }
    for (size_t index = 0; index < header_count; index++) {
        // libmicrohttpd refuses names or values with CR, LF or TAB (header injection);
        // such a header is dropped rather than leaving the request unanswered.
        (void)MHD_add_response_header(response, headers[index].name, headers[index].value);
    }
    return response;
}

// After a framing fault nothing more on the connection can be trusted; while the server
// drains, clients should take their next request elsewhere.
static int lk_must_close(const lk_mhd_request *request) {
    return request->fault != NULL || atomic_load(&request->server->draining);
}

// Builds the response (copying headers and body) and stores it on the request.
static int lk_store_response(lk_mhd_request *request, unsigned int status,
                             const lk_mhd_header *headers, size_t header_count,
                             const void *body, size_t body_length) {
    static const lk_mhd_header json = {"Content-Type", "application/json; charset=utf-8"};
    if (!lk_head_fits(request, lk_head_bytes(headers, header_count))) {
        status = 500;
        headers = &json;
        header_count = 1;
        body = lk_too_large_body;
        body_length = sizeof(lk_too_large_body) - 1;
    }
    struct MHD_Response *response = lk_build_response(headers, header_count, body, body_length);
    if (response == NULL) {
        return -1;
    }
    if (lk_must_close(request)) {
        (void)MHD_add_response_header(response, MHD_HTTP_HEADER_CONNECTION, "close");
    }
    request->status = status;
    request->response = response;
    return 0;
}

// The request's response is stored: resumes a suspended request, else (in the handler)
// leaves it for lk_dispatch to queue.
static void lk_answered(lk_mhd_request *request) {
    int expected = LK_SUSPENDED;
    if (atomic_compare_exchange_strong(&request->state, &expected, LK_RESUMING)) {
        lk_loop *loop = request->loop;  // the request may be freed once resumed
        MHD_resume_connection(request->connection);
        lk_loop_wake(loop);
    } else {
        atomic_store(&request->state, LK_ANSWERED);
    }
}

int lk_mhd_respond(lk_mhd_request *request, unsigned int status,
                   const lk_mhd_header *headers, size_t header_count,
                   const void *body, size_t body_length) {
    if (lk_store_response(request, status, headers, header_count, body, body_length) != 0) {
        return -1;
    }
    lk_answered(request);
    return 0;
}

int lk_mhd_respond_deferred(lk_mhd_request *request, unsigned int status,
                            const lk_mhd_header *headers, size_t header_count,
                            const void *body, size_t body_length) {
    if (lk_store_response(request, status, headers, header_count, body, body_length) != 0) {
        return -1;
    }
    atomic_store(&request->state, LK_RESUMING);
    return 0;
}

lk_mhd_shared *lk_mhd_shared_create(unsigned int status, const lk_mhd_header *headers, size_t header_count,
                                    const void *body, size_t body_length) {
    lk_mhd_shared *shared = malloc(sizeof(*shared));
    if (shared == NULL) return NULL;
    shared->response = lk_build_response(headers, header_count, body, body_length);
    if (shared->response == NULL) {
        free(shared);
        return NULL;
    }
    shared->status = status;
    shared->head_bytes = lk_head_bytes(headers, header_count);
    atomic_init(&shared->references, 1);
    return shared;
}

void lk_mhd_shared_release(lk_mhd_shared *shared) {
    if (atomic_fetch_sub_explicit(&shared->references, 1, memory_order_acq_rel) == 1) {
        MHD_destroy_response(shared->response);
        free(shared);
    }
}

// Stores the shared response on the request, with a reference of the request's own.
static void lk_store_shared(lk_mhd_request *request, lk_mhd_shared *shared) {
    atomic_fetch_add_explicit(&shared->references, 1, memory_order_relaxed);
    request->shared = shared;
    request->response = shared->response;
    request->status = shared->status;
}

int lk_mhd_respond_shared(lk_mhd_request *request, lk_mhd_shared *shared) {
    if (lk_must_close(request) || !lk_head_fits(request, shared->head_bytes)) return -1;
    lk_store_shared(request, shared);
    lk_answered(request);
    return 0;
}

int lk_mhd_respond_shared_deferred(lk_mhd_request *request, lk_mhd_shared *shared) {
    if (lk_must_close(request) || !lk_head_fits(request, shared->head_bytes)) return -1;
    lk_store_shared(request, shared);
    atomic_store(&request->state, LK_RESUMING);
    return 0;
}

lk_loop *lk_mhd_request_loop(const lk_mhd_request *request) {
    return request->loop;
}

struct MHD_Connection *lk_mhd_request_connection(const lk_mhd_request *request) {
    return request->connection;
}

int lk_mhd_respond_stream(lk_mhd_request *request, unsigned int status, const lk_mhd_header *headers,
                          size_t header_count, lk_mhd_stream *stream) {
    if (!lk_head_fits(request, lk_head_bytes(headers, header_count))) {
        lk_stream_abandon(stream);
        return -1;
    }
    struct MHD_Response *response = lk_stream_response(stream);
    if (response == NULL) {
        lk_stream_abandon(stream);
        return -1;
    }
    for (size_t index = 0; index < header_count; index++) {
        (void)MHD_add_response_header(response, headers[index].name, headers[index].value);
    }
    if (lk_must_close(request)) (void)MHD_add_response_header(response, MHD_HTTP_HEADER_CONNECTION, "close");
    request->status = status;
    request->response = response;
    atomic_store(&request->state, LK_ANSWERED);
    return 0;
}

void lk_mhd_resume(lk_mhd_request *request) {
    lk_loop *loop = request->loop;  // the request may be freed once resumed
    MHD_resume_connection(request->connection);
    lk_loop_wake(loop);
}
