// The event loops of one server and its life: start, quiesce, stop.
//
// Each thread runs a daemon of its own, all on one listening socket, and
// polls that daemon's epoll descriptor itself, calling MHD_run (which never blocks). The
// daemon's internal loop is not used: in 0.9.75 (and still upstream) it takes at most 128
// events per epoll_wait and, when it gets exactly 128, waits again with its full timeout
// before handling them, so a burst of 128 requests that become ready together waits for
// the next event or the idle timeout (HTTPServerTests "a full epoll batch").

#define _GNU_SOURCE  // pthread_setname_np
#include "lk_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

// Per-client connection limit: the accept policy counts a connection before libmicrohttpd
// creates it; the connection is marked counted when it starts and uncounted when it closes.
// One accepted but never started (out of memory) is uncounted at the loop's next accept.
static void lk_loop_release_reservation(lk_loop *loop) {
    if (loop->has_reservation) {
        lk_clients_remove(&loop->server->clients, &loop->reservation);
        loop->has_reservation = 0;
    }
}

static enum MHD_Result lk_on_accept(void *cls, const struct sockaddr *address, socklen_t length) {
    lk_loop *loop = cls;
    lk_loop_release_reservation(loop);
    lk_client_key key;
    if (!lk_client_key_of(address, length, &key)) {
        return MHD_YES;
    }
    if (!lk_clients_add(&loop->server->clients, &key)) {
        return MHD_NO;
    }
    loop->reservation = key;
    loop->has_reservation = 1;
    return MHD_YES;
}

// Every connection is guarded from its start (lk_guard.h); its guard is its socket context.
static void lk_on_connection(void *cls, struct MHD_Connection *connection, void **socket_context,
                             enum MHD_ConnectionNotificationCode code) {
    lk_loop *loop = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        lk_guard_conn *guard = lk_guard_open(loop, connection);
        *socket_context = guard;
        if (guard == NULL) {
            // Unguarded bytes must never reach libmicrohttpd: close it unread.
            const union MHD_ConnectionInfo *info =
                MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
            if (info != NULL) shutdown(info->connect_fd, SHUT_RDWR);
        } else if (loop->has_reservation) {
            loop->has_reservation = 0;
            lk_guard_set_counted(guard);
        }
        return;
    }
    lk_guard_conn *guard = *socket_context;
    *socket_context = NULL;
    if (guard == NULL) {
        return;
    }
    if (lk_guard_counted(guard)) {
        const union MHD_ConnectionInfo *info =
            MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        lk_client_key key;
        if (info != NULL && lk_client_key_of(info->client_addr, sizeof(struct sockaddr_in6), &key)) {
            lk_clients_remove(&loop->server->clients, &key);
        }
    }
    lk_guard_close(guard);
}

// The loop this thread runs, if it runs one: a wake from its own thread (a write that
// woke a poll held on the same loop) needs no eventfd, only another run at once.
static __thread lk_loop *lk_running_loop;

void lk_loop_wake(lk_loop *loop) {
    if (loop == lk_running_loop) {
        loop->run_again = 1;
        return;
    }
    if (atomic_exchange(&loop->wake_pending, 1) == 0) {
        uint64_t one = 1;
        ssize_t written = write(loop->wake_fd, &one, sizeof(one));
        (void)written;  // EAGAIN only when the counter is full, and then it is readable
    }
}

static void lk_loop_quiesce(lk_loop *loop) {
    lk_mhd_server *server = loop->server;
    (void)MHD_quiesce_daemon(loop->daemon);  // the shared socket; closed once, by lk_mhd_quiesce
    loop->quiesced = 1;
    pthread_mutex_lock(&server->lock);
    server->quiesced_loops++;
    pthread_cond_broadcast(&server->loop_quiesced);
    pthread_mutex_unlock(&server->lock);
}

// Open connections of a daemon; cleans up closed ones first (call on its loop's thread).
static unsigned int lk_connection_count(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info != NULL ? info->num_connections : 0;
}

