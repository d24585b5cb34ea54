// The access-handler protocol of libmicrohttpd, turned into one call per request.
//
// libmicrohttpd calls the access handler several times per request: once when the
// headers are parsed, once per chunk of body, and a final time with no data. Answering
// on the first call forces `Connection: close` (measured: notes/libmicrohttpd.md), so a
// request is handed to Swift on the final call. A suspended request is answered by
// storing its response and resuming the connection; libmicrohttpd then calls the access
// handler once more, and the stored response is queued from there.

#include "lk_mhd.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

struct lk_mhd_server {
    struct MHD_Daemon *daemon;
    lk_mhd_config config;
    char bind_address[64];
    // Suspended requests not yet completed; read by the shutdown path on another thread.
    atomic_uint suspended;
};

enum lk_request_state {
    LK_READING = 0,   // headers or body still arriving
    LK_HANDLING,      // inside the Swift handler
    LK_SUSPENDED,     // handler suspended it; nobody answered yet
    LK_RESUMING,      // answered from another thread; waiting for the access handler
    LK_ANSWERED,      // a response is stored (or queued)
};

struct lk_mhd_request {
    lk_mhd_server *server;
    struct MHD_Connection *connection;
    const char *method;   // owned by libmicrohttpd, valid for the request
    char *target;         // our copy of the raw URI: libmicrohttpd unescapes its own in place
    uint8_t *body;
    size_t body_length;
    size_t body_capacity;
    int body_too_large;
    size_t discarded;     // body bytes dropped after the limit was passed
    int was_suspended;
    _Atomic int state;
    struct MHD_Response *response;
    unsigned int status;
};

_Static_assert(sizeof(unsigned int) >= 4, "HTTP status codes need at least 16 bits");

static void *lk_on_uri(void *cls, const char *uri, struct MHD_Connection *connection) {
    lk_mhd_server *server = cls;
    struct lk_mhd_request *request = calloc(1, sizeof(*request));
    if (request == NULL) {
        return NULL;
    }
    request->server = server;
    request->connection = connection;
    request->target = strdup(uri != NULL ? uri : "/");
    atomic_init(&request->state, LK_READING);
    return request;
}

static void lk_free_request(struct lk_mhd_request *request) {
    if (request->response != NULL) {
        MHD_destroy_response(request->response);
    }
    free(request->body);
    free(request->target);
    free(request);
}

static void lk_on_completed(void *cls, struct MHD_Connection *connection, void **req_cls,
                            enum MHD_RequestTerminationCode code) {
    (void)connection;
    (void)code;
    lk_mhd_server *server = cls;
    struct lk_mhd_request *request = *req_cls;
    if (request == NULL) {
        return;
    }
    if (request->was_suspended) {
        atomic_fetch_sub(&server->suspended, 1);
    }
    lk_free_request(request);
    *req_cls = NULL;
}