static void *lk_loop_run(void *argument) {
    lk_loop *loop = argument;
    lk_mhd_server *server = loop->server;
    lk_running_loop = loop;
    sigset_t pipe_signal;
    sigemptyset(&pipe_signal);
    sigaddset(&pipe_signal, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_signal, NULL);
    int closed_some = 0;
    while (!atomic_load(&server->stopping)) {
        if (atomic_load(&server->quiesce_requested) && !loop->quiesced) {
            lk_loop_quiesce(loop);
        }
        MHD_UNSIGNED_LONG_LONG next = 0;
        int timeout = -1;
        if (closed_some || loop->run_again) {
            loop->run_again = 0;
            // A daemon at its connection limit took the listening socket out of its epoll
            // set; it puts it back at the start of a run, so run again now, not on the
            // next event, which may never come.
            timeout = 0;
        } else if (MHD_get_timeout(loop->daemon, &next) == MHD_YES) {
            timeout = next > INT_MAX ? INT_MAX : (int)next;
        }
        if (loop->deadlines != NULL) {
            long until = lk_guard_sweep(loop, lk_guard_now_ms());
            if (until >= 0 && (timeout < 0 || until < timeout)) timeout = (int)(until > INT_MAX ? INT_MAX : until);
        }
        struct pollfd ready[2] = {{loop->epoll_fd, POLLIN, 0}, {loop->wake_fd, POLLIN, 0}};
        if (poll(ready, 2, timeout) < 0 && errno != EINTR) {
            perror("lookout: poll");
            usleep(10000);
        }
        if (ready[1].revents & POLLIN) {
            // Drain, then clear the flag: a resume after the clear writes again, and one
            // before it set its connection's flags before MHD_run below looks at them.
            uint64_t count;
            ssize_t got = read(loop->wake_fd, &count, sizeof(count));
            (void)got;
            atomic_store(&loop->wake_pending, 0);
        }
        unsigned int before = lk_connection_count(loop->daemon);
        MHD_run(loop->daemon);
        closed_some = lk_connection_count(loop->daemon) < before;
    }
    lk_loop_release_reservation(loop);
    return NULL;
}

// libmicrohttpd's memory per connection: the largest head the guard lets through and
// trailer section after it, a header record (56 bytes in 0.9.75) for each field, query
// parameter and trailer field they may hold, and room for the response's header; so
// libmicrohttpd never refuses on its own what the guard passed.
static size_t lk_connection_memory(const lk_frame_limits *limits) {
    return limits->max_head + LK_FRAME_MAX_TRAILER_BYTES +
           (limits->max_fields + limits->max_parameters + LK_FRAME_MAX_TRAILER_FIELDS) * 64 + 4096;
}

static struct MHD_Daemon *lk_start_daemon(lk_mhd_server *server, lk_loop *loop, unsigned int flags,
                                          const struct sockaddr_storage *address,
                                          unsigned int connection_limit) {
    const lk_mhd_config *config = &server->config;
    int bind_here = server->listen_fd < 0;
    struct MHD_OptionItem options[] = {
        {bind_here ? MHD_OPTION_SOCK_ADDR : MHD_OPTION_LISTEN_SOCKET,
         bind_here ? 0 : server->listen_fd, bind_here ? (void *)address : NULL},
        {MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)lk_on_uri, loop},
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)lk_on_completed, loop},
        {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)lk_on_connection, loop},
        {MHD_OPTION_CONNECTION_LIMIT, connection_limit, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, config->idle_timeout_seconds, NULL},
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)lk_connection_memory(&server->limits), NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    MHD_AcceptPolicyCallback policy = server->clients.limit > 0 ? lk_on_accept : NULL;
    return MHD_start_daemon(flags, config->port, policy, loop, lk_on_access, loop,
                            MHD_OPTION_ARRAY, options, MHD_OPTION_END);
}

// Stops the loops' threads, then every daemon, then frees the server.
static void lk_server_free(lk_mhd_server *server) {
    atomic_store(&server->stopping, 1);
    for (unsigned int index = 0; index < server->loop_count; index++) {
        if (server->loops[index].thread_started) {
            lk_loop_wake(&server->loops[index]);
        }
    }
    for (unsigned int index = 0; index < server->loop_count; index++) {
        if (server->loops[index].thread_started) {
            pthread_join(server->loops[index].thread, NULL);
        }
    }
    // No loop runs now: quiesce here so that no daemon closes the shared socket.
    for (unsigned int index = 0; index < server->loop_count; index++) {
        lk_loop *loop = &server->loops[index];
        if (loop->daemon != NULL && !loop->quiesced) {
            (void)MHD_quiesce_daemon(loop->daemon);
            loop->quiesced = 1;
        }
    }
    if (server->listen_fd >= 0) {
        close(server->listen_fd);
    }
    for (unsigned int index = 0; index < server->loop_count; index++) {
        lk_loop *loop = &server->loops[index];
        if (loop->daemon != NULL) {
            MHD_stop_daemon(loop->daemon);
        }
        if (loop->wake_fd >= 0) {
            close(loop->wake_fd);
        }
    }
    lk_clients_destroy(&server->clients);
    pthread_cond_destroy(&server->loop_quiesced);
    pthread_mutex_destroy(&server->lock);
    free(server);
}