static int lk_append_body(struct lk_mhd_request *request, const char *data, size_t size) {
    size_t limit = request->server->config.max_body_bytes;
    if (request->body_length + size > limit) {
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
    MHD_destroy_response(request->response);
    request->response = NULL;
    return result;
}

// Runs the Swift handler and queues its answer unless it suspended the request.
static enum MHD_Result lk_dispatch(struct lk_mhd_request *request) {
    lk_mhd_server *server = request->server;
    atomic_store(&request->state, LK_HANDLING);
    server->config.handler(server->config.context, request);
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
    return lk_queue_stored(request);
}

static enum MHD_Result lk_on_access(void *cls, struct MHD_Connection *connection,
                                    const char *url, const char *method, const char *version,
                                    const char *upload_data, size_t *upload_data_size,
                                    void **req_cls) {
    (void)url;
    (void)version;
    lk_mhd_server *server = cls;
    struct lk_mhd_request *request = *req_cls;
    if (request == NULL) {
        return MHD_NO;  // out of memory in lk_on_uri: drop the connection
    }
    if (request->method == NULL) {
        // First call: headers are parsed. Refuse an oversized declared body before reading it.
        request->method = method;
        const char *length = MHD_lookup_connection_value(connection, MHD_HEADER_KIND,
                                                         MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (length != NULL) {
            char *end = NULL;
            unsigned long long declared = strtoull(length, &end, 10);
            if (end != length && declared > server->config.max_body_bytes) {
                request->body_too_large = 1;
                return lk_dispatch(request);
            }
        }
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        if (request->body_too_large || !lk_append_body(request, upload_data, *upload_data_size)) {
            // A chunked body grew past the limit. libmicrohttpd 0.9.75 cannot queue a
            // response in the middle of a body, so drop the rest and answer 413 at the
            // end, unless the client keeps sending far past the limit: then hang up.
            request->body_too_large = 1;
            request->discarded += *upload_data_size;
            if (request->discarded > server->config.max_body_bytes + (1u << 20)) {
                return MHD_NO;
            }
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (atomic_load(&request->state) == LK_READING) {
        return lk_dispatch(request);
    }
    if (request->response != NULL) {
        return lk_queue_stored(request);  // called again after a resume
    }
    return MHD_YES;
}

lk_mhd_server *lk_mhd_start(const lk_mhd_config *config, char *error, size_t error_size) {
    lk_mhd_server *server = calloc(1, sizeof(*server));
    if (server == NULL) {
        snprintf(error, error_size, "out of memory");
        return NULL;
    }
    server->config = *config;
    snprintf(server->bind_address, sizeof(server->bind_address), "%s",
             config->bind_address != NULL ? config->bind_address : "::");
    server->config.bind_address = server->bind_address;
    atomic_init(&server->suspended, 0);

    unsigned int flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME;
    struct sockaddr_storage address;
    memset(&address, 0, sizeof(address));
    struct sockaddr_in *v4 = (struct sockaddr_in *)&address;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&address;
    if (inet_pton(AF_INET, server->bind_address, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(config->port);
    } else if (inet_pton(AF_INET6, server->bind_address, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(config->port);
        // The unspecified address listens for IPv4 too; a specific one only for itself.
        flags |= IN6_IS_ADDR_UNSPECIFIED(&v6->sin6_addr) ? MHD_USE_DUAL_STACK : MHD_USE_IPv6;
    } else {
        snprintf(error, error_size, "'%s' is not a numeric IPv4 or IPv6 address",
                 server->bind_address);
        free(server);
        return NULL;
    }

    struct MHD_OptionItem options[] = {
        {MHD_OPTION_SOCK_ADDR, 0, &address},
        {MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)lk_on_uri, server},
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)lk_on_completed, server},
        {MHD_OPTION_CONNECTION_LIMIT, config->connection_limit, NULL},
        {MHD_OPTION_PER_IP_CONNECTION_LIMIT, config->per_ip_connection_limit, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, config->idle_timeout_seconds, NULL},
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)config->connection_memory_bytes, NULL},
        {config->thread_count > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END,
         config->thread_count, NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    server->daemon = MHD_start_daemon(flags, config->port, NULL, NULL, lk_on_access, server,
                                      MHD_OPTION_ARRAY, options, MHD_OPTION_END);
    if (server->daemon == NULL) {
        snprintf(error, error_size, "cannot listen on [%s]:%u (address in use, or not available)",
                 server->bind_address, (unsigned)config->port);
        free(server);
        return NULL;
    }
    return server;
}

uint16_t lk_mhd_port(const lk_mhd_server *server) {
    const union MHD_DaemonInfo *info =
        MHD_get_daemon_info(server->daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info != NULL ? info->port : 0;
}

void lk_mhd_quiesce(lk_mhd_server *server) {
    MHD_socket listener = MHD_quiesce_daemon(server->daemon);
    if (listener != MHD_INVALID_SOCKET) {
        close(listener);  // quiesce hands the listening socket back to us
    }
}

unsigned int lk_mhd_suspended_count(const lk_mhd_server *server) {
    return atomic_load(&((lk_mhd_server *)server)->suspended);
}

void lk_mhd_stop(lk_mhd_server *server) {
    MHD_stop_daemon(server->daemon);
    free(server);
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

void lk_mhd_request_headers(const lk_mhd_request *request,
                            void (*visit)(void *context, const char *name, const char *value),
                            void *context) {
    struct lk_header_visit state = {visit, context};
    MHD_get_connection_values(request->connection, MHD_HEADER_KIND, lk_visit_header, &state);
}

const uint8_t *lk_mhd_request_body(const lk_mhd_request *request, size_t *length) {
    if (request->body_too_large) {
        *length = 0;
        return NULL;
    }
    *length = request->body_length;
    return request->body;
}

int lk_mhd_request_body_too_large(const lk_mhd_request *request) {
    return request->body_too_large;
}

void lk_mhd_request_client_address(const lk_mhd_request *request, char *buffer, size_t size) {
    buffer[0] = '\0';
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(request->connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL) {
        return;
    }
    const struct sockaddr *address = info->client_addr;
    if (address->sa_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)address)->sin_addr, buffer, size);
    } else if (address->sa_family == AF_INET6) {
        const struct in6_addr *v6 = &((const struct sockaddr_in6 *)address)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(v6)) {
            // A dual-stack socket reports IPv4 clients as ::ffff:a.b.c.d; show them as IPv4.
            inet_ntop(AF_INET, &v6->s6_addr[12], buffer, size);
        } else {
            inet_ntop(AF_INET6, v6, buffer, size);
        }
    }
}

void lk_mhd_suspend(lk_mhd_request *request) {
    request->was_suspended = 1;
    atomic_fetch_add(&request->server->suspended, 1);
    MHD_suspend_connection(request->connection);
    atomic_store(&request->state, LK_SUSPENDED);
}

// Builds the response (copying headers and body) and stores it on the request.
static int lk_store_response(lk_mhd_request *request, unsigned int status,
                             const lk_mhd_header *headers, size_t header_count,
                             const void *body, size_t body_length) {
    struct MHD_Response *response = MHD_create_response_from_buffer(
        body_length, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (response == NULL) {
        return -1;
    }
    for (size_t index = 0; index < header_count; index++) {
        // libmicrohttpd refuses names or values with CR, LF or TAB (header injection);
        // such a header is dropped rather than leaving the request unanswered.
        (void)MHD_add_response_header(response, headers[index].name, headers[index].value);
    }
    request->status = status;
    request->response = response;
    return 0;
}

int lk_mhd_respond(lk_mhd_request *request, unsigned int status,
                   const lk_mhd_header *headers, size_t header_count,
                   const void *body, size_t body_length) {
    if (lk_store_response(request, status, headers, header_count, body, body_length) != 0) {
        return -1;
    }
    int expected = LK_SUSPENDED;
    if (atomic_compare_exchange_strong(&request->state, &expected, LK_RESUMING)) {
        MHD_resume_connection(request->connection);
    } else {
        atomic_store(&request->state, LK_ANSWERED);
    }
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

void lk_mhd_resume(lk_mhd_request *request) {
    MHD_resume_connection(request->connection);
}