lk_mhd_server *lk_mhd_start(const lk_mhd_config *config, char *error, size_t error_size) {
    unsigned int loop_count = config->thread_count > 1 ? config->thread_count : 1;
    lk_mhd_server *server = calloc(1, sizeof(*server) + loop_count * sizeof(lk_loop));
    if (server == NULL) {
        snprintf(error, error_size, "out of memory");
        return NULL;
    }
    server->config = *config;
    snprintf(server->bind_address, sizeof(server->bind_address), "%s",
             config->bind_address != NULL ? config->bind_address : "::");
    server->config.bind_address = server->bind_address;
    atomic_init(&server->suspended, 0);
    atomic_init(&server->stopping, 0);
    atomic_init(&server->quiesce_requested, 0);
    atomic_init(&server->draining, 0);
    server->listen_fd = -1;
    pthread_mutex_init(&server->lock, NULL);
    pthread_cond_init(&server->loop_quiesced, NULL);
    lk_clients_init(&server->clients, config->per_ip_connection_limit);
    size_t max_head = config->max_head_bytes > 0 ? config->max_head_bytes : 16384;
    server->limits = (lk_frame_limits){
        .max_head = max_head,
        .max_target = max_head < 8192 ? max_head : 8192,
        .max_fields = LK_MAX_FIELDS,
        .max_parameters = LK_MAX_PARAMETERS,
        .max_body = config->max_body_bytes,
    };
    // An incomplete head or trailer section, or a chunk-size line, with what was read
    // with it.
    server->stash_capacity = max_head + 2048;
    server->request_timeout_ms =
        (uint64_t)(config->request_timeout_seconds > 0 ? config->request_timeout_seconds : 20) * 1000;
    server->loop_count = loop_count;
    for (unsigned int index = 0; index < loop_count; index++) {
        server->loops[index].server = server;
        server->loops[index].wake_fd = -1;
        atomic_init(&server->loops[index].wake_pending, 0);
    }

    unsigned int flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;
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
        lk_server_free(server);
        return NULL;
    }

    for (unsigned int index = 0; index < loop_count; index++) {
        lk_loop *loop = &server->loops[index];
        // libmicrohttpd's own pool splits the limit the same way.
        unsigned int limit = config->connection_limit / loop_count +
                             (index < config->connection_limit % loop_count ? 1 : 0);
        loop->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        loop->daemon = loop->wake_fd >= 0
                           ? lk_start_daemon(server, loop, flags, &address, limit > 0 ? limit : 1)
                           : NULL;
        if (loop->daemon == NULL) {
            if (index == 0) {
                snprintf(error, error_size,
                         "cannot listen on [%s]:%u (address in use, or not available)",
                         server->bind_address, (unsigned)config->port);
            } else {
                snprintf(error, error_size, "cannot start event loop %u: %s", index,
                         strerror(errno));
            }
            lk_server_free(server);
            return NULL;
        }
        if (index == 0) {
            const union MHD_DaemonInfo *info =
                MHD_get_daemon_info(loop->daemon, MHD_DAEMON_INFO_LISTEN_FD);
            server->listen_fd = info != NULL ? info->listen_fd : -1;
        }
        const union MHD_DaemonInfo *info = MHD_get_daemon_info(loop->daemon, MHD_DAEMON_INFO_EPOLL_FD);
        loop->epoll_fd = info != NULL ? info->epoll_fd : -1;
        if (server->listen_fd < 0 || loop->epoll_fd < 0) {
            snprintf(error, error_size, "libmicrohttpd gave no listening or epoll descriptor");
            lk_server_free(server);
            return NULL;
        }
    }
    for (unsigned int index = 0; index < loop_count; index++) {
        lk_loop *loop = &server->loops[index];
        int failed = pthread_create(&loop->thread, NULL, lk_loop_run, loop);
        if (failed != 0) {
            snprintf(error, error_size, "cannot start a thread: %s", strerror(failed));
            lk_server_free(server);
            return NULL;
        }
        loop->thread_started = 1;
        pthread_setname_np(loop->thread, "lookout-http");
    }
    return server;
}

uint16_t lk_mhd_port(const lk_mhd_server *server) {
    const union MHD_DaemonInfo *info =
        MHD_get_daemon_info(server->loops[0].daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info != NULL ? info->port : 0;
}

void lk_mhd_quiesce(lk_mhd_server *server) {
    atomic_store(&server->draining, 1);
    pthread_mutex_lock(&server->lock);
    if (!atomic_exchange(&server->quiesce_requested, 1)) {
        for (unsigned int index = 0; index < server->loop_count; index++) {
            lk_loop_wake(&server->loops[index]);
        }
    }
    while (server->quiesced_loops < server->loop_count) {
        pthread_cond_wait(&server->loop_quiesced, &server->lock);
    }
    if (server->listen_fd >= 0) {
        close(server->listen_fd);  // no loop polls it any more
        server->listen_fd = -1;
    }
    pthread_mutex_unlock(&server->lock);
}

unsigned int lk_mhd_suspended_count(const lk_mhd_server *server) {
    return atomic_load(&((lk_mhd_server *)server)->suspended);
}

void lk_mhd_stop(lk_mhd_server *server) {
    lk_server_free(server);
}
